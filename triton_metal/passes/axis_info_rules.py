"""The transfer rules of the axis info analysis, one per op class (found through base classes).

Each rule takes the op and the facts of its operands and returns the facts of its results; ops
without a rule get pessimistic facts (`axis_info_driver.py` applies them). See `axis_info.py`
for what the facts mean; every rule below keeps those meanings true (the comments say why where
it is not obvious).
"""

from __future__ import annotations

import math
from ..ir import Op
from ..ir.ops import arith as A
from ..ir.ops import tt
from ..ir.ops.tt_debug import HintKind, HintOp
from ..ir.ops.ttg import ConvertLayoutOp
from ..ir.types import element_type, shape_of
from .axis_info import AxisInfo, _cap, dims_of, is_integral, pointee_bytes, pow2_divisor, rank_of
from .axis_info_driver import RULES, AxisInfoAnalysis, rule

# -- sources ------------------------------------------------------------------------------------


@rule(A.ConstantOp)
def _constant(an: AxisInfoAnalysis, op: A.ConstantOp) -> list[AxisInfo]:
    if isinstance(op.value, float):
        dims = dims_of(op.result.type)
        return [AxisInfo((1,) * len(dims), (1,) * len(dims), dims)]
    return [AxisInfo.of_constant(int(op.value), dims_of(op.result.type))]


@rule(tt.MakeRangeOp)
def _make_range(an: AxisInfoAnalysis, op: tt.MakeRangeOp) -> list[AxisInfo]:
    n = op.end - op.start
    return [AxisInfo((n,), (pow2_divisor(op.start),), (1,), None, op.start >= 0)]


@rule(tt.GetProgramIdOp, tt.GetNumProgramsOp)
def _program_id(an: AxisInfoAnalysis, op: Op) -> list[AxisInfo]:
    return [AxisInfo.pessimistic(1, non_negative=True)]


@rule(HintOp)
def _hint(an: AxisInfoAnalysis, op: HintOp) -> list[AxisInfo]:
    src = an.get(op.src)
    values = tuple(op.values)
    if len(values) != src.rank:
        return [src]
    contiguity, divisibility, constancy = list(src.contiguity), list(src.divisibility), list(src.constancy)
    for d, v in enumerate(values):
        # A hint is a promise; the stronger of it and what the analysis proved holds.
        if op.kind is HintKind.MULTIPLE_OF:
            divisibility[d] = max(divisibility[d], pow2_divisor(v))
        elif op.kind is HintKind.MAX_CONTIGUOUS:
            contiguity[d] = max(contiguity[d], v)
        elif op.kind is HintKind.MAX_CONSTANCY:
            constancy[d] = max(constancy[d], v)
    constant = src.constant
    for d in range(src.rank):
        # a run cannot be both contiguous and constant: the stated fact wins over the other
        if op.kind is HintKind.MAX_CONTIGUOUS and contiguity[d] > 1:
            constancy[d], constant = 1, None
        elif op.kind is HintKind.MAX_CONSTANCY and constancy[d] > 1:
            contiguity[d] = 1
    return [AxisInfo(tuple(contiguity), tuple(divisibility), tuple(constancy), constant, src.non_negative)]


# -- shape ops ----------------------------------------------------------------------------------


@rule(tt.SplatOp)
def _splat(an: AxisInfoAnalysis, op: tt.SplatOp) -> list[AxisInfo]:
    src = an.get(op.src)
    dims = dims_of(op.result.type)
    div = src.element_divisibility
    return [AxisInfo((1,) * len(dims), (div,) * len(dims), dims, src.constant, src.non_negative)]


@rule(tt.BroadcastOp)
def _broadcast(an: AxisInfoAnalysis, op: tt.BroadcastOp) -> list[AxisInfo]:
    src = an.get(op.src)
    src_dims, dims = dims_of(op.src.type), dims_of(op.result.type)
    contiguity, divisibility, constancy = list(src.contiguity), list(src.divisibility), list(src.constancy)
    for d, (s, n) in enumerate(zip(src_dims, dims)):
        if s == 1 and n != 1:
            # every element along d is a copy of the single source element
            contiguity[d], constancy[d] = 1, n
            divisibility[d] = src.element_divisibility
    return [AxisInfo(tuple(contiguity), tuple(divisibility), tuple(constancy), src.constant, src.non_negative)]


