"""Semantic layer, elementwise family: arithmetic, bitwise, comparisons, select, math functions.

Integer `//` and `%` round toward zero (C), float `%` is `fmod`, `/` on integers computes in fp32,
`>>` is arithmetic when its left operand is signed before promotion and logical otherwise. Math functions take the
dtypes Triton's `_check_dtype` lists name: fp32 (and fp64) for `tl.exp`, `log`, `sqrt`, ...; fp16 and bf16
too for libdevice's functions (computed in float, rounded once).
"""

from __future__ import annotations

import warnings
from typing import Any

from ...fp8 import FNUZ, FORMATS
from ..builder import BinaryOp, CmpPredicate, MathOp
from ..core import PropagateNan, constexpr, tensor
from ..types import float32, int1, uint8
from .base import SemanticBase, error, refuse_fp8_arithmetic, with_element

WHERE_NON_BOOL = (
    "tl.where with a non-boolean condition is deprecated and will error out in a future triton "
    "release. Got {}"
)
"""Triton's warning for a `tl.where` whose condition is not `int1` (it is compared with zero)."""

_FLOAT_ANY = ("fp16", "bf16", "fp32", "fp64")
_FP32_ONLY = ("fp32", "fp64")

# Which dtypes each math function accepts (Triton's `_check_dtype` lists).
MATH_DTYPES: dict[MathOp, tuple[str, ...]] = {
    MathOp.EXP: _FP32_ONLY,
    MathOp.EXP2: _FP32_ONLY,
    MathOp.LOG: _FP32_ONLY,
    MathOp.LOG2: _FP32_ONLY,
    MathOp.COS: _FP32_ONLY,
    MathOp.SIN: _FP32_ONLY,
    MathOp.SQRT: _FP32_ONLY,
    MathOp.SQRT_RN: _FP32_ONLY,
    MathOp.RSQRT: _FP32_ONLY,
    MathOp.ERF: _FP32_ONLY,
    MathOp.FLOOR: _FP32_ONLY,
    MathOp.CEIL: _FP32_ONLY,
    # libdevice's functions (tl.extra.libdevice), computed in float for fp16/bf16
    MathOp.TANH: _FLOAT_ANY,
    MathOp.SINH: _FLOAT_ANY,
    MathOp.COSH: _FLOAT_ANY,
    MathOp.TAN: _FLOAT_ANY,
    MathOp.ASIN: _FLOAT_ANY,
    MathOp.ACOS: _FLOAT_ANY,
    MathOp.ATAN: _FLOAT_ANY,
    MathOp.ASINH: _FLOAT_ANY,
    MathOp.ACOSH: _FLOAT_ANY,
    MathOp.ATANH: _FLOAT_ANY,
    MathOp.LOG10: _FLOAT_ANY,
    MathOp.TRUNC: _FLOAT_ANY,
    MathOp.RINT: _FLOAT_ANY,
    MathOp.ROUND: _FLOAT_ANY,
}


