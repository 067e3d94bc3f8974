"""Lowering of `tt.dot` (`d = a @ b + c`) on Metal's 8x8 `simdgroup_matrix` fragments.

Float dots (fp32, fp16, bf16 operands; fp32 accumulation, or fp16 for fp16 operands with
`out_dtype=float16`):
* the accumulator `c` and the result are in a BLOCK layout: each register pair of a thread is the
  `thread_elements()` of one fragment (`dot_tiling`), so the accumulator stays in registers, as
  fragments, across the iterations of a loop carrying it; the dot rebuilds the fragment objects
  from those registers (`km_frag`, no data movement) and reads them back after the products;
* operands in their dot-operand layouts (the layout passes put them there with a
  `convert_layout`, which moves the data through threadgroup memory) are fragments the same way;
  an operand in any other layout is staged here: every thread writes its registers into
  threadgroup scratch (row-major), a barrier, then each SIMD group `simdgroup_load`s the
  fragments it needs at its own origins;
* each SIMD group then runs `simdgroup_multiply_accumulate` over its (row block, column block)
  fragments for every K step of 8, all unrolled (shapes are compile-time constants).

int8 dots (int32 accumulation) run on the same fragments, exactly: every int8 value is a float,
the product of two is an integer of magnitude at most 2^14 (exact in float), and a float sum of
at most `INT8_K_CHUNK` = 1024 of them never leaves the integers of magnitude at most 2^24, which
float holds exactly, whatever the order of the additions. So the operands become
`simdgroup_matrix<float, 8, 8>` fragments (converted from the registers their dot-operand layout
holds, or staged as float: half fragments would rest on the GPU widening half products, which
MSL does not state), each K chunk of at most 1024 accumulates into zeroed
`simdgroup_matrix<float, 8, 8>` fragments, and each chunk's exact partial is converted to int and
added to the int32 accumulator with wrapping (two's complement) addition, as Triton's int32
accumulator wraps (`km_int_partial`; signed overflow is undefined in MSL). docs/dot.md argues the
bound.

A float16 accumulator (fp16 operands, `out_dtype=float16` or a float16 `acc`) takes the same
form with one chunk: the dot's products accumulate from zero in float fragments over its whole
K, the sum is rounded to half once and added to the accumulator in half (`km_half_partial`), as
Triton's interpreter computes it and about as often as NVIDIA's float16 MMA rounds (after every
16-wide K step), where half fragments would round after every 8 products.

Refused at compile time with the kernel line: 3-D (batched) dots, M, N or K not a multiple of 8,
operand dtypes that differ or that have no path (fp64, fp8, integers other than int8), and
staging that needs more than 32 KiB of threadgroup memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from triton_metal.chip import THREADGROUP_MEMORY_BYTES
from triton_metal.errors import internal_error
from triton_metal.ir.ops.tt_compute import DotOp
from triton_metal.ir.types import ScalarType, TensorType

from .context import WARP, LoweringContext, round16
from .distribution import Distribution
from .dot_report import record_dot
from .dot_tiling import FRAG, DotPlan, Slot, plan_dot
from . import lower_tensor_dot, lower_tensor_dot_loop
from .msl_types import ctype_bytes, msl_type
from .program import (
    Apply,
    Assign,
    Barrier,
    Call,
    Convert,
    Declare,
    Expr,
    ExprStmt,
    Index,
    Lit,
    Scope,
    Staged,
    Var,
)
from .registry import lowers
from .tiles import write_tile
from .values import RegValue

_ACCUMULATORS = {"f32": ("f32",), "f16": ("f32", "f16"), "bf16": ("f32",), "i8": ("i32",)}


@lowers(DotOp)
def lower_dot(ctx: LoweringContext, op: DotOp) -> None:
    a_ty, b_ty, c_ty = _checked_types(ctx, op)
    carried = ctx.tensor_accumulators.get(op)
    if carried is not None:  # a cooperative tensor the K loop carries: lower_tensor_dot_loop.py
        accumulator, rescale = carried
        lower_tensor_dot_loop.run_carried(ctx, op, ctx.reg(op.a), ctx.reg(op.b), accumulator, rescale)
        return
    a, b, c = ctx.reg(op.a), ctx.reg(op.b), ctx.reg(op.c)
    dist = ctx.dist_of(op.result.type)
    assert dist is not None and a.dist is not None and b.dist is not None
    if c.dist != dist:
        raise internal_error(f"tt.dot accumulator layout {c_ty} differs from its result's {op.result.type}")
    if lower_tensor_dot.tensor_dot_applies(ctx, op):
        lower_tensor_dot.lower_tensor_dot(ctx, op, a, b, c, dist)  # MSL 4.0 targets: lower_tensor_dot.py
        return
    plan = plan_dot(dist, a.dist, b.dist)
    if plan is None:
        raise internal_error(
            f"tt.dot result layout {op.result.type} does not hold whole 8x8 fragments "
            "(the layout passes must give dot results a block layout)"
        )
    _lower_fragment_dot(ctx, op, plan, a, b, c, dist)


# -- checks --------------------------------------------------------------------------------------


def _checked_types(ctx: LoweringContext, op: DotOp) -> tuple[TensorType, TensorType, TensorType]:
    a_ty, b_ty, c_ty = op.a.type, op.b.type, op.c.type
    assert isinstance(a_ty, TensorType) and isinstance(b_ty, TensorType) and isinstance(c_ty, TensorType)
    if a_ty.rank != 2:
        raise ctx.error(
            f"batched (3-D) tl.dot is not supported on Apple GPUs yet: {list(a_ty.shape)} @ {list(b_ty.shape)}",
            hint="loop over the batch dimension (or put it in the grid) and use 2-D dots",
        )
    (m, k), n = a_ty.shape, b_ty.shape[1]
    for name, size in (("M", m), ("N", n), ("K", k)):
        if size % FRAG:
            raise ctx.error(
                f"tl.dot needs {name} to be a multiple of {FRAG} (simdgroup_matrix fragments are "
                f"{FRAG}x{FRAG}), got M={m}, N={n}, K={k}",
                hint=f"use block sizes that are multiples of {FRAG} (and at least 16)",
            )
    ea, eb, ec = a_ty.element, b_ty.element, c_ty.element
    assert isinstance(ea, ScalarType) and isinstance(eb, ScalarType) and isinstance(ec, ScalarType)
    if ea != eb:
        raise ctx.error(f"tl.dot operands must have one dtype, got {ea} and {eb}", hint="cast one operand with .to()")
    if ea.name not in _ACCUMULATORS:
        raise ctx.error(
            f"tl.dot has no Apple GPU path for {ea} operands",
            hint="supported operand dtypes: float32, float16, bfloat16 (fp32 accumulation) and int8 (int32)",
        )
    if ec.name not in _ACCUMULATORS[ea.name]:
        raise ctx.error(
            f"tl.dot of {ea} operands cannot accumulate in {ec}",
            hint=f"accumulate in {' or '.join(_ACCUMULATORS[ea.name])}",
        )
    return a_ty, b_ty, c_ty


# -- float dots on simdgroup matrices ------------------------------------------------------------


def _lower_fragment_dot(ctx: LoweringContext, op: DotOp, plan: DotPlan, a: RegValue, b: RegValue,
                        c: RegValue, dist: Distribution) -> None:
    ea, ec = _element(a), _element(c)
    kinds = _FragmentKinds.of(ea, ec)
    in_t, acc_t = kinds.operand, kinds.accumulator
    in_frag, acc_frag = f"simdgroup_matrix<{in_t}, 8, 8>", f"simdgroup_matrix<{acc_t}, 8, 8>"
    ctx.helpers.add("dot_fragments")
    out = ctx.declare_array(msl_type(ec), dist.num_regs)

    ctx.push()
    n, k = plan.n, plan.k
    staged = _stage_operands(ctx, op, a if plan.a is None else None, b if plan.b is None else None, in_t,
                             kinds.converts)
    # staged fragments are loaded at this SIMD group's origins
    rows = warp_offset(ctx, plan.warp_rows) if plan.a is None else None
    cols = warp_offset(ctx, plan.warp_cols) if plan.b is None else None

    # fragments of A, B and the accumulator, each built once
    a_frags = _fragments(ctx, in_frag, [(s.row, kk) for s in plan.acc for kk in range(0, k, FRAG)])
    b_frags = _fragments(ctx, in_frag, [(kk, s.col) for s in plan.acc for kk in range(0, k, FRAG)])
    for origin, target in a_frags.items():
        if plan.a is not None:
            ctx.emit(Assign(target, _from_regs(in_t, a, plan.a[origin], kinds.converts)))
        else:
            ctx.emit(_load(target, staged[0], k, Lit(str(origin[1])), _plus(rows, origin[0])))
    for origin, target in b_frags.items():
        if plan.b is not None:
            ctx.emit(Assign(target, _from_regs(in_t, b, plan.b[origin], kinds.converts)))
        else:
            ctx.emit(_load(target, staged[1], n, _plus(cols, origin[1]), Lit(str(origin[0]))))
    acc_name = ctx.fresh()
    ctx.emit(Declare(acc_name, acc_frag, len(plan.acc)))
    chunk = kinds.k_chunk or k
    for start in range(0, k, chunk):
        _accumulate_chunk(ctx, plan, kinds, acc_name, a_frags, b_frags, range(start, min(k, start + chunk), FRAG),
                          c.regs if start == 0 else out, out)
    ctx.copy_replicas(dist, out)
    if staged:
        ctx.scratch_done(op)  # the scratch may be reused once every SIMD group has loaded
    scope = Scope(ctx.pop())
    ctx.emit(scope)
    record_dot(ctx.dot_sites, op, scope, acc_name, [_array_name(f) for f in (a_frags, b_frags)],
               f"{in_t} x {in_t} -> {acc_t}", kinds.k_chunk)
    ctx.bind(op.result, RegValue(op.result.type, out, dist))


def _accumulate_chunk(ctx: LoweringContext, plan: DotPlan, kinds: "_FragmentKinds", acc_name: str,
                      a_frags: dict[tuple[int, int], Expr], b_frags: dict[tuple[int, int], Expr], steps: range,
                      before: tuple[Expr, ...], out: tuple[Expr, ...]) -> None:
    """The fragment products of the K steps `steps` into the accumulator fragments, and their
    registers into `out`. A float dot's fragments start from the accumulator registers `before`
    (one chunk: all of K); an int8 chunk's, or a float16 accumulator's one chunk, from zero, and
    the float partial is added to `before` by `kinds.join` (wrapping int32 arithmetic; half
    arithmetic after one rounding to half)."""
    acc = [Index(Var(acc_name), Lit(str(i))) for i in range(len(plan.acc))]
    zero = Call(f"km_frag<{kinds.accumulator}>", (Lit("0.0f"), Lit("0.0f")))
    for frag, slot in zip(acc, plan.acc):
        ctx.emit(Assign(frag, zero if kinds.join else Call(
            f"km_frag<{kinds.accumulator}>", (before[slot.regs[0]], before[slot.regs[1]]))))
    for kk in steps:
        for frag, slot in zip(acc, plan.acc):
            af, bf = a_frags[(slot.row, kk)], b_frags[(kk, slot.col)]
            ctx.emit(ExprStmt(Call("simdgroup_multiply_accumulate", (frag, af, bf, frag))))
    for frag, slot in zip(acc, plan.acc):
        for e, r in enumerate(slot.regs):
            elem = Call("km_frag_elem", (frag, Lit(str(e))))
            ctx.emit(Assign(out[r], Call(kinds.join, (before[r], elem)) if kinds.join else elem))


INT8_K_CHUNK = 1024
"""Most K an int8 dot sums in one float partial: 1024 products of magnitude at most 128 * 128 =
2^14 keep every partial sum an integer of magnitude at most 2^24, which float holds exactly."""


@dataclass(frozen=True)
class _FragmentKinds:
    """The fragment element types of a dot and how its operands reach them."""

    operand: str
    """MSL element type of the A and B fragments."""
    accumulator: str
    """MSL element type of the accumulator fragments."""
    converts: bool
    """Whether operand registers convert to `operand` (int8 to float)."""
    k_chunk: int
    """int8: the K each zeroed float partial sums before it joins the int32 accumulator; 0: all
    of K in one chunk."""
    join: str = ""
    """The helper adding a chunk's float partial, summed from zero, to the accumulator's
    registers (int8, float16 accumulators); "": the fragments are the accumulator itself."""

    @staticmethod
    def of(operand: ScalarType, accumulator: ScalarType) -> "_FragmentKinds":
        if operand.name == "i8":
            return _FragmentKinds("float", "float", True, INT8_K_CHUNK, "km_int_partial")
        if accumulator.name == "f16":
            return _FragmentKinds(msl_type(operand), "float", False, 0, "km_half_partial")
        return _FragmentKinds(msl_type(operand), msl_type(accumulator), False, 0)


def _array_name(frags: dict[tuple[int, int], Expr]) -> str:
    first = next(iter(frags.values()))
    assert isinstance(first, Index) and isinstance(first.base, Var)
    return first.base.name


def _fragments(ctx: LoweringContext, ctype: str, origins: list[tuple[int, int]]) -> dict[tuple[int, int], Expr]:
    """One fragment variable per distinct origin (an array of them), in first-use order."""
    unique = list(dict.fromkeys(origins))
    name = ctx.fresh()
    ctx.emit(Declare(name, ctype, len(unique)))
    return {o: Index(Var(name), Lit(str(i))) for i, o in enumerate(unique)}


def _from_regs(ctype: str, v: RegValue, slot: Slot, convert: bool = False) -> Expr:
    pair = (v.regs[slot.regs[0]], v.regs[slot.regs[1]])
    return Call(f"km_frag<{ctype}>", tuple(Convert(ctype, x) for x in pair) if convert else pair)


def _load(target: Expr, view: Expr, row_length: int, col: Expr, row: Expr) -> ExprStmt:
    # simdgroup_load(matrix, base, elements_per_row, origin (x = column, y = row))
    origin = Call("ulong2", tuple(Lit(f"{x.text}UL") if isinstance(x, Lit) else Convert("ulong", x) for x in (col, row)))
    return ExprStmt(Call("simdgroup_load", (target, view, Lit(f"{row_length}UL"), origin)))


def _plus(base: Expr | None, const: int) -> Expr:
    if base is None:
        return Lit(str(const))
    return base if const == 0 else Apply("add", (base, Lit(str(const))))


def warp_offset(ctx: LoweringContext, bases: tuple[int, ...]) -> Expr | None:
    """This SIMD group's offset (rows or columns) of its fragments, declared once in the scope."""
    return bit_offset(ctx, WARP, bases)