@rule(tt.ExpandDimsOp)
def _expand_dims(an: AxisInfoAnalysis, op: tt.ExpandDimsOp) -> list[AxisInfo]:
    src = an.get(op.src)
    if not shape_of(op.src.type):  # a scalar becomes a one-element tensor
        return [AxisInfo((1,), (src.element_divisibility,), (1,), src.constant, src.non_negative)]
    contiguity, divisibility, constancy = list(src.contiguity), list(src.divisibility), list(src.constancy)
    contiguity.insert(op.axis, 1)
    divisibility.insert(op.axis, src.element_divisibility)
    constancy.insert(op.axis, 1)
    return [AxisInfo(tuple(contiguity), tuple(divisibility), tuple(constancy), src.constant, src.non_negative)]


@rule(tt.TransOp)
def _trans(an: AxisInfoAnalysis, op: tt.TransOp) -> list[AxisInfo]:
    src = an.get(op.src)
    order = op.order
    return [AxisInfo(
        tuple(src.contiguity[i] for i in order), tuple(src.divisibility[i] for i in order),
        tuple(src.constancy[i] for i in order), src.constant, src.non_negative,
    )]


def _identity(an: AxisInfoAnalysis, op: Op) -> list[AxisInfo]:
    return [an.get(op.operands[0])]


def register_identity(cls: type[Op]) -> None:
    """Ops whose result holds the operand's elements in place (layout conversions)."""
    RULES[cls] = _identity


register_identity(ConvertLayoutOp)


# -- arithmetic ---------------------------------------------------------------------------------


def _add_like(a: AxisInfo, b: AxisInfo, sub: bool) -> AxisInfo:
    """`a + b` (or `a - b`): a contiguous run plus a constant run stays contiguous (a constant
    minus a contiguous run decreases, so subtraction keeps only the first case)."""
    rank = a.rank
    contiguity: list[int] = []
    for d in range(rank):
        c = math.gcd(a.contiguity[d], b.constancy[d])
        if not sub:
            c = max(c, math.gcd(a.constancy[d], b.contiguity[d]))
        contiguity.append(c)
    divisibility = tuple(
        min(a.divisibility_at(d, contiguity[d]), b.divisibility_at(d, contiguity[d])) for d in range(rank)
    )
    constancy = tuple(math.gcd(x, y) for x, y in zip(a.constancy, b.constancy))
    non_negative = not sub and a.non_negative and b.non_negative
    return AxisInfo(tuple(contiguity), divisibility, constancy, None, non_negative)


@rule(A.AddIOp)
def _addi(an: AxisInfoAnalysis, op: A.AddIOp) -> list[AxisInfo]:
    return [_add_like(an.get(op.lhs), an.get(op.rhs), False)]


@rule(A.SubIOp)
def _subi(an: AxisInfoAnalysis, op: A.SubIOp) -> list[AxisInfo]:
    return [_add_like(an.get(op.lhs), an.get(op.rhs), True)]


@rule(tt.AddPtrOp)
def _addptr(an: AxisInfoAnalysis, op: tt.AddPtrOp) -> list[AxisInfo]:
    p, off = an.get(op.ptr), an.get(op.offset)
    scale = pointee_bytes(op.ptr.type)
    # Contiguity counts elements: ptr + run of consecutive offsets is a run of consecutive
    # elements; divisibility counts bytes, so the offset's divisibility is scaled.
    rank = p.rank
    contiguity = tuple(
        max(math.gcd(p.contiguity[d], off.constancy[d]), math.gcd(p.constancy[d], off.contiguity[d]))
        for d in range(rank)
    )
    divisibility = tuple(
        min(p.divisibility_at(d, contiguity[d]), _cap(off.divisibility_at(d, contiguity[d]) * scale))
        for d in range(rank)
    )
    constancy = tuple(math.gcd(x, y) for x, y in zip(p.constancy, off.constancy))
    return [AxisInfo(contiguity, divisibility, constancy)]


