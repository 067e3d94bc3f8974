"""libdevice's `popc`, `clz` and `finitef` (DSL functions, `language/extra/libdevice_bits.py`)
on both backends (`each_backend`) against counts NumPy and Python's `int.bit_count` /
`int.bit_length` give, over random integers of each width and signedness and the edge values."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError
from triton_metal.language.extra import libdevice


@triton.jit
def bit_counts(x_ptr, popc_ptr, clz_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(popc_ptr + offs, libdevice.popc(x))
    tl.store(clz_ptr + offs, libdevice.clz(x))


def _edges(dtype: np.dtype) -> list[int]:
    info = np.iinfo(dtype)
    return [0, 1, -1 if info.min < 0 else info.max, info.min, info.max, 1 << (info.bits - 2)]


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64])
def test_popc_and_clz(each_backend, dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(11)
    x = rng.integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
    x[:6] = _edges(np.dtype(dtype))
    x[6:20] = x[6:20] >> rng.integers(0, info.bits - 1, 14).astype(dtype)  # many leading zeros
    popc, clz = np.zeros(64, np.int32), np.zeros(64, np.int32)
    bit_counts[(1,)](x, popc, clz, 64)
    words = [int(v) % (1 << info.bits) for v in x]  # two's complement bits
    np.testing.assert_array_equal(popc, [bin(w).count("1") for w in words])
    np.testing.assert_array_equal(clz, [info.bits - w.bit_length() for w in words])


@triton.jit
def finite(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, libdevice.finitef(tl.load(x_ptr + offs)))


def test_finitef(each_backend):
    x = np.array([1.0, -1.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 3e38], np.float32)
    out = np.full(8, 7, np.int32)
    finite[(1,)](x, out, 8)
    np.testing.assert_array_equal(out, np.isfinite(x).astype(np.int32))


def test_popc_refuses_a_16_bit_integer(each_backend):
    x = np.ones(4, np.int16)
    popc, clz = np.zeros(4, np.int32), np.zeros(4, np.int32)
    with pytest.raises(CompilationError, match="libdevice's popc and clz take 32- or 64-bit integers"):
        bit_counts[(1,)](x, popc, clz, 4)
    assert not popc.any()
