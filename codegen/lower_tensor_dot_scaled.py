"""`tt.dot_scaled` on Metal 4 tensor ops: a K loop's carried accumulator (MSL 4.0 targets).

A loop `acc = tl.dot_scaled(a, sa, fa, b, sb, fb, acc)`, or `acc += tl.dot_scaled(...)`, whose
accumulator only the dot uses keeps it in tensor-op cooperative tensors across the loop, as a
`tl.dot` GEMM does (`lower_tensor_dot_loop.py`: the same `carried_dots`, `begin_carried` and
`end_carried`; the iteration is `lower_dot_scaled.run_carried_on_tensor_ops`). Each iteration,
every thread first writes its registers of both operands and their scales into threadgroup
memory as they were loaded (the staging of `lower_dot_scaled.py`, the whole of K), and a
barrier. Then one of two forms:

* **Input cooperative tensors** (`simdgroup_blocks`), where the M x N tile splits into blocks of
  16 or 32 rows by 16 or 32 columns, the same whole number of them (at most `MAX_BLOCKS`) for
  every SIMD group: each SIMD group runs its own `matmul2d` a block on `execution_simdgroup`
  (what Apple's implementation requires of input cooperative tensors, with m, n and k each 16
  or 32), each block's destination cooperative tensor carried by the loop, K in parts of 32. For
  each part every thread fills the elements it holds of one left input cooperative tensor per
  block row and one right input per block column, found by their coordinates, straight from the
  staged bytes: each element dequantized on the way in (the value `lower_dot_scaled` builds into
  fragments), no bfloat16 tile in threadgroup memory; then a run a block. A barrier after the
  last part: the staged bytes are read until then. Two barriers a K step, and threadgroup memory
  for the raw bytes alone, so 64 x 64 x 128 MX tiles fit (needs macOS 26.2, where input
  cooperative tensors appeared). C, staged whole before and after the loop, bounds the tile
  (a 128 x 128 float32 accumulator is 64 KiB).
* **Dequantized tiles** otherwise: the threads dequantize A (M x K) and B (K x N) from the
  staged bytes into bfloat16 tiles (float32 when an operand is fp16), element by element, a
  barrier, and `km_tensor_run` accumulates A @ B into the cooperative tensor of one op over the
  whole tile (`execution_simdgroups<N>`). Two barriers a K step. No barrier follows the run: the
  next iteration writes the operands' bytes, which no thread reads after the second barrier, and
  the tiles only after its own first barrier, which every thread reaches after this run; any
  other use of the code generator's scratch in the loop waits for a barrier first
  (`LoweringContext.busy_own_scratch`).

Every other `tl.dot_scaled` (a single dot, tiles that are not whole tensor-op tiles, staging
that does not fit) keeps the fragments of `lower_dot_scaled.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from triton_metal.ir.ops.tt_compute import DotScaledOp
from triton_metal.ir.types import ScalarType, TensorType

from . import lower_dot, lower_tensor_dot
from .context import WARP, LoweringContext
from .program import Apply, Call, Declare, Expr, ExprStmt, Lit, Var

_COMPUTE_BYTES = {"bfloat": 2, "float": 4}

BLOCKS = ((32, 32), (32, 16), (16, 32), (16, 16))
"""A SIMD group's block (rows, columns) on input cooperative tensors, largest first: Apple's
implementation takes m, n and k each 16 or 32, at least one of them 32 (k is)."""
MAX_BLOCKS = 4
"""The most blocks a SIMD group holds, each with its own accumulator: four of 32 x 32 are 128
float registers a thread."""


@dataclass(frozen=True)
class SimdgroupBlocks:
    """The M x N tile on input cooperative tensors: a `grid` of SIMD groups (along M and N), each
    holding `per` blocks (along M and N) of `block` (rows, columns), one op and one accumulator a
    block."""

    block: tuple[int, int]
    grid: tuple[int, int]
    per: tuple[int, int]

    @property
    def count(self) -> int:
        """Blocks (accumulators) a SIMD group holds."""
        return self.per[0] * self.per[1]

    @property
    def region(self) -> tuple[int, int]:
        """The rows and columns a SIMD group computes."""
        return self.per[0] * self.block[0], self.per[1] * self.block[1]

    def origin(self, axis: int, j: int) -> Expr:
        """The first row (`axis` 0) or column (1) of this SIMD group's j-th block along `axis`
        (SIMD groups row-major over the grid)."""
        across = Lit(f"{self.grid[1]}u")
        place = Apply("idiv_raw" if axis == 0 else "irem_raw", (WARP, across))
        first = Apply("mul", (place, Lit(f"{self.region[axis]}u")))
        return Apply("add", (first, Lit(f"{j * self.block[axis]}u"))) if j else first

    def accumulator(self, base: str, r: int, c: int) -> str:
        """The name of the accumulator of block (r, c) of this SIMD group."""
        return f"{base}_{r * self.per[1] + c}"


def compute_type(op: DotScaledOp) -> str:
    """The MSL type the operands are dequantized to: bfloat16, or float32 when one is fp16
    (lower_dot_scaled.py's module doc)."""
    return "float" if "fp16" in (op.a_format, op.b_format) else "bfloat"


def shape_of(op: DotScaledOp) -> tuple[int, int, int]:
    """M, N and K in elements (an e2m1 operand holds two a byte)."""
    c_ty = op.c.type
    assert isinstance(c_ty, TensorType)
    m, n = c_ty.shape
    a_ty = op.a.type
    assert isinstance(a_ty, TensorType)
    k = a_ty.shape[1] * (2 if op.a_format == "e2m1" and op.a_k_pack else 1)
    return m, n, k


def raw_bytes(op: DotScaledOp) -> int:
    """Threadgroup bytes of both operands and their scales as loaded (`lower_dot_scaled`'s
    staging of the whole of K: each block rounded to 16)."""
    total = 0
    for value, scale in ((op.a, op.a_scale), (op.b, op.b_scale)):
        for v in (value, scale):
            if v is None:
                continue
            ty = v.type
            assert isinstance(ty, TensorType) and isinstance(ty.element, ScalarType)
            unit = 2 if ty.element.name in ("bf16", "f16", "u16") else 1
            total += lower_dot.round16(prod(ty.shape) * unit)
    return total


def tile_bytes(op: DotScaledOp) -> tuple[int, int]:
    """Threadgroup bytes of the dequantized A and B tiles."""
    m, n, k = shape_of(op)
    unit = _COMPUTE_BYTES[compute_type(op)]
    return lower_dot.round16(m * k * unit), lower_dot.round16(k * n * unit)


def simdgroup_blocks(op: DotScaledOp, warps: int) -> SimdgroupBlocks | None:
    """How the tile splits into blocks on input cooperative tensors (module doc): the largest
    block of `BLOCKS` that gives every SIMD group the same whole number of blocks, at most
    `MAX_BLOCKS`, over the grid of SIMD groups that reads the fewest inputs a part (the least
    blocks along M plus along N); None: the dequantized tiles."""
    m, n, _ = shape_of(op)
    for bm, bn in BLOCKS:
        found = []
        for rows in (d for d in range(1, warps + 1) if warps % d == 0):
            cols = warps // rows
            if m % (rows * bm) or n % (cols * bn):
                continue
            per = (m // (rows * bm), n // (cols * bn))
            if per[0] * per[1] <= MAX_BLOCKS:
                found.append(SimdgroupBlocks((bm, bn), (rows, cols), per))
        if found:
            return min(found, key=lambda b: sum(b.per))
    return None


def own_bytes(op: DotScaledOp, warps: int) -> int:
    """The code generator's scratch the carried dot takes: the operands as loaded, and the
    dequantized tiles unless the inputs are cooperative tensors; C (staged before and after the
    loop) over them."""
    m, n, _ = shape_of(op)
    tiles = 0 if simdgroup_blocks(op, warps) else sum(tile_bytes(op))
    return max(raw_bytes(op) + tiles, lower_dot.round16(m * n * 4))


def scaled_tile(ctx: LoweringContext, op: DotScaledOp) -> lower_tensor_dot.TensorTile:
    m, n, k = shape_of(op)
    return lower_tensor_dot.TensorTile(m, n, k, compute_type(op), "float", ctx.num_warps)


# -- the form on input cooperative tensors: each SIMD group's blocks ------------------------------


def _blocks(ctx: LoweringContext, op: DotScaledOp) -> SimdgroupBlocks:
    blocks = simdgroup_blocks(op, ctx.num_warps)
    assert blocks is not None
    return blocks


def _block_args(ctx: LoweringContext, op: DotScaledOp) -> str:
    bm, bn = _blocks(ctx, op).block
    return f"{bm}, {bn}, {compute_type(op)}, float"


def declare_accumulators(ctx: LoweringContext, op: DotScaledOp, base: str, c_view: Expr) -> None:
    """This SIMD group's destination cooperative tensors (templates/helpers/tensor_dot.metal),
    each loaded with its block of the row-major M x N tile at `c_view`."""
    blocks = _blocks(ctx, op)
    for r in range(blocks.per[0]):
        for c in range(blocks.per[1]):
            name = blocks.accumulator(base, r, c)
            ctx.emit(Declare(name, "auto", None, Call(f"km_sg_acc<{_block_args(ctx, op)}>", ())))
            ctx.emit(ExprStmt(_move(op, blocks, name, c_view, r, c, "load")))


def store_accumulators(ctx: LoweringContext, op: DotScaledOp, base: str, c_view: Expr) -> None:
    """Each of this SIMD group's accumulators stored into its block of the tile at `c_view`."""
    blocks = _blocks(ctx, op)
    for r in range(blocks.per[0]):
        for c in range(blocks.per[1]):
            ctx.emit(ExprStmt(_move(op, blocks, blocks.accumulator(base, r, c), c_view, r, c, "store")))


def _move(op: DotScaledOp, blocks: SimdgroupBlocks, acc: str, c_view: Expr, r: int, c: int, how: str) -> Call:
    m, n, _ = shape_of(op)
    return Call(f"km_sg_{how}<{m}, {n}>", (Var(acc), c_view, blocks.origin(0, r), blocks.origin(1, c)))


def input_tensor(ctx: LoweringContext, op: DotScaledOp, side: int) -> Call:
    """A fresh left (`side` 0) or right (1) input cooperative tensor of this SIMD group's ops."""
    return Call(f"km_sg_{('left', 'right')[side]}<{_block_args(ctx, op)}>", ())


def run_call(ctx: LoweringContext, op: DotScaledOp, a: str, b: str, acc: str) -> Call:
    bm, bn = _blocks(ctx, op).block
    return Call(f"km_sg_run<{bm}, {bn}>", (Var(a), Var(b), Var(acc)))