@rule(A.MulIOp)
def _muli(an: AxisInfoAnalysis, op: A.MulIOp) -> list[AxisInfo]:
    a, b = an.get(op.lhs), an.get(op.rhs)
    rank = a.rank
    contiguity = tuple(
        a.contiguity[d] if b.constant == 1 else b.contiguity[d] if a.constant == 1 else 1 for d in range(rank)
    )
    divisibility = tuple(
        _cap(a.divisibility_at(d, contiguity[d]) * b.divisibility_at(d, contiguity[d])) for d in range(rank)
    )
    constancy = tuple(math.gcd(x, y) for x, y in zip(a.constancy, b.constancy))
    if a.constant == 0 or b.constant == 0:
        return [AxisInfo.of_constant(0, dims_of(op.result.type))]
    return [AxisInfo(contiguity, divisibility, constancy, None, a.non_negative and b.non_negative)]


def _block_constancy(a: AxisInfo, d: int, c: int) -> int:
    """Group size over which `floor(a / c)` is constant: aligned groups of g = gcd(C, D, c)
    consecutive values starting at multiples of g lie in one block of c values."""
    return math.gcd(math.gcd(a.contiguity[d], a.divisibility[d]), c)


def _div_or_shift(a: AxisInfo, c: int, floor_ok: bool) -> AxisInfo:
    """`a / c` for a positive constant `c`. Truncating division only equals floor division on
    non-negative values, hence `floor_ok` (unsigned division, arithmetic shifts)."""
    rank = a.rank
    if c == 1:
        return a
    blocks = floor_ok or a.non_negative
    constancy = tuple(
        max(a.constancy[d], _block_constancy(a, d, c) if blocks else 1) for d in range(rank)
    )
    divisibility: list[int] = []
    for d in range(rank):
        # Where the quotient is constant over a's contiguous group, every element equals the
        # group start divided by c; elsewhere only constant runs of a keep their divisibility.
        if a.contiguity[d] == 1 or constancy[d] >= a.contiguity[d]:
            base = a.divisibility[d]
            cd = pow2_divisor(c)
            divisibility.append(base // c if c == cd and base >= c and base % c == 0 else 1)
        else:
            divisibility.append(1)
    return AxisInfo((1,) * rank, tuple(divisibility), constancy, None, a.non_negative)


@rule(A.DivSIOp, A.DivUIOp)
def _div(an: AxisInfoAnalysis, op: Op) -> list[AxisInfo]:
    a, b = an.get(op.lhs), an.get(op.rhs)  # type: ignore[attr-defined]
    if b.constant is None or b.constant <= 0:
        return [_generic_elementwise(a, b)]
    # truncating (divsi) and unsigned division of signed-typed values (divui) group values into
    # blocks only where they are non-negative (unsigned types are)
    return [_div_or_shift(a, b.constant, False)]


@rule(A.ShRSIOp, A.ShRUIOp)
def _shr(an: AxisInfoAnalysis, op: Op) -> list[AxisInfo]:
    a, b = an.get(op.lhs), an.get(op.rhs)  # type: ignore[attr-defined]
    bits = element_type(op.result.type).bitwidth  # type: ignore[union-attr]
    if b.constant is None or not 0 <= b.constant < bits:
        return [_generic_elementwise(a, b)]
    # an arithmetic shift floors for either sign; a logical one only on non-negative values
    return [_div_or_shift(a, 1 << b.constant, isinstance(op, A.ShRSIOp))]


@rule(A.ShLIOp)
def _shl(an: AxisInfoAnalysis, op: A.ShLIOp) -> list[AxisInfo]:
    a, b = an.get(op.lhs), an.get(op.rhs)
    bits = element_type(op.result.type).bitwidth  # type: ignore[union-attr]
    if b.constant is None or not 0 <= b.constant < bits:
        return [_generic_elementwise(a, b)]
    if b.constant == 0:
        return [a]
    k = 1 << b.constant
    rank = a.rank
    divisibility = tuple(_cap(a.divisibility_at(d, 1) * k) for d in range(rank))
    return [AxisInfo((1,) * rank, divisibility, a.constancy)]


def _rem(a: AxisInfo, c: int, floor_ok: bool) -> AxisInfo:
    """`a mod c` for a positive constant c: a contiguous group that stays inside one block of c
    values stays contiguous (only for non-negative values under truncating remainder)."""
    rank = a.rank
    blocks = floor_ok or a.non_negative
    contiguity = tuple(_block_constancy(a, d, c) if blocks else 1 for d in range(rank))
    cd = pow2_divisor(c)
    divisibility = tuple(min(a.divisibility_at(d, contiguity[d]), cd) for d in range(rank))
    return AxisInfo(contiguity, divisibility, a.constancy, None, a.non_negative)


@rule(A.RemSIOp, A.RemUIOp)
def _remi(an: AxisInfoAnalysis, op: Op) -> list[AxisInfo]:
    a, b = an.get(op.lhs), an.get(op.rhs)  # type: ignore[attr-defined]
    if b.constant is None or b.constant <= 0:
        return [_generic_elementwise(a, b)]
    return [_rem(a, b.constant, False)]  # as for division: blocks only where non-negative


@rule(A.AndIOp)
def _andi(an: AxisInfoAnalysis, op: A.AndIOp) -> list[AxisInfo]:
    a, b = an.get(op.lhs), an.get(op.rhs)
    if b.constant is None and a.constant is not None:
        a, b = b, a
    if b.constant is not None and b.constant > 0 and b.constant & (b.constant + 1) == 0:
        # x & (2**k - 1) is the floor remainder by 2**k, for any sign
        return [_rem(a, b.constant + 1, True)]
    info = _generic_elementwise(a, b)
    # a bit clear in either operand is clear in the result
    div = max(a.element_divisibility, b.element_divisibility)
    rank = info.rank
    return [AxisInfo(info.contiguity, (div,) * rank, info.constancy, None, a.non_negative or b.non_negative)]


def _generic_elementwise(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    """Any elementwise function of `a` and `b`: constant where both are."""
    constancy = tuple(math.gcd(x, y) for x, y in zip(a.constancy, b.constancy))
    return AxisInfo((1,) * a.rank, (1,) * a.rank, constancy)


@rule(A.OrIOp, A.XOrIOp)
def _or_xor(an: AxisInfoAnalysis, op: Op) -> list[AxisInfo]:
    a, b = an.get(op.lhs), an.get(op.rhs)  # type: ignore[attr-defined]
    info = _generic_elementwise(a, b)
    div = min(a.element_divisibility, b.element_divisibility)  # low zero bits common to both
    non_negative = a.non_negative and b.non_negative
    return [AxisInfo(info.contiguity, (div,) * info.rank, info.constancy, None, non_negative)]


@rule(A.MinSIOp, A.MinUIOp, A.MaxSIOp, A.MaxUIOp)
def _min_max(an: AxisInfoAnalysis, op: Op) -> list[AxisInfo]:
    a, b = an.get(op.lhs), an.get(op.rhs)  # type: ignore[attr-defined]
    info = _generic_elementwise(a, b)
    div = min(a.element_divisibility, b.element_divisibility)  # the result is one of them
    if isinstance(op, (A.MaxSIOp, A.MaxUIOp)):
        non_negative = a.non_negative or b.non_negative
    else:
        non_negative = a.non_negative and b.non_negative
    return [AxisInfo(info.contiguity, (div,) * info.rank, info.constancy, None, non_negative)]


@rule(A.MulHiOp, A.AbsIOp, A.NegIOp, A.NotIOp, A.FloatBinaryOp, A.UnaryOp, A.FmaOp, A.CmpFOp, A.CastOp)
def _elementwise_unknown(an: AxisInfoAnalysis, op: Op) -> list[AxisInfo]:
    """Any elementwise function: constant where all its operands are."""
    infos = [an.get(v) for v in op.operands]
    info = infos[0]
    for other in infos[1:]:
        info = _generic_elementwise(info, other)
    # (abs is not non-negative either: abs(INT_MIN) wraps to INT_MIN)
    return [AxisInfo((1,) * info.rank, (1,) * info.rank, info.constancy)]


@rule(A.SelectOp)
def _select(an: AxisInfoAnalysis, op: A.SelectOp) -> list[AxisInfo]:
    c, a, b = an.get(op.condition), an.get(op.true_value), an.get(op.false_value)
    if c.constant is not None:
        return [a if c.constant else b]
    rank = a.rank
    scalar_cond = not shape_of(op.condition.type)
    cond_const = tuple(dims_of(op.result.type)) if scalar_cond else c.constancy
    contiguity = tuple(math.gcd(math.gcd(a.contiguity[d], b.contiguity[d]), cond_const[d]) for d in range(rank))
    divisibility = tuple(
        min(a.divisibility_at(d, contiguity[d]), b.divisibility_at(d, contiguity[d])) for d in range(rank)
    )
    constancy = tuple(math.gcd(math.gcd(a.constancy[d], b.constancy[d]), cond_const[d]) for d in range(rank))
    constant = a.constant if a.constant is not None and a.constant == b.constant else None
    return [AxisInfo(contiguity, divisibility, constancy, constant, a.non_negative and b.non_negative)]


_LESS = {A.CmpPredicate.SLT, A.CmpPredicate.ULT, A.CmpPredicate.SGE, A.CmpPredicate.UGE}
_GREATER = {A.CmpPredicate.SGT, A.CmpPredicate.UGT, A.CmpPredicate.SLE, A.CmpPredicate.ULE}


@rule(A.CmpIOp)
def _cmpi(an: AxisInfoAnalysis, op: A.CmpIOp) -> list[AxisInfo]:
    a, b = an.get(op.lhs), an.get(op.rhs)
    rank = a.rank
    constancy = list(math.gcd(x, y) for x, y in zip(a.constancy, b.constancy))
    for d in range(rank):
        # x < y (and x >= y) is constant over an aligned run of g consecutive x whose start is
        # a multiple of g when y is constant there and also a multiple of g: the run cannot
        # straddle y. With the constant on the left, y > x and y <= x are the same tests.
        if op.predicate in _LESS:
            run, const = a, b
        elif op.predicate in _GREATER:
            run, const = b, a
        else:
            continue
        g = math.gcd(run.contiguity[d], const.constancy[d])
        if g <= 1:
            continue
        g = math.gcd(g, math.gcd(run.divisibility_at(d, g), const.divisibility_at(d, g)))
        constancy[d] = max(constancy[d], g)
    return [AxisInfo((1,) * rank, (1,) * rank, tuple(constancy), None, True)]


# -- casts --------------------------------------------------------------------------------------


@rule(A.ExtSIOp, A.ExtUIOp)
def _ext(an: AxisInfoAnalysis, op: Op) -> list[AxisInfo]:
    src = an.get(op.operands[0])
    if isinstance(op, A.ExtUIOp) and not src.non_negative:
        # zero extension of a negative value changes it (but not its low zero bits)
        return [AxisInfo(src.contiguity, src.divisibility, src.constancy, None, True)]
    return [src]


@rule(A.TruncIOp, A.BitcastOp)
def _trunc(an: AxisInfoAnalysis, op: Op) -> list[AxisInfo]:
    src = an.get(op.operands[0])
    if not is_integral(op.operands[0].type) or not is_integral(op.result.type):
        return [AxisInfo.pessimistic(rank_of(op.result.type))]
    # low bits, and with them power-of-two divisibility, survive truncation
    return [AxisInfo(src.contiguity, src.divisibility, src.constancy)]


@rule(A.PtrToIntOp, A.IntToPtrOp, A.PtrBitcastOp)
def _ptr_casts(an: AxisInfoAnalysis, op: Op) -> list[AxisInfo]:
    src = an.get(op.operands[0])
    # the address is unchanged; contiguity counts elements, which only ptr_to_int/int_to_ptr
    # of byte-sized pointees would keep, so keep only divisibility (bytes) and constancy
    rank = src.rank
    return [AxisInfo((1,) * rank, (src.element_divisibility,) * rank, src.constancy)]


__all__ = ["register_identity"]
