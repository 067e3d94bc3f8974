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
  last part: the staged bytes are read until then. Two barriers a K step (a K chunk, where the
  step's bytes do not fit: `input_chunk`), and threadgroup memory for the raw bytes alone, so
  MX tiles up to 128 x 128 fit (needs macOS 26.2, where input cooperative tensors appeared).
  Before the loop a constant initial accumulator fills the
  cooperative tensors; any other, and the result after the loop, goes through threadgroup
  memory, C whole or, where that does not fit (a 128 x 128 float32 tile is 64 KiB), a block of
  every SIMD group at a time (`rounds`).
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

from triton_metal.chip import THREADGROUP_MEMORY_BYTES
from triton_metal.ir.ops.tt_compute import DotScaledOp
from triton_metal.ir.types import ScalarType, TensorType

from . import lower_tensor_dot
from .context import WARP, LoweringContext, round16
from .distribution import Distribution
from .program import Apply, Assign, Barrier, Call, Declare, Expr, ExprStmt, If, Index, Lit, Stmt, Var
from .tiles import row_major
from .values import RegValue

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

    def compact_origin(self, axis: int) -> Expr:
        """This SIMD group's place in the tile of one block a SIMD group (its row or column)."""
        place = Apply("idiv_raw" if axis == 0 else "irem_raw", (WARP, Lit(f"{self.grid[1]}u")))
        return Apply("mul", (place, Lit(f"{self.block[axis]}u")))

    def compact(self, coord: Expr, axis: int) -> Expr:
        """A row (column) of the tile at the same place in the tile of one block a SIMD group:
        the block index along `axis` dropped from its bits."""
        outer = Apply("idiv_raw", (coord, Lit(f"{self.region[axis]}u")))
        inner = Apply("irem_raw", (coord, Lit(f"{self.block[axis]}u")))
        return Apply("add", (Apply("mul", (outer, Lit(f"{self.block[axis]}u"))), inner))

    def is_block(self, coord: Expr, axis: int, j: int) -> Expr:
        """Whether a row (column) lies in a SIMD group's j-th block along `axis`."""
        index = Apply("irem_raw", (Apply("idiv_raw", (coord, Lit(f"{self.block[axis]}u"))), Lit(f"{self.per[axis]}u")))
        return Apply("eq", (index, Lit(f"{j}u")))

    def place(self, dist: Distribution, reg: int) -> tuple[int, int] | None:
        """The block (r, c) register `reg` of every thread lies in, when the thread's part of its
        coordinates (lane and SIMD group bits) leaves the block index's bits alone; else None."""
        found = []
        for axis in (0, 1):
            low, count = self.block[axis], self.per[axis]
            bits = (count - 1) * low  # the block index's bits (count and low are powers of two)
            if any(b[axis] & bits for b in (*dist.lane_bases, *dist.warp_bases)):
                return None
            found.append(dist.reg_coords[reg][axis] // low % count)
        return found[0], found[1]


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


def raw_bytes(op: DotScaledOp, chunk: int | None = None) -> int:
    """Threadgroup bytes of both operands and their scales as loaded (`lower_dot_scaled`'s
    staging of the whole of K, or of `chunk` elements of it: each block rounded to 16)."""
    k = shape_of(op)[2]
    part = k if chunk is None else chunk
    total = 0
    for value, scale in ((op.a, op.a_scale), (op.b, op.b_scale)):
        for v in (value, scale):
            if v is None:
                continue
            ty = v.type
            assert isinstance(ty, TensorType) and isinstance(ty.element, ScalarType)
            unit = 2 if ty.element.name in ("bf16", "f16", "u16") else 1
            total += round16(prod(ty.shape) * unit * part // k)
    return total


def input_chunk(ctx: LoweringContext, op: DotScaledOp) -> int:
    """The K staged at a time on input cooperative tensors: the whole K step where its bytes as
    loaded fit beside the layout passes' bytes, else the largest part of it, halved down to 32,
    that does (two barriers a part, as the fragments' K chunks)."""
    k = shape_of(op)[2]
    chunk = k
    while (ctx.scratch_base + raw_bytes(op, chunk) > THREADGROUP_MEMORY_BYTES and chunk % 2 == 0
           and (chunk // 2) % lower_tensor_dot.K_STEP == 0):
        chunk //= 2
    return chunk


def tile_bytes(op: DotScaledOp) -> tuple[int, int]:
    """Threadgroup bytes of the dequantized A and B tiles."""
    m, n, k = shape_of(op)
    unit = _COMPUTE_BYTES[compute_type(op)]
    return round16(m * k * unit), round16(k * n * unit)


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


def on_input_tensors(ctx: LoweringContext, op: DotScaledOp) -> bool:
    """Whether the carried dot takes the form on input cooperative tensors (module doc)."""
    return simdgroup_blocks(op, ctx.num_warps) is not None


def own_bytes(ctx: LoweringContext, op: DotScaledOp) -> int:
    """The code generator's scratch the carried dot takes: the operands as loaded, and the
    dequantized tiles unless the inputs are cooperative tensors; C (staged before and after the
    loop) over them, on input cooperative tensors a block of each SIMD group at a time where C
    whole does not fit (`rounds`)."""
    m, n, _ = shape_of(op)
    blocks = simdgroup_blocks(op, ctx.num_warps)
    if blocks is None:
        return max(raw_bytes(op) + sum(tile_bytes(op)), round16(m * n * 4))
    c_bytes = m * n * 4 // (blocks.count if _in_rounds(ctx, op) else 1)
    return max(raw_bytes(op, input_chunk(ctx, op)), round16(c_bytes))


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


def begin_accumulators(ctx: LoweringContext, op: DotScaledOp, base: str, init: RegValue, c_view: Expr) -> None:
    """Before the loop: this SIMD group's destination cooperative tensors
    (templates/helpers/tensor_dot.metal), one a block. A constant initial value (`tl.zeros`)
    fills their elements; any other is staged through threadgroup memory, C whole or, where it
    does not fit, the blocks of one round at a time (`rounds`)."""
    blocks = _blocks(ctx, op)
    names = {(r, c): blocks.accumulator(base, r, c) for r in range(blocks.per[0]) for c in range(blocks.per[1])}
    for name in names.values():
        ctx.emit(Declare(name, "auto", None, Call(f"km_sg_acc<{_block_args(ctx, op)}>", ())))
    if len(set(init.regs)) == 1 and isinstance(init.regs[0], Lit):
        for name in names.values():
            ctx.emit(ExprStmt(Call("km_coop_fill", (Var(name), init.regs[0]))))
        return
    for part in rounds(ctx, op):
        _exchange(ctx, op, blocks, part, c_view, init, write=True)
        ctx.emit(Barrier())
        for r, c in part:
            ctx.emit(ExprStmt(_move(ctx, op, blocks, names[r, c], c_view, r, c, "load", len(part) < blocks.count)))
        ctx.emit(Barrier())


def end_accumulators(ctx: LoweringContext, op: DotScaledOp, base: str, c_view: Expr, result: RegValue) -> None:
    """After the loop: each of this SIMD group's accumulators into the registers of `result`
    through threadgroup memory, C whole or a round of blocks at a time. The loop left the
    scratch free (its last K step ends with a barrier)."""
    blocks = _blocks(ctx, op)
    for part in rounds(ctx, op):
        for r, c in part:
            name = blocks.accumulator(base, r, c)
            ctx.emit(ExprStmt(_move(ctx, op, blocks, name, c_view, r, c, "store", len(part) < blocks.count)))
        ctx.emit(Barrier())
        _exchange(ctx, op, blocks, part, c_view, result, write=False)
        ctx.emit(Barrier())
    assert result.dist is not None
    ctx.copy_replicas(result.dist, result.regs)


def rounds(ctx: LoweringContext, op: DotScaledOp) -> list[list[tuple[int, int]]]:
    """The blocks (r, c) of each SIMD group that go through threadgroup memory together: all of
    them (C whole) where that fits beside the staged bytes, else one block of every SIMD group
    at a time (a quarter of C for four blocks)."""
    blocks = _blocks(ctx, op)
    every = [(r, c) for r in range(blocks.per[0]) for c in range(blocks.per[1])]
    return [every] if not _in_rounds(ctx, op) else [[b] for b in every]


def _in_rounds(ctx: LoweringContext, op: DotScaledOp) -> bool:
    m, n, _ = shape_of(op)
    blocks = simdgroup_blocks(op, ctx.num_warps)
    whole = max(raw_bytes(op, input_chunk(ctx, op)), round16(m * n * 4))
    return blocks is not None and blocks.count > 1 and ctx.scratch_base + whole > THREADGROUP_MEMORY_BYTES


def _move(ctx: LoweringContext, op: DotScaledOp, blocks: SimdgroupBlocks, acc: str, c_view: Expr, r: int, c: int,
          how: str, compact: bool) -> Call:
    """Accumulator `acc` of block (r, c) loaded from or stored to its place in C at `c_view`:
    the whole row-major M x N tile, or (`compact`) the tile of one block a SIMD group."""
    m, n, _ = shape_of(op)
    if not compact:
        return Call(f"km_sg_{how}<{m}, {n}>", (Var(acc), c_view, blocks.origin(0, r), blocks.origin(1, c)))
    rows, cols = (g * b for g, b in zip(blocks.grid, blocks.block))
    return Call(f"km_sg_{how}<{rows}, {cols}>", (Var(acc), c_view, blocks.compact_origin(0), blocks.compact_origin(1)))


def _exchange(ctx: LoweringContext, op: DotScaledOp, blocks: SimdgroupBlocks, part: list[tuple[int, int]],
              c_view: Expr, regs: RegValue, write: bool) -> None:
    """Every thread's registers `regs` of the blocks in `part` written into C at `c_view`
    (`write`) or read from it: the whole tile when `part` is every block, else the tile of one
    block a SIMD group (`SimdgroupBlocks.compact_origin`). A register's block is known when the
    thread's part of its coordinate leaves the block index's bits alone (the usual case); else
    it is tested."""
    dist = regs.dist
    assert dist is not None
    whole = len(part) == blocks.count
    for reg, first in enumerate(dist.first_registers()):
        if not first:
            continue
        row, col = ctx.coord(dist, reg, 0), ctx.coord(dist, reg, 1)
        place = None if whole else blocks.place(dist, reg)
        if place is not None and place not in part:
            continue
        if whole:
            idx = row_major(row, col, shape_of(op)[1])
        else:
            idx = row_major(blocks.compact(row, 0), blocks.compact(col, 1), blocks.grid[1] * blocks.block[1])
        element = Index(c_view, idx)
        stmt: Stmt = Assign(element, regs.regs[reg]) if write else Assign(regs.regs[reg], element)
        if not whole and place is None:
            [(r, c)] = part
            stmt = If(Apply("land", (blocks.is_block(row, 0, r), blocks.is_block(col, 1, c))), (stmt,))
        ctx.emit(stmt)


def input_tensor(ctx: LoweringContext, op: DotScaledOp, side: int) -> Call:
    """A fresh left (`side` 0) or right (1) input cooperative tensor of this SIMD group's ops."""
    return Call(f"km_sg_{('left', 'right')[side]}<{_block_args(ctx, op)}>", ())


def run_call(ctx: LoweringContext, op: DotScaledOp, a: str, b: str, acc: str) -> Call:
    bm, bn = _blocks(ctx, op).block
    return Call(f"km_sg_run<{bm}, {bn}>", (Var(a), Var(b), Var(acc)))
