"""Memory ops: load, store and atomics through pointers (scalars or tensors of pointers).

A mask has the pointer's shape; masked-off lanes neither read nor write (a load yields `other`,
or an unspecified value when `other` is absent).
"""

from __future__ import annotations

from enum import Enum
from typing import ClassVar

from ..core import Op, Value, attr, enum_conv, operand, opt_operand
from ..types import ScalarType, TensorType, i1, shape_of, with_element
from .common import bool_like, int_element, num_results, pointer_element, result_is

MEM_SEMANTICS = ("relaxed", "acquire", "release", "acq_rel")
MEM_SCOPES = ("gpu", "cta", "sys")


class AtomicRMWKind(Enum):
    ADD = "add"
    FADD = "fadd"
    MAX = "max"
    MIN = "min"
    AND = "and"
    OR = "or"
    XOR = "xor"
    XCHG = "xchg"


def _check_sem_scope(op: Op, sem: str, scope: str) -> None:
    if sem not in MEM_SEMANTICS:
        raise op.error(f"sem must be one of {', '.join(MEM_SEMANTICS)}, got '{sem}'")
    if scope not in MEM_SCOPES:
        raise op.error(f"scope must be one of {', '.join(MEM_SCOPES)}, got '{scope}'")



def _check_layout_hint(op: Op) -> None:
    hint = getattr(op, "layout", None)
    if hint is not None and hint not in ("COALESCED", "BLOCK"):
        raise op.error(f"layout hint must be COALESCED or BLOCK, got {hint!r}")

class LoadOp(Op):
    name: ClassVar[str] = "tt.load"
    is_pure: ClassVar[bool] = False
    ptr: Value = operand()
    mask: Value | None = opt_operand()
    other: Value | None = opt_operand()
    volatile: bool = attr(bool, default=False)
    layout: str | None = attr(str, default=None)
    """The `layout=` hint: "COALESCED" or "BLOCK" (the layout passes honour it)."""

    def verify_(self) -> None:
        _check_layout_hint(self)
        num_results(self, 1)
        pt = pointer_element(self, self.ptr, "ptr")
        expected = with_element(self.ptr.type, pt.pointee)
        result_is(self, expected)
        if self.mask is not None:
            bool_like(self, self.mask, "mask", shape_of(self.ptr.type))
        if self.other is not None:
            if self.other.type != expected:
                raise self.error(f"other must be {expected}, got {self.other.type}")
            if self.mask is None:
                raise self.error("other without a mask")


class StoreOp(Op):
    name: ClassVar[str] = "tt.store"
    is_pure: ClassVar[bool] = False
    ptr: Value = operand()
    value: Value = operand()
    mask: Value | None = opt_operand()
    layout: str | None = attr(str, default=None)
    """The `layout=` hint: "COALESCED" or "BLOCK" (the layout passes honour it)."""

    def verify_(self) -> None:
        _check_layout_hint(self)
        num_results(self, 0)
        pt = pointer_element(self, self.ptr, "ptr")
        expected = with_element(self.ptr.type, pt.pointee)
        if self.value.type != expected:
            raise self.error(f"value must be {expected}, got {self.value.type}")
        if self.mask is not None:
            bool_like(self, self.mask, "mask", shape_of(self.ptr.type))


class AtomicRMWOp(Op):
    """`old = *ptr; *ptr = old <op> value` atomically per element; returns `old`."""

    name: ClassVar[str] = "tt.atomic_rmw"
    is_pure: ClassVar[bool] = False
    ptr: Value = operand()
    value: Value = operand()
    mask: Value | None = opt_operand()
    kind: AtomicRMWKind = attr(enum_conv(AtomicRMWKind))
    sem: str = attr(str, default="acq_rel")
    scope: str = attr(str, default="gpu")

    def verify_(self) -> None:
        num_results(self, 1)
        pt = pointer_element(self, self.ptr, "ptr")
        expected = with_element(self.ptr.type, pt.pointee)
        if self.value.type != expected:
            raise self.error(f"value must be {expected}, got {self.value.type}")
        if self.mask is not None:
            bool_like(self, self.mask, "mask", shape_of(self.ptr.type))
        _check_sem_scope(self, self.sem, self.scope)
        result_is(self, expected)


class AtomicCASOp(Op):
    """`old = *ptr; if old == cmp: *ptr = value` atomically per element; returns `old`."""

    name: ClassVar[str] = "tt.atomic_cas"
    is_pure: ClassVar[bool] = False
    ptr: Value = operand()
    cmp: Value = operand()
    value: Value = operand()
    sem: str = attr(str, default="acq_rel")
    scope: str = attr(str, default="gpu")

    def verify_(self) -> None:
        num_results(self, 1)
        pt = pointer_element(self, self.ptr, "ptr")
        expected = with_element(self.ptr.type, pt.pointee)
        for what, v in (("cmp", self.cmp), ("value", self.value)):
            if v.type != expected:
                raise self.error(f"{what} must be {expected}, got {v.type}")
        _check_sem_scope(self, self.sem, self.scope)
        result_is(self, expected)


POLL_SEMANTICS = ("relaxed", "acquire")
"""The orders `tt.atomic_poll` takes: a poll only reads, so it cannot release."""


class AtomicPollOp(Op):
    """Read `*ptr` atomically until it equals `expected`; returns whether it did (i1).

    Without `timeout` the result is true once the poll returns. With it (a nanosecond count, an
    integer scalar), the poll gives up after its budget and returns false (codegen: Apple GPUs
    expose no clock, so the budget is counted in polls). `ptr` is a scalar pointer to a 16- or
    32-bit integer."""

    name: ClassVar[str] = "tt.atomic_poll"
    is_pure: ClassVar[bool] = False
    ptr: Value = operand()
    expected: Value = operand()
    timeout: Value | None = opt_operand()
    sem: str = attr(str, default="acquire")
    scope: str = attr(str, default="gpu")

    def verify_(self) -> None:
        num_results(self, 1)
        if isinstance(self.ptr.type, TensorType):
            raise self.error(f"ptr must be a scalar pointer, got {self.ptr.type}")
        pt = pointer_element(self, self.ptr, "ptr")
        if not isinstance(pt.pointee, ScalarType) or not pt.pointee.is_int():
            raise self.error(f"ptr must point to integers, got {self.ptr.type}")
        if self.expected.type != pt.pointee:
            raise self.error(f"expected must be {pt.pointee}, got {self.expected.type}")
        if self.timeout is not None:
            int_element(self, self.timeout, "timeout")
            if isinstance(self.timeout.type, TensorType):
                raise self.error(f"timeout must be a scalar, got {self.timeout.type}")
        if self.sem not in POLL_SEMANTICS:
            raise self.error(f"sem must be one of {', '.join(POLL_SEMANTICS)}, got '{self.sem}'")
        _check_sem_scope(self, self.sem, self.scope)
        result_is(self, i1)
