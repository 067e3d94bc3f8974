"""Tensor-op dots whose accumulator a K loop carries as a cooperative tensor (MSL 4.0 targets).

A GEMM's K loop, `acc = tl.dot(a, b, acc)` or `acc += tl.dot(a, b)` in an `scf.for` (or the same
with `tl.dot_scaled`: lower_tensor_dot_scaled.py), takes this form (`carried_dots`) when the dot
lowers to tensor ops (`tensor_dot_applies`) and the data flow allows it: the loop's carried
accumulator is used by that dot alone (or by the add alone, whose other operand is the dot with
a zero accumulator), and the dot's result (the add's) only goes back to the loop. Nothing else
in the loop reads the accumulator, so it need not be in registers between iterations: it stays
the op's destination cooperative tensor (`mpp::tensor_ops::matmul2d`, Apple's
MPPTensorOpsMatMul2d.h), as shipping tensor-op GEMMs keep it.

* Before the loop (`begin_carried`): every thread writes its registers of the initial
  accumulator row-major into threadgroup scratch, a barrier, `km_tensor_acc` makes the
  cooperative tensor and `km_tensor_load` fills it from the scratch, a barrier.
* Each iteration (`run_carried`): every thread writes its registers of A and B row-major into
  threadgroup memory, a barrier, `km_tensor_run` accumulates A @ B into the cooperative tensor.
  Where the layout passes double-buffered the operands' conversions (`stage-dot-operands`) and
  the code generator bypasses them (`bypassed_conversions`), A and B go into those buffers,
  alternating between the two from one iteration to the next, and no barrier follows the run:
  the next iteration writes the other buffers, and the one after writes these only after its
  barrier, which every thread reaches after its run of this iteration (one barrier per K step).
  Otherwise the operands go into the code generator's own scratch: two sets of them alternating
  in the same way where both fit (`doubles_staging`), else one, and a barrier follows the run.
* A loop that rescales the accumulator first (`acc * f + dot(a, b)`, `dot(a, b, acc * f)`:
  attention's output; `lower_tensor_dot.rescale_of`) keeps it too: the multiply is folded away,
  the factors (one a row or a column) are staged with A and B, and after the barrier each thread
  scales the cooperative tensor's elements it holds before the run (`km_tensor_scale_*`).
* Where the staging alternates in the code generator's own scratch, no barrier follows the run,
  so other SIMD groups may still read it: any other use of that scratch in the loop waits for a
  barrier first (`LoweringContext.busy_own_scratch`), and so does the store after the loop.
* After the loop (`end_carried`): `km_tensor_store` writes the cooperative tensor row-major into
  scratch (after that barrier where the last iteration's alternating staging lies in those bytes),
  a barrier, every thread reads its registers of the loop's result, a barrier. The
  registers take the accumulator's layout, or that of the result's one user when it is a layout
  conversion (the store's, typically), which then costs nothing.

For `acc += tl.dot(a, b)` the add is folded into the accumulation (`LoweringContext.folded`), as
Triton's combine pass folds it into the dot: the products accumulate onto the running sum instead
of being summed apart and added (for floats, one rounding fewer).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from triton_metal.ir import Op, Value
from triton_metal.ir.core import Block, OpResult
from triton_metal.ir.ops import scf
from triton_metal.ir.ops.tt_compute import DotOp, DotScaledOp

from . import lower_tensor_dot_scaled
from .context import LoweringContext
from .dot_report import record_tensor_dot
from .lower_tensor_dot import (
    Rescale,
    accumulator_view,
    factor_bytes,
    flip,
    only_user,
    operand_buffers,
    operand_views,
    region_bytes,
    rescale_of,
    staging_over_c,
    tensor_dot_applies,
    tile_of,
    type_views,
)
from .program import Barrier, Call, Declare, Expr, ExprStmt, Scope, Staged, Var
from .tiles import read_tile, write_tile
from .values import CoopValue, RegValue

_ADDS = ("arith.addf", "arith.addi")


@dataclass(frozen=True)
class CarriedDot:
    """A dot whose accumulator the loop carries as a cooperative tensor."""

    index: int
    """Position of the accumulator among the loop's iter_args."""
    dot: DotOp | DotScaledOp
    add: Op | None
    """`acc + dot(a, b, 0)`: the add folded into the dot's accumulation (None: `dot(a, b, acc)`)."""
    rescale: Rescale | None = None
    """`acc * f` ahead of the dot, applied to the cooperative accumulator before each run."""


