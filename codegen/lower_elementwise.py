"""Lowering of elementwise ops: constants, integer and float arithmetic, math functions,
comparisons, select and casts.

Each op maps register by register (operands share the result's layout: the layout passes made
them agree). bf16 has no arithmetic of its own in the generated code: operands are converted to
float, computed, and converted back explicitly (MSL refuses implicit float -> bfloat). Math
functions of half and bfloat are computed in float as well (as the interpreter does), then
rounded once. Integer division and remainder by zero give 0, and shifts by the width or more
give 0 (or the sign), as the interpreter defines them (helpers in templates/helpers/int_ops.metal).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from triton_metal.errors import internal_error
from triton_metal.fp8 import B15, FNUZ, FORMATS
from triton_metal.ir import ops
from triton_metal.ir.ops import arith
from triton_metal.ir.types import ScalarType, element_type

from .context import LoweringContext, ctype_of
from .distribution import Distribution
from .msl_types import fp8_format_name, msl_type, uint_of_width
from .program import Apply, Call, Convert, Expr, Lit, MathCall, Reinterpret
from .registry import lowers
from .values import PtrValue, RegValue

# -- helpers -------------------------------------------------------------------------------------


def elementwise(
    ctx: LoweringContext, op: ops.arith.Op, operands: Sequence[RegValue], fn: Callable[..., Expr]
) -> None:
    """Bind `op`'s result to `fn` applied register by register (scalars broadcast)."""
    result = op.result
    dist = ctx.dist_of(result.type)
    n = dist.num_regs if dist is not None else 1
    for v in operands:
        if v.dist is not None and v.dist != dist:
            raise ctx.error(
                f"internal layout mismatch: operand in {v.dist.shape} layout differs from the result's "
                "(the layout passes must insert a convert_layout)"
            )
    lead = None
    if dist is not None and ctx.axis_info is not None:
        lead = shared_registers(dist, ctx.axis_info.get(result).constancy)
    if lead is None:
        lead = list(range(n))
    # a register that holds the same element value as an earlier one (the result is constant
    # over aligned runs the thread holds: a mask over vectors of a row) reads that one's, so a
    # thread computes and keeps one per run
    leaders = sorted(set(lead))
    exprs = []
    for r in leaders:
        args = [v.regs[r] if v.dist is not None else v.regs[0] for v in operands]
        exprs.append(fn(*args))
    ctype = ctype_of(result.type)
    kept = dict(zip(leaders, ctx.materialize(exprs, ctype)))
    ctx.bind(result, RegValue(result.type, tuple(kept[lead[r]] for r in range(n)), dist))


