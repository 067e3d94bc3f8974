"""Lowering of `tt.scan`.

Forward scans whose layout suits it run in registers with SIMD shuffles (`scan_registers`).
The general path goes through threadgroup memory: every thread writes its elements to scratch (row-major), a barrier, then one thread per line
walks the line in order (from its end when `reverse`) with the combine region inlined, writing
the inclusive prefixes back; a barrier, and every thread reads its registers back, then a barrier
before the scratch is reused. Correct for every layout, combine function and element type; the
walk is sequential along the axis.
"""

from __future__ import annotations

from triton_metal.ir.ops.tt_compute import ScanOp
from triton_metal.ir.types import ScalarType

from .context import LoweringContext
from .distribution import Distribution
from .lower_reduce import _SIMD_TYPES, _bytes, _from_store, _scalar, _store_type, _to_store, combine, simd_op
from .msl_types import msl_type
from .program import Apply, Assign, Barrier, Declare, Expr, ForRange, Index, Lit, Var
from .registry import lowers
from .scan_registers import plan_register_scan, scan_in_registers
from .values import RegValue


def _flat(ctx: LoweringContext, coords: list[Expr], shape: tuple[int, ...]) -> Expr:
    e: Expr | None = None
    stride = 1
    for c, s in reversed(list(zip(coords, shape))):
        term = c if stride == 1 else Apply("mul", (c, Lit(str(stride))))
        e = term if e is None else Apply("add", (term, e))
        stride *= s
    assert e is not None
    return e


@lowers(ScanOp)
def lower_scan(ctx: LoweringContext, op: ScanOp) -> None:
    srcs = [ctx.reg(v) for v in op.srcs]
    etys: list[ScalarType] = [_scalar(v.type) for v in op.srcs]
    dist = srcs[0].dist
    assert dist is not None
    if any(s.dist != dist for s in srcs):
        raise ctx.error("internal: scan operands have different layouts")
    plan = plan_register_scan(dist, op.axis)
    if plan is not None:
        native = simd_op(op.combine) == "simd_sum" and len(srcs) == 1 and etys[0].name in _SIMD_TYPES
        outs = scan_in_registers(
            ctx, plan, dist, op.axis, [s.regs for s in srcs], etys,
            lambda a, b: combine(ctx, op.combine, a, b), native, lambda n: ctx.op_scratch(op, n), op.reverse,
        )
        for res, regs in zip(op.results, outs):
            ctx.bind(res, RegValue(res.type, tuple(regs), dist))
        return
    _scan_through_scratch(ctx, op, srcs, etys, dist)


def _scan_through_scratch(ctx: LoweringContext, op: ScanOp, srcs: list[RegValue], etys: list[ScalarType],
                          dist: Distribution) -> None:
    shape = dist.shape
    numel = 1
    for s in shape:
        numel *= s
    axis = op.axis
    sizes = [numel * _bytes(t) for t in etys]
    offsets, total = [], 0
    for s in sizes:
        offsets.append(total)
        total += (s + 15) // 16 * 16
    base = ctx.op_scratch(op, total)
    views = [ctx.scratch_view(_store_type(t), base + o) for t, o in zip(etys, offsets)]

    flat_of_reg = [
        _flat(ctx, [ctx.coord(dist, r, d) for d in range(len(shape))], shape) for r in range(dist.num_regs)
    ]
    firsts = dist.first_registers()
    for r in range(dist.num_regs):
        if firsts[r]:
            for v, s, t in zip(views, srcs, etys):
                ctx.emit(Assign(Index(v, flat_of_reg[r]), _to_store(s.regs[r], t)))
    ctx.emit(Barrier())

    # one thread per line
    n_axis = shape[axis]
    lines = numel // n_axis
    stride = 1
    for s in shape[axis + 1:]:
        stride *= s
    line = ctx.fresh()
    ctx.push()
    # the line's first element: the line index spread over the other dims (row-major)
    lv = Var(line)
    inner = Apply("irem_raw", (lv, Lit(str(stride)))) if stride > 1 else Lit("0")
    outer = Apply("idiv_raw", (lv, Lit(str(stride)))) if stride > 1 else lv
    start = Apply("add", (Apply("mul", (outer, Lit(str(stride * n_axis)))), inner)) if stride > 1 else Apply(
        "mul", (lv, Lit(str(n_axis))))
    start_name = ctx.fresh()
    ctx.emit(Declare(start_name, "int", None, start, const=True))
    first_pos = (n_axis - 1) if op.reverse else 0

    def at(i: Expr | int) -> Expr:
        off = Apply("mul", (i if not isinstance(i, int) else Lit(str(i)), Lit(str(stride))))
        return Apply("add", (Var(start_name), off))

    accs = [ctx.materialize([_from_store(Index(v, at(first_pos)), t)], msl_type(t), force=True) for v, t in zip(views, etys)]
    acc_vars = [a[0] for a in accs]
    # accs are one-element arrays: km_k[0]; the walk updates them
    step = ctx.fresh()
    ctx.push()
    pos: Expr = Apply("sub", (Lit(str(n_axis - 1)), Var(step))) if op.reverse else Var(step)
    pos_name = ctx.fresh()
    ctx.emit(Declare(pos_name, "int", None, pos, const=True))
    news = [ctx.materialize([_from_store(Index(v, at(Var(pos_name))), t)], msl_type(t))[0] for v, t in zip(views, etys)]
    out = combine(ctx, op.combine, acc_vars, news)
    for a, o in zip(acc_vars, out):
        ctx.emit(Assign(a, o))
    for v, a, t in zip(views, acc_vars, etys):
        ctx.emit(Assign(Index(v, at(Var(pos_name))), _to_store(a, t)))
    walk = ctx.pop()
    ctx.emit(ForRange(step, "int", Lit("1"), Lit(str(n_axis)), Lit("1"), walk))
    per_line = ctx.pop()
    threads = ctx.options.threads_per_program
    ctx.emit(ForRange(line, "int", Apply("cast_int", (Var("km_tid"),)), Lit(str(lines)), Lit(str(threads)), per_line))
    ctx.emit(Barrier())
    for res, v, t in zip(op.results, views, etys):
        regs = [_from_store(Index(v, flat_of_reg[r]), t) for r in range(dist.num_regs)]
        ctx.bind(res, RegValue(res.type, ctx.materialize(regs, msl_type(t), force=True), dist))
    ctx.scratch_done(op)