def carried_dots(ctx: LoweringContext, loop: scf.ForOp) -> list[CarriedDot]:
    """The accumulators of `loop` that can stay cooperative tensors (module doc)."""
    if not ctx.options.target.has_tensor_ops:
        return []
    block = loop.body.block
    term = block.ops[-1]
    found = []
    for i, arg in enumerate(block.args[1:]):
        user = only_user(block, arg)
        if user is None or user.parent is not block:
            continue
        # attention's `acc * f` first, used by the dot or the add alone
        scaled = user.name == "arith.mulf"
        value = user.results[0] if scaled else arg
        head = only_user(block, value) if scaled else user
        if head is None or head.parent is not block:
            continue
        # `dot(a, b, acc)`, acc its accumulator only (one use), or `acc + dot(a, b, 0)`
        direct = isinstance(head, (DotOp, DotScaledOp)) and head.c is value
        dot, add = (head, None) if direct else (_added_dot(head, value, block), head)
        if dot is None or (scaled and not isinstance(dot, DotOp)):
            continue
        rescale = rescale_of(dot) if scaled else None
        if scaled and (rescale is None or rescale.op is not user):
            continue
        last = add if add is not None else dot
        if dot.result.type != arg.type or only_user(block, last.results[0]) is not term:
            continue
        if term.operands.index(last.results[0]) != i or not tensor_dot_applies(ctx, dot, carried=True):
            continue
        found.append(CarriedDot(i, dot, add, rescale))
    return found


def carried_in(ctx: LoweringContext, func: Op) -> frozenset[Op]:
    """The dots of `func` whose K loops carry their accumulators (`carried_dots`)."""
    return frozenset(c.dot for loop in func.walk() if isinstance(loop, scf.ForOp) for c in carried_dots(ctx, loop))


def _added_dot(op: Op, acc: Value, block: object) -> DotOp | DotScaledOp | None:
    """The dot of `acc + dot(a, b, 0)` in `block`, when `op` is that add and the dot has no other use."""
    if op.name not in _ADDS:
        return None
    other = [v for v in op.operands if v is not acc]
    if len(other) != 1 or not isinstance(other[0], OpResult) or not isinstance(other[0].op, (DotOp, DotScaledOp)):
        return None
    dot = other[0].op
    if dot.parent is not block or not _is_zero(dot.c) or only_user(block, dot.result) is not op:
        return None
    return dot


def _is_zero(value: Value) -> bool:
    """A constant zero tensor (`arith.constant`, or a `tt.splat` of a scalar one)."""
    if not isinstance(value, OpResult):
        return False
    op = value.op
    if op.name == "tt.splat":
        return _is_zero(op.operands[0])
    return op.name == "arith.constant" and op.value == 0  # type: ignore[attr-defined]


def busy_across_iterations(ctx: LoweringContext, block: Block, carried: Iterable[CarriedDot]) -> Op | None:
    """The carried dot that leaves the lowering's own region busy from one iteration into the
    next (`LoweringContext.busy_own_scratch`): the last of the body's dots whose alternating
    staging lies there."""
    busy = [c.dot for c in carried if staging_over_c(ctx, c.dot)]
    return max(busy, key=block.ops.index, default=None)


def stages_behind(ctx: LoweringContext, conv: Op) -> bool:
    """Whether a bypassed conversion's kept barrier (`barrier_if_bypassed`, insert-barriers) can
    be left to the carried dot it feeds. That barrier orders reads pending before the conversion
    against a later write to the layout passes' buffers. Where its one user is a carried
    tensor-op dot of the same block, staging in the code generator's own scratch (which no layout
    buffer overlaps), and no op between them writes a layout buffer, the dot's staging barrier
    comes before any such write and orders the same reads (attention's value block: one barrier
    a key block fewer)."""
    block = conv.parent
    dot = only_user(block, conv.results[0])
    if not isinstance(dot, DotOp) or dot.parent is not block or dot not in ctx.tensor_accumulators:
        return False
    if operand_buffers(dot) is not None or getattr(dot, "smem_offset", None) is not None:
        return False
    between = block.ops[block.ops.index(conv) + 1:block.ops.index(dot)]  # type: ignore[union-attr]
    return not any(getattr(o, "smem_offset", None) is not None for op in between for o in op.walk())


def begin_carried(ctx: LoweringContext, carried: CarriedDot, init: RegValue) -> CoopValue:
    """Before the loop: the cooperative accumulator, loaded from the initial registers."""
    dot = carried.dot
    tile = tile_of(ctx, dot)
    ctx.helpers.add("tensor_dot")
    c_view = accumulator_view(ctx, dot, tile, carried=True)
    name = ctx.fresh()
    dist = ctx.dist_of(dot.result.type)
    assert dist is not None
    if isinstance(dot, DotScaledOp) and lower_tensor_dot_scaled.on_input_tensors(ctx, dot):
        lower_tensor_dot_scaled.begin_accumulators(ctx, dot, name, init, c_view)  # each SIMD group's blocks
        return CoopValue(dot.result.type, name, dist)
    write_tile(ctx, init, c_view, tile.n)
    ctx.emit(Barrier())
    call = Call(f"km_tensor_acc<{tile.shape_args}, {tile.acc_t}>", type_views(ctx, dot, tile, carried=True))
    ctx.emit(Declare(name, "auto", None, call))
    ctx.emit(ExprStmt(Call(f"km_tensor_load<{tile.m}, {tile.n}>", (Var(name), c_view))))
    ctx.scratch_done(dot)
    return CoopValue(dot.result.type, name, dist)


