"""Elementwise ops: constants, binary arithmetic, comparisons, select, casts and math functions.

Operands of an elementwise op share one type (scalar or tensor); the semantic layer has already
promoted and broadcast them. Integer ops name their signedness where it matters (`divsi`/`divui`);
float ops are IEEE unless a later pass relaxes them.
"""

from __future__ import annotations

from enum import Enum
from typing import ClassVar

from ..core import Op, Value, attr, enum_conv, operand
from ..types import PointerType, ScalarType, element_type, i1, i64, shape_of, with_element
from .common import float_element, int_element, num_results, result_is, same_types


class CmpPredicate(Enum):
    EQ = "eq"
    NE = "ne"
    SLT = "slt"
    SLE = "sle"
    SGT = "sgt"
    SGE = "sge"
    ULT = "ult"
    ULE = "ule"
    UGT = "ugt"
    UGE = "uge"
    OEQ = "oeq"
    UNE = "une"
    OLT = "olt"
    OLE = "ole"
    OGT = "ogt"
    OGE = "oge"


INT_PREDICATES = frozenset(CmpPredicate(p) for p in ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"))
FLOAT_PREDICATES = frozenset(CmpPredicate(p) for p in ("oeq", "une", "olt", "ole", "ogt", "oge"))


class RoundingMode(Enum):
    RTNE = "rtne"
    RTZ = "rtz"


# -- constants ----------------------------------------------------------------------------------


def _const_value(v: bool | int | float) -> bool | int | float:
    if isinstance(v, (bool, int, float)):
        return v
    raise TypeError(f"a constant must be a bool, int or float, got {v!r}")


class ConstantOp(Op):
    """A scalar constant, or a tensor with every element equal to `value`."""

    name: ClassVar[str] = "arith.constant"
    value: bool | int | float = attr(_const_value)

    def verify_(self) -> None:
        num_results(self, 1)
        el = element_type(self.result.type)
        if not isinstance(el, ScalarType):
            raise self.error(f"cannot hold a constant of type {self.result.type}")
        if el.is_bool():
            if not isinstance(self.value, bool):
                raise self.error(f"an i1 constant must be true or false, got {self.value!r}")
        elif el.is_int():
            if isinstance(self.value, bool) or not isinstance(self.value, int):
                raise self.error(f"an integer constant must be an int, got {self.value!r}")
            bits = el.bitwidth
            lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if el.is_signed() else (0, (1 << bits) - 1)
            if not lo <= self.value <= hi:
                raise self.error(f"value {self.value} does not fit in {el}")
        elif not isinstance(self.value, float):
            raise self.error(f"a float constant must be a float, got {self.value!r}")


# -- binary ops ---------------------------------------------------------------------------------


class BinaryOp(Op):
    """`result = lhs <op> rhs`, all three of one type."""

    lhs: Value = operand()
    rhs: Value = operand()
    requires: ClassVar[str] = "int"  # "int" | "float"

    def verify_(self) -> None:
        num_results(self, 1)
        same_types(self, "operands", self.lhs, self.rhs)
        if self.requires == "float":
            float_element(self, self.lhs, "operands")
        else:
            int_element(self, self.lhs, "operands")
        result_is(self, self.lhs.type)


class IntBinaryOp(BinaryOp):
    requires: ClassVar[str] = "int"


class FloatBinaryOp(BinaryOp):
    requires: ClassVar[str] = "float"


class AddIOp(IntBinaryOp):
    name: ClassVar[str] = "arith.addi"


class SubIOp(IntBinaryOp):
    name: ClassVar[str] = "arith.subi"


class MulIOp(IntBinaryOp):
    name: ClassVar[str] = "arith.muli"


class DivSIOp(IntBinaryOp):
    name: ClassVar[str] = "arith.divsi"


class DivUIOp(IntBinaryOp):
    name: ClassVar[str] = "arith.divui"


class RemSIOp(IntBinaryOp):
    name: ClassVar[str] = "arith.remsi"


class RemUIOp(IntBinaryOp):
    name: ClassVar[str] = "arith.remui"


class AndIOp(IntBinaryOp):
    name: ClassVar[str] = "arith.andi"


class OrIOp(IntBinaryOp):
    name: ClassVar[str] = "arith.ori"


class XOrIOp(IntBinaryOp):
    name: ClassVar[str] = "arith.xori"


class ShLIOp(IntBinaryOp):
    name: ClassVar[str] = "arith.shli"


class ShRUIOp(IntBinaryOp):
    name: ClassVar[str] = "arith.shrui"


class ShRSIOp(IntBinaryOp):
    name: ClassVar[str] = "arith.shrsi"


class MinSIOp(IntBinaryOp):
    name: ClassVar[str] = "arith.minsi"


class MinUIOp(IntBinaryOp):
    name: ClassVar[str] = "arith.minui"


class MaxSIOp(IntBinaryOp):
    name: ClassVar[str] = "arith.maxsi"


class MaxUIOp(IntBinaryOp):
    name: ClassVar[str] = "arith.maxui"


class MulHiOp(IntBinaryOp):
    """The high half of the double-width product of the operands read as unsigned (Triton's
    umulhi: a signed type takes part through its bit pattern)."""

    name: ClassVar[str] = "tt.mulhi"


class AddFOp(FloatBinaryOp):
    name: ClassVar[str] = "arith.addf"


class SubFOp(FloatBinaryOp):
    name: ClassVar[str] = "arith.subf"


class MulFOp(FloatBinaryOp):
    name: ClassVar[str] = "arith.mulf"


class DivFOp(FloatBinaryOp):
    """`/`: for f32 an approximate full-range division within 2 ulp (Triton's `div.full.f32`);
    f16 and bf16 round the quotient to their own precision."""

    name: ClassVar[str] = "arith.divf"


class PreciseDivFOp(FloatBinaryOp):
    """The IEEE division, rounded to nearest (`tl.math.div_rn`; Triton's `tt.precise_divf`)."""

    name: ClassVar[str] = "tt.precise_divf"


class RemFOp(FloatBinaryOp):
    """C `fmod`: the remainder has the sign of the dividend."""

    name: ClassVar[str] = "arith.remf"


class MinNumFOp(FloatBinaryOp):
    """NaN-ignoring minimum (`fmin`)."""

    name: ClassVar[str] = "arith.minnumf"


class MaxNumFOp(FloatBinaryOp):
    name: ClassVar[str] = "arith.maxnumf"


class MinimumFOp(FloatBinaryOp):
    """NaN-propagating minimum."""

    name: ClassVar[str] = "arith.minimumf"


class MaximumFOp(FloatBinaryOp):
    name: ClassVar[str] = "arith.maximumf"


class PowFOp(FloatBinaryOp):
    name: ClassVar[str] = "math.powf"


# -- unary math ---------------------------------------------------------------------------------


class UnaryOp(Op):
    """`result = f(operand)`, one type in and out."""

    operand: Value = operand()
    requires: ClassVar[str] = "float"

    def verify_(self) -> None:
        num_results(self, 1)
        if self.requires == "float":
            float_element(self, self.operand, "operand")
        else:
            int_element(self, self.operand, "operand")
        result_is(self, self.operand.type)


class IntUnaryOp(UnaryOp):
    requires: ClassVar[str] = "int"


class ApproxUnaryOp(UnaryOp):
    """A function Triton computes with an approximate instruction (`ex2.approx`, `lg2.approx`,
    `sqrt.approx`, `rsqrt.approx`) unless it comes from libdevice, whose functions are accurate:
    `precise = true` marks those (docs/language.md, "Math functions"); None (not printed) is
    Triton's approximate form."""

    precise: bool | None = attr(bool, default=None)


class ExpOp(ApproxUnaryOp):
    name: ClassVar[str] = "math.exp"


class Exp2Op(ApproxUnaryOp):
    name: ClassVar[str] = "math.exp2"


class LogOp(ApproxUnaryOp):
    name: ClassVar[str] = "math.log"


class Log2Op(ApproxUnaryOp):
    name: ClassVar[str] = "math.log2"


class TrigUnaryOp(UnaryOp):
    """`sin`/`cos`: accurate in Triton (`__nv_sinf`) unless they come from libdevice's
    `fast_sinf`/`fast_cosf` (`sin.approx.f32`): `fast = true` marks those, printed as Metal's
    `fast::` forms; None (not printed) follows the launch's math mode (docs/language.md)."""

    fast: bool | None = attr(bool, default=None)


class CosOp(TrigUnaryOp):
    name: ClassVar[str] = "math.cos"


class SinOp(TrigUnaryOp):
    name: ClassVar[str] = "math.sin"


class SqrtOp(ApproxUnaryOp):
    name: ClassVar[str] = "math.sqrt"


class PreciseSqrtOp(UnaryOp):
    """Correctly rounded square root (`tl.sqrt_rn`)."""

    name: ClassVar[str] = "tt.precise_sqrt"


class RsqrtOp(ApproxUnaryOp):
    name: ClassVar[str] = "math.rsqrt"


class ErfOp(UnaryOp):
    name: ClassVar[str] = "math.erf"


class FloorOp(UnaryOp):
    name: ClassVar[str] = "math.floor"


class CeilOp(UnaryOp):
    name: ClassVar[str] = "math.ceil"


class TanhOp(UnaryOp):
    name: ClassVar[str] = "math.tanh"


class SinhOp(UnaryOp):
    name: ClassVar[str] = "math.sinh"


class CoshOp(UnaryOp):
    name: ClassVar[str] = "math.cosh"


class TanOp(UnaryOp):
    name: ClassVar[str] = "math.tan"


class AsinOp(UnaryOp):
    name: ClassVar[str] = "math.asin"


class AcosOp(UnaryOp):
    name: ClassVar[str] = "math.acos"


class AtanOp(UnaryOp):
    name: ClassVar[str] = "math.atan"


class AsinhOp(UnaryOp):
    name: ClassVar[str] = "math.asinh"


class AcoshOp(UnaryOp):
    name: ClassVar[str] = "math.acosh"


class AtanhOp(UnaryOp):
    name: ClassVar[str] = "math.atanh"


class Log10Op(UnaryOp):
    name: ClassVar[str] = "math.log10"


class TruncOp(UnaryOp):
    name: ClassVar[str] = "math.trunc"


class RintOp(UnaryOp):
    name: ClassVar[str] = "math.rint"


class RoundOp(UnaryOp):
    name: ClassVar[str] = "math.round"


class AbsFOp(UnaryOp):
    name: ClassVar[str] = "math.absf"


class NegFOp(UnaryOp):
    name: ClassVar[str] = "arith.negf"


class AbsIOp(IntUnaryOp):
    name: ClassVar[str] = "math.absi"


class NegIOp(IntUnaryOp):
    """Two's-complement negation."""

    name: ClassVar[str] = "arith.negi"


class NotIOp(IntUnaryOp):
    """Bitwise complement."""

    name: ClassVar[str] = "arith.noti"


class FmaOp(Op):
    """`a * b + c` with one rounding."""

    name: ClassVar[str] = "math.fma"
    a: Value = operand()
    b: Value = operand()
    c: Value = operand()

    def verify_(self) -> None:
        num_results(self, 1)
        same_types(self, "operands", self.a, self.b, self.c)
        float_element(self, self.a, "operands")
        result_is(self, self.a.type)


# -- comparisons and select ---------------------------------------------------------------------


class CmpIOp(Op):
    name: ClassVar[str] = "arith.cmpi"
    predicate: CmpPredicate = attr(enum_conv(CmpPredicate))
    lhs: Value = operand()
    rhs: Value = operand()

    def verify_(self) -> None:
        num_results(self, 1)
        same_types(self, "operands", self.lhs, self.rhs)
        el = element_type(self.lhs.type)
        if not (isinstance(el, PointerType) or (isinstance(el, ScalarType) and el.is_int())):
            raise self.error(f"operands must be integers or pointers, got {self.lhs.type}")
        if self.predicate not in INT_PREDICATES:
            raise self.error(f"predicate '{self.predicate.value}' is not an integer predicate")
        result_is(self, with_element(self.lhs.type, i1))


class CmpFOp(Op):
    name: ClassVar[str] = "arith.cmpf"
    predicate: CmpPredicate = attr(enum_conv(CmpPredicate))
    lhs: Value = operand()
    rhs: Value = operand()

    def verify_(self) -> None:
        num_results(self, 1)
        same_types(self, "operands", self.lhs, self.rhs)
        float_element(self, self.lhs, "operands")
        if self.predicate not in FLOAT_PREDICATES:
            raise self.error(f"predicate '{self.predicate.value}' is not a float predicate")
        result_is(self, with_element(self.lhs.type, i1))


class SelectOp(Op):
    """`cond ? true_value : false_value`; a scalar condition selects whole tensors."""

    name: ClassVar[str] = "arith.select"
    condition: Value = operand()
    true_value: Value = operand()
    false_value: Value = operand()

    def verify_(self) -> None:
        num_results(self, 1)
        same_types(self, "values", self.true_value, self.false_value)
        cshape = shape_of(self.condition.type)
        if element_type(self.condition.type) != i1 or cshape not in ((), shape_of(self.true_value.type)):
            raise self.error(f"condition must be i1 of the values' shape or a scalar, got {self.condition.type}")
        result_is(self, self.true_value.type)


# -- casts --------------------------------------------------------------------------------------


class CastOp(Op):
    """A conversion of every element; the result type names the target, the shape is kept."""

    operand: Value = operand()

    def verify_(self) -> None:
        num_results(self, 1)
        src, dst = self.operand.type, self.result.type
        if shape_of(src) != shape_of(dst):
            raise self.error(f"cannot change the shape: {src} -> {dst}")
        self.check(element_type(src), element_type(dst))

    def check(self, src: object, dst: object) -> None:
        raise NotImplementedError

    def _need(self, ok: bool, src: object, dst: object, rule: str) -> None:
        if not ok:
            raise self.error(f"{rule}, got {src} -> {dst}")


def _is_float(t: object) -> bool:
    return isinstance(t, ScalarType) and t.is_float()


def _is_int(t: object) -> bool:
    return isinstance(t, ScalarType) and t.is_int()


def _bits(t: object) -> int:
    return t.bitwidth if isinstance(t, ScalarType) else 64


class ExtFOp(CastOp):
    name: ClassVar[str] = "arith.extf"

    def check(self, src: object, dst: object) -> None:
        self._need(_is_float(src) and _is_float(dst) and _bits(src) < _bits(dst), src, dst, "needs a wider float type")


class TruncFOp(CastOp):
    """Narrow a float (or convert between f16 and bf16) with the given rounding."""

    name: ClassVar[str] = "arith.truncf"
    rounding: RoundingMode = attr(enum_conv(RoundingMode), default=RoundingMode.RTNE)

    def check(self, src: object, dst: object) -> None:
        ok = _is_float(src) and _is_float(dst) and _bits(src) >= _bits(dst) and src != dst
        self._need(ok, src, dst, "needs a float type no wider")


# The signed and unsigned variants of a cast share their type rule through an unnamed base, not
# by deriving one from the other: `isinstance(op, ExtSIOp)` must never match an `ExtUIOp`.


class IntToFloatOp(CastOp):
    def check(self, src: object, dst: object) -> None:
        self._need(_is_int(src) and _is_float(dst), src, dst, "converts an integer to a float")


class SIToFPOp(IntToFloatOp):
    name: ClassVar[str] = "arith.sitofp"


class UIToFPOp(IntToFloatOp):
    name: ClassVar[str] = "arith.uitofp"


class FloatToIntOp(CastOp):
    """Float to integer, truncating toward zero."""

    def check(self, src: object, dst: object) -> None:
        self._need(_is_float(src) and _is_int(dst), src, dst, "converts a float to an integer")


class FPToSIOp(FloatToIntOp):
    name: ClassVar[str] = "arith.fptosi"


class FPToUIOp(FloatToIntOp):
    name: ClassVar[str] = "arith.fptoui"


class IntExtOp(CastOp):
    def check(self, src: object, dst: object) -> None:
        self._need(_is_int(src) and _is_int(dst) and _bits(src) < _bits(dst), src, dst, "needs a wider integer type")


class ExtSIOp(IntExtOp):
    name: ClassVar[str] = "arith.extsi"


class ExtUIOp(IntExtOp):
    name: ClassVar[str] = "arith.extui"


class TruncIOp(CastOp):
    name: ClassVar[str] = "arith.trunci"

    def check(self, src: object, dst: object) -> None:
        self._need(_is_int(src) and _is_int(dst) and _bits(src) > _bits(dst), src, dst, "needs a narrower integer type")


class BitcastOp(CastOp):
    """Reinterpret the bits of a scalar as another scalar type of the same width (or change the
    signedness of an integer type)."""

    name: ClassVar[str] = "arith.bitcast"

    def check(self, src: object, dst: object) -> None:
        ok = isinstance(src, ScalarType) and isinstance(dst, ScalarType) and _bits(src) == _bits(dst)
        self._need(ok, src, dst, "needs scalar types of one width")


class PtrToIntOp(CastOp):
    name: ClassVar[str] = "tt.ptr_to_int"

    def check(self, src: object, dst: object) -> None:
        self._need(isinstance(src, PointerType) and dst == i64, src, dst, "converts a pointer to i64")


class IntToPtrOp(CastOp):
    name: ClassVar[str] = "tt.int_to_ptr"

    def check(self, src: object, dst: object) -> None:
        self._need(src == i64 and isinstance(dst, PointerType), src, dst, "converts i64 to a pointer")


class PtrBitcastOp(CastOp):
    """Change a pointer's element type."""

    name: ClassVar[str] = "tt.bitcast"

    def check(self, src: object, dst: object) -> None:
        self._need(isinstance(src, PointerType) and isinstance(dst, PointerType), src, dst, "converts a pointer to a pointer")

