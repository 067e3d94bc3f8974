"""Cooperative ops: matrix product, reductions and scans (with a combine region).

The combine region of `tt.reduce`/`tt.scan` over n operands has one block with 2n scalar
arguments (the n accumulated values, then the n new values) and ends in `tt.reduce.return` /
`tt.scan.return` with n scalars. The combine function must be associative; the order in which
a backend applies it is unspecified.

`tt.map_elementwise` applies its `body` region to every element of tensors of one shape: one
block with a scalar argument per operand, ended by `tt.map_elementwise.return` with one scalar
per result (`tl.map_elementwise`; its `pack` is expressed with reshape, split and join around it).
"""

from __future__ import annotations

from typing import ClassVar

from ..core import Op, Region, Value, attr, operand, opt_operand, region, var_operand
from ...fp8 import SCALED_FORMATS, scaled_extent
from ..types import ScalarType, make_type
from .common import num_results, result_is, scalar_element, tensor_type

INPUT_PRECISIONS = ("ieee", "tf32", "tf32x3", "bf16x3", "bf16x6")


class DotOp(Op):
    """`d = a @ b + c` for 2-D tiles `[M, K] @ [K, N]` (or batched 3-D)."""

    name: ClassVar[str] = "tt.dot"
    a: Value = operand()
    b: Value = operand()
    c: Value = operand()
    input_precision: str | None = attr(str, default=None)

    def verify_(self) -> None:
        num_results(self, 1)
        at = tensor_type(self, self.a, "a")
        bt = tensor_type(self, self.b, "b")
        ct = tensor_type(self, self.c, "c")
        if not (at.rank == bt.rank == ct.rank and at.rank in (2, 3)):
            raise self.error(f"operands must all be 2-D or all 3-D, got {at}, {bt}, {ct}")
        batch = at.shape[:-2]
        (m, k), (k2, n) = at.shape[-2:], bt.shape[-2:]
        if k != k2 or bt.shape[:-2] != batch or ct.shape != (*batch, m, n):
            raise self.error(f"shapes do not form a product: {at} @ {bt} + {ct}")
        if at.element != bt.element:
            raise self.error(f"a and b need one element type, got {at.element} and {bt.element}")
        scalar_element(self, self.a, "a")
        scalar_element(self, self.c, "c")
        if self.input_precision is not None and self.input_precision not in INPUT_PRECISIONS:
            raise self.error(f"unknown input_precision '{self.input_precision}'")
        if self.result.type != ct:
            raise self.error(f"result must be {ct}, got {self.result.type}")


class DotScaledOp(Op):
    """`d = (a * a_scale) @ (b * b_scale) + c` for 2-D microscaled tiles (`tl.dot_scaled`), with
    the operands as they were loaded: `a` holds [M, K] elements in `a_format` ("e2m1": uint8
    bytes of two, along K when `a_k_pack`, else along M; "e4m3", "e5m2": bytes or fp8; "bf16",
    "fp16": 16-bit bits or floats), `b` [K, N] likewise (e2m1 along K when `b_k_pack`, else
    along N). Scales, when present, are bytes: e8m0 codes (uint8 or int8) one per 32 elements
    along K, or float8e4nv (NVFP4, e2m1 operands) one per 16 or 32; `a_scale` is [M, groups]
    and `b_scale` [N, groups]. The semantic layer checked every shape and dtype. `c` and the
    result are float32 [M, N]."""

    name: ClassVar[str] = "tt.dot_scaled"
    a: Value = operand()
    b: Value = operand()
    c: Value = operand()
    a_scale: Value | None = opt_operand()
    b_scale: Value | None = opt_operand()
    a_format: str = attr(str, default="bf16")
    b_format: str = attr(str, default="bf16")
    a_k_pack: bool = attr(bool, default=True)
    b_k_pack: bool = attr(bool, default=True)
    fast_math: bool = attr(bool, default=False)

    def verify_(self) -> None:
        num_results(self, 1)
        at = tensor_type(self, self.a, "a")
        bt = tensor_type(self, self.b, "b")
        ct = tensor_type(self, self.c, "c")
        for side, fmt in (("a", self.a_format), ("b", self.b_format)):
            if fmt not in SCALED_FORMATS:
                raise self.error(f"unknown {side}_format '{fmt}'")
        if not (at.rank == bt.rank == ct.rank == 2):
            raise self.error(f"operands must all be 2-D, got {at}, {bt}, {ct}")
        m, k = scaled_extent(at.shape, self.a_format, 1 if self.a_k_pack else 0)
        k2, n = scaled_extent(bt.shape, self.b_format, 0 if self.b_k_pack else 1)
        if k != k2 or ct.shape != (m, n):
            raise self.error(f"shapes do not form a product: {at} @ {bt} + {ct}")
        if getattr(ct.element, "name", "") != "f32" or self.result.type != ct:
            raise self.error(f"the accumulator and the result must be float32 {ct}, got {self.result.type}")
        for side, scale, rows in (("a_scale", self.a_scale, m), ("b_scale", self.b_scale, n)):
            if scale is not None:
                st = tensor_type(self, scale, side)
                if st.rank != 2 or st.shape[0] != rows or st.shape[1] == 0 or k % st.shape[1]:
                    raise self.error(f"{side} must be [{rows}, K / group], got {st}")


