"""Float `atomic_max`/`atomic_min` give Triton's answer on every backend: Triton lowers them to
integer atomics on the bit patterns (a signed max/min where the operand's sign bit is clear,
an unsigned min/max where it is set), so +0.0 is above -0.0 and NaNs are ordered by sign and
payload. Every pair of special values is checked bit for bit, the returned old value included,
against that lowering computed here with NumPy: on the emulator and in the interpreter (NumPy
arrays updated in place) and on the Metal path (the stand-in that runs the exact MSL, where the
arrays are kept relative to their contents)."""

from __future__ import annotations

from typing import Any

import mlx.core as mx
import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl

_SPECIALS = {
    32: [0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x7F800000, 0xFF800000, 0x7FC00000,
         0x7FA00001, 0xFFC00005, 0xFF800001, 0x00000001, 0x80000001],
    16: [0x0000, 0x8000, 0x3C00, 0xBC00, 0x7C00, 0xFC00, 0x7E00, 0x7D01, 0xFE05, 0xFC01, 0x0001, 0x8001],
}
"""+0, -0, 1, -1, +inf, -inf, quiet NaN, signalling NaN with a payload, negative quiet and
signalling NaNs, the smallest denormals (float16 patterns for bfloat16 too: as bits they are
other numbers and NaNs of the same kinds)."""


def _pairs(width: int) -> tuple[np.ndarray, np.ndarray]:
    """Every (old, operand) pair of special bit patterns, as unsigned words."""
    bits = np.array(_SPECIALS[width], np.dtype(f"u{width // 8}"))
    old, val = np.meshgrid(bits, bits, indexing="ij")
    return old.reshape(-1), val.reshape(-1)


def _triton(kind: str, old: np.ndarray, val: np.ndarray) -> np.ndarray:
    """The memory after Triton's lowering of float atomic `kind` (python/triton/language/
    semantic.py, `atomic_max`/`atomic_min`), on unsigned words."""
    signed = np.dtype(f"i{old.dtype.itemsize}")
    negative = (val >> (old.dtype.itemsize * 8 - 1)) == 1
    s_old, s_val = old.view(signed), val.view(signed)
    if kind == "max":
        return np.where(negative, np.minimum(old, val), np.maximum(s_old, s_val).view(old.dtype))
    return np.where(negative, np.maximum(old, val), np.minimum(s_old, s_val).view(old.dtype))


@triton.jit
def max_and_min(hi_ptr, lo_ptr, v_ptr, seen_hi_ptr, seen_lo_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    v = tl.load(v_ptr + o)
    tl.store(seen_hi_ptr + o, tl.atomic_max(hi_ptr + o, v))
    tl.store(seen_lo_ptr + o, tl.atomic_min(lo_ptr + o, v))


_N = len(_SPECIALS[32]) ** 2
_BLOCK = 256
_TYPES = {"float32": (np.float32, 32), "float16": (np.float16, 16), "bfloat16": (None, 16)}


def _numpy_arrays(name: str, words: list[np.ndarray]) -> list[Any]:
    dtype, _ = _TYPES[name]
    padded = [np.concatenate([w, np.zeros(_BLOCK - _N, w.dtype)]) for w in words]
    if dtype is None:
        return [triton.reinterpret(p, tl.bfloat16) for p in padded]
    return [p.view(dtype) for p in padded]


def _words(a: Any, width: int) -> np.ndarray:
    base = getattr(a, "base", a) if not isinstance(a, np.ndarray) else a
    return np.asarray(base).view(np.dtype(f"u{width // 8}"))[:_N]


@pytest.mark.parametrize("interpret", ["", "1"], ids=["emulator", "interpreter"])
@pytest.mark.parametrize("name", list(_TYPES))
def test_signed_zeros_and_nans_are_ordered_by_their_bits(monkeypatch: pytest.MonkeyPatch, name: str,
                                                         interpret: str):
    monkeypatch.setenv("TRITON_METAL_INTERPRET", interpret)
    width = _TYPES[name][1]
    old, val = _pairs(width)
    hi, lo, v, seen_hi, seen_lo = _numpy_arrays(name, [old, old, val, old * 0, old * 0])
    max_and_min[(1,)](hi, lo, v, seen_hi, seen_lo, BLOCK=_BLOCK)
    np.testing.assert_array_equal(_words(hi, width), _triton("max", old, val))
    np.testing.assert_array_equal(_words(lo, width), _triton("min", old, val))
    for seen in (seen_hi, seen_lo):  # each returns the element's old bits
        np.testing.assert_array_equal(_words(seen, width), old)


@pytest.mark.parametrize("name", ["float32", "bfloat16"])
def test_the_metal_path_orders_them_alike(metal_stand_in: Any, name: str):
    # MLX arrays: the atomics' outputs are kept relative to their contents (compare-and-swap
    # loops on the held difference, templates/helpers/relative_atomics.metal)
    width = _TYPES[name][1]
    old, val = _pairs(width)
    bits = mx.uint32 if width == 32 else mx.uint16
    as_mx = mx.float32 if width == 32 else mx.bfloat16
    hi, lo, v, seen_hi, seen_lo = (
        mx.array(np.concatenate([w, np.zeros(_BLOCK - _N, w.dtype)])).view(as_mx)
        for w in (old, old, val, old * 0, old * 0))
    max_and_min[(1,)](hi, lo, v, seen_hi, seen_lo, BLOCK=_BLOCK)

    def words(a: Any) -> np.ndarray:
        return np.array(a.view(bits))[:_N]

    np.testing.assert_array_equal(words(hi), _triton("max", old, val))
    np.testing.assert_array_equal(words(lo), _triton("min", old, val))
    np.testing.assert_array_equal(words(seen_hi), old)
    np.testing.assert_array_equal(words(seen_lo), old)
    assert metal_stand_in.fast.launches
