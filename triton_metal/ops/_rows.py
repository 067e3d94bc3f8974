"""Launch shape shared by the row-wise ops (softmax, norms, losses): one program per row.

A row of up to `MAX_ONE_PASS` elements is held in registers in one block (`BLOCK` the next power
of two, masked unless the row fills it); a longer row is streamed in blocks of `LOOP_BLOCK`.
`num_warps` is tuned per row length (`@autotune` keyed on the row length and the one-pass flag);
configs whose threads outnumber the block's elements, or that leave a thread more than 64
elements of a one-pass row, are pruned before timing.
"""

from __future__ import annotations

from typing import Any

import triton_metal as triton
import triton_metal.language as tl

from ._common import first_or_all, next_pow2

MAX_ONE_PASS = 16384
"""The longest row held in registers (32 elements a thread on 16 warps). Through the GPU proxy,
rows of 16384 held in registers ran 0.99-1.12x as fast as streamed twice (docs/ops.md, "Ninth
round")."""
LOOP_BLOCK = 2048
WARPS = (1, 2, 4, 8, 16)


def row_block(n: int) -> tuple[int, bool]:
    """(BLOCK, ONE_PASS) for rows of `n` elements."""
    if n <= MAX_ONE_PASS:
        return max(16, next_pow2(n)), True
    return LOOP_BLOCK, False


def fills_block(n: int) -> bool:
    """Whether a row of `n` elements held in registers fills its block exactly (`EVEN` of the
    row kernels: their masks then fold away, `row_mask`)."""
    block, one_pass = row_block(n)
    return one_pass and n == block


@triton.jit
def row_mask(offs, n_cols, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    # `offs < n_cols`; where the row fills the block (EVEN) the same comparison against BLOCK,
    # which the compiler folds to true, so the row's loads, stores and selects carry no mask
    # and hold no registers for one (docs/ops.md, "Eleventh round"). Any block of a range
    # that its bound may fill takes it (decode attention's splits too)
    if EVEN:
        mask = offs < BLOCK
    else:
        mask = offs < n_cols
    return mask


def default_warps(block: int, one_pass: bool = True, streamed_warps: int = 16) -> int:
    """A row held in registers: a warp per 512 elements. A streamed row: `streamed_warps`, 16 by
    default, the fastest through the GPU proxy for rows of 16384 streamed (softmax 1.06-1.11x,
    rms_norm 1.24-1.29x and layer_norm 1.04x faster than on 4; docs/ops.md, "Ninth round")."""
    return max(1, min(16, block // 512)) if one_pass else streamed_warps


def row_configs() -> list[Any]:
    return [triton.Config({}, num_warps=w) for w in WARPS]


def prune_row_configs(configs: list[Any], named_args: dict[str, Any], *, streamed_warps: int = 16,
                      **kwargs: Any) -> list[Any]:
    block = int(kwargs.get("BLOCK", named_args.get("BLOCK", 1024)))
    one_pass = bool(kwargs.get("ONE_PASS", named_args.get("ONE_PASS", True)))

    def fits(c: Any) -> bool:
        threads = 32 * c.num_warps
        if threads > max(32, block):
            return False
        return not one_pass or block // threads <= 64

    fitting = [c for c in configs if fits(c)] or [min(configs, key=lambda c: c.num_warps)]
    default = default_warps(block, one_pass, streamed_warps)
    fitting.sort(key=lambda c: abs(c.num_warps - default))
    return first_or_all(fitting)


ROW_TUNING = {"early_config_prune": prune_row_configs}