def bit_offset(ctx: LoweringContext, index: Expr, bases: tuple[int, ...]) -> Expr | None:
    """The sum of `bases[bit]` over the set bits of `index` (a SIMD group's or a lane's offset
    along one axis of a linear layout), declared once in the scope; None when every base is 0."""
    expr: Expr | None = None
    for bit, v in enumerate(bases):
        if not v:
            continue
        term: Expr = Apply("and", (Apply("shr_raw", (index, Lit(f"{bit}u"))), Lit("1u"))) if bit else Apply(
            "and", (index, Lit("1u")))
        term = Apply("mul", (term, Lit(f"{v}u")))
        expr = term if expr is None else Apply("add", (expr, term))
    if expr is None:
        return None
    name = ctx.fresh()
    ctx.emit(Declare(name, "uint", None, expr, const=True))
    return Var(name)


# -- staging through threadgroup memory ----------------------------------------------------------


def _stage_operands(ctx: LoweringContext, op: DotOp, a: RegValue | None, b: RegValue | None,
                    ctype: str, convert: bool = False) -> tuple[Expr, Expr] | tuple[()]:
    """Write the operands given (row-major, A as M x K, B as K x N) into threadgroup scratch as
    `ctype` (converting each register to it with `convert`) and wait for every thread; returns
    views of both. Earlier uses of the scratch ended with a barrier (or the layout passes placed
    one), so none is needed before the writes."""
    if a is None and b is None:
        return ()
    a_ty, b_ty = op.a.type, op.b.type
    assert isinstance(a_ty, TensorType) and isinstance(b_ty, TensorType)
    size = ctype_bytes(ctype)
    a_bytes = round16(a_ty.shape[0] * a_ty.shape[1] * size) if a is not None else 0
    b_bytes = round16(b_ty.shape[0] * b_ty.shape[1] * size) if b is not None else 0
    _check_scratch(ctx, op, a_bytes + b_bytes)
    base = ctx.op_scratch(op, a_bytes + b_bytes)
    a_view = ctx.scratch_view(ctype, base)
    b_view = ctx.scratch_view(ctype, base + a_bytes)
    ctx.emit(Staged(sum(t.shape[0] * t.shape[1] * size for t, v in ((a_ty, a), (b_ty, b)) if v is not None)))
    if a is not None:
        write_tile(ctx, a, a_view, a_ty.shape[1], ctype if convert else None)
    if b is not None:
        write_tile(ctx, b, b_view, b_ty.shape[1], ctype if convert else None)
    ctx.emit(Barrier())
    return a_view, b_view


def _check_scratch(ctx: LoweringContext, op: DotOp, nbytes: int) -> None:
    if nbytes > THREADGROUP_MEMORY_BYTES:
        a_ty, b_ty = op.a.type, op.b.type
        raise ctx.error(
            f"tl.dot of {a_ty} and {b_ty} stages {nbytes} bytes of operands in threadgroup memory; "
            f"Apple GPUs have {THREADGROUP_MEMORY_BYTES}",
            hint="use smaller BLOCK sizes (M, N or K)",
        )


def _element(v: RegValue) -> ScalarType:
    t = v.type
    assert isinstance(t, TensorType) and isinstance(t.element, ScalarType)
    return t.element
