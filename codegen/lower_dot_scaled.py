"""Lowering of `tt.dot_scaled` (`tl.dot_scaled` of 2-D tiles): microscaled operands dequantized
straight into the simdgroup fragments of the dot.

The operands arrive as they were loaded (e2m1 bytes, fp8 bytes, 16-bit floats or their bits),
with their e8m0 or float8e4nv scale bytes, in whatever layout their loads gave them. For each K
chunk (all of K when it fits in threadgroup memory):
* every thread writes its registers of the chunk into threadgroup memory as they are, row-major
  bytes (16-bit units for bf16 and fp16): a quarter of the bfloat16 bytes for e2m1, half for fp8,
  and the scales as bytes rather than expanded over their groups; one barrier;
* each SIMD group runs a loop over the chunk's K steps of 8 in which every lane reads the two
  elements it holds of each A and B fragment, decodes them and multiplies them by their scales
  (`templates/helpers/scaled_dot.metal`, `fp8.metal`), builds the fragment from the two values
  (`km_frag`), then runs the products into its accumulator fragments, also in loops; a barrier
  ends the chunk's reads.
The generated code is loops over fragments rather than statements per element or per fragment
product: its size grows with the registers the operands and the accumulator hold, not with
M x N x K.

Values: each element is the one the dequantization in `language/semantic/scaled_dot.py` computes
(the format's value in float32 times its scale's, rounded once to the compute type: bfloat16, or
float32 when an operand is fp16), and each accumulator fragment takes its products in increasing
K, as the decomposed dot's fragments do, so the results are those of the decomposition.

On MSL 4.0 targets a K loop's carried accumulator takes tensor ops instead
(`run_carried_on_tensor_ops`, lower_tensor_dot_scaled.py): the same staging and the same
dequantized values, written straight into each SIMD group's input cooperative tensors, or into
bfloat16 (float32) tiles that one `matmul2d` reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from triton_metal.chip import THREADGROUP_MEMORY_BYTES
from triton_metal.errors import OutOfResources, internal_error
from triton_metal.fp8 import FORMATS
from triton_metal.ir.ops.tt_compute import DotScaledOp
from triton_metal.ir import Value
from triton_metal.ir.types import ScalarType, TensorType

from .context import LANE, TID, LoweringContext, round16
from .dot_report import record_dot, record_tensor_dot
from .dot_tiling import FRAG, FRAGMENT_LANE_BASES, Slot, fragment_slots
from .lower_dot import bit_offset, warp_offset
from .lower_tensor_dot import K_STEP
from .lower_tensor_dot_scaled import (
    SimdgroupBlocks,
    compute_type,
    input_chunk,
    input_tensor,
    on_input_tensors,
    own_bytes,
    raw_bytes,
    run_call,
    scaled_tile,
    shape_of,
    simdgroup_blocks,
    tile_bytes,
)
from .program import (
    Apply,
    Assign,
    Barrier,
    Call,
    Convert,
    Declare,
    Expr,
    ExprStmt,
    ForRange,
    If,
    Index,
    Lit,
    Reinterpret,
    Scope,
    Staged,
    Stmt,
    Var,
)
from .registry import lowers
from .values import CoopValue, RegValue

_FP8 = {"e4m3": "fp8e4nv", "e5m2": "fp8e5"}
"""The `triton_metal.fp8` format of each fp8 operand format."""
_SIXTEEN = {"bf16": "bfloat", "fp16": "half"}
"""The MSL type of each 16-bit operand format."""


@dataclass(frozen=True)
class _Side:
    """One operand of the dot as it is staged for a K chunk: an [rows, cols] block of elements
    (A: M x chunk, B: chunk x N) and the scales of its outer axis (A's rows, B's columns)."""

    fmt: str
    k_axis: int
    """The element axis along K: 1 for A, 0 for B."""
    raw: RegValue
    """The operand's registers (bytes, 16-bit floats or bits)."""
    pair_axis: int
    """e2m1: the element axis whose pairs share a byte."""
    scale: RegValue | None
    """Scale codes [outer, K // group] (bytes), or None."""
    group: int
    """Elements along K per scale."""
    fast: bool
    """e8m0 code 255 scales by infinity rather than NaN (`fast_math`)."""

    @property
    def unit(self) -> str:
        """The MSL type of a staged unit: a byte, or the bits of a 16-bit float."""
        return "ushort" if self.fmt in _SIXTEEN else "uchar"

    @property
    def packs_k(self) -> bool:
        """Whether a byte holds two elements along K (e2m1 packed along K)."""
        return self.fmt == "e2m1" and self.pair_axis == self.k_axis

    def raw_k(self, elements: int) -> int:
        """The raw block's extent along K for `elements` elements."""
        return elements // 2 if self.packs_k else elements

    def raw_shape(self, chunk: int) -> tuple[int, int]:
        ty = self.raw.type
        assert isinstance(ty, TensorType)
        shape = list(ty.shape)
        shape[self.k_axis] = self.raw_k(chunk)
        return shape[0], shape[1]

    def written(self, chunk: int) -> tuple[int, int]:
        """(operand bytes, scale bytes) written for one chunk."""
        rows, cols = self.raw_shape(chunk)
        if self.scale is None:
            return rows * cols * self.unit_bytes, 0
        st = self.scale.type
        assert isinstance(st, TensorType)
        return rows * cols * self.unit_bytes, st.shape[0] * (chunk // self.group)

    @property
    def unit_bytes(self) -> int:
        return 2 if self.unit == "ushort" else 1


@dataclass(frozen=True)
class _Staged:
    """Where one side's chunk lies in threadgroup memory."""

    side: _Side
    units: Expr
    """`threadgroup <unit>*` view of the raw block, row-major."""
    pitch: int
    """Units per row of the raw block."""
    scales: Expr | None
    """`threadgroup uchar*` view of the chunk's scale codes [outer, groups]."""
    groups: int
    """Scale groups per row in the chunk."""


@lowers(DotScaledOp)
def lower_dot_scaled(ctx: LoweringContext, op: DotScaledOp) -> None:
    carried = ctx.tensor_accumulators.get(op)
    if carried is not None:  # a cooperative tensor the K loop carries: lower_tensor_dot_scaled.py
        run_carried_on_tensor_ops(ctx, op, carried[0])
        return
    c = ctx.reg(op.c)
    dist = ctx.dist_of(op.result.type)
    assert dist is not None and c.dist == dist
    slots = fragment_slots(dist)
    grid = _grid(slots) if slots is not None else None
    if slots is None or grid is None:
        raise internal_error(f"tl.dot_scaled result layout {op.result.type} does not hold an evenly spaced grid of "
                             "whole 8x8 fragments (the layout passes must give dot results a block layout)")
    rows, cols = grid
    sides = _operand_sides(ctx, op)
    k = _k_extent(sides[0])
    compute = compute_type(op)
    chunk = _chunk(ctx, sides, k)
    ctx.helpers.add("dot_fragments")
    _add_helpers(ctx, sides)

    out = ctx.declare_array("float", dist.num_regs)
    ctx.push()
    warp_rows = warp_offset(ctx, tuple(b[0] for b in dist.warp_bases))
    warp_cols = warp_offset(ctx, tuple(b[1] for b in dist.warp_bases))
    lane_row, lane_col = (_lane_part(ctx, axis) for axis in (0, 1))
    acc, a_name, b_name = ctx.fresh(), ctx.fresh(), ctx.fresh()
    ctx.emit(Declare(acc, "simdgroup_matrix<float, 8, 8>", len(rows) * len(cols)))
    ctx.emit(Declare(a_name, f"simdgroup_matrix<{compute}, 8, 8>", len(rows)))
    ctx.emit(Declare(b_name, f"simdgroup_matrix<{compute}, 8, 8>", len(cols)))
    order = {(s.row, s.col): s for s in slots.values()}
    frag_slots = [order[(r, cc)] for r in rows for cc in cols]
    for i, slot in enumerate(frag_slots):
        ctx.emit(Assign(Index(Var(acc), Lit(str(i))), Call("km_frag<float>", tuple(c.regs[r] for r in slot.regs))))
    frags = _Frags(Var(acc), Var(a_name), Var(b_name), compute, len(rows), len(cols))
    for start in range(0, k, chunk):
        staged = _stage_chunk(ctx, sides, start, chunk)
        ctx.emit(_k_loop(ctx, staged, frags, chunk, _origin(warp_rows, rows), _origin(warp_cols, cols),
                         lane_row, lane_col))
        ctx.emit(Barrier())  # every SIMD group has read the chunk before it is written again
    for i, slot in enumerate(frag_slots):
        for e, r in enumerate(slot.regs):
            ctx.emit(Assign(out[r], Call("km_frag_elem", (Index(Var(acc), Lit(str(i))), Lit(str(e))))))
    ctx.copy_replicas(dist, out)
    scope = Scope(ctx.pop())
    ctx.emit(scope)
    m, n = dist.shape
    record_dot(ctx.dot_sites, op, scope, acc, [a_name, b_name], f"{compute} x {compute} -> float",
               shape=(m, n, k), dtypes=f"{op.a_format} x {op.b_format} -> f32")
    ctx.bind(op.result, RegValue(op.result.type, out, dist))


# -- on tensor ops: a K loop's carried accumulator ----------------------------------------------


def run_carried_on_tensor_ops(ctx: LoweringContext, op: DotScaledOp, acc: CoopValue) -> None:
    """A K loop's carried dot on tensor ops (lower_tensor_dot_scaled.py): the operands staged as
    loaded, a barrier, then each SIMD group's input cooperative tensors filled and run, or the
    dequantized tiles."""
    if on_input_tensors(ctx, op):
        _run_on_inputs(ctx, op, acc)
        return
    tile = scaled_tile(ctx, op)
    ctx.stages_again(op)  # its raw bytes are free; its tiles are written after its first barrier
    ctx.push()
    base = ctx.op_scratch(op, own_bytes(ctx, op))
    sides = _operand_sides(ctx, op)
    _add_helpers(ctx, sides)
    raw = raw_bytes(op)
    assert _chunk_bytes(sides, tile.k) == raw
    staged = _stage_chunk(ctx, sides, 0, tile.k)
    a_bytes, b_bytes = tile_bytes(op)
    a_view = ctx.scratch_view(tile.in_t, base + raw)
    b_view = ctx.scratch_view(tile.in_t, base + raw + a_bytes)
    for st, view, rows, cols in ((staged[0], a_view, tile.m, tile.k), (staged[1], b_view, tile.k, tile.n)):
        ctx.emit(_dequantize_tile(ctx, st, view, rows, cols, tile.in_t))
    ctx.emit(Staged(a_bytes + b_bytes))
    ctx.emit(Barrier())
    ctx.emit(ExprStmt(Call(f"km_tensor_run<{tile.shape_args}>", (a_view, b_view, Var(acc.name)))))
    scope = Scope(ctx.pop())
    ctx.emit(scope)
    ctx.busy_own_scratch(op)
    record_tensor_dot(ctx.dot_sites, op, scope, tile.warps, "carried", shape=(tile.m, tile.n, tile.k),
                      dtypes=f"{op.a_format} x {op.b_format} -> f32")
    ctx.bind(op.result, acc)


def _run_on_inputs(ctx: LoweringContext, op: DotScaledOp, acc: CoopValue) -> None:
    """For each K chunk that fits (`input_chunk`: the whole step, usually): the operands staged
    as loaded, a barrier; for each part of 32 along it, this SIMD group's left input cooperative
    tensors (one a block row) and right ones (one a block column) filled with their elements
    dequantized, and a run a block into its accumulator; a barrier before the staged bytes are
    written again."""
    m, n, k = shape_of(op)
    blocks = simdgroup_blocks(op, ctx.num_warps)
    assert blocks is not None
    chunk = input_chunk(ctx, op)
    ctx.push()
    ctx.op_scratch(op, own_bytes(ctx, op))
    sides = _operand_sides(ctx, op)
    _add_helpers(ctx, sides)
    assert _chunk_bytes(sides, chunk) == raw_bytes(op, chunk)
    for start in range(0, k, chunk):
        staged = _stage_chunk(ctx, sides, start, chunk)
        ctx.emit(_parts(ctx, op, blocks, staged, chunk, acc))
        if start + chunk < k:
            ctx.emit(Barrier())  # every thread has filled its inputs from this chunk
    ctx.scratch_done(op)  # ... and from the last
    scope = Scope(ctx.pop())
    ctx.emit(scope)
    ctx.busy_own_scratch(None)
    record_tensor_dot(ctx.dot_sites, op, scope, ctx.num_warps, "carried", shape=(m, n, k),
                      dtypes=f"{op.a_format} x {op.b_format} -> f32", blocks=blocks)
    ctx.bind(op.result, acc)


def _parts(ctx: LoweringContext, op: DotScaledOp, blocks: SimdgroupBlocks, staged: tuple[_Staged, _Staged],
           chunk: int, acc: CoopValue) -> ForRange:
    """The loop over a staged chunk's parts of 32 along K: the inputs filled, a run a block."""
    compute = compute_type(op)
    part = ctx.fresh()
    body: list[Stmt] = []
    lefts, rights = [ctx.fresh() for _ in range(blocks.per[0])], [ctx.fresh() for _ in range(blocks.per[1])]
    for r, a in enumerate(lefts):
        row0 = blocks.origin(0, r)
        body += [Declare(a, "auto", None, input_tensor(ctx, op, 0)),
                 _fill(ctx, a, staged[0], lambda i, j: (Apply("add", (row0, i)), Apply("add", (Var(part), j))), compute)]
    for c, b in enumerate(rights):
        col0 = blocks.origin(1, c)
        body += [Declare(b, "auto", None, input_tensor(ctx, op, 1)),
                 _fill(ctx, b, staged[1], lambda i, j: (Apply("add", (Var(part), i)), Apply("add", (col0, j))), compute)]
    body += [ExprStmt(run_call(ctx, op, a, b, blocks.accumulator(acc.name, r, c)))
             for r, a in enumerate(lefts) for c, b in enumerate(rights)]
    return ForRange(part, "uint", Lit("0u"), Lit(f"{chunk}u"), Lit(f"{K_STEP}u"), tuple(body), step_sign=1)


def _fill(ctx: LoweringContext, tensor: str, st: _Staged, place: Callable[[Expr, Expr], tuple[Expr, Expr]],
          compute: str) -> ForRange:
    """Every element this thread holds of an input cooperative tensor, set to the staged element
    at `place(row, column)` of its coordinate in the op's operand (left: m, k; right: k, n),
    dequantized. Where an element sits is Metal's choice; its coordinate says which it is."""
    i = ctx.fresh()
    ct, at = Var(tensor), Var(i)
    row, col = place(Call("km_coop_row", (ct, at)), Call("km_coop_col", (ct, at)))
    fill = Assign(Index(ct, at), _element(st, row, col, compute))
    return ForRange(i, "ushort", Lit("0"), Call("km_coop_count", (ct,)), Lit("1"),
                    (If(Call("km_coop_valid", (ct, at)), (fill,)),), step_sign=1)


def _dequantize_tile(ctx: LoweringContext, st: _Staged, view: Expr, rows: int, cols: int, compute: str) -> ForRange:
    """`view[e]` for every element e of the row-major rows x cols tile, the threads taking every
    (threads)-th element from their own index: the staged element dequantized (its format's
    value times its scale, in the compute type)."""
    e = ctx.fresh()
    row = Apply("idiv_raw", (Var(e), Lit(f"{cols}u")))
    col = Apply("irem_raw", (Var(e), Lit(f"{cols}u")))
    value = _element(st, row, col, compute)
    return ForRange(e, "uint", TID, Lit(f"{rows * cols}u"), Lit(f"{ctx.num_warps * 32}u"),
                    (Assign(Index(view, Var(e)), value),), step_sign=1)


# -- the operands ----------------------------------------------------------------------------------


def _operand_sides(ctx: LoweringContext, op: DotScaledOp) -> tuple[_Side, _Side]:
    """A (K along its columns) and B (K along its rows) as staged."""
    return (_side(ctx, op.a_format, 1, ctx.reg(op.a), 1 if op.a_k_pack else 0, op.a_scale, op.fast_math),
            _side(ctx, op.b_format, 0, ctx.reg(op.b), 0 if op.b_k_pack else 1, op.b_scale, op.fast_math))


def _add_helpers(ctx: LoweringContext, sides: tuple[_Side, _Side]) -> None:
    """The decoders the dequantization calls."""
    ctx.helpers.add("scaled_dot")
    if any(s.fmt in _FP8 or (s.scale is not None and _scale_kind(s) == "e4m3") for s in sides):
        ctx.helpers.add("fp8")


def _side(ctx: LoweringContext, fmt: str, k_axis: int, raw: RegValue, pair_axis: int, scale: Value | None,
          fast: bool) -> _Side:
    unscaled = _Side(fmt, k_axis, raw, pair_axis, None, 1, fast)
    if scale is None:
        return unscaled
    sv = ctx.reg(scale)
    st = sv.type
    assert isinstance(st, TensorType)
    return _Side(fmt, k_axis, raw, pair_axis, sv, _k_extent(unscaled) // st.shape[1], fast)


def _k_extent(side: _Side) -> int:
    ty = side.raw.type
    assert isinstance(ty, TensorType)
    raw = ty.shape[side.k_axis]
    return 2 * raw if side.packs_k else raw


def _scale_kind(side: _Side) -> str:
    assert side.scale is not None
    st = side.scale.type
    assert isinstance(st, TensorType) and isinstance(st.element, ScalarType)
    return "e4m3" if st.element.is_fp8() else "e8m0"


def _chunk(ctx: LoweringContext, sides: tuple[_Side, _Side], k: int) -> int:
    """The most K (a power of two dividing K) whose staged bytes fit next to the scratch the
    layout passes allocated."""
    room = THREADGROUP_MEMORY_BYTES - ctx.scratch_base
    smallest = max([FRAG, *(s.group for s in sides if s.scale is not None)])
    chunk = k
    while chunk > smallest and _chunk_bytes(sides, chunk) > room:
        chunk //= 2
    if _chunk_bytes(sides, chunk) > room:
        # as the kernel's whole threadgroup memory is refused: the runtime compiles the kernel
        # again with its dot results stored from fragments (no conversion scratch), then refuses
        raise OutOfResources(ctx.scratch_base + _chunk_bytes(sides, chunk), THREADGROUP_MEMORY_BYTES,
                             f"threadgroup memory of kernel '{ctx.kernel_name}' with tl.dot_scaled staging a K chunk "
                             f"of {chunk} (bytes)")
    return chunk


def _chunk_bytes(sides: tuple[_Side, _Side], chunk: int) -> int:
    return sum(round16(n) for s in sides for n in s.written(chunk))


# -- staging ---------------------------------------------------------------------------------------


def _stage_chunk(ctx: LoweringContext, sides: tuple[_Side, _Side], start: int, chunk: int) -> tuple[_Staged, _Staged]:
    """Write K chunk [start, start + chunk) of both operands and their scales into threadgroup
    scratch, then a barrier."""
    base = ctx.own_scratch(_chunk_bytes(sides, chunk))
    staged = []
    for side in sides:
        data_bytes, scale_bytes = side.written(chunk)
        cols = side.raw_shape(chunk)[1]
        units = ctx.scratch_view(side.unit, base)
        _write_chunk(ctx, side.raw, units, cols, side.k_axis, side.raw_k(start), side.raw_k(chunk), side.unit)
        scales = None
        groups = chunk // side.group
        if side.scale is not None:
            scales = ctx.scratch_view("uchar", base + round16(data_bytes))
            _write_chunk(ctx, side.scale, scales, groups, 1, start // side.group, groups, "uchar")
        staged.append(_Staged(side, units, cols, scales, groups))
        base += round16(data_bytes) + round16(scale_bytes)
    ctx.emit(Staged(sum(sum(s.written(chunk)) for s in sides)))
    ctx.emit(Barrier())
    return staged[0], staged[1]


def _write_chunk(ctx: LoweringContext, v: RegValue, view: Expr, pitch: int, k_axis: int, start: int, extent: int,
                 unit: str) -> None:
    """Each thread's registers of `v` whose coordinate along `k_axis` lies in [start, start +
    extent), at row-major offsets of the chunk (`pitch` units a row), as `unit` bits. A register
    whose coordinate depends on the thread beyond what the chunk decides is written under a
    test of it."""
    dist = v.dist
    assert dist is not None
    spread = sum(b[k_axis] for b in (*dist.lane_bases, *dist.warp_bases))
    for r, first in enumerate(dist.first_registers()):
        if not first:
            continue
        low = dist.reg_coords[r][k_axis]
        if low + spread < start or low >= start + extent:
            continue  # in another chunk for every thread
        coord = [ctx.coord(dist, r, 0), ctx.coord(dist, r, 1)]
        local = Apply("sub", (coord[k_axis], Lit(str(start)))) if start else coord[k_axis]
        row, col = (local, coord[1]) if k_axis == 0 else (coord[0], local)
        idx = Apply("add", (Apply("mul", (row, Lit(str(pitch)))), col))
        store: Stmt = Assign(Index(view, idx), _as_unit(v, r, unit))
        if low < start or low + spread >= start + extent:
            inside = Apply("land", (Apply("ge", (coord[k_axis], Lit(str(start)))),
                                    Apply("lt", (coord[k_axis], Lit(str(start + extent))))))
            store = If(inside, (store,))
        ctx.emit(store)


def _as_unit(v: RegValue, r: int, unit: str) -> Expr:
    """Register `r` of `v` as the bits of a staged unit (bytes keep their bits; 16-bit floats are
    reinterpreted)."""
    ty = v.type
    assert isinstance(ty, TensorType) and isinstance(ty.element, ScalarType)
    x = v.regs[r]
    name = ty.element.name
    if name in ("bf16", "f16"):
        return Reinterpret(unit, x)
    return x if name in ("u8", "u16") or ty.element.is_fp8() else Convert(unit, x)


# -- the K loop over fragments --------------------------------------------------------------------


@dataclass(frozen=True)
class _Frags:
    """The fragment arrays of the dot: accumulators (row block major), A's and B's of a K step."""

    acc: Var
    a: Var
    b: Var
    compute: str
    rows: int
    cols: int


@dataclass(frozen=True)
class _Origin:
    """Row (or column) of fragment `i` of this SIMD group: `base + i * step`."""

    base: Expr
    step: int

    def at(self, i: Expr) -> Expr:
        return Apply("add", (self.base, Apply("mul", (i, Lit(f"{self.step}u"))))) if self.step else self.base


def _k_loop(ctx: LoweringContext, staged: tuple[_Staged, _Staged], f: _Frags, chunk: int, rows: _Origin,
            cols: _Origin, lane_row: Expr, lane_col: Expr) -> ForRange:
    """for each K step of 8 in the chunk: this SIMD group's A and B fragments dequantized from the
    staged bytes, then its products."""
    kk, i, j = ctx.fresh(), ctx.fresh(), ctx.fresh()
    col0 = Apply("add", (Var(kk), lane_col))
    col1 = Apply("add", (col0, Lit("1u")))
    a_row = Apply("add", (rows.at(Var(i)), lane_row))
    a_frag = Call(f"km_frag<{f.compute}>", tuple(_element(staged[0], a_row, c, f.compute) for c in (col0, col1)))
    b_row = Apply("add", (Var(kk), lane_row))
    b_col = Apply("add", (cols.at(Var(i)), lane_col))
    b_frag = Call(f"km_frag<{f.compute}>", tuple(
        _element(staged[1], b_row, c, f.compute) for c in (b_col, Apply("add", (b_col, Lit("1u"))))))
    acc = Index(f.acc, Apply("add", (Apply("mul", (Var(i), Lit(f"{f.cols}u"))), Var(j))))
    product = ExprStmt(Call("simdgroup_multiply_accumulate", (acc, Index(f.a, Var(i)), Index(f.b, Var(j)), acc)))
    body = (
        _loop(i, f.rows, (Assign(Index(f.a, Var(i)), a_frag),)),
        _loop(i, f.cols, (Assign(Index(f.b, Var(i)), b_frag),)),
        _loop(i, f.rows, (_loop(j, f.cols, (product,)),)),
    )
    return ForRange(kk, "uint", Lit("0u"), Lit(f"{chunk}u"), Lit(f"{FRAG}u"), body, step_sign=1)


def _loop(var: str, count: int, body: tuple[Stmt, ...]) -> ForRange:
    return ForRange(var, "uint", Lit("0u"), Lit(f"{count}u"), Lit("1u"), body, step_sign=1)


def _element(st: _Staged, row: Expr, col: Expr, compute: str) -> Expr:
    """Element (row, col) of a staged chunk (A: row of M, col along K; B: row along K, col of
    N), dequantized: its format's value in float, times its scale, in the compute type."""
    side = st.side
    fmt = side.fmt
    if fmt == "e2m1":
        pair_rows = "true" if side.pair_axis == 0 else "false"
        value: Expr = Call("km_e2m1_at", (st.units, row, col, Lit(f"{st.pitch}u"), Lit(pair_rows)))
    else:
        unit = Index(st.units, Apply("add", (Apply("mul", (row, Lit(f"{st.pitch}u"))), col)))
        value = _fp8_value(unit, _FP8[fmt]) if fmt in _FP8 else Convert("float", Reinterpret(_SIXTEEN[fmt], unit))
    if st.scales is not None:
        outer, along_k = (col, row) if side.k_axis == 0 else (row, col)
        group = Apply("shr_raw", (along_k, Lit(f"{side.group.bit_length() - 1}u")))
        code = Index(st.scales, Apply("add", (Apply("mul", (outer, Lit(f"{st.groups}u"))), group)))
        scale = _fp8_value(code, "fp8e4nv") if _scale_kind(side) == "e4m3" else Call(
            "km_e8m0_to_float", (code, Lit("true" if side.fast else "false")))
        value = Apply("mul", (value, scale))
    return value if compute == "float" else Convert(compute, value)


def _fp8_value(code: Expr, fmt: str) -> Expr:
    f = FORMATS[fmt]
    return Call("km_fp8_to_float", (code, Lit(str(f.mantissa_bits)), Lit(str(f.bias)), Lit(str(f.kind))))


# -- fragment geometry -----------------------------------------------------------------------------


def _grid(slots: dict[tuple[int, int], Slot]) -> tuple[list[int], list[int]] | None:
    """The row and column origins of the accumulator fragments thread (0, 0) holds, when they form
    a full grid whose origins are evenly spaced (the loops index them by `base + i * step`)."""
    rows = sorted({r for r, _ in slots})
    cols = sorted({c for _, c in slots})
    if len(slots) != len(rows) * len(cols) or not (_even(rows) and _even(cols)):
        return None
    return rows, cols


def _even(values: list[int]) -> bool:
    return all(b - a == values[1] - values[0] for a, b in zip(values, values[1:]))


def _origin(warp: Expr | None, origins: list[int]) -> _Origin:
    step = origins[1] - origins[0] if len(origins) > 1 else 0
    base: Expr = Lit(f"{origins[0]}u")
    if warp is not None:
        base = Apply("add", (warp, base)) if origins[0] else warp
    return _Origin(base, step)


def _lane_part(ctx: LoweringContext, axis: int) -> Expr:
    """This lane's row (axis 0) or first column (axis 1) inside a fragment (Metal's lane layout,
    `dot_tiling.FRAGMENT_LANE_BASES`), declared once in the scope."""
    part = bit_offset(ctx, LANE, tuple(base[axis] for base in FRAGMENT_LANE_BASES))
    assert part is not None
    return part
