"""Evaluation of elementwise ops on constant operands, with the device's semantics.

`evaluate(op, values)` returns the constant the op computes from the constant `values` of its
operands (one per operand, in order), or None when folding could give a different answer than
the device, or when the op has no folding rule. Rules:

* Integers keep their width and signedness: results wrap around (two's complement); `divsi`
  and `remsi` truncate toward zero (C), the remainder taking the dividend's sign; `divui`,
  `remui`, `shrui`, `minui`, `maxui` and unsigned predicates read the bits as unsigned, the
  signed ones as signed, whatever the operand type's own signedness. Division by zero,
  `INT_MIN / -1` and shifts by the bit width or more are left alone (undefined on the device).
* Floats: `addf`, `subf`, `mulf` of f32 and f16 are IEEE operations that round once, computed
  with NumPy in the operand type; `negf` and `absf` are exact in every type. Division, remainder,
  min/max, powers and every transcendental function are never folded: the device may compute
  them with a different rounding (fast math, approximate `exp`, `divide`), and a folded constant
  must equal what the kernel computes unfolded. bf16 arithmetic and bf16 conversions are not
  folded either. Comparisons of floats fold only when neither operand is NaN (fast math may
  assume there are none); no fold produces a NaN (its bits are the device's choice, and the IR
  text keeps no payload).
* Casts: integer extensions, truncations and same-width bitcasts fold exactly; int -> f32/f16
  rounds to nearest even (as Metal converts), for magnitudes below 2**53 and results in range;
  f32/f16 -> int truncates toward zero, only for results in range; `extf` is exact; `truncf`
  f32 -> f16 folds with round-to-nearest-even (toward zero only when exact), unless it
  overflows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir import Op
from ..ir.ops import arith as A
from ..ir.types import ScalarType, element_type

Scalar = bool | int | float
Evaluator = Callable[[Any, list[Scalar], ScalarType], Scalar | None]
EVALUATORS: dict[type[Op], Evaluator] = {}

_NP_FLOAT = {"f32": np.float32, "f16": np.float16}


def evaluates(*classes: type[Op]) -> Callable[[Evaluator], Evaluator]:
    def deco(fn: Evaluator) -> Evaluator:
        for c in classes:
            EVALUATORS[c] = fn
        return fn

    return deco


def evaluate(op: Op, values: list[Scalar]) -> Scalar | None:
    """The constant `op` computes from constant operands, or None (see the module docstring)."""
    fn = EVALUATORS.get(type(op))
    if fn is None or len(op.results) != 1:
        return None
    el = element_type(op.operands[0].type) if op.operands else None
    if not isinstance(el, ScalarType):
        return None
    result = fn(op, values, el)
    if isinstance(result, float) and math.isnan(result):
        return None  # which NaN (sign, payload) the device makes is its own; the text keeps none
    return result


# -- integer views ------------------------------------------------------------------------------


def unsigned(x: Scalar, bits: int) -> int:
    return int(x) & ((1 << bits) - 1)


def signed(x: Scalar, bits: int) -> int:
    u = unsigned(x, bits)
    return u - (1 << bits) if bits > 1 and u >= 1 << (bits - 1) else u


def to_type(x: int, el: ScalarType) -> Scalar:
    """`x` wrapped into the integer type `el` (a bool for i1)."""
    if el.is_bool():
        return bool(x & 1)
    return signed(x, el.bitwidth) if el.is_signed() else unsigned(x, el.bitwidth)


def _int_result(op: Op, x: int) -> Scalar:
    el = element_type(op.results[0].type)
    assert isinstance(el, ScalarType)
    return to_type(x, el)


_WRAPPING: dict[type[Op], Callable[[int, int], int]] = {
    A.AddIOp: lambda a, b: a + b,
    A.SubIOp: lambda a, b: a - b,
    A.MulIOp: lambda a, b: a * b,
    A.AndIOp: lambda a, b: a & b,
    A.OrIOp: lambda a, b: a | b,
    A.XOrIOp: lambda a, b: a ^ b,
}


@evaluates(*_WRAPPING)
def _wrapping(op: Op, v: list[Scalar], el: ScalarType) -> Scalar | None:
    if el.is_float():
        return None
    a, b = unsigned(v[0], el.bitwidth), unsigned(v[1], el.bitwidth)
    return _int_result(op, _WRAPPING[type(op)](a, b))


@evaluates(A.DivSIOp, A.RemSIOp)
def _signed_div(op: Op, v: list[Scalar], el: ScalarType) -> Scalar | None:
    bits = el.bitwidth
    if el.is_bool():
        return None
    a, b = signed(v[0], bits), signed(v[1], bits)
    if b == 0 or (a == -(1 << (bits - 1)) and b == -1):
        return None
    q = abs(a) // abs(b)
    q = q if (a < 0) == (b < 0) else -q
    return _int_result(op, q if isinstance(op, A.DivSIOp) else a - q * b)


@evaluates(A.DivUIOp, A.RemUIOp)
def _unsigned_div(op: Op, v: list[Scalar], el: ScalarType) -> Scalar | None:
    a, b = unsigned(v[0], el.bitwidth), unsigned(v[1], el.bitwidth)
    if b == 0 or el.is_bool():
        return None
    return _int_result(op, a // b if isinstance(op, A.DivUIOp) else a % b)


@evaluates(A.ShLIOp, A.ShRUIOp, A.ShRSIOp)
def _shift(op: Op, v: list[Scalar], el: ScalarType) -> Scalar | None:
    bits = el.bitwidth
    amount = unsigned(v[1], bits)
    if amount >= bits or el.is_bool():
        return None
    if isinstance(op, A.ShLIOp):
        return _int_result(op, unsigned(v[0], bits) << amount)
    if isinstance(op, A.ShRUIOp):
        return _int_result(op, unsigned(v[0], bits) >> amount)
    return _int_result(op, signed(v[0], bits) >> amount)


@evaluates(A.MinSIOp, A.MaxSIOp, A.MinUIOp, A.MaxUIOp)
def _min_max(op: Op, v: list[Scalar], el: ScalarType) -> Scalar | None:
    view = unsigned if isinstance(op, (A.MinUIOp, A.MaxUIOp)) else signed
    a, b = view(v[0], el.bitwidth), view(v[1], el.bitwidth)
    pick = min if isinstance(op, (A.MinSIOp, A.MinUIOp)) else max
    return _int_result(op, pick(a, b))


@evaluates(A.MulHiOp)
def _mulhi(op: Op, v: list[Scalar], el: ScalarType) -> Scalar | None:
    bits = el.bitwidth  # unsigned product whatever the type, as Triton's umulhi
    return _int_result(op, (unsigned(v[0], bits) * unsigned(v[1], bits)) >> bits)


@evaluates(A.NegIOp, A.NotIOp)
def _int_unary(op: Op, v: list[Scalar], el: ScalarType) -> Scalar | None:
    x = unsigned(v[0], el.bitwidth)
    return _int_result(op, -x if isinstance(op, A.NegIOp) else ~x)


def _compare(pred: A.CmpPredicate, a: Any, b: Any) -> bool:
    name = pred.value.lstrip("osu")
    return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[name]


@evaluates(A.CmpIOp)
def _cmpi(op: A.CmpIOp, v: list[Scalar], el: ScalarType) -> Scalar | None:
    bits = el.bitwidth
    view = unsigned if op.predicate.value.startswith("u") or el.is_bool() else signed
    if op.predicate.value in ("eq", "ne"):
        view = unsigned
    return _compare(op.predicate, view(v[0], bits), view(v[1], bits))


# -- floats -------------------------------------------------------------------------------------


@evaluates(A.AddFOp, A.SubFOp, A.MulFOp)
def _float_arith(op: Op, v: list[Scalar], el: ScalarType) -> Scalar | None:
    np_type = _NP_FLOAT.get(el.name)
    if np_type is None:
        return None
    a, b = np_type(v[0]), np_type(v[1])
    with np.errstate(all="ignore"):
        r = a + b if isinstance(op, A.AddFOp) else a - b if isinstance(op, A.SubFOp) else a * b
    return float(r)


@evaluates(A.NegFOp, A.AbsFOp)
def _float_sign(op: Op, v: list[Scalar], el: ScalarType) -> Scalar | None:
    x = float(v[0])
    return -x if isinstance(op, A.NegFOp) else abs(x)


@evaluates(A.CmpFOp)
def _cmpf(op: A.CmpFOp, v: list[Scalar], el: ScalarType) -> Scalar | None:
    a, b = float(v[0]), float(v[1])
    if math.isnan(a) or math.isnan(b):
        return None
    return _compare(op.predicate, a, b)


# -- casts --------------------------------------------------------------------------------------


def _dst(op: Op) -> ScalarType | None:
    el = element_type(op.results[0].type)
    return el if isinstance(el, ScalarType) else None


@evaluates(A.ExtSIOp, A.ExtUIOp, A.TruncIOp)
def _int_cast(op: Op, v: list[Scalar], el: ScalarType) -> Scalar | None:
    dst = _dst(op)
    if dst is None:
        return None
    x = signed(v[0], el.bitwidth) if isinstance(op, A.ExtSIOp) and not el.is_bool() else unsigned(v[0], el.bitwidth)
    return to_type(x, dst)


_BITS_TYPES = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


@evaluates(A.BitcastOp)
def _bitcast(op: Op, v: list[Scalar], el: ScalarType) -> Scalar | None:
    dst = _dst(op)
    if dst is None or el.is_bool() or dst.is_bool():
        return None
    if el.is_int() and dst.is_int():
        return to_type(unsigned(v[0], el.bitwidth), dst)
    bits_type = _BITS_TYPES[el.bitwidth]
    if el.is_int() and dst.name in _NP_FLOAT:
        return float(np.array([unsigned(v[0], el.bitwidth)], dtype=bits_type).view(_NP_FLOAT[dst.name])[0])
    if el.name in _NP_FLOAT and dst.is_int():
        raw = int(np.array([v[0]], dtype=_NP_FLOAT[el.name]).view(bits_type)[0])
        return to_type(raw, dst)
    return None


@evaluates(A.SIToFPOp, A.UIToFPOp)
def _int_to_float(op: Op, v: list[Scalar], el: ScalarType) -> Scalar | None:
    dst = _dst(op)
    if dst is None or dst.name not in _NP_FLOAT:
        return None
    x = unsigned(v[0], el.bitwidth) if isinstance(op, A.UIToFPOp) or el.is_bool() else signed(v[0], el.bitwidth)
    if abs(x) >= 1 << 53:
        return None  # the conversion through a double would round twice
    with np.errstate(all="ignore"):
        r = float(_NP_FLOAT[dst.name](float(x)))
    return r if math.isfinite(r) else None  # out of the type's range: left to the device


@evaluates(A.FPToSIOp, A.FPToUIOp)
def _float_to_int(op: Op, v: list[Scalar], el: ScalarType) -> Scalar | None:
    dst = _dst(op)
    x = float(v[0])
    if dst is None or dst.is_bool() or not math.isfinite(x):
        return None
    t = int(x)  # truncates toward zero
    bits = dst.bitwidth
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if isinstance(op, A.FPToSIOp) else (0, (1 << bits) - 1)
    if not lo <= t <= hi:
        return None  # out of range: the device's answer is unspecified
    return to_type(t, dst)


@evaluates(A.ExtFOp)
def _extf(op: Op, v: list[Scalar], el: ScalarType) -> Scalar | None:
    if el.is_fp8():
        return None  # an fp8 constant's value is the format's rounding of its attribute: left to the device
    return float(v[0])


@evaluates(A.TruncFOp)
def _truncf(op: A.TruncFOp, v: list[Scalar], el: ScalarType) -> Scalar | None:
    dst = _dst(op)
    if dst is None or dst.name != "f16" or el.name not in ("f32", "f64"):
        return None
    x = float(v[0])
    with np.errstate(all="ignore"):
        r = float(np.float16(x))
    if op.rounding is A.RoundingMode.RTZ and r != x and not math.isnan(x):
        return None
    if math.isinf(r) and math.isfinite(x):
        return None  # overflow: whether it saturates or gives inf is the device's business
    return r
