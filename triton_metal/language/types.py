"""The type system of the `tl` language: scalar dtypes, pointers and blocks (tensors).

Types are immutable values compared by content. `ir/` has its own types; the front end's IR
builder maps these onto them, so this module knows nothing of the IR.
"""

from __future__ import annotations

from enum import Enum
from typing import ClassVar


class dtype:
    """A scalar element type (`tl.float32`, `tl.int1`, ...). Instances are interned by name.

    The class attributes and the per-dtype attributes (`primitive_bitwidth`, `itemsize`,
    `int_bitwidth`, `int_signedness`, `fp_mantissa_width`, `exponent_bias`) carry Triton 3.9.0's
    names and values, because Triton code reads them (`tl.dtype.STANDARD_FP_TYPES`,
    `x.dtype.exponent_bias`). fp8 names are listed as Triton lists them; all five are storage
    types (`FP8_DTYPES`).
    """

    SINT_TYPES: ClassVar[list[str]] = ["int8", "int16", "int32", "int64"]
    UINT_TYPES: ClassVar[list[str]] = ["int1", "uint8", "uint16", "uint32", "uint64"]
    FP_TYPES: ClassVar[list[str]] = [
        "fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32", "fp64",
    ]
    STANDARD_FP_TYPES: ClassVar[list[str]] = ["fp16", "bf16", "fp32", "fp64"]
    OTHER_TYPES: ClassVar[list[str]] = ["void"]

    class SIGNEDNESS(Enum):
        SIGNED = 0
        UNSIGNED = 1

    class KIND(Enum):
        BOOLEAN = 0
        INTEGRAL = 1
        FLOATING = 2

    _BITS: ClassVar[dict[str, int]] = {
        "int1": 1, "int8": 8, "int16": 16, "int32": 32, "int64": 64,
        "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64,
        "fp8e4b15": 8, "fp8e4nv": 8, "fp8e4b8": 8, "fp8e5": 8, "fp8e5b16": 8,
        "fp16": 16, "bf16": 16, "fp32": 32, "fp64": 64, "void": 0,
    }
    # (mantissa bits, exponent bias) of each float format
    _FP_FORMAT: ClassVar[dict[str, tuple[int, int]]] = {
        "fp8e4b15": (3, 15), "fp8e4nv": (3, 7), "fp8e4b8": (3, 8), "fp8e5": (2, 15),
        "fp8e5b16": (2, 16), "fp16": (10, 15), "bf16": (7, 127), "fp32": (23, 127),
        "fp64": (52, 1023),
    }

    name: str

    def __init__(self, name: str) -> None:
        name = getattr(name, "value", name)  # a constexpr holding the name
        if name not in self._BITS:
            raise ValueError(f"unknown dtype '{name}'")
        self.name = name
        self.primitive_bitwidth: int = self._BITS[name]
        self.itemsize: int = self.primitive_bitwidth // 8
        if name in self.SINT_TYPES or name in self.UINT_TYPES:
            signed = name in self.SINT_TYPES
            self.int_signedness = dtype.SIGNEDNESS.SIGNED if signed else dtype.SIGNEDNESS.UNSIGNED
            self.int_bitwidth: int = self.primitive_bitwidth
        elif name in self.FP_TYPES:
            self.fp_mantissa_width: int
            self.exponent_bias: int
            self.fp_mantissa_width, self.exponent_bias = self._FP_FORMAT[name]

    # -- classification ------------------------------------------------------------------------
    def is_void(self) -> bool:
        return self.name == "void"

    def is_bool(self) -> bool:
        return self.name == "int1"

    def is_int1(self) -> bool:
        return self.name == "int1"

    def is_int8(self) -> bool:
        return self.name == "int8"

    def is_int16(self) -> bool:
        return self.name == "int16"

    def is_int32(self) -> bool:
        return self.name == "int32"

    def is_int64(self) -> bool:
        return self.name == "int64"

    def is_uint8(self) -> bool:
        return self.name == "uint8"

    def is_uint16(self) -> bool:
        return self.name == "uint16"

    def is_uint32(self) -> bool:
        return self.name == "uint32"

    def is_uint64(self) -> bool:
        return self.name == "uint64"

    def is_int_signed(self) -> bool:
        return self.name in self.SINT_TYPES

    def is_int_unsigned(self) -> bool:
        return self.name in self.UINT_TYPES

    def is_int(self) -> bool:
        return self.is_int_signed() or self.is_int_unsigned()

    def is_integral(self) -> bool:
        return self.is_int()

    def is_floating(self) -> bool:
        return self.name in self.FP_TYPES

    def is_standard_floating(self) -> bool:
        return self.name in self.STANDARD_FP_TYPES

    def is_fp8(self) -> bool:
        return "fp8" in self.name

    def is_fp8e4nv(self) -> bool:
        return self.name == "fp8e4nv"

    def is_fp8e4b8(self) -> bool:
        return self.name == "fp8e4b8"

    def is_fp8e4b15(self) -> bool:
        return self.name == "fp8e4b15"

    def is_fp8e5(self) -> bool:
        return self.name == "fp8e5"

    def is_fp8e5b16(self) -> bool:
        return self.name == "fp8e5b16"

    def is_fp16(self) -> bool:
        return self.name == "fp16"

    def is_bf16(self) -> bool:
        return self.name == "bf16"

    def is_fp32(self) -> bool:
        return self.name == "fp32"

    def is_fp64(self) -> bool:
        return self.name == "fp64"

    def is_ptr(self) -> bool:
        return False

    def is_block(self) -> bool:
        return False

    def is_const(self) -> bool:
        return False

    def kind(self) -> dtype.KIND:
        """bool < integer < float, the order Triton's promotion ranks Python scalars by."""
        if self.is_bool():
            return dtype.KIND.BOOLEAN
        if self.is_int():
            return dtype.KIND.INTEGRAL
        return dtype.KIND.FLOATING

    def get_int_max_value(self) -> int:
        if not self.is_int():
            raise TypeError(f"{self!r} is not an integer type")
        bits = self.int_bitwidth
        return (1 << bits) - 1 if self.is_int_unsigned() else (1 << (bits - 1)) - 1

    def get_int_min_value(self) -> int:
        if not self.is_int():
            raise TypeError(f"{self!r} is not an integer type")
        return 0 if self.is_int_unsigned() else -(1 << (self.int_bitwidth - 1))

    @staticmethod
    def is_dtype(type_str: str) -> bool:
        return type_str in dtype._BITS

    @property
    def scalar(self) -> dtype:
        return self

    @property
    def element_ty(self) -> dtype:
        return self

    def with_element_ty(self, element_ty: dtype) -> dtype:
        return element_ty

    def codegen_name(self) -> str:
        """`float32`, `bfloat16`, `int8`: the name under `triton.language`."""
        if self.name.startswith("fp"):
            return "float" + self.name[2:]
        if self.name.startswith("bf"):
            return "bfloat" + self.name[2:]
        return self.name

    @property
    def cache_key_part(self) -> str:
        return self.name

    def mangle(self) -> str:
        if self.is_int():
            return ("i" if self.is_int_signed() else "u") + str(self.int_bitwidth)
        return "V" if self.is_void() else self.name

    def to_ir_name(self) -> str:
        """Short name as Triton prints it in signatures (`fp32`, `i32`, `u8`, `i1`)."""
        if self.name.startswith("uint"):
            return "u" + self.name[4:]
        if self.name.startswith("int"):
            return "i" + self.name[3:]
        return self.name

    # -- value semantics -----------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if type(other) is type(self):  # the common case first: launch keys compare dtypes
            return self.name == other.name  # type: ignore[attr-defined]
        if _is_constexpr(other):
            other = getattr(other, "value", other)
        return isinstance(other, dtype) and type(other) is type(self) and self.name == other.name

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __call__(self, value: object, **kwargs: object) -> object:
        """`tl.float32(x)` in a kernel: `x` as this type (shape_ops.dtype_call)."""
        from .shape_ops import dtype_call

        return dtype_call(self, value, **kwargs)

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.name))

    def __repr__(self) -> str:
        return f"triton_metal.language.{_PUBLIC_NAME.get(self.name, self.name)}"

    def __str__(self) -> str:
        return self.to_ir_name()


