"""`tl.dot` of any M, N, K >= 1, batched (3-D) dots and tiles whose conversions exceed
threadgroup memory, formerly refused: small dots are products and a sum over K on both backends,
larger batched ones one 2-D simdgroup dot per batch element, large tiles load and store their
fragments straight from device memory; `run_both` compares the backends, NumPy checks values."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl

from differential import run_both


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    acc = tl.full((M, N), 1.0, tl.float32)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b, acc))


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (2, 16, 4), (16, 1, 32), (8, 8, 8), (4, 32, 2), (32, 2, 16)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_small_2d_dots(m: int, n: int, k: int, dtype: type):
    rng = np.random.default_rng(m * 100 + n * 10 + k)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    c = np.zeros((m, n), np.float32)
    run_both(dot_kernel, (1,), a_ptr=a, b_ptr=b, c_ptr=c, M=m, N=n, K=k, rtol=1e-5, atol=1e-5)
    want = a.astype(np.float64) @ b.astype(np.float64) + 1
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)


@triton.jit
def plain_dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


def test_small_int8_dot_accumulates_in_int32():
    rng = np.random.default_rng(2)
    a = rng.integers(-128, 128, (4, 8)).astype(np.int8)
    b = rng.integers(-128, 128, (8, 2)).astype(np.int8)
    c = np.zeros((4, 2), np.int32)
    run_both(plain_dot_kernel, (1,), a_ptr=a, b_ptr=b, c_ptr=c, M=4, N=2, K=8)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))


@triton.jit
def batched_kernel(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rn = tl.arange(0, N)[None, None, :]
    rk_col = tl.arange(0, K)[None, None, :]
    rk_row = tl.arange(0, K)[None, :, None]
    a = tl.load(a_ptr + rb * M * K + rm * K + rk_col)
    b = tl.load(b_ptr + rb * K * N + rk_row * N + rn)
    tl.store(c_ptr + rb * M * N + rm * N + rn, tl.dot(a, b))


@pytest.mark.parametrize("shape", [(2, 16, 16, 16), (4, 8, 2, 16), (2, 1, 32, 4)])
def test_small_batched_dots(shape: tuple[int, int, int, int]):
    bsz, m, n, k = shape
    rng = np.random.default_rng(sum(shape))
    a = rng.standard_normal((bsz, m, k)).astype(np.float32)
    b = rng.standard_normal((bsz, k, n)).astype(np.float32)
    c = np.zeros((bsz, m, n), np.float32)
    run_both(batched_kernel, (1,), a_ptr=a, b_ptr=b, c_ptr=c, B=bsz, M=m, N=n, K=k, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c, np.matmul(a.astype(np.float64), b.astype(np.float64)), rtol=1e-5, atol=1e-5)


@triton.jit
def dot_4d_kernel(a_ptr, b_ptr, c_ptr, B0: tl.constexpr, B1: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                  K: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, B0 * B1 * M * K)).reshape(B0, B1, M, K)
    b = tl.load(b_ptr + tl.arange(0, B0 * B1 * K * N)).reshape(B0, B1, K, N)
    acc = tl.full((B0, B1, M, N), 0.5, tl.float32)
    tl.store(c_ptr + tl.arange(0, B0 * B1 * M * N), tl.dot(a, b, acc).reshape(B0 * B1 * M * N))


@pytest.mark.parametrize("shape", [(2, 4, 8, 4, 16), (2, 2, 32, 32, 16)])
def test_4d_dots_flatten_their_batch_axes(shape: tuple[int, int, int, int, int]):
    # batch axes (2, 4) and (2, 2): products and a sum, then one 2-D dot per batch element
    b0, b1, m, n, k = shape
    rng = np.random.default_rng(sum(shape))
    a = rng.standard_normal((b0, b1, m, k)).astype(np.float16)
    b = rng.standard_normal((b0, b1, k, n)).astype(np.float16)
    c = np.zeros((b0, b1, m, n), np.float32)
    run_both(dot_4d_kernel, (1,), a_ptr=a, b_ptr=b, c_ptr=c, B0=b0, B1=b1, M=m, N=n, K=k, rtol=1e-3, atol=1e-3)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64)) + 0.5
    np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-3)


def test_batched_dot_per_batch_on_fragments():
    rng = np.random.default_rng(9)
    a = rng.standard_normal((2, 32, 16)).astype(np.float16)
    b = rng.standard_normal((2, 16, 32)).astype(np.float16)
    c = np.zeros((2, 32, 32), np.float32)
    run_both(batched_kernel, (1,), a_ptr=a, b_ptr=b, c_ptr=c, B=2, M=32, N=32, K=16, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(c, np.matmul(a.astype(np.float32), b.astype(np.float32)), rtol=1e-3, atol=1e-3)
    ir = batched_kernel.warmup(a, b, c, B=2, M=32, N=32, K=16, grid=(1,)).asm["ir"]
    assert ir.count("tt.dot") == 2  # one 2-D dot per batch element


def test_batched_dot_past_the_unroll_limit_stays_refused_by_the_compiler():
    a = np.zeros((32, 16, 16), np.float32)
    with pytest.raises(triton.CompilationError, match="tl.dot of 3-D operands is not supported"):
        batched_kernel[(1,)](a, a, np.zeros((32, 16, 16), np.float32), B=32, M=16, N=16, K=16)


def test_tile_too_large_for_staging_uses_fragments_from_device_memory():
    # A and B are 32 KiB each and the result 64 KiB in fp32: their conversions cannot share the
    # 32 KiB of threadgroup memory, so the operands load into fragments and the result stores from them
    rng = np.random.default_rng(12)
    a = rng.standard_normal((128, 64)).astype(np.float32)
    b = rng.standard_normal((64, 128)).astype(np.float32)
    c = np.zeros((128, 128), np.float32)
    run_both(plain_dot_kernel, (1,), a_ptr=a, b_ptr=b, c_ptr=c, M=128, N=128, K=64, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-4)
    compiled = plain_dot_kernel.warmup(a, b, c, M=128, N=128, K=64, grid=(1,))
    assert "direct_fragment_io" in compiled.asm["ir"] and "ttg.convert_layout" not in compiled.asm["ir"]


@pytest.mark.parametrize("target", ["apple9:3.2", "apple10:4.0"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
def test_2d_dot_on_each_target(target: str, dtype: type, monkeypatch: pytest.MonkeyPatch):
    # the same program on both targets; on MSL 4.0 this dot (in no loop) would be a single
    # tensor-op dot, staging A, B and C and waiting once more than simdgroup matrices, so the
    # cost rule keeps it on simdgroup matrices (docs/dot.md, "Which path, by cost")
    monkeypatch.setenv("TRITON_METAL_TARGET", target)
    rng = np.random.default_rng(21)
    if dtype is np.int8:
        a = rng.integers(-128, 128, (32, 32)).astype(np.int8)
        b = rng.integers(-128, 128, (32, 32)).astype(np.int8)
        c = np.zeros((32, 32), np.int32)
        want = a.astype(np.int64) @ b.astype(np.int64)
    else:
        a = rng.standard_normal((32, 32)).astype(dtype)
        b = rng.standard_normal((32, 32)).astype(dtype)
        c = np.zeros((32, 32), np.float32)
        want = a.astype(np.float64) @ b.astype(np.float64)
    run_both(plain_dot_kernel, (1,), a_ptr=a, b_ptr=b, c_ptr=c, M=32, N=32, K=32, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)
    compiled = plain_dot_kernel.warmup(a, b, c, M=32, N=32, K=32, grid=(1,))
    msl = compiled.asm["msl"]
    assert "simdgroup_multiply_accumulate(" in msl  # int8: float fragments with exact partials (docs/dot.md)
    assert "matmul2d" not in msl
    [dot] = compiled.msl.metadata["dot_reports"]
    if target == "apple10:4.0":
        simdgroup = f"{dot['barriers_per_k_step']} barriers, {dot['threadgroup_bytes_per_k_step']} bytes"
        assert dot["path_reason"].startswith(f"a single dot: simdgroup matrices, {simdgroup} in the kernel (no loop), "
                                             "where tensor ops take ")
    else:
        assert dot["path_reason"] == ""
