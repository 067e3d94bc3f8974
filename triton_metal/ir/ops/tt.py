"""Triton ops on whole tensors: program ids, ranges, shape manipulation, pointer arithmetic,
gather and histogram.

Shapes are static. Shape ops never change element values, only where they sit; the result type
is given explicitly and checked against the operand and the attributes.
"""

from __future__ import annotations

from typing import ClassVar

from ..core import Op, Value, attr, int_tuple, operand, opt_operand
from ..types import TensorType, element_type, i32, make_type, shape_of
from .common import bool_like, int_element, num_results, pointer_element, result_is, same_types, tensor_type


class GetProgramIdOp(Op):
    """The index of this program along `axis` (0, 1 or 2): an i32."""

    name: ClassVar[str] = "tt.get_program_id"
    axis: int = attr(int)

    def verify_(self) -> None:
        num_results(self, 1)
        if self.axis not in (0, 1, 2):
            raise self.error(f"axis must be 0, 1 or 2, got {self.axis}")
        result_is(self, i32)


class GetNumProgramsOp(GetProgramIdOp):
    """The number of programs along `axis`: an i32."""

    name: ClassVar[str] = "tt.get_num_programs"


class MakeRangeOp(Op):
    """`[start, end)` as a 1-D i32 tensor."""

    name: ClassVar[str] = "tt.make_range"
    start: int = attr(int)
    end: int = attr(int)

    def verify_(self) -> None:
        num_results(self, 1)
        if self.end <= self.start:
            raise self.error(f"needs start < end, got [{self.start}, {self.end})")
        result_is(self, TensorType((self.end - self.start,), i32))


class SplatOp(Op):
    """A tensor with every element equal to a scalar (or pointer)."""

    name: ClassVar[str] = "tt.splat"
    src: Value = operand()

    def verify_(self) -> None:
        num_results(self, 1)
        if isinstance(self.src.type, TensorType):
            raise self.error(f"operand must be a scalar, got {self.src.type}")
        rt = self.result.type
        if not isinstance(rt, TensorType) or rt.element != self.src.type:
            raise self.error(f"result must be a tensor of {self.src.type}, got {rt}")


class BroadcastOp(Op):
    """Repeat dimensions of size 1 to the result shape (ranks equal)."""

    name: ClassVar[str] = "tt.broadcast"
    src: Value = operand()

    def verify_(self) -> None:
        num_results(self, 1)
        st = tensor_type(self, self.src, "operand")
        rt = self.result.type
        if not isinstance(rt, TensorType) or rt.element != st.element or rt.rank != st.rank:
            raise self.error(f"result must be a tensor of the same rank and element type, got {st} -> {rt}")
        for s, r in zip(st.shape, rt.shape):
            if s != r and s != 1:
                raise self.error(f"cannot broadcast {st} to {rt}")


class ExpandDimsOp(Op):
    """Insert a dimension of size 1 before `axis`."""

    name: ClassVar[str] = "tt.expand_dims"
    src: Value = operand()
    axis: int = attr(int)

    def verify_(self) -> None:
        num_results(self, 1)
        shape = list(shape_of(self.src.type))
        if not 0 <= self.axis <= len(shape):
            raise self.error(f"axis {self.axis} out of range for {self.src.type}")
        shape.insert(self.axis, 1)
        result_is(self, TensorType(tuple(shape), element_type(self.src.type)))


class ReshapeOp(Op):
    """Same elements, new shape. With `allow_reorder` the element order may change."""

    name: ClassVar[str] = "tt.reshape"
    src: Value = operand()
    allow_reorder: bool = attr(bool, default=False)

    def verify_(self) -> None:
        num_results(self, 1)
        st = tensor_type(self, self.src, "operand")
        rt = self.result.type
        if not isinstance(rt, TensorType) or rt.element != st.element or rt.numel != st.numel:
            raise self.error(f"must keep the element type and count, got {st} -> {rt}")