class _derived_type(dtype):
    """Shared part of pointer and block types: built on an element type, never a scalar kind.

    The scalar classification answers no for them (a block of floats is not itself floating:
    callers ask `scalar`); `is_ptr`/`is_block` are answered by each subclass.
    """

    _element_ty: dtype

    @property
    def element_ty(self) -> dtype:
        return self._element_ty

    def is_floating(self) -> bool:
        return False

    def is_int(self) -> bool:
        return False

    def is_int_signed(self) -> bool:
        return False

    def is_int_unsigned(self) -> bool:
        return False

    def is_void(self) -> bool:
        return False

    def is_bool(self) -> bool:
        return False

    def __str__(self) -> str:
        return self.to_ir_name()


class pointer_type(_derived_type):
    """`*T`: a pointer to elements of `element_ty` in device memory."""

    def __init__(self, element_ty: dtype, address_space: int = 1, const: bool = False) -> None:
        self._element_ty = element_ty
        self.address_space = address_space
        self.const = const
        self.name = f"pointer<{'const ' if const else ''}{element_ty}>"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, pointer_type)
            and self._element_ty == other._element_ty
            and self.address_space == other.address_space
            and self.const == other.const
        )

    def __hash__(self) -> int:
        return hash(("pointer_type", self._element_ty, self.address_space, self.const))

    @property
    def primitive_bitwidth(self) -> int:
        return 64

    def is_ptr(self) -> bool:
        return True

    @property
    def scalar(self) -> dtype:
        return self

    def to_ir_name(self) -> str:
        return "*" + self.element_ty.to_ir_name()

    def __str__(self) -> str:
        # Triton's signature spelling: `*fp32`, and `*kfp32` for a pointer to constant data
        return ("*k" if self.const else "*") + self.element_ty.to_ir_name()

    def __repr__(self) -> str:
        return f"pointer_type({self.element_ty!r}{', const=True' if self.const else ''})"


