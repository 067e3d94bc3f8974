"""Types of IR values: scalars, pointers and tensors (immutable, compared by content).

Text forms (MLIR-like): scalars `i1 i8 i16 i32 i64 u8 u16 u32 u64 f16 bf16 f32 f64` and the fp8
storage types `f8e4nv f8e5 f8e4b8 f8e5b16 f8e4b15`, pointers
`!tt.ptr<f32>`, tensors `tensor<128x64xf32>` or `tensor<128x!tt.ptr<f16>>`. Integer types carry
their signedness (unlike MLIR) because the MSL the compiler prints needs it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Union

from .layouts import Layout, layout_rank, parse_layout

_FP8_NAMES = ("f8e4nv", "f8e5", "f8e4b8", "f8e5b16", "f8e4b15")
"""fp8 storage types (`triton_metal/fp8.py`): held as 8-bit codes, converted only to and from f32."""
_SCALAR_NAMES = ("i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64",
                 *_FP8_NAMES)


@dataclass(frozen=True)
class ScalarType:
    """An integer (signed `iN`, unsigned `uN`, boolean `i1`) or floating-point scalar type."""

    name: str

    NAMES: ClassVar[tuple[str, ...]] = _SCALAR_NAMES

    def __post_init__(self) -> None:
        if self.name not in _SCALAR_NAMES:
            raise ValueError(f"unknown scalar type '{self.name}'")

    @property
    def bitwidth(self) -> int:
        return 8 if self.is_fp8() else int(self.name.lstrip("biuf"))

    def is_fp8(self) -> bool:
        return self.name in _FP8_NAMES

    def is_float(self) -> bool:
        return self.name in ("f16", "bf16", "f32", "f64") or self.is_fp8()

    def is_int(self) -> bool:
        """Any integer type, `i1` included."""
        return not self.is_float()

    def is_bool(self) -> bool:
        return self.name == "i1"

    def is_signed(self) -> bool:
        return self.name.startswith("i") and self.name != "i1"

    def is_unsigned(self) -> bool:
        return self.name.startswith("u") or self.name == "i1"

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class PointerType:
    """A pointer into device memory (address space 1) to elements of `pointee`."""

    pointee: ScalarType | PointerType
    address_space: int = 1

    def __str__(self) -> str:
        space = "" if self.address_space == 1 else f", {self.address_space}"
        return f"!tt.ptr<{self.pointee}{space}>"


ElementType = Union[ScalarType, PointerType]


@dataclass(frozen=True)
class TensorType:
    """A block of `element` values with a static, non-empty `shape`, distributed over the threads
    by `layout` once the layout passes have run (None before)."""

    shape: tuple[int, ...]
    element: ElementType
    layout: Layout | None = None

    def __post_init__(self) -> None:
        if self.layout is not None and layout_rank(self.layout) != len(self.shape):
            raise ValueError(f"layout {self.layout} has rank {layout_rank(self.layout)}, the shape {self.shape} {len(self.shape)}")
        if not self.shape or any(not isinstance(d, int) or d <= 0 for d in self.shape):
            raise ValueError(f"a tensor shape must be a non-empty tuple of positive ints, got {self.shape}")
        if isinstance(self.element, TensorType):
            raise ValueError("tensor elements must be scalars or pointers")

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def with_element(self, element: ElementType) -> TensorType:
        """Same shape and layout, another element type."""
        return TensorType(self.shape, element, self.layout)

    def with_shape(self, shape: tuple[int, ...]) -> TensorType:
        """Another shape (the layout is dropped: it was made for this shape's rank)."""
        return TensorType(tuple(shape), self.element)

    def with_layout(self, layout: Layout | None) -> TensorType:
        return TensorType(self.shape, self.element, layout)

    def __str__(self) -> str:
        text = "tensor<" + "".join(f"{d}x" for d in self.shape) + f"{self.element}"
        if self.layout is not None:
            text += f", {self.layout}"
        return text + ">"


Type = Union[ScalarType, PointerType, TensorType]

i1 = ScalarType("i1")
i8 = ScalarType("i8")
i16 = ScalarType("i16")
i32 = ScalarType("i32")
i64 = ScalarType("i64")
u8 = ScalarType("u8")
u16 = ScalarType("u16")
u32 = ScalarType("u32")
u64 = ScalarType("u64")
f16 = ScalarType("f16")
bf16 = ScalarType("bf16")
f32 = ScalarType("f32")
f8e4nv = ScalarType("f8e4nv")
f8e5 = ScalarType("f8e5")
f8e4b8 = ScalarType("f8e4b8")
f8e5b16 = ScalarType("f8e5b16")
f8e4b15 = ScalarType("f8e4b15")
f64 = ScalarType("f64")


def element_type(ty: Type) -> ElementType:
    """The scalar or pointer type of each element (the type itself for non-tensors)."""
    return ty.element if isinstance(ty, TensorType) else ty


def shape_of(ty: Type) -> tuple[int, ...]:
    """The tensor shape, `()` for scalars and pointers."""
    return ty.shape if isinstance(ty, TensorType) else ()


def with_element(ty: Type, element: ElementType) -> Type:
    """`ty` with its element type replaced, keeping the shape and layout (or the scalar-ness)."""
    return TensorType(ty.shape, element, ty.layout) if isinstance(ty, TensorType) else element


def layout_of(ty: Type) -> Layout | None:
    """The tensor's layout; None for scalars, pointers and tensors not yet laid out."""
    return ty.layout if isinstance(ty, TensorType) else None


def make_type(shape: tuple[int, ...], element: ElementType) -> Type:
    """A tensor of `shape`, or `element` itself for the empty shape."""
    return TensorType(tuple(shape), element) if shape else element


def parse_type(text: str) -> Type:
    """Read a type's text form; raises `ValueError` on malformed text."""
    text = text.strip()
    if text.startswith("tensor<"):
        m = re.fullmatch(r"tensor<((?:\d+x)+)(.+?)(?:, *(#.*))?>", text)
        if m is None:
            raise ValueError(f"malformed tensor type '{text}'")
        shape = tuple(int(d) for d in m.group(1)[:-1].split("x"))
        element = parse_type(m.group(2))
        if isinstance(element, TensorType):
            raise ValueError(f"malformed tensor type '{text}'")
        layout = parse_layout(m.group(3)) if m.group(3) is not None else None
        return TensorType(shape, element, layout)
    if text.startswith("!tt.ptr<") and text.endswith(">"):
        inner = text[len("!tt.ptr<"):-1]
        space = 1
        m = re.fullmatch(r"(.+), (\d+)", inner)
        if m is not None:
            inner, space = m.group(1), int(m.group(2))
        pointee = parse_type(inner)
        if isinstance(pointee, TensorType):
            raise ValueError(f"pointers to tensors are not supported: '{text}'")
        return PointerType(pointee, space)
    if text in _SCALAR_NAMES:
        return ScalarType(text)
    raise ValueError(f"unknown type '{text}'")
