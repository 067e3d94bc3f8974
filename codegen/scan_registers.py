"""The fast path of `tt.scan`: in registers, SIMD shuffles and one scratch round per chunk.

It applies to forward scans whose layout orders the axis's bits as a scan needs them: from the
lowest, the bits a thread holds in consecutive registers, then contiguous lane bits, then warp
bits, then register bits again (the layout wrapping around: "chunks"). Per line and chunk:

1. each thread scans its consecutive registers (the combine region inlined);
2. the threads' totals are scanned across the lanes of the line: `simd_prefix_exclusive_sum`
   for sums over whole SIMD groups, else Hillis-Steele steps with `simd_shuffle_up`;
3. the SIMD groups' totals go through threadgroup scratch (two barriers), and each thread
   combines the totals of the groups before it;
4. the result is carry (earlier chunks) . group prefix . lane prefix . register prefix, in that
   order, so combine functions need not commute.

`plan_register_scan` says whether the layout qualifies (None: use the scratch walk).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from triton_metal.ir.types import ScalarType

from .context import LoweringContext
from .distribution import Distribution
from .msl_types import msl_type
from .program import Apply, Assign, Barrier, Call, Convert, Expr, Index, Lit, Reinterpret, Var

_SIMD_TYPES = frozenset({"f32", "f16", "i32", "u32", "i16", "u16", "i8", "u8"})


@dataclass(frozen=True)
class ScanPlan:
    low: int
    """Consecutive elements per thread along the axis (within a chunk)."""
    lane_shift: int
    lane_bits: int
    warp_bits: tuple[int, ...]
    """Warp-id bits along the axis, lowest position along the axis first."""
    chunk: int
    """Elements of the axis one chunk covers."""


def _log2(n: int) -> int:
    return n.bit_length() - 1


def plan_register_scan(dist: Distribution, axis: int) -> ScanPlan | None:
    n = dist.num_regs
    if n & (n - 1):
        return None
    reg_vals = sorted(v for v in (dist.reg_coords[1 << i][axis] for i in range(_log2(n))) if v)
    lane = [(i, b[axis]) for i, b in enumerate(dist.lane_bases) if b[axis]]
    warp = sorted(((b[axis], j) for j, b in enumerate(dist.warp_bases) if b[axis]))
    expected = 1
    low = 0
    while low < len(reg_vals) and reg_vals[low] == expected:
        low += 1
        expected *= 2
    span_low = expected
    if lane:
        positions = [i for i, _ in lane]
        if positions != list(range(positions[0], positions[0] + len(positions))):
            return None
        for _, v in lane:
            if v != expected:
                return None
            expected *= 2
    for v, _ in warp:
        if v != expected:
            return None
        expected *= 2
    chunk = expected
    for v in reg_vals[low:]:
        if v != expected:
            return None
        expected *= 2
    if expected != dist.shape[axis]:
        return None
    return ScanPlan(span_low, lane[0][0] if lane else 0, len(lane), tuple(j for _, j in warp), chunk)


def _shuffle(fn: str, x: Expr, arg: Expr, ety: ScalarType) -> Expr:
    if ety.name in _SIMD_TYPES:
        return Call(fn, (x, arg))
    if ety.name == "bf16":
        return Convert("bfloat", Call(fn, (Convert("float", x), arg)))
    if ety.is_bool():
        return Apply("ne", (Call(fn, (Convert("ushort", x), arg)), Lit("0")))
    return Reinterpret(msl_type(ety), Call(fn, (Reinterpret("uint2", x), arg)))


Combine = Callable[[Sequence[Expr], Sequence[Expr]], list[Expr]]


def scan_in_registers(ctx: LoweringContext, plan: ScanPlan, dist: Distribution, axis: int,
                      srcs: Sequence[Sequence[Expr]], etys: Sequence[ScalarType], combine: Combine,
                      native_sum: bool, scratch_offset: Callable[[int], int], reverse: bool = False) -> list[list[Expr]]:
    """The inclusive scan of each source's registers (same layout), per register. `reverse` scans
    from the end: the same algorithm in the mirrored order (positions counted from the end,
    shuffles down instead of up)."""
    ctypes = [msl_type(t) for t in etys]
    nw = ctx.num_warps
    firsts = dist.first_registers()
    lines: dict[tuple[int, ...], list[int]] = {}
    for r, c in enumerate(dist.reg_coords):
        if firsts[r]:
            lines.setdefault(c[:axis] + (0,) + c[axis + 1:], []).append(r)
    out: list[list[Expr | None]] = [[None] * dist.num_regs for _ in srcs]
    lane_mask = ((1 << plan.lane_bits) - 1) << plan.lane_shift
    lane_pos = None
    if plan.lane_bits:
        pos: Expr = Apply("and", (Apply("shr_raw", (Var("km_lane"), Lit(f"{plan.lane_shift}u"))),
                                  Lit(f"{(1 << plan.lane_bits) - 1}u")))
        if reverse:
            pos = Apply("sub", (Lit(f"{(1 << plan.lane_bits) - 1}u"), pos))
        lane_pos = _hoist(ctx, pos, "uint")
    shuffle_toward = "simd_shuffle_down" if reverse else "simd_shuffle_up"
    warp_pos = None
    if plan.warp_bits:
        e: Expr | None = None
        for k, j in enumerate(plan.warp_bits):
            bit = Apply("and", (Apply("shr_raw", (Var("km_warp"), Lit(f"{j}u"))), Lit("1u")))
            term = bit if k == 0 else Apply("shl_raw", (bit, Lit(f"{k}u")))
            e = term if e is None else Apply("or", (e, term))
        assert e is not None
        if reverse:
            e = Apply("sub", (Lit(f"{(1 << len(plan.warp_bits)) - 1}u"), e))
        warp_pos = _hoist(ctx, e, "uint")
    views: list[Expr] = []
    if plan.warp_bits:
        groups = len(lines)
        total = 0
        offs = []
        for t in etys:
            offs.append(total)
            total += (groups * nw * 32 * max(1, t.bitwidth // 8) + 15) // 16 * 16
        base = scratch_offset(total)
        views = [ctx.scratch_view("uchar" if t.is_bool() else msl_type(t), base + o) for t, o in zip(etys, offs)]

    for g, regs in enumerate(lines.values()):
        regs.sort(key=lambda r: dist.reg_coords[r][axis], reverse=reverse)
        chunks: dict[int, list[int]] = {}
        for r in regs:
            chunks.setdefault(dist.reg_coords[r][axis] // plan.chunk, []).append(r)
        carry: list[Expr] | None = None
        for c in sorted(chunks, reverse=reverse):
            rs = chunks[c]
            # 1. the thread's consecutive registers
            incl = [[s[rs[0]] for s in srcs]]
            for r in rs[1:]:
                incl.append(combine(incl[-1], [s[r] for s in srcs]))
            total = incl[-1]
            # 2. across the lanes of the line
            lane_excl: list[Expr] | None = None
            lane_incl = total
            if plan.lane_bits:
                assert lane_pos is not None
                if native_sum and plan.lane_bits == 5 and not reverse:
                    lane_excl = [_mat(ctx, Call("simd_prefix_exclusive_sum", (total[0],)), ctypes[0])]
                    lane_incl = [_mat(ctx, Call("simd_sum", (total[0],)), ctypes[0])]
                else:
                    y = total
                    for step in range(plan.lane_bits):
                        d = 1 << step
                        delta = Convert("ushort", Lit(str(d << plan.lane_shift)))
                        other = [_mat(ctx, _shuffle(shuffle_toward, v, delta, t), ct)
                                 for v, t, ct in zip(y, etys, ctypes)]
                        both = combine(other, y)
                        keep = Apply("ge", (lane_pos, Lit(f"{d}u")))
                        y = [_mat(ctx, Apply("select", (keep, b, v)), ct) for b, v, ct in zip(both, y, ctypes)]
                    delta = Convert("ushort", Lit(str(1 << plan.lane_shift)))
                    lane_excl = [_mat(ctx, _shuffle(shuffle_toward, v, delta, t), ct)
                                 for v, t, ct in zip(y, etys, ctypes)]
                    # the line's last lane in scan order holds its total
                    if reverse:
                        last: Expr = Apply("and", (Var("km_lane"), Lit(f"{31 & ~lane_mask}u")))
                    else:
                        last = Apply("or", (Var("km_lane"), Lit(f"{lane_mask}u")))
                    lane_incl = [_mat(ctx, _shuffle("simd_shuffle", v, Convert("ushort", last), t), ct)
                                 for v, t, ct in zip(y, etys, ctypes)]
            # 3. across SIMD groups
            warp_prefix: list[Expr] | None = None
            chunk_total = lane_incl
            if plan.warp_bits:
                assert warp_pos is not None
                slot = lambda w: Apply("add", (Apply("mul", (  # noqa: E731
                    Apply("add", (Lit(f"{g * nw}u"), w)), Lit("32u"))), Var("km_lane")))
                for v, x, t in zip(views, lane_incl, etys):
                    ctx.emit(Assign(Index(v, slot(Var("km_warp"))), Convert("uchar", x) if t.is_bool() else x))
                ctx.emit(Barrier())
                axis_mask = sum(1 << j for j in plan.warp_bits)
                rest = Apply("and", (Var("km_warp"), Lit(f"{(nw - 1) & ~axis_mask}u")))
                running: list[Expr] | None = None
                prefixes: list[list[Expr]] = []
                nwb = len(plan.warp_bits)
                for p in range(1 << nwb):
                    q = (1 << nwb) - 1 - p if reverse else p  # the SIMD group's position in the axis
                    bits = sum(1 << j for k, j in enumerate(plan.warp_bits) if q >> k & 1)
                    w = Apply("or", (rest, Lit(f"{bits}u"))) if bits else rest
                    vals = []
                    for v, t, ct in zip(views, etys, ctypes):
                        x: Expr = Index(v, slot(w))
                        # read into a register now: the scratch may be rewritten after the barrier
                        vals.append(ctx.materialize([Apply("ne", (x, Lit("0"))) if t.is_bool() else x], ct,
                                                    force=True)[0])
                    running = vals if running is None else combine(running, vals)
                    prefixes.append(running)
                ctx.emit(Barrier())
                chunk_total = prefixes[-1]
                # the prefix of SIMD group at position p is prefixes[p - 1]
                warp_prefix = prefixes[0]
                for p in range(2, len(prefixes) + 1):
                    pick = Apply("ge", (warp_pos, Lit(f"{p}u")))
                    warp_prefix = [_mat(ctx, Apply("select", (pick, a, b)), ct)
                                   for a, b, ct in zip(prefixes[p - 1], warp_prefix, ctypes)]
            # 4. assemble
            for i, r in enumerate(rs):
                v = incl[i]
                if lane_excl is not None:
                    assert lane_pos is not None
                    both = combine(lane_excl, v)
                    has = Apply("gt", (lane_pos, Lit("0u")))
                    v = [_mat(ctx, Apply("select", (has, b, x)), ct) for b, x, ct in zip(both, v, ctypes)]
                if warp_prefix is not None:
                    assert warp_pos is not None
                    both = combine(warp_prefix, v)
                    has = Apply("gt", (warp_pos, Lit("0u")))
                    v = [_mat(ctx, Apply("select", (has, b, x)), ct) for b, x, ct in zip(both, v, ctypes)]
                if carry is not None:
                    v = combine(carry, v)
                for k in range(len(srcs)):
                    out[k][r] = v[k]
            carry = chunk_total if carry is None else combine(carry, chunk_total)
    # copies a thread holds twice take the value of the first register with their element
    for r in range(dist.num_regs):
        if not firsts[r]:
            first = dist.register_of(dist.reg_coords[r])
            assert first is not None
            for k in range(len(srcs)):
                out[k][r] = out[k][first]
    return [[e for e in o if e is not None] for o in out]


def _mat(ctx: LoweringContext, e: Expr, ctype: str) -> Expr:
    return ctx.materialize([e], ctype)[0]


def _hoist(ctx: LoweringContext, e: Expr, ctype: str) -> Expr:
    name = ctx.fresh()
    from .program import Declare

    ctx.emit(Declare(name, ctype, None, e, const=True))
    return Var(name)