class block_type(_derived_type):
    """A tensor type: `shape` of `element_ty` (a scalar dtype or a pointer type)."""

    def __init__(self, element_ty: dtype, shape: tuple[int, ...] | list[int]) -> None:
        self._element_ty = element_ty
        self.shape: tuple[int, ...] = tuple(int(s) for s in shape)
        self.name = f"<{self.shape}, {element_ty}>"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, block_type)
            and self._element_ty == other._element_ty
            and self.shape == other.shape
        )

    def __hash__(self) -> int:
        return hash(("block_type", self._element_ty, self.shape))

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def scalar(self) -> dtype:
        return self.element_ty

    @property
    def primitive_bitwidth(self) -> int:
        return self.element_ty.primitive_bitwidth

    def is_block(self) -> bool:
        return True

    def to_ir_name(self) -> str:
        return f"tensor<{'x'.join(map(str, self.shape))}x{self.element_ty.to_ir_name()}>"

    def __repr__(self) -> str:
        return f"block_type({self.element_ty!r}, {list(self.shape)})"


void = dtype("void")
int1 = dtype("int1")
int8 = dtype("int8")
int16 = dtype("int16")
int32 = dtype("int32")
int64 = dtype("int64")
uint8 = dtype("uint8")
uint16 = dtype("uint16")
uint32 = dtype("uint32")
uint64 = dtype("uint64")
float16 = dtype("fp16")
bfloat16 = dtype("bf16")
float32 = dtype("fp32")
float64 = dtype("fp64")
float8e4nv = dtype("fp8e4nv")
float8e5 = dtype("fp8e5")
float8e4b8 = dtype("fp8e4b8")
float8e5b16 = dtype("fp8e5b16")
float8e4b15 = dtype("fp8e4b15")
pi32_t = pointer_type(int32)

_PUBLIC_NAME = {
    "fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64",
    "fp8e4nv": "float8e4nv", "fp8e5": "float8e5", "fp8e4b8": "float8e4b8", "fp8e5b16": "float8e5b16",
    "fp8e4b15": "float8e4b15",
}

FP8_DTYPES: tuple[dtype, ...] = (float8e4nv, float8e5, float8e4b8, float8e5b16, float8e4b15)
"""fp8 storage types (triton_metal/fp8.py): loaded, stored, selected, converted with `.to()` and
taken `tl.abs` of, and combined with wider floats in Triton's computation types; arithmetic that
would stay fp8 needs a conversion to a wider float first."""

SCALAR_DTYPES: tuple[dtype, ...] = (
    int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32,
    *FP8_DTYPES,
)
"""Every dtype an Apple GPU kernel can hold (float64 is absent on purpose)."""

_BY_NAME: dict[str, dtype] = {}
for _d in (*SCALAR_DTYPES, float64, void):
    _BY_NAME[_d.name] = _d
    _BY_NAME[_d.to_ir_name()] = _d
    _BY_NAME[_PUBLIC_NAME.get(_d.name, _d.name)] = _d
_BY_NAME.update({"bool": int1, "half": float16, "float": float32, "bfloat": bfloat16})

def _is_constexpr(x: object) -> bool:
    """`dtype == tl.constexpr(dtype)` holds, as in Triton (core imports this module, so the
    class is recognised by name rather than imported)."""
    return type(x).__name__ == "constexpr" and hasattr(x, "value")


FP64_REFUSAL = "Apple GPUs have no fp64: use float32 (or keep float64 data on the host)"


def dtype_from_name(name: str) -> dtype:
    """`"fp32"`, `"float32"`, `"i32"`, `"*fp16"` -> the dtype (pointer types for a leading `*`)."""
    if name.startswith("*"):
        return pointer_type(dtype_from_name(name[1:]))
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown dtype name '{name}'") from None


def str_to_ty(name: str, c: object = None) -> object:
    """Triton's signature-string parser: `"fp32"`, `"i32"`, `"*fp16"`, `"*kfp16"` (a constant
    pointer), `"constexpr"` (with its value `c`) -> the type."""
    if name.startswith("*"):
        const = name.startswith("*k")
        return pointer_type(dtype_from_name(name[2:] if const else name[1:]), const=const)
    if name.startswith("constexpr"):
        from .core import constexpr_type

        return constexpr_type(c)
    return dtype_from_name("int1" if name in ("u1", "B") else name)
