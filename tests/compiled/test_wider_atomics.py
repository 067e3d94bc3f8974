"""float16 and bfloat16 atomics (compare-and-swap on the containing 32-bit word), float
`atomic_cas` (bit patterns) and uint64 atomic max/min (MSL's `atomic_ulong`), formerly refused:
each runs in the interpreter and compiled on the emulator (`run_both` compares them), through the
MLX launch path on the emulator, and is checked against NumPy. 64-bit atomics MSL lacks stay
refused with the reason."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl

from differential import run_both


@triton.jit
def scatter_kernel(x_ptr, idx_ptr, sum_ptr, max_ptr, min_ptr, N: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    v = tl.load(x_ptr + offs)
    i = tl.load(idx_ptr + offs)
    tl.atomic_add(sum_ptr + i, v)
    tl.atomic_max(max_ptr + i, v)
    tl.atomic_min(min_ptr + i, v, mask=v > -3)


def _scatter_reference(x: np.ndarray, idx: np.ndarray, size: int) -> tuple[np.ndarray, ...]:
    mx_ = np.full(size, -100.0)
    mn = np.full(size, 100.0)
    np.maximum.at(mx_, idx, x)
    keep = x > -3
    np.minimum.at(mn, idx[keep], x[keep])
    return mx_, mn


@pytest.mark.parametrize("size", [7, 8])  # an odd size puts the last element in a half-used word
def test_float16_add_max_min(size: int):
    rng = np.random.default_rng(size)
    n = 256
    x = rng.integers(-8, 8, n).astype(np.float16) / np.float16(4)  # sums stay exact in float16
    idx = rng.integers(0, size, n).astype(np.int32)
    total = np.zeros(size, np.float16)
    big = np.full(size, -100, np.float16)
    small = np.full(size, 100, np.float16)
    run_both(scatter_kernel, (2,), x_ptr=x, idx_ptr=idx, sum_ptr=total, max_ptr=big, min_ptr=small, N=128)
    np.testing.assert_array_equal(total, np.bincount(idx, x.astype(np.float64), size).astype(np.float16))
    want_max, want_min = _scatter_reference(x.astype(np.float64), idx, size)
    np.testing.assert_array_equal(big, want_max.astype(np.float16))
    np.testing.assert_array_equal(small, want_min.astype(np.float16))


@pytest.mark.parametrize("interpret", [False, True])
def test_bfloat16_add_max_min(interpret: bool, monkeypatch: pytest.MonkeyPatch):
    if interpret:
        monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    rng = np.random.default_rng(4)
    n, size = 128, 9
    values = (rng.integers(-16, 16, n) / 2).astype(np.float32)
    x = triton.reinterpret(_bf16_bits(values), tl.bfloat16)
    idx = rng.integers(0, size, n).astype(np.int32)
    total = triton.reinterpret(np.zeros(size, np.uint16), tl.bfloat16)
    big = triton.reinterpret(_bf16_bits(np.full(size, -100, np.float32)), tl.bfloat16)
    small = triton.reinterpret(_bf16_bits(np.full(size, 100, np.float32)), tl.bfloat16)
    scatter_kernel[(1,)](x, idx, total, big, small, N=128)
    want_max, want_min = _scatter_reference(values.astype(np.float64), idx, size)
    np.testing.assert_array_equal(_f32(total.base), np.bincount(idx, values, size))
    np.testing.assert_array_equal(_f32(big.base), want_max)
    np.testing.assert_array_equal(_f32(small.base), want_min)


def _bf16_bits(x: np.ndarray) -> np.ndarray:
    return (np.asarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16)  # exact for these values


def _f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


@triton.jit
def cas_kernel(p_ptr, c_ptr, v_ptr, old_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    old = tl.atomic_cas(p_ptr + offs, tl.load(c_ptr + offs), tl.load(v_ptr + offs))
    tl.store(old_ptr + offs, old)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_float_atomic_cas_compares_bit_patterns(dtype: type):
    nan = np.nan
    p = np.array([0.0, -0.0, nan, 1.5, 2.0, -0.0, 3.0, 4.0], dtype)
    c = np.array([-0.0, -0.0, nan, 1.5, 2.5, 0.0, 3.0, 4.5], dtype)
    v = np.arange(8, dtype=dtype) + 10
    old = np.zeros(8, dtype)
    start = p.copy()
    run_both(cas_kernel, (1,), p_ptr=p, c_ptr=c, v_ptr=v, old_ptr=old, N=8)
    same_bits = start.view(f"u{start.itemsize}") == c.view(f"u{c.itemsize}")  # +0 != -0; NaN == NaN
    np.testing.assert_array_equal(p.view(f"u{p.itemsize}"), np.where(same_bits, v, start).view(f"u{p.itemsize}"))
    np.testing.assert_array_equal(old.view(f"u{p.itemsize}"), start.view(f"u{p.itemsize}"))
    assert same_bits.tolist() == [False, True, True, True, False, False, True, False]


@triton.jit
def add_kernel(x_ptr, idx_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.atomic_add(out_ptr + tl.load(idx_ptr + offs), tl.load(x_ptr + offs))


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16, mx.float32])
def test_mlx_arrays_through_the_metal_launch_path(dtype: mx.Dtype):
    idx = mx.array([0, 1, 2, 0, 1, 2, 4, 4], mx.int32)
    x = mx.array([1, 2, 3, 4, 5, 6, 7, 8], dtype)
    out = mx.array([1, 2, 3, 4, 5], dtype)  # odd size, not one repeated value
    add_kernel[(1,)](x, idx, out, N=8)
    np.testing.assert_array_equal(np.array(out.astype(mx.float32)), [6, 9, 12, 4, 20])


@triton.jit
def unsupported_kernel(p_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.atomic_and(p_ptr + offs, tl.full((N,), 1.0, tl.float16))  # error


def test_bitwise_float_atomics_stay_refused():
    with pytest.raises(triton.CompilationError, match="atomic_and is not defined"):
        unsupported_kernel[(1,)](np.zeros(4, np.float16), N=4)


@triton.jit
def u64_kernel(x_ptr, idx_ptr, max_ptr, min_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    v = tl.load(x_ptr + offs)
    i = tl.load(idx_ptr + offs)
    tl.atomic_max(max_ptr + i, v)
    tl.atomic_min(min_ptr + i, v, mask=v != 3)


def test_uint64_max_and_min_without_results():
    x = np.array([2**63 + 5, 1, 2**40, 7, 2**64 - 1, 3, 9, 2**33], np.uint64)
    idx = np.array([0, 1, 2, 0, 1, 2, 3, 3], np.int32)
    big = np.zeros(4, np.uint64)
    small = np.full(4, 2**64 - 1, np.uint64)
    run_both(u64_kernel, (1,), x_ptr=x, idx_ptr=idx, max_ptr=big, min_ptr=small, N=8)
    want_max = np.zeros(4, np.uint64)
    want_min = np.full(4, 2**64 - 1, np.uint64)
    np.maximum.at(want_max, idx, x)
    np.minimum.at(want_min, idx[x != 3], x[x != 3])
    np.testing.assert_array_equal(big, want_max)
    np.testing.assert_array_equal(small, want_min)
    msl = u64_kernel.warmup(x, idx, big, small, N=8, grid=(1,)).asm["msl"]
    assert "atomic_max_explicit((device atomic<ulong>*)" in msl.replace("((", "(")


@triton.jit
def i64_add_kernel(p_ptr, N: tl.constexpr):
    tl.atomic_add(p_ptr + tl.arange(0, N), 1)  # error


@triton.jit
def u64_used_max_kernel(p_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(o_ptr + offs, tl.atomic_max(p_ptr + offs, 5))  # error


@pytest.mark.parametrize(("kernel", "dtype"), [(i64_add_kernel, np.int64), (u64_used_max_kernel, np.uint64)])
def test_other_64_bit_atomics_are_refused_with_the_reason(kernel: triton.JITFunction, dtype: type):
    args = [np.zeros(4, dtype)] + ([np.zeros(4, dtype)] if kernel is u64_used_max_kernel else [])
    with pytest.raises(triton.CompilationError, match="MSL's only 64-bit atomics are atomic_max and atomic_min"):
        kernel[(1,)](*args, N=4)
    np.testing.assert_array_equal(args[0], 0)