class TransOp(Op):
    """Permute dimensions: result dim i is operand dim `order[i]`."""

    name: ClassVar[str] = "tt.trans"
    src: Value = operand()
    order: tuple[int, ...] = attr(int_tuple)

    def verify_(self) -> None:
        num_results(self, 1)
        st = tensor_type(self, self.src, "operand")
        if sorted(self.order) != list(range(st.rank)):
            raise self.error(f"order {list(self.order)} is not a permutation of {st.rank} dims")
        result_is(self, TensorType(tuple(st.shape[i] for i in self.order), st.element))


class CatOp(Op):
    """Concatenate along dimension 0."""

    name: ClassVar[str] = "tt.cat"
    lhs: Value = operand()
    rhs: Value = operand()

    def verify_(self) -> None:
        num_results(self, 1)
        same_types(self, "operands", self.lhs, self.rhs)
        lt = tensor_type(self, self.lhs, "operands")
        result_is(self, TensorType((2 * lt.shape[0], *lt.shape[1:]), lt.element))


class JoinOp(Op):
    """Stack two tensors along a new minor dimension of size 2."""

    name: ClassVar[str] = "tt.join"
    lhs: Value = operand()
    rhs: Value = operand()

    def verify_(self) -> None:
        num_results(self, 1)
        same_types(self, "operands", self.lhs, self.rhs)
        result_is(self, TensorType((*shape_of(self.lhs.type), 2), element_type(self.lhs.type)))


class SplitOp(Op):
    """The inverse of join: a minor dimension of size 2 becomes two results."""

    name: ClassVar[str] = "tt.split"
    src: Value = operand()

    def verify_(self) -> None:
        num_results(self, 2)
        st = tensor_type(self, self.src, "operand")
        if st.shape[-1] != 2:
            raise self.error(f"the last dimension must be 2, got {st}")
        expected = make_type(st.shape[:-1], st.element)
        result_is(self, expected, 0)
        result_is(self, expected, 1)


class GatherOp(Op):
    """`result[i..] = src[i.., index[i..] along axis, i..]`; the result has the index's shape."""

    name: ClassVar[str] = "tt.gather"
    src: Value = operand()
    indices: Value = operand()
    axis: int = attr(int)
    smem_offset: int | None = attr(int, default=None)
    """Threadgroup scratch for the source (set by `allocate-threadgroup-memory`)."""
    smem_bytes: int | None = attr(int, default=None)

    def verify_(self) -> None:
        num_results(self, 1)
        st = tensor_type(self, self.src, "source")
        it = tensor_type(self, self.indices, "indices")
        int_element(self, self.indices, "indices")
        if it.rank != st.rank or not 0 <= self.axis < st.rank:
            raise self.error(f"indices {it} and source {st} need one rank and a valid axis {self.axis}")
        result_is(self, TensorType(it.shape, st.element))


class HistogramOp(Op):
    """Count the elements of a 1-D integer tensor into bins `[0, num_bins)`: an i32 tensor.
    Elements outside the bins, or masked off, are not counted."""

    name: ClassVar[str] = "tt.histogram"
    src: Value = operand()
    mask: Value | None = opt_operand()

    def verify_(self) -> None:
        num_results(self, 1)
        st = tensor_type(self, self.src, "operand")
        int_element(self, self.src, "operand")
        if st.rank != 1:
            raise self.error(f"operand must be 1-D, got {st}")
        if self.mask is not None:
            bool_like(self, self.mask, "mask", st.shape)
        rt = self.result.type
        if not isinstance(rt, TensorType) or rt.rank != 1 or rt.element != i32:
            raise self.error(f"result must be a 1-D i32 tensor, got {rt}")


class AddPtrOp(Op):
    """`ptr + offset` in elements of the pointee type."""

    name: ClassVar[str] = "tt.addptr"
    ptr: Value = operand()
    offset: Value = operand()

    def verify_(self) -> None:
        num_results(self, 1)
        pointer_element(self, self.ptr, "ptr")
        el = int_element(self, self.offset, "offset")
        if el.is_bool() or shape_of(self.ptr.type) != shape_of(self.offset.type):
            raise self.error(f"offset must be an integer of the pointer's shape, got {self.ptr.type} + {self.offset.type}")
        result_is(self, self.ptr.type)


