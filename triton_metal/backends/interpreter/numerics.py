"""How the interpreter stores `tl` values in NumPy, and the conversions NumPy lacks.

Storage: int1 -> bool, (u)intN -> (u)intN, fp16 -> float16, fp32 -> float32, pointers -> uint64
byte addresses, bf16 -> float32 holding a value already rounded to bfloat16 (NumPy has no
bfloat16; every operation producing bf16 rounds its fp32 result to nearest even on the bit
pattern, which gives correctly rounded bf16 arithmetic since fp32 has more than twice the bits),
fp8 -> uint8 holding the 8-bit code (fp8 has no arithmetic; conversions go through float32).
In memory bf16 is its 16-bit pattern (uint16) and int1 one byte.
"""

from __future__ import annotations

import numpy as np

from triton_metal.errors import internal_error
from triton_metal.language.types import dtype

_STORAGE: dict[str, type[np.generic]] = {
    "int1": np.bool_, "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "fp16": np.float16, "bf16": np.float32, "fp32": np.float32, "fp64": np.float64,
    # fp8: the 8-bit codes, in registers as in memory (triton_metal/fp8.py converts)
    "fp8e4nv": np.uint8, "fp8e5": np.uint8, "fp8e4b8": np.uint8, "fp8e5b16": np.uint8,
    "fp8e4b15": np.uint8,
}

_UNSIGNED_OF = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_SIGNED_OF = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


def storage_dtype(ty: dtype) -> np.dtype:
    """The NumPy dtype that holds values of scalar type `ty` in registers."""
    if ty.is_ptr():
        return np.dtype(np.uint64)
    try:
        return np.dtype(_STORAGE[ty.name])
    except KeyError:
        raise internal_error(f"no storage for {ty!r}") from None


def memory_dtype(ty: dtype) -> np.dtype:
    """The NumPy dtype of `ty` elements in device memory."""
    if ty.is_ptr():
        return np.dtype(np.uint64)
    if ty.is_bf16():
        return np.dtype(np.uint16)
    if ty.is_bool():
        return np.dtype(np.int8)
    return storage_dtype(ty)


def unsigned_of(bits: int) -> type[np.generic]:
    return _UNSIGNED_OF[bits]


def signed_of(bits: int) -> type[np.generic]:
    return _SIGNED_OF[bits]


# -- bfloat16 -----------------------------------------------------------------------------------


def f32_to_bf16_bits(x: np.ndarray, rtz: bool = False) -> np.ndarray:
    """float32 values -> bfloat16 bit patterns (uint16), round to nearest even (or toward zero)."""
    f = np.asarray(x, dtype=np.float32)
    bits = f.view(np.uint32)
    if rtz:
        out = bits >> np.uint32(16)
    else:
        bias = ((bits >> np.uint32(16)) & np.uint32(1)) + np.uint32(0x7FFF)
        out = (bits + bias) >> np.uint32(16)
    out = np.where(np.isnan(f), np.uint32(0x7FC0), out)
    return out.astype(np.uint16)


def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def round_bf16(x: np.ndarray, rtz: bool = False) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 value, kept as float32."""
    return bf16_bits_to_f32(f32_to_bf16_bits(x, rtz))


def f32_to_f16_rtz(x: np.ndarray) -> np.ndarray:
    """float32 -> float16 rounding toward zero (NumPy only rounds to nearest even)."""
    f = np.asarray(x, dtype=np.float32)
    h = f.astype(np.float16)
    too_big = np.abs(h.astype(np.float32)) > np.abs(f)
    toward = np.nextafter(h, np.float16(0)).astype(np.float16)
    return np.where(too_big & ~np.isnan(f), toward, h).astype(np.float16)


def normalize(data: np.ndarray, ty: dtype) -> np.ndarray:
    """Coerce a NumPy result to `ty`'s storage (rounding bf16) as a fresh or shared array."""
    want = storage_dtype(ty)
    arr = np.asarray(data)
    if arr.dtype != want:
        arr = arr.astype(want)
    if ty.is_bf16():
        arr = round_bf16(arr)
    return arr