def shared_registers(dist: Distribution, constancy: Sequence[int]) -> list[int] | None:
    """For each register of `dist`, the first register holding the same element value, for a
    value constant over aligned runs of `constancy[d]` elements along each dim d (axis info);
    None when no two registers share one. A run counts as the largest power of two dividing
    the constancy that also divides every lane's and warp's offset along d, so that registers
    whose coordinates agree in the bits above the run lie in one run in every thread."""
    runs = []
    for d in range(dist.rank):
        c = constancy[d] & -constancy[d] if constancy[d] > 0 else 1
        while c > 1 and any(b[d] % c for b in (*dist.lane_bases, *dist.warp_bases)):
            c //= 2
        runs.append(c)
    if all(c == 1 for c in runs):
        return None
    first: dict[tuple[int, ...], int] = {}
    lead = [first.setdefault(tuple(x // c for x, c in zip(coord, runs)), r)
            for r, coord in enumerate(dist.reg_coords)]
    return lead if len(first) < len(lead) else None


def as_float(e: Expr, ty: ScalarType) -> Expr:
    return e if ty.name == "f32" else Convert("float", e)


def from_float(e: Expr, ty: ScalarType) -> Expr:
    return e if ty.name == "f32" else Convert(msl_type(ty), e)


def _el(v: object) -> ScalarType:
    t = element_type(v.type)  # type: ignore[attr-defined]
    assert isinstance(t, ScalarType)
    return t


def _narrow(ty: ScalarType) -> bool:
    """Integer types C promotes to int: results must be converted back (wrap-around)."""
    return ty.is_int() and ty.bitwidth < 32


def _unsigned(ty: ScalarType) -> str:
    return "bool" if ty.is_bool() else uint_of_width(ty.bitwidth)


def _signed(ty: ScalarType) -> str:
    return {8: "char", 16: "short", 32: "int", 64: "long"}[ty.bitwidth]


# -- constants -----------------------------------------------------------------------------------


@lowers(arith.ConstantOp)
def lower_constant(ctx: LoweringContext, op: arith.ConstantOp) -> None:
    ty = op.result.type
    lit = ctx.const(op.value, _el(op.result))
    dist = ctx.dist_of(ty)
    n = dist.num_regs if dist is not None else 1
    ctx.bind(op.result, RegValue(ty, (lit,) * n, dist))


# -- integer arithmetic --------------------------------------------------------------------------

_INT_PLAIN = {
    arith.AddIOp: "add", arith.SubIOp: "sub", arith.MulIOp: "mul",
    arith.AndIOp: "and", arith.OrIOp: "or", arith.XOrIOp: "xor",
}
_BOOL_PLAIN = {arith.AndIOp: "land", arith.OrIOp: "lor", arith.XOrIOp: "lxor"}


@lowers(*_INT_PLAIN)
def lower_int_plain(ctx: LoweringContext, op: arith.BinaryOp) -> None:
    ty = _el(op.lhs)
    a, b = ctx.reg(op.lhs), ctx.reg(op.rhs)
    if ty.is_bool():
        key = _BOOL_PLAIN.get(type(op))
        if key is None:
            # i1 add/sub are xor, mul is and (arithmetic modulo 2)
            key = {arith.AddIOp: "lxor", arith.SubIOp: "lxor", arith.MulIOp: "land"}[type(op)]
        elementwise(ctx, op, [a, b], lambda x, y: Apply(key, (x, y)))
        return
    key = _INT_PLAIN[type(op)]
    c = msl_type(ty)
    if _narrow(ty):
        elementwise(ctx, op, [a, b], lambda x, y: Convert(c, Apply(key, (x, y))))
    elif ty.is_signed() and key in ("add", "sub", "mul"):
        # signed overflow is undefined in C++: wrap through the unsigned type
        u = _unsigned(ty)
        elementwise(ctx, op, [a, b], lambda x, y: Reinterpret(c, Apply(key, (Reinterpret(u, x), Reinterpret(u, y)))))
    else:
        elementwise(ctx, op, [a, b], lambda x, y: Apply(key, (x, y)))


def _int_helper(ctx: LoweringContext, ty: ScalarType) -> None:
    ctx.helpers.add("int_ops")
    ctx.int_helper_types.add(ty.name)


def _binary_in(ctx: LoweringContext, op: arith.BinaryOp, a: RegValue, b: RegValue, ctype: str, work: str,
               build: Callable[[Expr, Expr], Expr]) -> None:
    """`build(x, y)` elementwise, computed in the MSL type `work` (operands converted to it and the
    result back to `ctype`) where that differs from the result type."""
    if work == ctype:
        elementwise(ctx, op, [a, b], build)
    else:
        elementwise(ctx, op, [a, b], lambda x, y: Convert(ctype, build(Convert(work, x), Convert(work, y))))


@lowers(arith.DivSIOp, arith.DivUIOp, arith.RemSIOp, arith.RemUIOp)
def lower_int_div(ctx: LoweringContext, op: arith.BinaryOp) -> None:
    ty = _el(op.lhs)
    key = "idiv" if isinstance(op, (arith.DivSIOp, arith.DivUIOp)) else "irem"
    unsigned = isinstance(op, (arith.DivUIOp, arith.RemUIOp))
    a, b = ctx.reg(op.lhs), ctx.reg(op.rhs)
    if ty.is_bool():
        # i1 / i1: defined only for a true divisor (x / 1 == x, x % 1 == 0)
        if key == "idiv":
            elementwise(ctx, op, [a, b], lambda x, y: Apply("land", (x, y)))
        else:
            elementwise(ctx, op, [a, b], lambda x, y: Lit("false"))
        return
    c = msl_type(ty)
    work = ScalarType(("u" if unsigned else "i") + str(ty.bitwidth))
    wc = msl_type(work)
    _int_helper(ctx, work)
    _binary_in(ctx, op, a, b, c, wc, lambda x, y: Apply(key, (x, y)))


@lowers(arith.ShLIOp, arith.ShRUIOp, arith.ShRSIOp)
def lower_shift(ctx: LoweringContext, op: arith.BinaryOp) -> None:
    ty = _el(op.lhs)
    a, b = ctx.reg(op.lhs), ctx.reg(op.rhs)
    if ty.is_bool():
        # shifting a 1-bit value by 0 keeps it, by 1 or more clears it (an arithmetic right
        # shift of i1 keeps it: the bit is its own sign)
        if isinstance(op, arith.ShRSIOp):
            elementwise(ctx, op, [a, b], lambda x, y: x)
        else:
            elementwise(ctx, op, [a, b], lambda x, y: Apply("land", (x, Apply("lnot", (y,)))))
        return
    c = msl_type(ty)
    if isinstance(op, arith.ShLIOp):
        work, key = ty, "shl"
    elif isinstance(op, arith.ShRUIOp):
        work, key = ScalarType("u" + str(ty.bitwidth)), "shr"
    else:
        work, key = ScalarType("i" + str(ty.bitwidth)), "shr"
    wc = msl_type(work)
    _int_helper(ctx, work)
    _binary_in(ctx, op, a, b, c, wc, lambda x, y: Apply(key, (x, y)))


@lowers(arith.MinSIOp, arith.MinUIOp, arith.MaxSIOp, arith.MaxUIOp)
def lower_int_minmax(ctx: LoweringContext, op: arith.BinaryOp) -> None:
    ty = _el(op.lhs)
    key = "min" if isinstance(op, (arith.MinSIOp, arith.MinUIOp)) else "max"
    unsigned = isinstance(op, (arith.MinUIOp, arith.MaxUIOp))
    a, b = ctx.reg(op.lhs), ctx.reg(op.rhs)
    if ty.is_bool():
        # false < true in both signednesses for tl's boolean min/max
        elementwise(ctx, op, [a, b], lambda x, y: Apply("land" if key == "min" else "lor", (x, y)))
        return
    c = msl_type(ty)
    wc = _unsigned(ty) if unsigned else _signed(ty)
    _binary_in(ctx, op, a, b, c, wc, lambda x, y: Call(key, (x, y)))


@lowers(arith.MulHiOp)
def lower_mulhi(ctx: LoweringContext, op: arith.MulHiOp) -> None:
    ty = _el(op.lhs)
    a, b = ctx.reg(op.lhs), ctx.reg(op.rhs)
    if ty.bitwidth < 32:
        raise ctx.error(f"umulhi on {ty} is not supported", hint="use 32- or 64-bit integers")
    # Triton's umulhi is unsigned for every integer type; MSL's mulhi follows the operand type
    _binary_in(ctx, op, a, b, msl_type(ty), _unsigned(ty), lambda x, y: Apply("mulhi", (x, y)))


@lowers(arith.NegIOp, arith.NotIOp, arith.AbsIOp)
def lower_int_unary(ctx: LoweringContext, op: arith.UnaryOp) -> None:
    ty = _el(op.operand)
    a = ctx.reg(op.operand)
    c = msl_type(ty)
    if ty.is_bool():
        if isinstance(op, arith.NotIOp):
            elementwise(ctx, op, [a], lambda x: Apply("lnot", (x,)))
        else:
            elementwise(ctx, op, [a], lambda x: x)  # -x == x and |x| == x modulo 2
        return
    if isinstance(op, arith.AbsIOp):
        if not ty.is_signed():
            elementwise(ctx, op, [a], lambda x: x)
        else:
            elementwise(ctx, op, [a], lambda x: Convert(c, Apply("iabs", (x,))))
        return
    key = "neg" if isinstance(op, arith.NegIOp) else "not"
    if ty.is_signed() and key == "neg" and not _narrow(ty):
        u = _unsigned(ty)
        elementwise(ctx, op, [a], lambda x: Reinterpret(c, Apply("neg", (Reinterpret(u, x),))))
    else:
        elementwise(ctx, op, [a], lambda x: Convert(c, Apply(key, (x,))))


# -- float arithmetic ----------------------------------------------------------------------------

_FLOAT_OPS = {
    arith.AddFOp: "add", arith.SubFOp: "sub", arith.MulFOp: "mul", arith.DivFOp: "fdiv",
    arith.PreciseDivFOp: "fdiv",
    arith.RemFOp: "frem", arith.MinNumFOp: "fminnum", arith.MaxNumFOp: "fmaxnum",
    arith.MinimumFOp: "fminimum", arith.MaximumFOp: "fmaximum",
}


@lowers(*_FLOAT_OPS)
def lower_float_binary(ctx: LoweringContext, op: arith.BinaryOp) -> None:
    ty = _el(op.lhs)
    key = _FLOAT_OPS[type(op)]
    a, b = ctx.reg(op.lhs), ctx.reg(op.rhs)
    if key in ("fminimum", "fmaximum"):
        # propagate_nan=ALL: exact NaN and signed-zero rules (helpers/float_ops.metal)
        ctx.helpers.add("float_ops")
        ctx.float_helper_types.add("float" if ty.name == "bf16" else msl_type(ty))
    if isinstance(op, arith.DivFOp) and ty.name == "f32":
        # Triton's `/` on fp32 is the approximate full-range division (2 ulp): fast::divide
        # (2.5 ulp) where it is specified; div_rn is `/` in MSL
        ctx.helpers.add("div_fast")
        key = "fdiv_fast"
    if ty.name == "bf16" or (ty.name == "f16" and key == "frem"):
        elementwise(ctx, op, [a, b], lambda x, y: from_float(Apply(key, (as_float(x, ty), as_float(y, ty))), ty))
    else:
        elementwise(ctx, op, [a, b], lambda x, y: Apply(key, (x, y)))


@lowers(arith.PowFOp)
def lower_pow(ctx: LoweringContext, op: arith.PowFOp) -> None:
    ty = _el(op.lhs)
    a, b = ctx.reg(op.lhs), ctx.reg(op.rhs)
    elementwise(ctx, op, [a, b], lambda x, y: from_float(MathCall("pow", (as_float(x, ty), as_float(y, ty))), ty))


_MATH = {
    arith.ExpOp: "exp", arith.Exp2Op: "exp2", arith.LogOp: "log", arith.Log2Op: "log2",
    arith.CosOp: "cos", arith.SinOp: "sin", arith.SqrtOp: "sqrt", arith.RsqrtOp: "rsqrt",
    arith.TanhOp: "tanh",
    arith.SinhOp: "sinh",
    arith.CoshOp: "cosh",
    arith.TanOp: "tan",
    arith.AsinOp: "asin",
    arith.AcosOp: "acos",
    arith.AtanOp: "atan",
    arith.AsinhOp: "asinh",
    arith.AcoshOp: "acosh",
    arith.AtanhOp: "atanh",
    arith.Log10Op: "log10",
}
_EXACT = {
    arith.FloorOp: "floor", arith.CeilOp: "ceil", arith.AbsFOp: "fabs", arith.TruncOp: "trunc",
    arith.RintOp: "rint", arith.RoundOp: "round",
}


@lowers(*_MATH)
def lower_math(ctx: LoweringContext, op: arith.UnaryOp) -> None:
    ty = _el(op.operand)
    fn = _MATH[type(op)]
    a = ctx.reg(op.operand)
    approximate = (isinstance(op, arith.ApproxUnaryOp) and not op.precise) or (
        isinstance(op, arith.TrigUnaryOp) and op.fast)
    if approximate:
        # Triton computes tl.exp, exp2, log, log2, sqrt and rsqrt (and libdevice's fast_sinf and
        # fast_cosf) with approximate instructions: Metal's fast:: functions are their
        # counterparts (docs/language.md, "Math functions")
        elementwise(ctx, op, [a], lambda x: from_float(Call(f"fast::{fn}", (as_float(x, ty),)), ty))
        return
    elementwise(ctx, op, [a], lambda x: from_float(MathCall(fn, (as_float(x, ty),)), ty))


@lowers(*_EXACT)
def lower_exact_math(ctx: LoweringContext, op: arith.UnaryOp) -> None:
    # floor, ceil and fabs are exact: no namespace choice, no precision question
    ty = _el(op.operand)
    fn = _EXACT[type(op)]
    a = ctx.reg(op.operand)
    elementwise(ctx, op, [a], lambda x: from_float(Call(fn, (as_float(x, ty),)), ty))


@lowers(arith.PreciseSqrtOp)
def lower_precise_sqrt(ctx: LoweringContext, op: arith.PreciseSqrtOp) -> None:
    ty = _el(op.operand)
    a = ctx.reg(op.operand)
    elementwise(ctx, op, [a], lambda x: from_float(Call("precise::sqrt", (as_float(x, ty),)), ty))


@lowers(arith.ErfOp)
def lower_erf(ctx: LoweringContext, op: arith.ErfOp) -> None:
    ty = _el(op.operand)
    ctx.helpers.add("erf")
    a = ctx.reg(op.operand)
    elementwise(ctx, op, [a], lambda x: from_float(Apply("erf", (as_float(x, ty),)), ty))


@lowers(arith.NegFOp)
def lower_negf(ctx: LoweringContext, op: arith.NegFOp) -> None:
    ty = _el(op.operand)
    a = ctx.reg(op.operand)
    if ty.bitwidth == 16:
        # a sign-bit flip on the bits, as Metal negates a half: through float (how g++ negates
        # _Float16, and how bfloat arithmetic runs) a signalling NaN would come back quiet
        c, u = msl_type(ty), uint_of_width(16)
        elementwise(ctx, op, [a], lambda x: Reinterpret(c, Convert(u, Apply("xor", (Reinterpret(u, x), Lit("0x8000u"))))))
    else:
        elementwise(ctx, op, [a], lambda x: Apply("neg", (x,)))


@lowers(arith.FmaOp)
def lower_fma(ctx: LoweringContext, op: arith.FmaOp) -> None:
    ty = _el(op.a)
    a, b, c = ctx.reg(op.a), ctx.reg(op.b), ctx.reg(op.c)
    # fma in float rounds once to float; for half/bf16 the interpreter rounds the exact result
    # once too, and float's 24 bits hold the product of two 11-bit (8-bit) significands exactly
    elementwise(ctx, op, [a, b, c], lambda x, y, z: from_float(
        Apply("fma", (as_float(x, ty), as_float(y, ty), as_float(z, ty))), ty))


# -- comparisons and select ----------------------------------------------------------------------

_PRED = {
    "eq": "eq", "ne": "ne", "slt": "lt", "sle": "le", "sgt": "gt", "sge": "ge",
    "ult": "lt", "ule": "le", "ugt": "gt", "uge": "ge",
    "oeq": "eq", "une": "ne", "olt": "lt", "ole": "le", "ogt": "gt", "oge": "ge",
}


@lowers(arith.CmpIOp)
def lower_cmpi(ctx: LoweringContext, op: arith.CmpIOp) -> None:
    p = op.predicate.value
    key = _PRED[p]
    lhs, rhs = ctx.lookup(op.lhs), ctx.lookup(op.rhs)
    if isinstance(lhs, PtrValue) or isinstance(rhs, PtrValue):
        if not (isinstance(lhs, PtrValue) and isinstance(rhs, PtrValue)) or lhs.buffer != rhs.buffer:
            raise ctx.error("comparing pointers into different arrays is not supported")
        a = RegValue(op.lhs.type, lhs.offsets, lhs.dist)
        b = RegValue(op.rhs.type, rhs.offsets, rhs.dist)
        elementwise(ctx, op, [a, b], lambda x, y: Apply(key, (x, y)))
        return
    ty = _el(op.lhs)
    a, b = ctx.reg(op.lhs), ctx.reg(op.rhs)
    want_unsigned = p.startswith("u")
    want_signed = p.startswith("s")
    if ty.is_bool() or (not want_unsigned and not want_signed) or (want_unsigned != ty.is_signed()):
        elementwise(ctx, op, [a, b], lambda x, y: Apply(key, (x, y)))
        return
    wc = _unsigned(ty) if want_unsigned else _signed(ty)
    elementwise(ctx, op, [a, b], lambda x, y: Apply(key, (Convert(wc, x), Convert(wc, y))))


@lowers(arith.CmpFOp)
def lower_cmpf(ctx: LoweringContext, op: arith.CmpFOp) -> None:
    key = _PRED[op.predicate.value]
    ty = _el(op.lhs)
    a, b = ctx.reg(op.lhs), ctx.reg(op.rhs)
    if ty.name == "bf16":
        elementwise(ctx, op, [a, b], lambda x, y: Apply(key, (as_float(x, ty), as_float(y, ty))))
    else:
        elementwise(ctx, op, [a, b], lambda x, y: Apply(key, (x, y)))


@lowers(arith.SelectOp)
def lower_select(ctx: LoweringContext, op: arith.SelectOp) -> None:
    c = ctx.reg(op.condition)
    t, f = ctx.lookup(op.true_value), ctx.lookup(op.false_value)
    if isinstance(t, PtrValue) or isinstance(f, PtrValue):
        if not (isinstance(t, PtrValue) and isinstance(f, PtrValue)) or t.buffer != f.buffer:
            raise ctx.error("selecting between pointers into different arrays is not supported",
                            hint="select between offsets and add them to one pointer")
        ta = RegValue(op.true_value.type, t.offsets, t.dist)
        fa = RegValue(op.false_value.type, f.offsets, f.dist)
        dist = ctx.dist_of(op.result.type)
        n = dist.num_regs if dist is not None else 1
        pick = lambda v, r: v.regs[r] if v.dist is not None else v.regs[0]  # noqa: E731
        regs = tuple(Apply("select", (pick(c, r), pick(ta, r), pick(fa, r))) for r in range(n))
        ctype = "long" if "long" in (t.offset_ctype, f.offset_ctype) else "int"
        ctx.bind(op.result, PtrValue(op.result.type, t.buffer, ctx.materialize(regs, ctype), ctype, dist))
        return
    elementwise(ctx, op, [c, ctx.reg(op.true_value), ctx.reg(op.false_value)],
                lambda x, y, z: Apply("select", (x, y, z)))


# -- casts ---------------------------------------------------------------------------------------


@lowers(arith.ExtFOp, arith.TruncFOp, arith.SIToFPOp, arith.UIToFPOp, arith.FPToSIOp, arith.FPToUIOp,
        arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp)
def lower_convert(ctx: LoweringContext, op: arith.CastOp) -> None:
    src, dst = _el(op.operand), _el(op.result)
    a = ctx.reg(op.operand)
    dc = msl_type(dst)
    if src.is_fp8() or dst.is_fp8():
        _lower_fp8_convert(ctx, op, src, dst, a)
        return
    if isinstance(op, arith.TruncFOp) and op.rounding is arith.RoundingMode.RTZ:
        ctx.helpers.add("round_rtz")
        fn = {"f16": "km_half_rtz", "bf16": "km_bfloat_rtz"}.get(dst.name)
        if fn is None:
            raise ctx.error(f"conversion {src} -> {dst} rounding toward zero is not supported")
        elementwise(ctx, op, [a], lambda x: Call(fn, (as_float(x, src),)))
        return
    if dst.is_bool():
        # to i1: nonzero is true for floats; an integer truncation keeps the low bit
        if isinstance(op, arith.TruncIOp):
            elementwise(ctx, op, [a], lambda x: Apply("ne", (Apply("and", (x, Lit("1"))), Lit("0"))))
        else:
            elementwise(ctx, op, [a], lambda x: Apply("ne", (x, Lit("0"))))
        return
    if isinstance(op, arith.ExtUIOp) and src.is_signed():
        elementwise(ctx, op, [a], lambda x: Convert(dc, Convert(_unsigned(src), x)))
        return
    signed_ext = isinstance(op, arith.ExtSIOp)
    if signed_ext and src.is_unsigned() and not src.is_bool():
        elementwise(ctx, op, [a], lambda x: Convert(dc, Convert(_signed(src), x)))
        return
    if signed_ext and src.is_bool():
        # sign extension of i1: true is all ones
        elementwise(ctx, op, [a], lambda x: Apply("select", (x, Convert(dc, Lit("-1")), Convert(dc, Lit("0")))))
        return
    if isinstance(op, arith.UIToFPOp) and src.is_signed():
        elementwise(ctx, op, [a], lambda x: _to_float(Convert(_unsigned(src), x), dst))
        return
    if isinstance(op, arith.SIToFPOp) and src.is_unsigned() and not src.is_bool():
        elementwise(ctx, op, [a], lambda x: _to_float(Convert(_signed(src), x), dst))
        return
    if isinstance(op, (arith.FPToSIOp, arith.FPToUIOp)):
        # saturating, NaN -> 0: one answer where MSL's conversion leaves it unspecified
        ctx.helpers.add("float_to_int")
        ctx.float_to_int_types.add(dc)
        elementwise(ctx, op, [a], lambda x: Call(f"km_to_{dc}", (as_float(x, src),)))
        return
    if dst.is_float():
        elementwise(ctx, op, [a], lambda x: _to_float(x, dst, src))
        return
    elementwise(ctx, op, [a], lambda x: Convert(dc, x))


def _lower_fp8_convert(ctx: LoweringContext, op: arith.CastOp, src: ScalarType, dst: ScalarType, a: RegValue) -> None:
    """fp8 <-> f32, the only fp8 conversions the semantic layer emits (the others go through
    f32), with the format's parameters as literals (templates/helpers/fp8.metal)."""
    ctx.helpers.add("fp8")
    if isinstance(op, arith.ExtFOp) and src.is_fp8() and dst.name == "f32":
        f = FORMATS[fp8_format_name(src)]
        params = (Lit(str(f.mantissa_bits)), Lit(str(f.bias)), Lit(str(f.kind)))
        elementwise(ctx, op, [a], lambda x: Call("km_fp8_to_float", (x, *params)))
        return
    if isinstance(op, arith.TruncFOp) and dst.is_fp8() and src.name == "f32":
        f = FORMATS[fp8_format_name(dst)]
        rtz = op.rounding is arith.RoundingMode.RTZ
        if f.kind == B15:  # Triton's conversion through half (triton_metal/fp8.py)
            if rtz:
                ctx.helpers.add("round_rtz")
            elementwise(ctx, op, [a], lambda x: Call(
                "km_half_to_fp8e4b15", (Call("km_half_rtz", (x,)) if rtz else Convert("half", x),)))
            return
        params = (Lit(str(f.mantissa_bits)), Lit(str(f.bias)), Lit(f"{f.max_code}u"), Lit(f"{f.nan_code}u"),
                  Lit("true" if f.kind == FNUZ else "false"), Lit("true" if rtz else "false"))
        elementwise(ctx, op, [a], lambda x: Call("km_float_to_fp8", (x, *params)))
        return
    raise internal_error(f"conversion {src} -> {dst} of fp8 must go through f32 (the semantic layer's rule)")


def _to_float(x: Expr, dst: ScalarType, src: ScalarType | None = None) -> Expr:
    """A conversion to a float type; bf16 <-> f16 goes through float (no implicit path)."""
    if dst.name == "bf16" and src is not None and src.name == "f16":
        return Convert("bfloat", Convert("float", x))
    if dst.name == "f16" and src is not None and src.name == "bf16":
        return Convert("half", Convert("float", x))
    return Convert(msl_type(dst), x)


@lowers(arith.BitcastOp)
def lower_bitcast(ctx: LoweringContext, op: arith.BitcastOp) -> None:
    src, dst = _el(op.operand), _el(op.result)
    a = ctx.reg(op.operand)
    if src == dst:
        elementwise(ctx, op, [a], lambda x: x)
    elif src.is_int() and dst.is_int() and not src.is_bool():
        elementwise(ctx, op, [a], lambda x: Convert(msl_type(dst), x))
    else:
        elementwise(ctx, op, [a], lambda x: Reinterpret(msl_type(dst), x))


@lowers(arith.PtrToIntOp, arith.IntToPtrOp)
def lower_ptr_int(ctx: LoweringContext, op: arith.CastOp) -> None:
    raise ctx.error("converting between pointers and integers is not supported on Apple GPUs through MLX",
                    hint="keep pointer arithmetic in tl pointers (ptr + offset)")
