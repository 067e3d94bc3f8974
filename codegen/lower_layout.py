"""Lowering of layout conversions and of the layout passes' barriers.

`convert_layout` moves a tensor between layouts. When every thread already holds the elements
its new registers need (the layouts agree up to a register renaming), no code is emitted.
Otherwise the owners of the elements write them into threadgroup scratch in row-major order (at
the offset the threadgroup-memory allocation gave the op), a barrier, and every thread reads the
elements of its new registers. A tensor larger than the scratch the allocation granted (past the
threadgroup memory limit) moves in row-major pieces of that size: each piece is written by the
owners of its elements, read by the threads whose registers need them, between barriers. A
barrier the passes inserted (`ttg.barrier`) orders threadgroup memory between ops that reuse
scratch.
"""

from __future__ import annotations

from collections.abc import Sequence

from triton_metal.chip import THREADGROUP_MEMORY_BYTES
from triton_metal.errors import internal_error
from triton_metal.ir import Op, Value
from triton_metal.ir.types import ScalarType, element_type
from triton_metal.passes.allocate_threadgroup_memory import STAGE_BYTES

from .context import LoweringContext, ctype_of
from .distribution import Distribution
from .lower_memory import owner_condition
from .lower_tensor import local_mapping, src_regs, with_regs
from .lower_tensor_dot_loop import stages_behind
from .msl_types import ctype_bytes
from .program import Apply, Assign, Barrier, Convert, Declare, Expr, If, Index, Lit, Staged, Var
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
    granted = getattr(op, "smem_bytes", None)
    reads = [flat_index(ctx, dst, r) for r in range(dst.num_regs)]
    out = exchange(ctx, op, val.dist, regs, stored, ctype, numel, reads, None if granted is None else int(granted))
    ctx.bind(result, with_regs(val, result.type, out, dst))
    ctx.scratch_done(op)


