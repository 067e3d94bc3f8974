"""Lowering of `tt.gather` and `tt.histogram` through threadgroup scratch.

* gather: the source is written to scratch in row-major order, a barrier, and each result register
  reads the source element its index names along the axis (indices outside the axis are clamped
  into it, so no read leaves the scratch: Triton leaves them undefined), in the buffer
  `allocate-threadgroup-memory` grants (which may share bytes with other ops' buffers); a source
  past the threadgroup memory limit moves in pieces (`lower_layout.exchange`).
* histogram: the bins are zeroed in scratch, a barrier, every element held by its owner adds one
  to its bin with a threadgroup atomic (elements outside `[0, bins)` or masked off are skipped),
  a barrier, and each result register reads its bin.
Both end with a barrier so the scratch may be reused, except a gather in its granted buffer,
whose reuse `insert-barriers` orders.
"""

from __future__ import annotations

from triton_metal.ir.ops import tt
from triton_metal.ir.types import ScalarType, element_type

from .context import LoweringContext, ctype_of
from .lower_layout import exchange
from .lower_memory import owner_condition
from .program import Apply, Assign, Barrier, Call, Convert, Expr, ExprStmt, ForRange, If, Index, Lit, PtrCast, Var
from .registry import lowers


@lowers(tt.GatherOp)
def lower_gather(ctx: LoweringContext, op: tt.GatherOp) -> None:
    src = ctx.reg(op.src)
    idx = ctx.reg(op.indices)
    assert src.dist is not None and idx.dist is not None
    dst = ctx.dist_of(op.result.type)
    assert dst is not None
    el = element_type(op.result.type)
    assert isinstance(el, ScalarType)
    ctype = ctype_of(op.result.type)
    stored = "uchar" if el.is_bool() else ctype
    numel = 1
    for s in src.dist.shape:
        numel *= s
    shape = src.dist.shape
    axis = op.axis
    if idx.dist != dst:
        raise ctx.error("internal: gather's indices and result have different layouts")
    reads: list[Expr] = []
    for r in range(dst.num_regs):
        e: Expr | None = None
        stride = 1
        for d in reversed(range(len(shape))):
            if d == axis:
                c: Expr = Call("clamp", (Convert("int", idx.regs[r]), Lit("0"), Lit(str(shape[d] - 1))))
            else:
                c = ctx.coord(dst, r, d)
            term = c if stride == 1 else Apply("mul", (c, Lit(str(stride))))
            e = term if e is None else Apply("add", (term, e))
            stride *= shape[d]
        assert e is not None
        reads.append(ctx.materialize([e], "int")[0])
    granted = getattr(op, "smem_bytes", None)
    out = exchange(ctx, op, src.dist, src.regs, stored, ctype, numel, reads, None if granted is None else int(granted))
    from .values import RegValue

    ctx.bind(op.result, RegValue(op.result.type, out, dst))
    ctx.scratch_done(op)


@lowers(tt.HistogramOp)
def lower_histogram(ctx: LoweringContext, op: tt.HistogramOp) -> None:
    src = ctx.reg(op.src)
    mask = ctx.reg(op.mask) if op.mask is not None else None
    assert src.dist is not None
    dst = ctx.dist_of(op.result.type)
    assert dst is not None
    bins = op.result.type.shape[0]  # type: ignore[union-attr]
    off = ctx.op_scratch(op, bins * 4)
    view = ctx.scratch_view("int", off)
    atomics = PtrCast("threadgroup", "atomic_int", Var("km_smem"), off)
    i = ctx.fresh()
    ctx.emit(ForRange(i, "int", Apply("cast_int", (Var("km_tid"),)), Lit(str(bins)),
                      Lit(str(ctx.options.threads_per_program)), (Assign(Index(view, Var(i)), Lit("0")),)))
    ctx.emit(Barrier())
    own = owner_condition(ctx, src.dist)
    firsts = src.dist.first_registers()
    for r in range(src.dist.num_regs):
        if not firsts[r]:
            continue
        b = Convert("long", src.regs[r])
        cond: Expr = Apply("land", (Apply("ge", (b, Lit("0"))), Apply("lt", (b, Lit(str(bins))))))
        if mask is not None:
            cond = Apply("land", (cond, mask.regs[r]))
        if own is not None:
            cond = Apply("land", (cond, own))
        add = Call("atomic_fetch_add_explicit", (
            Apply("add", (atomics, Convert("int", src.regs[r]))), Lit("1"), Var("memory_order_relaxed")))
        ctx.emit(If(cond, (ExprStmt(add),)))
    ctx.emit(Barrier())
    from .values import RegValue

    out = [Index(view, ctx.coord(dst, r, 0)) for r in range(dst.num_regs)]
    ctx.bind(op.result, RegValue(op.result.type, ctx.materialize(out, "int", force=True), dst))
    ctx.scratch_done(op)
