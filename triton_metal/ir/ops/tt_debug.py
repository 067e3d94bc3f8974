"""Compiler hints, assumptions, barriers and device-side printing and assertions."""

from __future__ import annotations

from enum import Enum
from typing import ClassVar

from ..core import Op, Value, attr, bool_tuple, enum_conv, int_tuple, operand, var_operand
from ..types import PointerType, element_type, i1
from .common import int_element, num_results, result_is


class HintKind(Enum):
    MULTIPLE_OF = "multiple_of"
    MAX_CONTIGUOUS = "max_contiguous"
    MAX_CONSTANCY = "max_constancy"


class HintOp(Op):
    """The operand unchanged, with a fact for axis analysis (one value per dimension)."""

    name: ClassVar[str] = "tt.hint"
    src: Value = operand()
    kind: HintKind = attr(enum_conv(HintKind))
    values: tuple[int, ...] = attr(int_tuple)

    def verify_(self) -> None:
        num_results(self, 1)
        if not isinstance(element_type(self.src.type), PointerType):
            int_element(self, self.src, "operand")
        rank = len(getattr(self.src.type, "shape", ())) or 1
        if len(self.values) != rank or any(v <= 0 for v in self.values):
            raise self.error(f"needs {rank} positive value(s), got {list(self.values)}")
        result_is(self, self.src.type)


class AssumeOp(Op):
    """The condition holds; the compiler may rely on it (undefined behaviour if it does not)."""

    name: ClassVar[str] = "tt.assume"
    is_pure: ClassVar[bool] = False
    condition: Value = operand()

    def verify_(self) -> None:
        num_results(self, 0)
        if element_type(self.condition.type) != i1:
            raise self.error(f"condition must be i1, got {self.condition.type}")


class BarrierOp(Op):
    """A threadgroup-wide execution and memory barrier (`tl.debug_barrier`)."""

    name: ClassVar[str] = "tt.barrier"
    is_pure: ClassVar[bool] = False

    def verify_(self) -> None:
        num_results(self, 0)


class PrintOp(Op):
    """`tl.device_print`: the prefix, then each argument (hex or decimal; ints signed or not)."""

    name: ClassVar[str] = "tt.print"
    is_pure: ClassVar[bool] = False
    args: tuple[Value, ...] = var_operand(positional=True)
    prefix: str = attr(str)
    hex: bool = attr(bool, default=False)
    is_signed: tuple[bool, ...] = attr(bool_tuple, default=())

    def verify_(self) -> None:
        num_results(self, 0)
        if len(self.is_signed) != len(self.args):
            raise self.error(f"is_signed needs one entry per argument ({len(self.args)}), got {len(self.is_signed)}")


class AssertOp(Op):
    """`tl.device_assert`: stop with `message` where the condition is false."""

    name: ClassVar[str] = "tt.assert"
    is_pure: ClassVar[bool] = False
    condition: Value = operand()
    message: str = attr(str)

    def verify_(self) -> None:
        num_results(self, 0)
        if element_type(self.condition.type) != i1:
            raise self.error(f"condition must be i1, got {self.condition.type}")