def exchange(ctx: LoweringContext, op: Op, src: Distribution, regs: Sequence[Expr], stored: str, ctype: str,
             numel: int, reads: Sequence[Expr], granted: int | None) -> tuple[Expr, ...]:
    """Write the `numel` elements `regs` hold (distributed by `src`) to scratch in row-major
    order, then read element `reads[i]` into register `i`; stored as `stored` (`uchar` for
    booleans). Past the scratch `granted` (or, without a grant, past the threadgroup memory
    limit) the tensor moves in row-major pieces of `STAGE_BYTES`, each written by the owners of
    its elements and read by the registers that need them, between barriers."""
    size = numel * ctype_bytes(stored)
    budget = granted if granted is not None else (size if size <= THREADGROUP_MEMORY_BYTES else STAGE_BYTES)
    piece = numel if budget >= size else budget // ctype_bytes(stored)
    offset = ctx.op_scratch(op, piece * ctype_bytes(stored))
    view = ctx.scratch_view(stored, offset)
    staged = piece < numel
    alt = getattr(op, "smem_alt_offset", None)
    if alt is not None:
        if staged:
            raise internal_error("a double-buffered conversion must fit its buffer whole")
        shift = Apply("mul", (Var(_parity(ctx)), Lit(str((int(alt) - offset) // ctype_bytes(stored)))))
        ctx.scratch_end = max(ctx.scratch_end, int(alt) + (size + 15) // 16 * 16)
        return _double_buffered(ctx, op, src, regs, stored, ctype, size, reads, view, shift)
    own = owner_condition(ctx, src)
    firsts = src.first_registers()
    out = ctx.declare_array(ctype, len(reads)) if staged else ()
    ctx.emit(Staged(numel * ctype_bytes(stored)))
    for lo in range(0, numel, piece):
        if lo:
            ctx.emit(Barrier())  # the previous piece's reads are done before it is overwritten
        for r in range(src.num_regs):
            if not firsts[r]:
                continue
            v = regs[r] if stored == ctype else Convert(stored, regs[r])
            idx = flat_index(ctx, src, r)
            cond = _all_of(own, _within(idx, lo, piece) if staged else None)
            stmt = Assign(Index(view, _minus(idx, lo)), v)
            ctx.emit(If(cond, (stmt,)) if cond is not None else stmt)
        ctx.emit(Barrier())
        values: list[Expr] = []
        for r, idx in enumerate(reads):
            x: Expr = Index(view, _minus(idx, lo))
            values.append(Apply("ne", (x, Lit("0"))) if stored != ctype else x)
            if staged:
                ctx.emit(If(_within(idx, lo, piece), (Assign(out[r], values[-1]),)))
        if not staged:
            out = ctx.materialize(values, ctype, force=True)
    return tuple(out)


def _parity(ctx: LoweringContext) -> str:
    """A counter of a conversion's executions, 0 and 1 in turn (declared in the prologue)."""
    name = ctx.fresh()
    ctx.prologue.add(Declare(name, "int", None, Lit("0")))
    return name


def _double_buffered(ctx: LoweringContext, op: Op, src: Distribution, regs: Sequence[Expr], stored: str, ctype: str,
                     nbytes: int, reads: Sequence[Expr], view: Expr, shift: Apply) -> tuple[Expr, ...]:
    """`exchange` for a double-buffered conversion (`stage-dot-operands`): executions alternate
    between two buffers, the second `shift` elements past the first (the parity counter in
    `shift` flips after the reads). A joined one only writes: its reads wait in
    `ctx.deferred_reads` for the next conversion's barrier, which covers both."""
    own = owner_condition(ctx, src)
    firsts = src.first_registers()
    ctx.emit(Staged(nbytes))
    for r in range(src.num_regs):
        if firsts[r]:
            v = regs[r] if stored == ctype else Convert(stored, regs[r])
            stmt = Assign(Index(view, Apply("add", (flat_index(ctx, src, r), shift))), v)
            ctx.emit(If(own, (stmt,)) if own is not None else stmt)
    out = ctx.declare_array(ctype, len(reads))
    for r, idx in enumerate(reads):
        x: Expr = Index(view, Apply("add", (idx, shift)))
        ctx.deferred_reads.append(Assign(out[r], Apply("ne", (x, Lit("0"))) if stored != ctype else x))
    parity = shift.args[0]
    ctx.deferred_reads.append(Assign(parity, Apply("sub", (Lit("1"), parity))))
    if not getattr(op, "joined", None):
        ctx.emit(Barrier())
        for stmt in ctx.deferred_reads:
            ctx.emit(stmt)
        ctx.deferred_reads.clear()
    return tuple(out)


def _minus(idx: Expr, lo: int) -> Expr:
    return Apply("sub", (idx, Lit(str(lo)))) if lo else idx


def _within(idx: Expr, lo: int, count: int) -> Expr:
    """`lo <= idx < lo + count`: the element belongs to the piece staged now."""
    return Apply("land", (Apply("ge", (idx, Lit(str(lo)))), Apply("lt", (idx, Lit(str(lo + count))))))


def _all_of(a: Expr | None, b: Expr | None) -> Expr | None:
    if a is None or b is None:
        return a if b is None else b
    return Apply("land", (a, b))


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
            if op in ctx.bypassed:  # a tensor-op dot stages the source itself
                if getattr(op, "barrier_if_bypassed", None) and not stages_behind(ctx, op):
                    ctx.emit(Barrier())  # the one a later write was ordered by
                ctx.bind(op.results[0], ctx.lookup(op.operands[0]))
                return
            convert(ctx, op, op.operands[0], op.results[0])
    barrier = getattr(ttg, "BarrierOp", None)
    if barrier is not None:
        @lowers(barrier)
        def lower_ttg_barrier(ctx: LoweringContext, op: Op) -> None:
            ctx.emit(Barrier())


_register()
