"""MSL spellings of IR element types, and the literals the printer writes for constants.

MSL has no `double`; fp64 never reaches the code generator (the front end refuses it).
"""

from __future__ import annotations

import math
import struct

from triton_metal.errors import CompilationError
from triton_metal.fp8 import FORMATS, encode_scalar
from triton_metal.ir.types import PointerType, ScalarType

_MSL = {
    "i1": "bool", "i8": "char", "i16": "short", "i32": "int", "i64": "long",
    "u8": "uchar", "u16": "ushort", "u32": "uint", "u64": "ulong",
    "f16": "half", "bf16": "bfloat", "f32": "float",
    # fp8: the 8-bit code (MSL has no fp8 type; templates/helpers/fp8.metal converts)
    "f8e4nv": "uchar", "f8e5": "uchar", "f8e4b8": "uchar", "f8e5b16": "uchar", "f8e4b15": "uchar",
}

# The type strings MLX writes for buffers of each element type (`get_type_string`).
_MLX = {
    "i1": "bool", "i8": "int8_t", "i16": "int16_t", "i32": "int32_t", "i64": "int64_t",
    "u8": "uint8_t", "u16": "uint16_t", "u32": "uint32_t", "u64": "uint64_t",
    "f16": "float16_t", "bf16": "bfloat16_t", "f32": "float",
    "f8e4nv": "uint8_t", "f8e5": "uint8_t", "f8e4b8": "uint8_t", "f8e5b16": "uint8_t",
    "f8e4b15": "uint8_t",
}

# Unsigned integer of the same width (bit manipulation, reinterpretation).
_UINT_OF_WIDTH = {1: "bool", 8: "uchar", 16: "ushort", 32: "uint", 64: "ulong"}


def msl_type(ty: ScalarType | PointerType) -> str:
    """The MSL scalar type holding one element of `ty`."""
    if isinstance(ty, PointerType):
        raise CompilationError(f"a value of pointer type {ty} has no MSL scalar spelling here")
    try:
        return _MSL[ty.name]
    except KeyError:
        raise CompilationError(
            f"type {ty} is not supported on Apple GPUs", hint="Metal has no 64-bit floating point; use float32"
        ) from None


def ctype_bytes(ctype: str) -> int:
    """The size in bytes of an MSL scalar type (as it sits in threadgroup memory)."""
    return _CTYPE_BYTES[ctype]


def element_bytes(ty: ScalarType) -> int:
    """The bytes one element of `ty` takes in a buffer or in threadgroup memory (int1 as a byte,
    the fp8 types as their bytes)."""
    return ctype_bytes(msl_type(ty))


_CTYPE_BYTES = {"bool": 1, "char": 1, "uchar": 1, "short": 2, "ushort": 2, "half": 2, "bfloat": 2,
                "int": 4, "uint": 4, "float": 4, "long": 8, "ulong": 8}


def mlx_type(ty: ScalarType) -> str:
    """MLX's type string for a buffer of `ty` elements."""
    return _MLX[ty.name]


def uint_of_width(bits: int) -> str:
    return _UINT_OF_WIDTH[bits]


def literal(value: bool | int | float, ty: ScalarType) -> str:
    """An MSL literal of type `ty` with exactly `value` (pure ASCII)."""
    name = ty.name
    if name == "i1":
        return "true" if value else "false"
    if ty.is_int():
        v = int(value)
        if name in ("i64",):
            # -2**63 has no literal form: write it as an expression
            return "(-9223372036854775807L - 1L)" if v == -(1 << 63) else f"{v}L"
        if name == "u64":
            return f"{v}UL"
        if name in ("u32",):
            return f"{v}u"
        if name == "i32":
            return "(-2147483647 - 1)" if v == -(1 << 31) else str(v)
        return f"{_MSL[name]}({v})"
    if ty.is_fp8():
        return f"uchar({encode_scalar(float(value), FORMATS[fp8_format_name(ty)])})"
    f = float(value)
    text = _float_text(f)
    if name == "f32":
        return text
    if name == "f16":
        return f"half({text})"
    if name == "bf16":
        return f"bfloat({text})"
    raise CompilationError(f"type {ty} is not supported on Apple GPUs")


def fp8_format_name(ty: ScalarType) -> str:
    """The `triton_metal.fp8` format of an IR fp8 type (`f8e4nv` -> `fp8e4nv`)."""
    return "fp" + ty.name[1:]


def _float_text(f: float) -> str:
    """A float literal whose float32 value is exactly `float32(f)`."""
    if math.isnan(f):
        return "NAN"
    if math.isinf(f):
        return "INFINITY" if f > 0 else "(-INFINITY)"
    f32 = struct.unpack("<f", struct.pack("<f", f))[0]
    text = repr(f32)
    if "e" not in text and "." not in text:
        text += ".0"
    text = f"{text}f"
    return f"({text})" if text.startswith("-") else text
