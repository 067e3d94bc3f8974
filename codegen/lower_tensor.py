"""Lowering of ops that create tensors or move their elements: program ids, `make_range`,
`splat`, `broadcast`, `expand_dims`, `reshape`, `trans`, `join`, `split`, `cat`.

Shape ops are register renamings when the layouts keep the data in the thread: for each result
register the rule finds the source register holding the element it needs (`local_mapping`), and
checks on the layouts' bases that this holds in every thread. When it does not, the layout
passes should have put a `convert_layout` in between; the rule then reports the op.
"""

from __future__ import annotations

from collections.abc import Callable

from triton_metal.ir import Value
from triton_metal.ir.ops import tt

from .context import LoweringContext
from .distribution import Distribution
from .program import Apply, Expr, Lit, Var
from .registry import lowers
from .values import PtrValue, RegValue, Val

Coords = tuple[int, ...]

# -- program ids ---------------------------------------------------------------------------------

_AXES = "xyz"


@lowers(tt.GetProgramIdOp)
def lower_program_id(ctx: LoweringContext, op: tt.GetProgramIdOp) -> None:
    ctx.program_ids.add(op.axis)
    ctx.bind(op.result, RegValue(op.result.type, (Var(f"km_pid_{_AXES[op.axis]}"),), None))


@lowers(tt.GetNumProgramsOp)
def lower_num_programs(ctx: LoweringContext, op: tt.GetNumProgramsOp) -> None:
    ctx.program_ids.add(op.axis)
    ctx.bind(op.result, RegValue(op.result.type, (Var(f"km_nprog_{_AXES[op.axis]}"),), None))


# -- creation ------------------------------------------------------------------------------------


@lowers(tt.MakeRangeOp)
def lower_make_range(ctx: LoweringContext, op: tt.MakeRangeOp) -> None:
    dist = ctx.dist_of(op.result.type)
    assert dist is not None
    regs = []
    for r in range(dist.num_regs):
        c = ctx.coord(dist, r, 0)
        regs.append(c if op.start == 0 else Apply("add", (c, Lit(str(op.start)))))
    ctx.bind(op.result, RegValue(op.result.type, ctx.materialize(regs, "int"), dist))


@lowers(tt.SplatOp)
def lower_splat(ctx: LoweringContext, op: tt.SplatOp) -> None:
    src = ctx.lookup(op.src)
    dist = ctx.dist_of(op.result.type)
    assert dist is not None
    ctx.bind(op.result, with_regs(src, op.result.type, (src_regs(src)[0],) * dist.num_regs, dist))


# -- generic register movement -------------------------------------------------------------------


def src_regs(v: Val) -> tuple[Expr, ...]:
    return v.offsets if isinstance(v, PtrValue) else v.regs


def with_regs(v: Val, ty: object, regs: tuple[Expr, ...], dist: Distribution | None) -> Val:
    """A value like `v` (a pointer keeps its buffer) with new registers, type and distribution."""
    if isinstance(v, PtrValue):
        return PtrValue(ty, v.buffer, regs, v.offset_ctype, dist)  # type: ignore[arg-type]
    return RegValue(ty, regs, dist)  # type: ignore[arg-type]


def local_mapping(src: Distribution, dst: Distribution, f: Callable[[Coords], Coords],
                  linear: Callable[[Coords], Coords] | None = None) -> list[int] | None:
    """For each register of `dst`, the register of `src` that holds element `f(coords)` in the
    same thread, or None when some thread lacks it. `f` must be linear over bits (projections,
    permutations, row-major reshapes of power-of-two shapes), or affine with `linear` its linear
    part (which maps the thread bases)."""
    lin = linear or f
    for db, sb in zip(dst.lane_bases, src.lane_bases):
        if lin(db) != sb:
            return None
    for db, sb in zip(dst.warp_bases, src.warp_bases):
        if lin(db) != sb:
            return None
    out = []
    for c in dst.reg_coords:
        r = src.register_of(f(c))
        if r is None:
            return None
        out.append(r)
    return out


def move(ctx: LoweringContext, op_value: Value, result: Value, f: Callable[[Coords], Coords], what: str,
         linear: Callable[[Coords], Coords] | None = None) -> None:
    src = ctx.lookup(op_value)
    dst = ctx.dist_of(result.type)
    assert dst is not None
    if src.dist is None:
        ctx.bind(result, with_regs(src, result.type, (src_regs(src)[0],) * dst.num_regs, dst))
        return
    mapping = local_mapping(src.dist, dst, f, linear)
    if mapping is None:
        raise ctx.error(
            f"internal: the layouts of this {what} move data between threads "
            f"({op_value.type} -> {result.type}); the layout passes must insert a convert_layout"
        )
    regs = src_regs(src)
    ctx.bind(result, with_regs(src, result.type, tuple(regs[r] for r in mapping), dst))


