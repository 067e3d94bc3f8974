"""How a `tt.dot` tile is split over SIMD groups: the `BlockLayout` of its result.

Contract: `block_layout_for(shape, num_warps, loc)` returns `BlockLayout(wpc)` with `wpc[0] * wpc[1] ==
num_warps` such that every SIMD group owns whole 8x8 fragments of the M x N result (M and N
multiples of `8 * wpc`), preferring the split whose per-warp tile is closest to square (it reads
the fewest operand fragments), or all warps along M for kernels with chained dots. A tile that cannot be split so is refused with a
`CompilationError` naming M, N, num_warps and a fix. The dot's operands take
`DotOperandLayout(0 | 1, block)` (`layout_assignment` converts them).
"""

from __future__ import annotations

from ..errors import CompilationError, Loc
from ..ir.layouts import FRAGMENT, BlockLayout


def block_layout_for(shape: tuple[int, ...], num_warps: int, loc: Loc | None, rows_first: bool = False,
                     what: str = "tl.dot result") -> BlockLayout:
    """The split of an M x N fragment tile over `num_warps` SIMD groups (see the module doc).
    `rows_first`: all warps along M when M allows (chained dots, as in attention: the dots then
    share their row split, so row statistics and the operand of the next dot stay in place)."""
    if len(shape) != 2:
        raise CompilationError(
            f"tl.dot of {len(shape)}-D operands is not supported (only 2-D tiles map onto simdgroup_matrix)",
            loc, "loop over the batch dimension and call tl.dot on 2-D tiles")
    m, n = shape
    if m % FRAGMENT or n % FRAGMENT:
        raise CompilationError(
            f"{what} of {m} x {n} is not made of 8x8 simdgroup_matrix fragments",
            loc, "use BLOCK sizes for M and N that are multiples of 8 (pad and mask the edges)")
    if rows_first and m % (FRAGMENT * num_warps) == 0:
        return BlockLayout((num_warps, 1))
    best: tuple[float, int] | None = None
    wm = 1
    while wm <= num_warps:
        wn = num_warps // wm
        if m % (FRAGMENT * wm) == 0 and n % (FRAGMENT * wn) == 0:
            tm, tn = m // wm, n // wn
            score = max(tm, tn) / min(tm, tn)
            if best is None or score < best[0]:
                best = (score, wm)
        wm *= 2
    if best is None:
        raise CompilationError(
            f"{what} of {m} x {n} cannot give each of num_warps={num_warps} SIMD groups whole "
            f"8x8 fragments ({m * n // 64} fragments in all)",
            loc, f"use num_warps <= {max(1, m * n // 64)} or larger BLOCK sizes for M and N")
    wm = best[1]
    return BlockLayout((wm, num_warps // wm))