def run_carried(ctx: LoweringContext, op: DotOp, a: RegValue, b: RegValue, acc: CoopValue,
                rescale: Rescale | None = None) -> None:
    """In the loop: A and B staged (and a rescale's factors), one barrier, the rescale, the run
    into the cooperative accumulator."""
    tile = tile_of(ctx, op)
    ctx.stages_again(op)
    ctx.push()
    operands = operand_views(ctx, op, tile, carried=True)
    ctx.emit(Staged(sum(region_bytes(op)[:2]) + factor_bytes(op)))
    write_tile(ctx, a, operands.a, tile.k)
    write_tile(ctx, b, operands.b, tile.n)
    _stage_factors(ctx, rescale, operands.factors)
    ctx.emit(Barrier())
    if rescale is not None:
        _scale(ctx, rescale, acc, operands.factors)
    ctx.emit(ExprStmt(Call(f"km_tensor_run<{tile.shape_args}>", (operands.a, operands.b, Var(acc.name)))))
    if operands.parity is not None:
        flip(ctx, operands.parity)  # no barrier: the next iteration writes the other buffers
    else:
        ctx.scratch_done(op)
    scope = Scope(ctx.pop())
    ctx.emit(scope)
    if operands.parity is not None and staging_over_c(ctx, op):
        ctx.busy_own_scratch(op)
    elif operands.parity is None:
        ctx.busy_own_scratch(None)
    record_tensor_dot(ctx.dot_sites, op, scope, tile.warps, "carried" if rescale is None else "rescaled")
    ctx.bind(op.result, acc)


def _stage_factors(ctx: LoweringContext, rescale: Rescale | None, view: Expr | None) -> None:
    """A rescale's factors, one a row or a column, written into threadgroup memory at `view`."""
    if rescale is not None and view is not None:
        factors = ctx.reg(rescale.factor)
        write_tile(ctx, factors, view, factors.type.shape[1])  # type: ignore[union-attr]


def _scale(ctx: LoweringContext, rescale: Rescale, acc: CoopValue, factors: Expr | None) -> None:
    """`acc *= f` on the cooperative accumulator's elements (templates/helpers/tensor_dot.metal)."""
    if factors is None:
        call = Call("km_tensor_scale", (Var(acc.name), ctx.reg(rescale.factor).regs[0]))
    else:
        call = Call(f"km_tensor_scale_{('rows', 'cols')[rescale.axis]}", (Var(acc.name), factors))  # type: ignore[index]
    ctx.emit(ExprStmt(call))


def end_carried(ctx: LoweringContext, loop: scf.ForOp, carried: CarriedDot, acc: CoopValue) -> RegValue:
    """After the loop: the cooperative accumulator back in registers. They take the layout of
    the loop result's one user when that is a layout conversion (which then costs nothing: its
    result is these registers), else the accumulator's own."""
    dot = carried.dot
    tile = tile_of(ctx, dot)
    c_view = accumulator_view(ctx, dot, tile, carried=True)
    result = loop.results[carried.index]
    conv = only_user(loop.parent, result)
    ty, dist = acc.type, acc.dist
    # (not one of a double-buffered pair: the pair's reads wait for the second one's barrier)
    if (conv is not None and conv.name == "ttg.convert_layout" and conv not in ctx.bypassed
            and not getattr(conv, "double_buffer", None)):
        ty = conv.results[0].type
        dist = ctx.dist_of(ty)  # type: ignore[assignment]
        assert dist is not None
        ctx.folded[conv] = result
    out = ctx.declare_array(tile.acc_t, dist.num_regs)
    value = RegValue(ty, out, dist)
    if isinstance(dot, DotScaledOp) and lower_tensor_dot_scaled.on_input_tensors(ctx, dot):
        lower_tensor_dot_scaled.end_accumulators(ctx, dot, acc.name, c_view, value)
        return value
    ctx.emit(ExprStmt(Call(f"km_tensor_store<{tile.m}, {tile.n}>", (Var(acc.name), c_view))))
    ctx.emit(Barrier())
    read_tile(ctx, c_view, tile.n, dist, out)
    ctx.scratch_done(dot)
    return value