class ArithMixin(SemanticBase):
    def _binary(self, op: BinaryOp, a: tensor, b: tensor) -> tensor:
        return tensor(self.builder.create_binary(op, a.handle, b.handle), a.type)

    # -- arithmetic ---------------------------------------------------------------------------
    def add(self, a: Any, b: Any, sanitize_overflow: bool = True) -> tensor:
        a, b = self.binary_op_type_checking_impl(a, b, True, True)
        sa, sb = a.type.scalar, b.type.scalar
        if sa.is_ptr() and sb.is_ptr():
            raise error("cannot add pointers together", hint="subtract offsets, not pointers", kind=TypeError)
        if sb.is_ptr():
            a, b = b, a
            sa, sb = sb, sa
        if sa.is_ptr():
            if not sb.is_int():
                raise error(f"a pointer offset must be an integer, not {sb!r}")
            return tensor(self.builder.create_addptr(a.handle, b.handle), a.type)
        return self._binary(BinaryOp.ADD, a, b)

    def sub(self, a: Any, b: Any, sanitize_overflow: bool = True) -> tensor:
        a, b = self.binary_op_type_checking_impl(a, b, True, False)
        if a.type.scalar.is_ptr():
            if not b.type.scalar.is_int():
                raise error(f"cannot subtract {b.type.scalar!r} from a pointer")
            return self.add(a, self.minus(b))
        return self._binary(BinaryOp.SUB, a, b)

    def mul(self, a: Any, b: Any, sanitize_overflow: bool = True) -> tensor:
        a, b = self.binary_op_type_checking_impl(a, b)
        return self._binary(BinaryOp.MUL, a, b)

    def truediv(self, a: Any, b: Any) -> tensor:
        a, b = self.binary_op_type_checking_impl(a, b, False, False, True, True)
        sa, sb = a.type.scalar, b.type.scalar
        if sa.is_floating() and sb.is_int():
            b = self.cast(b, sa)
        elif sa.is_int() and sb.is_floating():
            a = self.cast(a, sb)
        elif sa.is_int() and sb.is_int():
            a, b = self.cast(a, float32), self.cast(b, float32)
        elif sa.fp_mantissa_width > sb.fp_mantissa_width:
            b = self.cast(b, sa)
        else:
            a = self.cast(a, sb)
        return self._binary(BinaryOp.FDIV, a, b)

    def floordiv(self, a: Any, b: Any) -> tensor:
        a, b = self.binary_op_type_checking_impl(a, b, False, False, True, True)
        s = a.type.scalar
        if not s.is_int():
            raise error(
                f"unexpected type {s.name}: // is defined on integers only",
                hint="use tl.floor(a / b) for floats",
                kind=TypeError,
            )
        return self._binary(BinaryOp.SDIV if s.is_int_signed() else BinaryOp.UDIV, a, b)

    def mod(self, a: Any, b: Any) -> tensor:
        a, b = self.binary_op_type_checking_impl(a, b, False, False, True, True)
        s = a.type.scalar
        if s.is_floating():
            return self._binary(BinaryOp.FREM, a, b)
        return self._binary(BinaryOp.SREM if s.is_int_signed() else BinaryOp.UREM, a, b)

    def pow(self, a: Any, b: Any) -> tensor:
        a_val, b_val = a, b
        if isinstance(b_val, int) and not isinstance(b_val, bool) and isinstance(a, tensor) and a.dtype.is_int():
            if b_val < 0:
                raise error("an integer raised to a negative power is not an integer", hint="cast to float first")
            return self._int_pow(a, b_val)
        a, b = self.binary_op_type_checking_impl(a, b)
        s = a.type.scalar
        if not s.is_floating():
            raise error(
                f"** on {s!r} tensors needs a constant non-negative integer exponent",
                hint="cast the operands to tl.float32",
            )
        return self._binary(BinaryOp.POW, a, b)

    def _int_pow(self, a: tensor, n: int) -> tensor:
        result: tensor | None = None
        base = a
        while n:
            if n & 1:
                result = base if result is None else self.mul(result, base)
            n >>= 1
            if n:
                base = self.mul(base, base)
        return result if result is not None else self.full_like_scalar(a, 1)

    def full_like_scalar(self, like: tensor, value: Any) -> tensor:
        c = self.scalar_constant(value, like.type.scalar)
        return self.splat(c, like.type.shape) if like.type.is_block() else c

    def plus(self, x: Any) -> tensor:
        return self.to_tensor(x)

    def minus(self, x: Any) -> tensor:
        x = self.to_tensor(x)
        s = x.type.scalar
        if s.is_ptr():
            raise error(f"wrong type argument to unary minus ({s!r})")
        if s.is_bool():
            return x  # -True == True in 1-bit two's complement, as Triton computes it
        refuse_fp8_arithmetic(s)
        return tensor(self.builder.create_math(MathOp.NEG, x.handle), x.type)

    def invert(self, x: Any) -> tensor:
        x = self.to_tensor(x)
        s = x.type.scalar
        if s.is_ptr() or s.is_floating():
            raise error(f"wrong type argument to unary invert ({s!r})", hint="~ takes integers and booleans")
        return tensor(self.builder.create_math(MathOp.NOT, x.handle), x.type)

    def abs(self, x: Any) -> tensor:
        x = self.to_tensor(x)
        s = x.type.scalar
        if s.is_fp8():
            return self._fp8_abs(x)
        if s.is_floating():
            return tensor(self.builder.create_math(MathOp.FABS, x.handle), x.type)
        if s.is_int_signed():
            return tensor(self.builder.create_math(MathOp.IABS, x.handle), x.type)
        if s.is_int_unsigned():
            return x
        raise error(f"abs is not defined on {s!r}")

    def _fp8_abs(self, x: tensor) -> tensor:
        """|x| of fp8 codes without converting them: the sign bit cleared (Triton's own `abs` of
        fp8e4b15; its `fabs` of the other formats), except the FNUZ formats' NaN 0x80, whose sign
        bit is no sign: it stays NaN."""
        codes = self.bitcast(x, uint8)
        magnitude = self.and_(codes, self.full_like_scalar(codes, 0x7F))
        if FORMATS[x.type.scalar.name].kind == FNUZ:
            nan = self.equal(codes, self.full_like_scalar(codes, 0x80))
            magnitude = self.where(nan, codes, magnitude)
        return self.bitcast(magnitude, x.type.scalar)

    # -- bitwise ------------------------------------------------------------------------------
    def bitwise_op_type_checking_impl(self, a: Any, b: Any) -> tuple[tensor, tensor]:
        a, b = self.binary_op_type_checking_impl(a, b)
        sa, sb = a.type.scalar, b.type.scalar
        if not sa.is_int() or not sb.is_int():
            raise error(
                f"invalid operands of type {sa!r} and {sb!r}: bitwise operations take integers",
                hint="bitcast floats to integers of the same width with .to(tl.int32, bitcast=True)",
                kind=TypeError,
            )
        return a, b

    def and_(self, a: Any, b: Any) -> tensor:
        a, b = self.bitwise_op_type_checking_impl(a, b)
        return self._binary(BinaryOp.AND, a, b)

    def or_(self, a: Any, b: Any) -> tensor:
        a, b = self.bitwise_op_type_checking_impl(a, b)
        return self._binary(BinaryOp.OR, a, b)

    def xor_(self, a: Any, b: Any) -> tensor:
        a, b = self.bitwise_op_type_checking_impl(a, b)
        return self._binary(BinaryOp.XOR, a, b)

    def shl(self, a: Any, b: Any) -> tensor:
        a, b = self.bitwise_op_type_checking_impl(a, b)
        return self._binary(BinaryOp.SHL, a, b)

    def shr(self, a: Any, b: Any) -> tensor:
        """`a >> b`: arithmetic when the left operand is signed *before* promotion, logical
        otherwise, as Triton's `tensor.__rshift__` decides (int8 -1 >> uint32 8 promotes to
        uint32 but shifts in sign bits: 4294967295). A Python scalar on the left has no dtype of
        its own: the tensor on the right decides, as in Triton's `__rrshift__`."""
        decider = a if isinstance(a, tensor) else b
        signed = isinstance(decider, tensor) and decider.dtype.is_int_signed()
        return self.ashr(a, b) if signed else self.lshr(a, b)

    def lshr(self, a: Any, b: Any) -> tensor:
        a, b = self.bitwise_op_type_checking_impl(a, b)
        return self._binary(BinaryOp.LSHR, a, b)

    def ashr(self, a: Any, b: Any) -> tensor:
        a, b = self.bitwise_op_type_checking_impl(a, b)
        return self._binary(BinaryOp.ASHR, a, b)

    def _to_bool(self, x: Any) -> tensor:
        x = self.to_tensor(x)
        return x if x.type.scalar.is_bool() else self.cast(x, int1)

    def _as_int1(self, x: Any) -> tensor:
        """Python's `and`, `or` and `not` on tensors take 1-bit values, as in Triton (which
        bitcasts to int1 and so refuses wider types)."""
        x = self.to_tensor(x)
        s = x.type.scalar
        if not s.is_bool():
            raise error(
                f"Cannot bitcast data-type of size {s.primitive_bitwidth} to data-type of size 1",
                hint="`and`, `or` and `not` take booleans: compare first (x != 0), "
                "or use &, | and ~ on integers",
            )
        return x

    def logical_and(self, a: Any, b: Any) -> tensor:
        return self.and_(self._as_int1(a), self._as_int1(b))

    def logical_or(self, a: Any, b: Any) -> tensor:
        return self.or_(self._as_int1(a), self._as_int1(b))

    def logical_not(self, a: Any) -> tensor:
        return self.invert(self._as_int1(a))

    # -- comparisons --------------------------------------------------------------------------
    def _compare(self, a: Any, b: Any, fpred: CmpPredicate, spred: CmpPredicate, upred: CmpPredicate) -> tensor:
        a, b = self.binary_op_type_checking_impl(a, b)
        s = a.type.scalar
        if s.is_floating():
            pred = fpred
        elif s.is_int_signed():
            pred = spred
        elif s.is_int() or s.is_ptr():
            pred = upred
        else:
            raise error(f"cannot compare {s!r} values")
        ty = with_element(a.type, int1)
        return tensor(self.builder.create_cmp(pred, a.handle, b.handle), ty)

    def less_than(self, a: Any, b: Any) -> tensor:
        return self._compare(a, b, CmpPredicate.OLT, CmpPredicate.SLT, CmpPredicate.ULT)

    def less_equal(self, a: Any, b: Any) -> tensor:
        return self._compare(a, b, CmpPredicate.OLE, CmpPredicate.SLE, CmpPredicate.ULE)

    def greater_than(self, a: Any, b: Any) -> tensor:
        return self._compare(a, b, CmpPredicate.OGT, CmpPredicate.SGT, CmpPredicate.UGT)

    def greater_equal(self, a: Any, b: Any) -> tensor:
        return self._compare(a, b, CmpPredicate.OGE, CmpPredicate.SGE, CmpPredicate.UGE)

    def equal(self, a: Any, b: Any) -> tensor:
        return self._compare(a, b, CmpPredicate.OEQ, CmpPredicate.EQ, CmpPredicate.EQ)

    def not_equal(self, a: Any, b: Any) -> tensor:
        return self._compare(a, b, CmpPredicate.UNE, CmpPredicate.NE, CmpPredicate.NE)

    # -- select, min/max ----------------------------------------------------------------------
    def where(self, cond: Any, x: Any, y: Any) -> tensor:
        if isinstance(cond, tensor) and cond.type.scalar != int1:
            warnings.warn(WHERE_NON_BOOL.format(cond.type.scalar.name), UserWarning, stacklevel=3)
        cond = self._to_bool(cond)
        # fp8 selects without arithmetic: two blocks of one fp8 type, or an fp8 block and a number,
        # which becomes that type (as Triton's weakly typed scalars do)
        fp8 = next((t.type.scalar for t in (x, y) if isinstance(t, tensor) and t.type.scalar.is_fp8()), None)
        if fp8 is not None:
            x, y = (v.value if isinstance(v, constexpr) else v for v in (x, y))
            x, y = (self.scalar_constant(v, fp8) if isinstance(v, (bool, int, float)) else v for v in (x, y))
        same_fp8 = fp8 is not None and isinstance(x, tensor) and isinstance(y, tensor) and x.type.scalar == y.type.scalar
        x, y = self.binary_op_type_checking_impl(x, y, True, True, arithmetic_check=not same_fp8)
        if cond.type.is_block() or x.type.is_block():
            cond, x, y = self.broadcast_tensors(cond, x, y)
        return tensor(self.builder.create_select(cond.handle, x.handle, y.handle), x.type)

    def _propagate(self, propagate_nan: Any) -> bool:
        if propagate_nan in (PropagateNan.NONE, None, 0, False):
            return False
        if propagate_nan in (PropagateNan.ALL, PropagateNan.ALL.value, True):
            return True
        raise error(f"propagate_nan must be tl.PropagateNan.NONE or .ALL, not {propagate_nan!r}")

    def minimum(self, a: Any, b: Any, propagate_nan: Any = PropagateNan.NONE) -> tensor:
        a, b = self.binary_op_type_checking_impl(a, b)
        s = a.type.scalar
        if s.is_floating():
            op = BinaryOp.FMIN_NAN if self._propagate(propagate_nan) else BinaryOp.FMIN
        elif s.is_int_signed():
            op = BinaryOp.SMIN
        elif s.is_int():
            op = BinaryOp.UMIN
        else:
            raise error(f"minimum is not defined on {s!r}")
        return self._binary(op, a, b)

    def maximum(self, a: Any, b: Any, propagate_nan: Any = PropagateNan.NONE) -> tensor:
        a, b = self.binary_op_type_checking_impl(a, b)
        s = a.type.scalar
        if s.is_floating():
            op = BinaryOp.FMAX_NAN if self._propagate(propagate_nan) else BinaryOp.FMAX
        elif s.is_int_signed():
            op = BinaryOp.SMAX
        elif s.is_int():
            op = BinaryOp.UMAX
        else:
            raise error(f"maximum is not defined on {s!r}")
        return self._binary(op, a, b)

    def clamp(self, x: Any, lo: Any, hi: Any, propagate_nan: Any = PropagateNan.NONE) -> tensor:
        lo, hi = self.binary_op_type_checking_impl(lo, hi)
        x, lo = self.binary_op_type_checking_impl(x, lo)
        x, hi = self.binary_op_type_checking_impl(x, hi)
        if not x.type.scalar.is_floating():
            raise error(
                f"tl.clamp is defined on floats only, not {x.type.scalar!r}",
                hint="use tl.minimum(tl.maximum(x, lo), hi) for integers",
            )
        return self.minimum(self.maximum(x, lo, propagate_nan), hi, propagate_nan)

    # -- math ---------------------------------------------------------------------------------
    def check_dtype(self, name: str, x: tensor, allowed: tuple[str, ...]) -> None:
        s = x.type.scalar
        if s.name not in allowed:
            pretty = ", ".join(a for a in allowed if a != "fp64")
            raise error(
                f"Expected dtype {[a for a in allowed]} but got {s.name}: tl.{name} expects a "
                f"floating point tensor ({pretty})",
                hint=f"cast first: tl.{name}(x.to(tl.float32))",
            )

    def math_unary(self, op: MathOp, x: Any, name: str | None = None, precise: bool = False,
                   fast: bool = False) -> tensor:
        """`op` elementwise; `precise`: libdevice's accurate form of a function `tl` computes
        approximately (exp, exp2, log, log2, rsqrt); `fast`: libdevice's approximate form of one
        `tl` computes accurately (sin, cos)."""
        x = self.to_tensor(x)
        self.check_dtype(name or op.value, x, MATH_DTYPES[op])
        return tensor(self.builder.create_math(op, x.handle, precise, fast), x.type)

    def fma(self, x: Any, y: Any, z: Any) -> tensor:
        x, y = self.binary_op_type_checking_impl(x, y)
        z, x = self.binary_op_type_checking_impl(z, x)
        z, y = self.binary_op_type_checking_impl(z, y)
        self.check_dtype("fma", x, _FLOAT_ANY)
        return tensor(self.builder.create_fma(x.handle, y.handle, z.handle), x.type)

    def fdiv(self, x: Any, y: Any, ieee_rounding: bool = False) -> tensor:
        x, y = self.to_tensor(x), self.to_tensor(y)
        if not x.type.scalar.is_floating() or not y.type.scalar.is_floating():
            raise error("both operands of tl.fdiv must be floating point", hint="use / for mixed operands")
        x, y = self.binary_op_type_checking_impl(x, y)
        return self._binary(BinaryOp.FDIV_RN if ieee_rounding else BinaryOp.FDIV, x, y)

    def div_rn(self, x: Any, y: Any) -> tensor:
        x, y = self.binary_op_type_checking_impl(x, y)
        self.check_dtype("div_rn", x, _FP32_ONLY)
        return self._binary(BinaryOp.FDIV_RN, x, y)

    def umulhi(self, x: Any, y: Any) -> tensor:
        x, y = self.binary_op_type_checking_impl(x, y)
        s = x.type.scalar
        if s.name not in ("int32", "int64", "uint32", "uint64"):
            raise error(f"tl.umulhi expects 32- or 64-bit integers, got {s!r}")
        return self._binary(BinaryOp.UMULHI, x, y)
