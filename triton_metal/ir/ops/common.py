"""Type-checking helpers shared by the op families' `verify_` methods."""

from __future__ import annotations

from ..core import Op, Value
from ..types import PointerType, ScalarType, TensorType, Type, element_type, shape_of


def same_types(op: Op, what: str, *values: Value) -> None:
    """All `values` have one type."""
    types = {v.type for v in values}
    if len(types) > 1:
        raise op.error(f"requires {what} of one type, got " + ", ".join(str(v.type) for v in values))


def result_is(op: Op, expected: Type, index: int = 0) -> None:
    """The result has type `expected`; an `expected` tensor type without a layout accepts any
    layout (the op's type rule does not fix one; the layout passes choose it)."""
    got = op.results[index].type
    if isinstance(expected, TensorType) and expected.layout is None and isinstance(got, TensorType):
        got_cmp: Type = got.with_layout(None)
    else:
        got_cmp = got
    if got_cmp != expected:
        raise op.error(f"result #{index} must be {expected}, got {got}")


def num_results(op: Op, n: int) -> None:
    if len(op.results) != n:
        raise op.error(f"expects {n} result(s), got {len(op.results)}")


def scalar_element(op: Op, v: Value, what: str) -> ScalarType:
    el = element_type(v.type)
    if not isinstance(el, ScalarType):
        raise op.error(f"{what} must have scalar elements, got {v.type}")
    return el


def int_element(op: Op, v: Value, what: str) -> ScalarType:
    el = scalar_element(op, v, what)
    if not el.is_int():
        raise op.error(f"{what} must be an integer scalar or tensor, got {v.type}")
    return el


def float_element(op: Op, v: Value, what: str) -> ScalarType:
    el = scalar_element(op, v, what)
    if not el.is_float():
        raise op.error(f"{what} must be a floating-point scalar or tensor, got {v.type}")
    return el


def pointer_element(op: Op, v: Value, what: str) -> PointerType:
    el = element_type(v.type)
    if not isinstance(el, PointerType):
        raise op.error(f"{what} must be a pointer or a tensor of pointers, got {v.type}")
    return el


def tensor_type(op: Op, v: Value, what: str) -> TensorType:
    if not isinstance(v.type, TensorType):
        raise op.error(f"{what} must be a tensor, got {v.type}")
    return v.type


def same_shape(op: Op, what: str, *types: Type) -> None:
    shapes = {shape_of(t) for t in types}
    if len(shapes) > 1:
        raise op.error(f"requires {what} of one shape, got " + ", ".join(str(t) for t in types))


def bool_like(op: Op, v: Value, what: str, shape: tuple[int, ...]) -> None:
    """`v` is i1 with the given shape."""
    el = element_type(v.type)
    if el != ScalarType("i1") or shape_of(v.type) != shape:
        raise op.error(f"{what} must be i1 of shape {list(shape)}, got {v.type}")
