"""Whole kernels through `metal_kernel` on the emulator, checked against NumPy."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from triton_metal.backends.emulator import metal_kernel

try:
    from .msl_kernels import SOFTMAX, VADD
except ImportError:
    from msl_kernels import SOFTMAX, VADD  # type: ignore[no-redef]

RNG = np.random.default_rng(1234)


def test_vector_add_with_bounds_mask():
    kernel = metal_kernel("vadd", ["a", "b", "n"], ["out"], VADD)
    n = 1000  # not a multiple of the threadgroup: the last group is masked
    a = RNG.standard_normal(n).astype(np.float32)
    b = RNG.standard_normal(n).astype(np.float32)
    (out,) = kernel(
        inputs=[mx.array(a), mx.array(b), n],
        output_shapes=[(n,)],
        output_dtypes=[mx.float32],
        grid=(1024, 1, 1),
        threadgroup=(256, 1, 1),
    )
    assert isinstance(out, mx.array) and out.dtype == mx.float32 and out.shape == (n,)
    np.testing.assert_array_equal(np.array(out), a + b)


@pytest.mark.parametrize("rows,cols,threads", [(5, 100, 64), (3, 1000, 256), (2, 7, 32)])
def test_row_softmax_with_simd_reductions_and_barriers(rows, cols, threads):
    kernel = metal_kernel("softmax", ["x", "ncols"], ["out"], SOFTMAX)
    x = RNG.standard_normal((rows, cols)).astype(np.float32) * 4
    (out,) = kernel(
        inputs=[x, cols],
        output_shapes=[(rows, cols)],
        output_dtypes=[mx.float32],
        grid=(rows * threads, 1, 1),
        threadgroup=(threads, 1, 1),
    )
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(np.array(out), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


MATMUL = """
// 16x16 output tile per threadgroup, one 8x8 block per SIMD-group, K staged 16 at a time.
uint tid = thread_index_in_threadgroup;
uint sg = simdgroup_index_in_threadgroup;
uint2 tile = threadgroup_position_in_grid.xy;
threadgroup T As[16 * 16];
threadgroup T Bs[16 * 16];
simdgroup_matrix<float, 8, 8> acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
uint sr = (sg / 2) * 8, sc = (sg % 2) * 8;
for (uint k0 = 0; k0 < K; k0 += 16) {
    for (uint i = tid; i < 256; i += 128) {
        uint r = i / 16, c = i % 16;
        As[i] = A[(tile.y * 16 + r) * K + k0 + c];
        Bs[i] = B[(k0 + r) * N + tile.x * 16 + c];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint kk = 0; kk < 16; kk += 8) {
        simdgroup_matrix<T, 8, 8> a;
        simdgroup_matrix<T, 8, 8> b;
        simdgroup_load(a, As, 16, ulong2(kk, sr));
        simdgroup_load(b, Bs, 16, ulong2(sc, kk));
        simdgroup_multiply_accumulate(acc, a, b, acc);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
simdgroup_store(acc, C, N, ulong2(tile.x * 16 + sc, tile.y * 16 + sr));
"""


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16])
def test_matmul_64_with_simdgroup_matrices_in_threadgroup_memory(dtype):
    M = N = K = 64
    kernel = metal_kernel("matmul", ["A", "B", "K", "N"], ["C"], MATMUL)
    npdt = np.float32 if dtype == mx.float32 else np.float16
    a = RNG.standard_normal((M, K)).astype(npdt)
    b = RNG.standard_normal((K, N)).astype(npdt)
    (c,) = kernel(
        inputs=[mx.array(a), mx.array(b), K, N],
        template=[("T", dtype)],
        output_shapes=[(M, N)],
        output_dtypes=[mx.float32],
        grid=(N // 16 * 128, M // 16, 1),
        threadgroup=(128, 1, 1),
    )
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(np.array(c), ref, rtol=1e-4, atol=1e-4)


def test_histogram_with_device_atomics():
    src = """
    uint i = thread_position_in_grid.x;
    if (i < n) atomic_fetch_add_explicit(&hist[values[i] % nbins], 1, memory_order_relaxed);
    """
    kernel = metal_kernel("hist", ["values", "n", "nbins"], ["hist"], src, atomic_outputs=True)
    n, nbins = 100_000, 37
    values = RNG.integers(0, 1000, n).astype(np.uint32)
    # Many threadgroups on several OS threads: the counts are only right with real atomics.
    (hist,) = kernel(
        inputs=[values, n, nbins],
        output_shapes=[(nbins,)],
        output_dtypes=[mx.int32],
        grid=(n, 1, 1),
        threadgroup=(256, 1, 1),
        init_value=0,
    )
    np.testing.assert_array_equal(np.array(hist), np.bincount(values % nbins, minlength=nbins))


def test_prefix_sum_with_simd_prefix_exclusive_sum():
    src = """
    uint i = thread_position_in_grid.x;
    uint lane = thread_index_in_simdgroup;
    uint sg = simdgroup_index_in_threadgroup;
    threadgroup int totals[32];
    int v = i < n ? x[i] : 0;
    int before = simd_prefix_exclusive_sum(v);
    if (lane == 31) totals[sg] = before + v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg == 0) {
        int t = totals[lane];
        totals[lane] = simd_prefix_exclusive_sum(t);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (i < n) out[i] = totals[sg] + before;
    """
    kernel = metal_kernel("scan", ["x", "n"], ["out"], src)
    n = 1024
    x = RNG.integers(-50, 50, n).astype(np.int32)
    (out,) = kernel(
        inputs=[x, n], output_shapes=[(n,)], output_dtypes=[mx.int32],
        grid=(1024, 1, 1), threadgroup=(1024, 1, 1),
    )
    np.testing.assert_array_equal(np.array(out), np.cumsum(x) - x)


def test_half_round_trip_and_arithmetic():
    src = """
    uint i = thread_position_in_grid.x;
    out[i] = x[i];
    twice[i] = x[i] * half(2) + half(1);
    """
    kernel = metal_kernel("halfs", ["x"], ["out", "twice"], src)
    x = RNG.standard_normal(64).astype(np.float16)
    out, twice = kernel(
        inputs=[mx.array(x)], output_shapes=[(64,), (64,)],
        output_dtypes=[mx.float16, mx.float16], grid=(64, 1, 1), threadgroup=(32, 1, 1),
    )
    assert out.dtype == mx.float16
    np.testing.assert_array_equal(np.array(out), x)
    # half arithmetic rounds after each operation, as NumPy's float16 does.
    np.testing.assert_array_equal(np.array(twice), x * np.float16(2) + np.float16(1))


def test_bfloat_round_trip_and_conversion():
    src = """
    uint i = thread_position_in_grid.x;
    out[i] = x[i];
    as_float[i] = float(x[i]);
    from_float[i] = bfloat(f[i]);
    """
    kernel = metal_kernel("bf16", ["x", "f"], ["out", "as_float", "from_float"], src)
    f = RNG.standard_normal(64).astype(np.float32)
    x = mx.array(f).astype(mx.bfloat16)
    out, as_float, from_float = kernel(
        inputs=[x, mx.array(f)], output_shapes=[(64,)] * 3,
        output_dtypes=[mx.bfloat16, mx.float32, mx.bfloat16], grid=(64, 1, 1),
        threadgroup=(64, 1, 1),
    )
    assert out.dtype == mx.bfloat16
    np.testing.assert_array_equal(np.array(out.astype(mx.float32)), np.array(x.astype(mx.float32)))
    np.testing.assert_array_equal(np.array(as_float), np.array(x.astype(mx.float32)))
    # MLX's own float32 -> bfloat16 conversion rounds to nearest even, as Metal's does.
    np.testing.assert_array_equal(
        np.array(from_float.astype(mx.float32)), np.array(x.astype(mx.float32))
    )


def test_small_and_zero_dim_inputs():
    # 3 elements -> `constant` pointer; 0-d -> `constant` reference; a Python float -> float32.
    src = """
    uint i = thread_position_in_grid.x;
    out[i] = coeffs[0] + coeffs[1] * x[i] + coeffs[2] * x[i] * x[i] + bias + scale;
    """
    kernel = metal_kernel("poly", ["coeffs", "x", "bias", "scale"], ["out"], src)
    coeffs = np.array([1.0, -2.0, 0.5], dtype=np.float32)
    x = RNG.standard_normal(16).astype(np.float32)
    (out,) = kernel(
        inputs=[coeffs, x, np.array(3.0, dtype=np.float32), 0.25],
        output_shapes=[(16,)], output_dtypes=[mx.float32], grid=(16, 1, 1), threadgroup=(16, 1, 1),
    )
    ref = 1.0 - 2.0 * x + np.float32(0.5) * x * x + np.float32(3.0) + np.float32(0.25)
    np.testing.assert_allclose(np.array(out), ref, rtol=1e-6)


def test_shape_strides_ndim_buffers():
    src = """
    uint i = thread_position_in_grid.x;
    uint r = i / x_shape[1], c = i % x_shape[1];
    out[i] = x[r * x_strides[0] + c * x_strides[1]] + float(x_ndim);
    """
    kernel = metal_kernel("strided", ["x"], ["out"], src)
    x = RNG.standard_normal((5, 9)).astype(np.float32)
    (out,) = kernel(
        inputs=[mx.array(x).T],  # transposed: copied row-contiguous first, as MLX does
        output_shapes=[(9, 5)], output_dtypes=[mx.float32], grid=(45, 1, 1), threadgroup=(32, 1, 1),
    )
    np.testing.assert_array_equal(np.array(out), x.T + 2.0)


def test_template_arguments():
    src = """
    uint i = thread_position_in_grid.x;
    T v = T(x[i]);
    out[i] = FLAG ? float(v) * SCALE : -1.0f;
    """
    kernel = metal_kernel("templ", ["x"], ["out"], src)
    x = np.arange(8, dtype=np.float32) + 0.5
    (out,) = kernel(
        inputs=[x], template=[("T", mx.int32), ("SCALE", 3), ("FLAG", True)],
        output_shapes=[(8,)], output_dtypes=[mx.float32], grid=(8, 1, 1), threadgroup=(8, 1, 1),
    )
    np.testing.assert_array_equal(np.array(out), np.trunc(x) * 3)


def test_init_value_and_unwritten_outputs():
    src = """
    uint i = thread_position_in_grid.x;
    if (i % 2 == 0) out[i] = 1.0f;
    if (i % 2 == 0) raw[i] = 1.0f;
    """
    kernel = metal_kernel("partial", ["x"], ["out", "raw"], src)
    out, raw = kernel(
        inputs=[np.zeros(8, np.float32)], output_shapes=[(8,), (8,)],
        output_dtypes=[mx.float32, mx.float32], grid=(8, 1, 1), threadgroup=(8, 1, 1),
        init_value=7.0,
    )
    np.testing.assert_array_equal(np.array(out), [1, 7, 1, 7, 1, 7, 1, 7])
    # Each output is filled with init_value (both: MLX applies it to every output).
    np.testing.assert_array_equal(np.array(raw), [1, 7, 1, 7, 1, 7, 1, 7])
    (fresh,) = metal_kernel("partial2", ["x"], ["out"], src.replace("if (i % 2 == 0) raw[i] = 1.0f;", ""))(
        inputs=[np.zeros(8, np.float32)], output_shapes=[(8,)], output_dtypes=[mx.float32],
        grid=(8, 1, 1), threadgroup=(8, 1, 1),
    )
    # Without init_value, unwritten elements are NaN (all bits set) instead of stale memory.
    assert np.isnan(np.array(fresh)[1::2]).all()
