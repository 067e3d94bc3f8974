"""Axis info analysis: contiguity, divisibility and constancy of integer and pointer values.

Contract: `analyze_axis_info(func_or_module) -> AxisInfoResult`; `result.get(value)` gives the
`AxisInfo` of any value (the pessimistic facts for values the analysis does not track, floats
included). The analysis never mutates the IR. Per dimension `d` of a value (a scalar counts as
one dimension of size 1):

* `contiguity[d] = C`: split dimension `d` into aligned groups of `C` indices (`[kC, kC + C)`);
  within a group the value grows by exactly 1 per index (one element for pointers).
* `divisibility[d] = D` (a power of two): the value at every index that starts such a group
  (`i % C == 0`) is a multiple of `D`; in elements for integers, in BYTES for pointers (the
  address), as Triton counts it. With `C == 1` that is every element.
* `constancy[d] = K`: within aligned groups of `K` indices along `d` the value does not change.

Floats carry only constancy (their contiguity and divisibility are always 1): a masked load's
`other` or a splatted float is constant over whole runs, which vector accesses need to know.

Two extras ride along: `constant` (the value, when every element is one known integer) and
`non_negative` (every element is >= 0 read in its type's signedness), which makes the division
and remainder rules sound for signed integers.

Assumptions (Triton's): index arithmetic does not overflow inside a contiguous group (an i32
offset that wraps from 2**31 - 1 to -2**31 breaks contiguity unseen); `tt.divisibility`
attributes and `tt.hint` facts are true (they are promises from the specialization key and the
user). Powers of two survive wrap-around exactly, so divisibility is sound under overflow.

Loops: the facts of loop-carried values are a meet over the entry values and the values yielded
by the body, iterated to a fixed point (a lattice of finite height: each fact only shrinks).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from ..ir import Module, Op, Value
from ..ir.ops import FuncOp
from ..ir.types import PointerType, ScalarType, Type, element_type, shape_of

MAX_DIVISIBILITY = 1 << 62
"""The divisibility of zero (every power of two divides it), as Triton caps it."""


def pow2_divisor(n: int) -> int:
    """The largest power of two dividing `n` (capped at `MAX_DIVISIBILITY`; 0 gives the cap)."""
    if n == 0:
        return MAX_DIVISIBILITY
    return min(n & -n, MAX_DIVISIBILITY)


def _cap(d: int) -> int:
    return min(max(d, 1), MAX_DIVISIBILITY)


@dataclass(frozen=True)
class AxisInfo:
    """The facts about one value, per dimension (see the module docstring)."""

    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]
    constant: int | None = None
    """The value of every element, when known."""
    non_negative: bool = False
    """Every element is >= 0 (in the value's own signedness)."""

    def __post_init__(self) -> None:
        n = len(self.contiguity)
        if n == 0 or len(self.divisibility) != n or len(self.constancy) != n:
            raise ValueError(f"axis info needs one entry per dimension: {self}")
        for d in self.divisibility:
            if d < 1 or d & (d - 1):
                raise ValueError(f"divisibility must be powers of two, got {self.divisibility}")

    @property
    def rank(self) -> int:
        return len(self.contiguity)

    @staticmethod
    def pessimistic(rank: int, non_negative: bool = False) -> AxisInfo:
        """What holds for any value: groups of one, divisible by 1."""
        ones = (1,) * max(rank, 1)
        return AxisInfo(ones, ones, ones, None, non_negative)

    @staticmethod
    def of_constant(value: int, shape: tuple[int, ...]) -> AxisInfo:
        """Every element equal to `value`."""
        dims = shape or (1,)
        return AxisInfo((1,) * len(dims), (pow2_divisor(value),) * len(dims), tuple(dims), value, value >= 0)

    def divisibility_at(self, dim: int, group: int) -> int:
        """The divisibility of the value at every index along `dim` that is a multiple of
        `group` (a sub-grouping of the value's own contiguous groups when `group < C`)."""
        c = self.contiguity[dim]
        if group % c == 0:
            return self.divisibility[dim]
        # index i = start of a C-group + (i mod C), and (i mod C) is a multiple of gcd(group, C)
        return min(self.divisibility[dim], pow2_divisor(math.gcd(group, c)))

    @property
    def element_divisibility(self) -> int:
        """A power of two dividing every element."""
        best = 1
        for c, d in zip(self.contiguity, self.divisibility):
            if c == 1:
                best = max(best, d)
        if self.constant is not None:
            best = max(best, pow2_divisor(self.constant))
        return best

    def __str__(self) -> str:
        const = "<none>" if self.constant is None else str(self.constant)
        return (
            f"contiguity = {list(self.contiguity)}, divisibility = {list(self.divisibility)}, "
            f"constancy = {list(self.constancy)}, constant_value = {const}"
        )


def meet(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    """Facts that hold for both `a` and `b` (the value may be either)."""
    if a == b:
        return a
    rank = a.rank
    if b.rank != rank:
        return AxisInfo.pessimistic(rank)
    contiguity = tuple(math.gcd(x, y) for x, y in zip(a.contiguity, b.contiguity))
    divisibility = tuple(
        min(a.divisibility_at(d, contiguity[d]), b.divisibility_at(d, contiguity[d])) for d in range(rank)
    )
    constancy = tuple(math.gcd(x, y) for x, y in zip(a.constancy, b.constancy))
    constant = a.constant if a.constant is not None and a.constant == b.constant else None
    return AxisInfo(contiguity, divisibility, constancy, constant, a.non_negative and b.non_negative)


def rank_of(ty: Type) -> int:
    return max(len(shape_of(ty)), 1)


def dims_of(ty: Type) -> tuple[int, ...]:
    """The shape, `(1,)` for scalars and pointers."""
    return shape_of(ty) or (1,)


def is_tracked(ty: Type) -> bool:
    """Integers (i1 included) and pointers carry all the facts; floats only constancy."""
    el = element_type(ty)
    return isinstance(el, (PointerType, ScalarType))


def is_integral(ty: Type) -> bool:
    """Integers (i1 included) and pointers: the values contiguity and divisibility speak of."""
    el = element_type(ty)
    return isinstance(el, PointerType) or (isinstance(el, ScalarType) and el.is_int())


def is_unsigned(ty: Type) -> bool:
    el = element_type(ty)
    return isinstance(el, ScalarType) and el.is_unsigned()


def pointee_bytes(ty: Type) -> int:
    """Bytes per element of a pointer (or tensor of pointers) type."""
    el = element_type(ty)
    assert isinstance(el, PointerType)
    pointee = el.pointee
    if isinstance(pointee, PointerType):
        return 8
    return max(pointee.bitwidth // 8, 1)


class AxisInfoResult:
    """The facts of every value of the analysed functions."""

    def __init__(self, facts: dict[Value, AxisInfo]) -> None:
        self._facts = facts

    def get(self, value: Value) -> AxisInfo:
        """The value's facts (pessimistic for values the analysis does not track)."""
        found = self._facts.get(value)
        if found is not None:
            return found
        return AxisInfo.pessimistic(rank_of(value.type), is_unsigned(value.type))

    def __contains__(self, value: Value) -> bool:
        return value in self._facts

    def items(self) -> Iterable[tuple[Value, AxisInfo]]:
        return self._facts.items()

    # -- queries the layout passes make ------------------------------------------------------
    def order(self, value: Value) -> tuple[int, ...]:
        """Dimensions by decreasing contiguity, ties broken toward the last (row-major) dim."""
        info = self.get(value)
        dims = range(info.rank)
        return tuple(sorted(dims, key=lambda d: (-info.contiguity[d], -d)))

    def pointer_contiguity(self, ptr: Value, dim: int | None = None) -> int:
        """Consecutive elements along `dim` (the most contiguous one by default)."""
        info = self.get(ptr)
        d = self.order(ptr)[0] if dim is None else dim
        return info.contiguity[d]

    def pointer_alignment(self, ptr: Value, dim: int | None = None) -> int:
        """How many elements along `dim` one aligned vector access may cover: the contiguity,
        limited by the address alignment of each group's first element (in elements)."""
        info = self.get(ptr)
        d = self.order(ptr)[0] if dim is None else dim
        elem = pointee_bytes(ptr.type)
        aligned = max(info.divisibility[d] // elem, 1)
        return max(min(info.contiguity[d], aligned), 1)

    def mask_alignment(self, mask: Value, dim: int) -> int:
        """How many consecutive elements along `dim` share one mask value."""
        return self.get(mask).constancy[dim]


def analyze_axis_info(target: FuncOp | Module | Op) -> AxisInfoResult:
    """Analyse a function (or every function of a module)."""
    from . import axis_info_rules  # noqa: F401  (registers the rules)
    from .axis_info_driver import AxisInfoAnalysis

    analysis = AxisInfoAnalysis()
    funcs = target.funcs if isinstance(target, Module) else [target]
    for f in funcs:
        analysis.run_func(f)
    return AxisInfoResult(analysis.facts)


__all__ = ["MAX_DIVISIBILITY", "AxisInfo", "AxisInfoResult", "analyze_axis_info", "meet", "pow2_divisor"]
