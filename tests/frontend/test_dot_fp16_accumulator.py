"""`tl.dot(a, b, acc)` with float16 operands and a float16 accumulator, without `out_dtype`: the
dot accumulates in float16, as Triton's does (test_frontend's `test_dot_fp16_accumulator`), on
the emulator and in the interpreter, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError

BM = BN = 32
BK = 16


@triton.jit
def fp16_acc_matmul(a_ptr, b_ptr, c_ptr, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float16)
    for k in tl.static_range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
        tl.static_assert(acc.dtype == tl.float16)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros((BM, BN), np.float16)
    fp16_acc_matmul[(1,)](a, b, out, K=a.shape[1], BM=BM, BN=BN, BK=BK)
    return out


def test_exact_sums(backend: str) -> None:
    rng = np.random.default_rng(5)
    # quarters: every partial sum is a multiple of 1/16 below 64, exact in float16
    a = (rng.integers(-4, 5, (BM, 64)) / 4).astype(np.float16)
    b = (rng.integers(-4, 5, (64, BN)) / 4).astype(np.float16)
    np.testing.assert_array_equal(run(a, b), a.astype(np.float64) @ b.astype(np.float64))


def test_rounded_sums(backend: str) -> None:
    rng = np.random.default_rng(6)
    a = rng.standard_normal((BM, 64)).astype(np.float16)
    b = rng.standard_normal((64, BN)).astype(np.float16)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    # float16 sums (a rounding per tl.dot of 16 products and one per addition to the
    # accumulator, each within half an ulp of float16, 2**-11 relative) of sums near 8 in size
    np.testing.assert_allclose(run(a, b).astype(np.float64), ref, rtol=4e-3, atol=8 * 8 * 2.0**-11)


@triton.jit
def fp16_acc_dot(a_ptr, b_ptr, c_ptr, out_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
    c = tl.load(c_ptr + rm[:, None] * BN + rn[None, :])
    tl.store(out_ptr + rm[:, None] * BN + rn[None, :], tl.dot(a, b, c))


def test_one_rounding_per_dot(backend: str) -> None:
    # one tl.dot's products are summed in float and rounded to half once, then added to the
    # float16 accumulator in half, as Triton's interpreter computes it. The accumulator's values
    # near 300 (half ulp 0.25) make any rounding of partial sums there show: products are
    # multiples of 1/64 whose sums float holds exactly, so the model below is exact
    rng = np.random.default_rng(9)
    a = (rng.integers(-16, 17, (BM, 32)) / 8).astype(np.float16)
    b = (rng.integers(-16, 17, (32, BN)) / 8).astype(np.float16)
    c = (300 + rng.integers(-64, 65, (BM, BN)) / 4).astype(np.float16)
    out = np.zeros((BM, BN), np.float16)
    fp16_acc_dot[(1,)](a, b, c, out, BM=BM, BN=BN, BK=32)
    partial = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16)
    want = (c.astype(np.float64) + partial.astype(np.float64)).astype(np.float16)
    np.testing.assert_array_equal(out, want)


@triton.jit
def mismatched_kernel(c_ptr):
    r = tl.arange(0, 16)
    c = tl.zeros((16, 16), dtype=tl.float16)
    d = tl.dot(tl.zeros((16, 16), dtype=tl.float16), tl.zeros((16, 16), dtype=tl.float16), c, out_dtype=tl.float32)
    tl.store(c_ptr + r[:, None] * 16 + r[None, :], d)


def test_accumulator_and_out_dtype_must_agree(backend: str) -> None:
    with pytest.raises(CompilationError, match="accumulator has type"):
        mismatched_kernel[(1,)](np.zeros((16, 16), np.float32))