@lowers(tt.BroadcastOp)
def lower_broadcast(ctx: LoweringContext, op: tt.BroadcastOp) -> None:
    src_shape = op.src.type.shape  # type: ignore[union-attr]
    keep = [s != 1 for s in src_shape]
    move(ctx, op.src, op.result, lambda c: tuple(x if k else 0 for x, k in zip(c, keep)), "broadcast")


@lowers(tt.ExpandDimsOp)
def lower_expand_dims(ctx: LoweringContext, op: tt.ExpandDimsOp) -> None:
    axis = op.axis
    move(ctx, op.src, op.result, lambda c: c[:axis] + c[axis + 1:], "expand_dims")


@lowers(tt.TransOp)
def lower_trans(ctx: LoweringContext, op: tt.TransOp) -> None:
    order = op.order
    inverse = [0] * len(order)
    for i, o in enumerate(order):
        inverse[o] = i
    move(ctx, op.src, op.result, lambda c: tuple(c[inverse[d]] for d in range(len(order))), "trans")


def _flat(c: Coords, shape: tuple[int, ...]) -> int:
    i = 0
    for x, s in zip(c, shape):
        i = i * s + x
    return i


def _unflat(i: int, shape: tuple[int, ...]) -> Coords:
    out = []
    for s in reversed(shape):
        out.append(i % s)
        i //= s
    return tuple(reversed(out))


@lowers(tt.ReshapeOp)
def lower_reshape(ctx: LoweringContext, op: tt.ReshapeOp) -> None:
    src_shape = op.src.type.shape  # type: ignore[union-attr]
    dst_shape = op.result.type.shape  # type: ignore[union-attr]
    move(ctx, op.src, op.result, lambda c: _unflat(_flat(c, dst_shape), src_shape), "reshape")


def piecewise(
    ctx: LoweringContext, result: Value, pieces: list[tuple[Val, Callable[[Coords], Coords]]],
    choose: Callable[[Coords], int], what: str,
) -> None:
    """Each result element comes from piece `choose(coords)` at `f(coords)` (join, cat)."""
    dst = ctx.dist_of(result.type)
    assert dst is not None
    regs: list[Expr] = []
    for c in dst.reg_coords:
        val, f = pieces[choose(c)]
        if val.dist is None:
            regs.append(src_regs(val)[0])
            continue
        ok = all(f(db) == sb for db, sb in zip(dst.lane_bases, val.dist.lane_bases)) and all(
            f(db) == sb for db, sb in zip(dst.warp_bases, val.dist.warp_bases))
        r = val.dist.register_of(f(c)) if ok else None
        if r is None:
            raise ctx.error(
                f"internal: the layouts of this {what} move data between threads; "
                "the layout passes must insert a convert_layout"
            )
        regs.append(src_regs(val)[r])
    ctx.bind(result, with_regs(pieces[0][0], result.type, tuple(regs), dst))


@lowers(tt.JoinOp)
def lower_join(ctx: LoweringContext, op: tt.JoinOp) -> None:
    dst = ctx.dist_of(op.result.type)
    assert dst is not None
    if any(b[-1] for b in (*dst.lane_bases, *dst.warp_bases)):
        raise ctx.error("internal: the layout of join's result splits each joined pair over threads")
    drop = lambda c: c[:-1]  # noqa: E731
    piecewise(ctx, op.result, [(ctx.lookup(op.lhs), drop), (ctx.lookup(op.rhs), drop)], lambda c: c[-1], "join")


@lowers(tt.SplitOp)
def lower_split(ctx: LoweringContext, op: tt.SplitOp) -> None:
    for k, res in enumerate(op.results):
        move(ctx, op.src, res, lambda c, k=k: (*c, k), "split", lambda c: (*c, 0))


@lowers(tt.CatOp)
def lower_cat(ctx: LoweringContext, op: tt.CatOp) -> None:
    dst = ctx.dist_of(op.result.type)
    assert dst is not None
    half = op.lhs.type.shape[0]  # type: ignore[union-attr]
    if any(b[0] & half for b in (*dst.lane_bases, *dst.warp_bases)):
        raise ctx.error("internal: the layout of cat's result puts the two halves in different threads")
    inner = lambda c: (c[0] % half, *c[1:])  # noqa: E731
    piecewise(ctx, op.result, [(ctx.lookup(op.lhs), inner), (ctx.lookup(op.rhs), inner)],
              lambda c: int(c[0] >= half), "cat")
