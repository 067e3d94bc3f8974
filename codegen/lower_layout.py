"""Lowering of layout conversions and of the layout passes' barriers.

`convert_layout` moves a tensor between layouts. When every thread already holds the elements
its new registers need (the layouts agree up to a register renaming), no code is emitted.
Otherwise the owners of the elements write them into threadgroup scratch in row-major order (at
the offset the threadgroup-memory allocation gave the op), a barrier, and every thread reads the
elements of its new registers. A barrier the passes inserted (`ttg.barrier`) orders threadgroup
memory between ops that reuse scratch.
"""

from __future__ import annotations

from triton_metal.ir import Op, Value
from triton_metal.ir.types import ScalarType, element_type

from .context import LoweringContext, ctype_of
from .distribution import Distribution
from .lower_memory import owner_condition
from .lower_tensor import local_mapping, src_regs, with_regs
from .program import Apply, Assign, Barrier, Convert, Expr, If, Index, Lit
from .registry import lowers
from .values import PtrValue


def flat_index(ctx: LoweringContext, dist: Distribution, reg: int) -> Expr:
    """Row-major flat index of the element register `reg` holds (an int expression)."""
    e: Expr | None = None
    stride = 1
    for d in reversed(range(dist.rank)):
        c = ctx.coord(dist, reg, d)
        term = c if stride == 1 else Apply("mul", (c, Lit(str(stride))))
        e = term if e is None else Apply("add", (term, e))
        stride *= dist.shape[d]
    assert e is not None
    return e


def convert(ctx: LoweringContext, op: Op, src: Value, result: Value) -> None:
    val = ctx.lookup(src)
    dst = ctx.dist_of(result.type)
    assert dst is not None
    if val.dist is None:
        ctx.bind(result, with_regs(val, result.type, (src_regs(val)[0],) * dst.num_regs, dst))
        return
    mapping = local_mapping(val.dist, dst, lambda c: c)
    regs = src_regs(val)
    if mapping is not None:
        ctx.bind(result, with_regs(val, result.type, tuple(regs[r] for r in mapping), dst))
        return
    if isinstance(val, PtrValue):
        ctype = val.offset_ctype
        stored = ctype
    else:
        el = element_type(result.type)
        assert isinstance(el, ScalarType)
        ctype = ctype_of(result.type)
        stored = "uchar" if el.is_bool() else ctype
    numel = 1
    for s in dst.shape:
        numel *= s
    size = numel * _size_of(stored)
    view = ctx.scratch_view(stored, ctx.op_scratch(op, size))
    own = owner_condition(ctx, val.dist)
    firsts = val.dist.first_registers()
    for r in range(val.dist.num_regs):
        if not firsts[r]:
            continue
        v = regs[r] if stored == ctype else Convert(stored, regs[r])
        stmt = Assign(Index(view, flat_index(ctx, val.dist, r)), v)
        ctx.emit(If(own, (stmt,)) if own is not None else stmt)
    ctx.emit(Barrier())
    out = []
    for r in range(dst.num_regs):
        x: Expr = Index(view, flat_index(ctx, dst, r))
        if stored != ctype:
            x = Apply("ne", (x, Lit("0")))
        out.append(x)
    ctx.bind(result, with_regs(val, result.type, ctx.materialize(out, ctype, force=True), dst))
    ctx.scratch_done(op)


def _size_of(ctype: str) -> int:
    return {"bool": 1, "char": 1, "uchar": 1, "short": 2, "ushort": 2, "half": 2, "bfloat": 2,
            "int": 4, "uint": 4, "float": 4, "long": 8, "ulong": 8}[ctype]


def _register() -> None:
    """Rules for the layout ops, when the IR defines them."""
    try:
        from triton_metal.ir.ops import ttg  # type: ignore[attr-defined]
    except ImportError:  # pragma: no cover - depends on the checkout
        return
    conv = getattr(ttg, "ConvertLayoutOp", None)
    if conv is not None:
        @lowers(conv)
        def lower_convert_layout(ctx: LoweringContext, op: Op) -> None:
            convert(ctx, op, op.operands[0], op.results[0])
    barrier = getattr(ttg, "BarrierOp", None)
    if barrier is not None:
        @lowers(barrier)
        def lower_ttg_barrier(ctx: LoweringContext, op: Op) -> None:
            ctx.emit(Barrier())


_register()
