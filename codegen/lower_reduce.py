"""Lowering of `tt.reduce`: within each thread, across the lanes of a SIMD group, then across
SIMD groups through threadgroup memory.

1. Thread: registers that differ only along the reduced axis are combined in axis order (copies a
   thread holds twice are skipped).
2. Lanes: lane bits along the axis are combined by `simd_shuffle_xor` butterflies with the
   combine region inlined; when every lane bit lies along the axis and each result of the
   combine region is a single known operation (add, max, min, and, or, xor on a type the SIMD
   functions take) of its own operand's two values (`a + b`; `(a + c, b + d)` for two operands),
   one `simd_sum`/`simd_max`/... an operand does it.
3. SIMD groups: each thread writes its partials to threadgroup scratch, a barrier, each thread
   combines the partials of the SIMD groups along the axis, and a barrier before the scratch is
   reused.

After the butterflies every lane holds the result of its line, so the result layout (the
source's slice along the axis) is read from registers without further movement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from triton_metal.ir import Region
from triton_metal.ir.ops import arith
from triton_metal.ir.ops.tt_compute import ReduceOp
from triton_metal.ir.types import ScalarType, element_type

from .context import LoweringContext
from .distribution import Distribution
from .msl_types import msl_type
from .program import Apply, Assign, Barrier, Call, Convert, Expr, If, Index, Lit, Reinterpret, Staged, Var
from .registry import lowers
from .values import RegValue

_SIMD_TYPES = frozenset({"f32", "f16", "i32", "u32", "i16", "u16", "i8", "u8"})

_SIMD_OP = {
    arith.AddFOp: "simd_sum", arith.AddIOp: "simd_sum",
    arith.MaxNumFOp: "simd_max", arith.MaxSIOp: "simd_max", arith.MaxUIOp: "simd_max",
    arith.MinNumFOp: "simd_min", arith.MinSIOp: "simd_min", arith.MinUIOp: "simd_min",
    arith.AndIOp: "simd_and", arith.OrIOp: "simd_or", arith.XOrIOp: "simd_xor",
}


def combine(ctx: LoweringContext, region: Region, accs: Sequence[Expr], news: Sequence[Expr]) -> list[Expr]:
    """Inline the combine region on (accs, news); returns the combined values (in variables)."""
    block = region.block
    for arg, e in zip(block.args, [*accs, *news]):
        ctx.bind(arg, RegValue(arg.type, (e,), None))
    assert ctx.lower_ops is not None
    ctx.lower_ops(ctx, block.ops)
    term = block.ops[-1]
    out = []
    for v in term.operands:
        e = ctx.reg(v).regs[0]
        out.append(ctx.materialize([e], msl_type(_scalar(v.type)))[0])
    return out


def _scalar(ty: object) -> ScalarType:
    el = element_type(ty)  # type: ignore[arg-type]
    assert isinstance(el, ScalarType)
    return el


def simd_ops(region: Region) -> list[str] | None:
    """The SIMD-group reduction of each operand equal to the combine region, if its k-th result is
    one known operation of its k-th accumulated and k-th new value and nothing else is computed."""
    block = region.block
    n = len(block.args) // 2
    ops, term = block.ops[:-1], block.ops[-1]
    if n == 0 or len(block.args) != 2 * n or len(ops) != n or len(term.operands) != n:
        return None
    fns = []
    for k, res in enumerate(term.operands):
        op = ops[k]
        fn = _SIMD_OP.get(type(op))
        if fn is None or len(op.results) != 1 or op.results[0] is not res:
            return None
        if {id(x) for x in op.operands} != {id(block.args[k]), id(block.args[k + n])}:
            return None
        fns.append(fn)
    return fns


def simd_op(region: Region) -> str | None:
    """The SIMD-group reduction equal to a one-operand combine region, if it is one known operation."""
    fns = simd_ops(region)
    return fns[0] if fns is not None and len(fns) == 1 else None


def shuffle_xor(x: Expr, mask: int, ety: ScalarType) -> Expr:
    """`simd_shuffle_xor` for every element type (bool, bfloat and 64-bit go through others)."""
    m = Convert("ushort", Lit(str(mask)))
    if ety.name in _SIMD_TYPES:
        return Call("simd_shuffle_xor", (x, m))
    if ety.name == "bf16":
        return Convert("bfloat", Call("simd_shuffle_xor", (Convert("float", x), m)))
    if ety.is_bool():
        return Apply("ne", (Call("simd_shuffle_xor", (Convert("ushort", x), m)), Lit("0")))
    return Reinterpret(msl_type(ety), Call("simd_shuffle_xor", (Reinterpret("uint2", x), m)))


@dataclass
class Lines:
    """The registers of a thread grouped by line (all coordinates but the axis)."""

    keys: list[tuple[int, ...]]
    regs: list[list[int]]


def lines_of(dist: Distribution, axis: int) -> Lines:
    firsts = dist.first_registers()
    keys: list[tuple[int, ...]] = []
    regs: list[list[int]] = []
    index: dict[tuple[int, ...], int] = {}
    for r, c in enumerate(dist.reg_coords):
        if not firsts[r]:
            continue
        key = c[:axis] + (0,) + c[axis + 1:]
        if key not in index:
            index[key] = len(keys)
            keys.append(key)
            regs.append([])
        regs[index[key]].append(r)
    for rs in regs:
        rs.sort(key=lambda r: dist.reg_coords[r][axis])
    return Lines(keys, regs)


@lowers(ReduceOp)
def lower_reduce(ctx: LoweringContext, op: ReduceOp) -> None:
    srcs = [ctx.reg(v) for v in op.srcs]
    etys = [_scalar(v.type) for v in op.srcs]
    dist = srcs[0].dist
    assert dist is not None
    if any(s.dist != dist for s in srcs):
        raise ctx.error("internal: reduce operands have different layouts")
    axis = op.axis
    lines = lines_of(dist, axis)

    # 1. within the thread
    partial: list[list[Expr]] = []
    for rs in lines.regs:
        acc = [s.regs[rs[0]] for s in srcs]
        for r in rs[1:]:
            acc = combine(ctx, op.combine, acc, [s.regs[r] for s in srcs])
        partial.append(list(acc))

    # 2. across lanes
    lane_bits = [i for i, b in enumerate(dist.lane_bases) if b[axis]]
    if lane_bits:
        fns = simd_ops(op.combine)
        native = fns is not None and len(lane_bits) == 5 and all(t.name in _SIMD_TYPES for t in etys)
        for g, acc in enumerate(partial):
            if native:
                assert fns is not None
                partial[g] = [ctx.materialize([Call(fn, (a,))], msl_type(t))[0]
                              for fn, a, t in zip(fns, acc, etys)]
                continue
            for i in lane_bits:
                other = [ctx.materialize([shuffle_xor(a, 1 << i, t)], msl_type(t))[0] for a, t in zip(acc, etys)]
                acc = combine(ctx, op.combine, acc, other)
            partial[g] = acc

    # 3. across SIMD groups
    warp_bits = [j for j, b in enumerate(dist.warp_bases) if b[axis]]
    if warp_bits:
        partial = _across_warps(ctx, op, dist, partial, etys, warp_bits, axis)

    # 4. the result
    if len(op.results) and not hasattr(op.results[0].type, "shape"):
        for k, res in enumerate(op.results):
            ctx.bind(res, RegValue(res.type, (partial[0][k],), None))
        return
    out_dist = ctx.dist_of(op.results[0].type)
    assert out_dist is not None
    drop = lambda c: c[:axis] + c[axis + 1:]  # noqa: E731
    for db, sb in zip(out_dist.lane_bases, dist.lane_bases):
        if db != drop(sb):
            raise ctx.error("internal: the reduce result's layout is not the slice of its operand's")
    for db, sb in zip(out_dist.warp_bases, dist.warp_bases):
        if db != drop(sb):
            raise ctx.error("internal: the reduce result's layout is not the slice of its operand's")
    index = {drop(k): g for g, k in enumerate(lines.keys)}
    for k, res in enumerate(op.results):
        regs = []
        for c in out_dist.reg_coords:
            g = index.get(c)
            if g is None:
                raise ctx.error("internal: a reduce result register has no line in its operand")
            regs.append(partial[g][k])
        ctx.bind(res, RegValue(res.type, tuple(regs), out_dist))


def scratch_slots(dist: Distribution, axis: int) -> tuple[int, int, int]:
    """(slots per SIMD group, shift, width): the lanes of a SIMD group hold one partial per value
    of their lane bits off the axis; when the axis's lane bits are contiguous (`width` bits from
    `shift`) those lanes are numbered compactly, otherwise every lane has a slot (width 0)."""
    bits = [i for i, b in enumerate(dist.lane_bases) if b[axis]]
    if bits and bits == list(range(bits[0], bits[0] + len(bits))):
        return 32 >> len(bits), bits[0], len(bits)
    return 32, 0, 0


def reduce_scratch_bytes(dist: Distribution, axis: int, etys: Sequence[ScalarType], num_warps: int) -> int:
    """Threadgroup scratch a reduction across SIMD groups uses (one 16-aligned array per operand
    of lines x SIMD groups x slots partials)."""
    slots, _, _ = scratch_slots(dist, axis)
    groups = len(lines_of(dist, axis).keys)
    return sum((groups * num_warps * slots * _bytes(t) + 15) // 16 * 16 for t in etys)


def _across_warps(
    ctx: LoweringContext, op: ReduceOp, dist: Distribution, partial: list[list[Expr]],
    etys: list[ScalarType], warp_bits: list[int], axis: int,
) -> list[list[Expr]]:
    nw = ctx.num_warps
    groups = len(partial)
    slots, shift, width = scratch_slots(dist, axis)

    def need(n: int) -> int:  # scratch for the partials of n lines
        return sum((n * nw * slots * _bytes(t) + 15) // 16 * 16 for t in etys)

    # past the scratch the allocation granted (the threadgroup memory limit), the lines go
    # through it a few at a time
    granted = getattr(op, "smem_bytes", None)
    per = groups
    if granted is not None and int(granted) < need(groups):
        per = max([n for n in range(1, groups + 1) if need(n) <= int(granted)], default=1)
    offsets = []
    total = 0
    for t in etys:
        offsets.append(total)
        total += (per * nw * slots * _bytes(t) + 15) // 16 * 16
    base = ctx.op_scratch(op, total)
    views = [ctx.scratch_view(_store_type(t), base + o) for t, o in zip(etys, offsets)]
    lane, warp = Var("km_lane"), Var("km_warp")
    if width:
        # the lane's bits off the axis, packed: (lane & low) | ((lane >> (shift + width)) << shift)
        low = Apply("and", (lane, Lit(f"{(1 << shift) - 1}u")))
        high = Apply("shl_raw", (Apply("shr_raw", (lane, Lit(f"{shift + width}u"))), Lit(f"{shift}u")))
        packed = Apply("or", (low, high)) if shift + width < 5 else low
        lane_slot: Expr = ctx.materialize([packed if shift else (high if shift + width < 5 else Lit("0u"))], "uint")[0]
        writer: Expr | None = Apply("eq", (Apply("and", (lane, Lit(f"{((1 << width) - 1) << shift}u"))), Lit("0u")))
    else:
        lane_slot, writer = lane, None

    def slot(g: int, w: Expr) -> Expr:
        # (g * nw + w) * slots + lane_slot
        gw = Apply("add", (Lit(f"{g * nw}u"), w)) if g else w
        return Apply("add", (Apply("mul", (gw, Lit(f"{slots}u"))), lane_slot)) if slots > 1 else gw

    axis_mask = sum(1 << j for j in warp_bits)
    rest_mask = (nw - 1) & ~axis_mask
    rest: Expr | None = Apply("and", (warp, Lit(f"{rest_mask}u"))) if rest_mask else None
    # partners in the order of their coordinate along the axis
    combos = sorted(range(1 << len(warp_bits)), key=lambda c: sum(
        dist.warp_bases[warp_bits[i]][axis] for i in range(len(warp_bits)) if c >> i & 1))
    out: list[list[Expr]] = []
    ctx.emit(Staged(groups * nw * slots * sum(_bytes(t) for t in etys)))
    for g0 in range(0, groups, per):
        if g0:
            ctx.emit(Barrier())  # the previous lines' partials are read before they are overwritten
        writes = []
        for g in range(g0, min(g0 + per, groups)):
            for v, a, t in zip(views, partial[g], etys):
                writes.append(Assign(Index(v, slot(g - g0, warp)), _to_store(a, t)))
        # every lane of a line holds its partial; one of them writes it
        if writer is not None:
            ctx.emit(If(writer, tuple(writes)))
        else:
            for w_ in writes:
                ctx.emit(w_)
        ctx.emit(Barrier())
        for g in range(g0, min(g0 + per, groups)):
            acc: list[Expr] | None = None
            for c in combos:
                bits = sum(1 << warp_bits[i] for i in range(len(warp_bits)) if c >> i & 1)
                if rest is None:
                    w: Expr = Lit(f"{bits}u")
                else:
                    w = Apply("or", (rest, Lit(f"{bits}u"))) if bits else rest
                # read into registers now: the scratch may be rewritten after the closing barrier
                vals = [ctx.materialize([_from_store(Index(v, slot(g - g0, w)), t)], msl_type(t), force=True)[0]
                        for v, t in zip(views, etys)]
                acc = vals if acc is None else combine(ctx, op.combine, acc, vals)
            assert acc is not None
            out.append(acc)
    ctx.scratch_done(op)
    return out


def _bytes(t: ScalarType) -> int:
    return max(1, t.bitwidth // 8)


def _store_type(t: ScalarType) -> str:
    return "uchar" if t.is_bool() else msl_type(t)


def _to_store(e: Expr, t: ScalarType) -> Expr:
    return Convert("uchar", e) if t.is_bool() else e


def _from_store(e: Expr, t: ScalarType) -> Expr:
    return Apply("ne", (e, Lit("0"))) if t.is_bool() else e