def _one_shape(op: Op, srcs: tuple[Value, ...]) -> tuple[int, ...]:
    """The one shape of an op's tensor operands (at least one)."""
    if not srcs:
        raise op.error("needs at least one operand")
    shapes = {tensor_type(op, v, "operands").shape for v in srcs}
    if len(shapes) != 1:
        raise op.error("operands must share one shape")
    return shapes.pop()


def _check_combine(op: Op, combine: Region, elements: list[ScalarType], terminator: str) -> None:
    block = combine.block
    arg_types = [a.type for a in block.args]
    if arg_types != elements + elements:
        raise op.error(
            "combine region must take (" + ", ".join(map(str, elements + elements)) + "), got ("
            + ", ".join(map(str, arg_types)) + ")"
        )
    term = block.ops[-1] if block.ops else None
    if term is None or term.name != terminator:
        raise op.error(f"combine region must end with '{terminator}'")
    got = [v.type for v in term.operands]
    if got != elements:
        raise op.error(f"combine region must return ({', '.join(map(str, elements))}), got ({', '.join(map(str, got))})")


class ReduceOp(Op):
    """Reduce tensors of one shape along `axis` with the combine region."""

    name: ClassVar[str] = "tt.reduce"
    srcs: tuple[Value, ...] = var_operand(positional=True)
    axis: int = attr(int)
    combine: Region = region()
    smem_offset: int | None = attr(int, default=None)
    """Threadgroup scratch for partials across SIMD groups (set by the layout passes)."""
    smem_bytes: int | None = attr(int, default=None)

    def verify_(self) -> None:
        shape = _one_shape(self, self.srcs)
        if not 0 <= self.axis < len(shape):
            raise self.error(f"axis {self.axis} out of range for rank {len(shape)}")
        num_results(self, len(self.srcs))
        elements = [scalar_element(self, v, "operands") for v in self.srcs]
        out_shape = shape[: self.axis] + shape[self.axis + 1:]
        for i, el in enumerate(elements):
            result_is(self, make_type(out_shape, el), i)
        _check_combine(self, self.combine, elements, "tt.reduce.return")


class ScanOp(Op):
    """Inclusive scan along `axis` with the combine region (from the end when `reverse`)."""

    name: ClassVar[str] = "tt.scan"
    srcs: tuple[Value, ...] = var_operand(positional=True)
    axis: int = attr(int)
    reverse: bool = attr(bool, default=False)
    combine: Region = region()

    def verify_(self) -> None:
        rank = len(_one_shape(self, self.srcs))
        if not 0 <= self.axis < rank:
            raise self.error(f"axis {self.axis} out of range for rank {rank}")
        num_results(self, len(self.srcs))
        for i, v in enumerate(self.srcs):
            if self.results[i].type != v.type:
                raise self.error(f"result #{i} must be {v.type}, got {self.results[i].type}")
        elements = [scalar_element(self, v, "operands") for v in self.srcs]
        _check_combine(self, self.combine, elements, "tt.scan.return")


class MapElementwiseOp(Op):
    """Apply the scalar `body` region to each element of the operands (one shape)."""

    name: ClassVar[str] = "tt.map_elementwise"
    srcs: tuple[Value, ...] = var_operand(positional=True)
    body: Region = region()

    def verify_(self) -> None:
        shape = _one_shape(self, self.srcs)
        elements = [scalar_element(self, v, "operands") for v in self.srcs]
        block = self.body.block
        if [a.type for a in block.args] != elements:
            raise self.error("body must take (" + ", ".join(map(str, elements)) + "), got ("
                             + ", ".join(str(a.type) for a in block.args) + ")")
        term = block.ops[-1] if block.ops else None
        if term is None or term.name != "tt.map_elementwise.return":
            raise self.error("body must end with 'tt.map_elementwise.return'")
        num_results(self, len(term.operands))
        for i, v in enumerate(term.operands):
            if not isinstance(v.type, ScalarType):
                raise self.error(f"body must return scalars, got {v.type}")
            result_is(self, make_type(shape, v.type), i)


class _CombineReturnOp(Op):
    """The terminator of a combine region: yields the combined values to its `owner` op."""

    is_terminator: ClassVar[bool] = True
    owner: ClassVar[type[Op]]
    values: tuple[Value, ...] = var_operand(positional=True)

    def verify_(self) -> None:
        num_results(self, 0)
        parent = self.parent.parent_op if self.parent is not None else None
        if not isinstance(parent, self.owner):
            raise self.error(f"must end the combine region of a '{self.owner.name}'")


class ReduceReturnOp(_CombineReturnOp):
    name: ClassVar[str] = "tt.reduce.return"
    owner: ClassVar[type[Op]] = ReduceOp


class ScanReturnOp(_CombineReturnOp):
    name: ClassVar[str] = "tt.scan.return"
    owner: ClassVar[type[Op]] = ScanOp


class MapElementwiseReturnOp(_CombineReturnOp):
    name: ClassVar[str] = "tt.map_elementwise.return"
    owner: ClassVar[type[Op]] = MapElementwiseOp
