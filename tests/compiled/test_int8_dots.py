"""int8 `tl.dot` on the simdgroup targets: half fragments, exact float partials over K chunks of at
most 1024, each added to the int32 accumulator with wrapping addition (docs/dot.md, "int8").

Every case runs compiled on the emulator for `apple7:3.1` and `apple9:3.2` (and, where the tile is
a whole tensor-op tile, `apple10:4.0`, whose int8 tensor-op path is unchanged) and in the
interpreter (`run_both`), against NumPy's int64 product reduced mod 2^32. The data are chosen
where exactness is tested hardest: sums of -128 * -128 over the largest K a chunk holds (each
partial exactly 2^24), a partial past 2^24 followed by odd products (where a float sum over more
than one chunk would round), and start values near the int32 limits (the sums wrap). Each kernel
compiles once per target; the cases vary the data.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl

from differential import run_both

SIMDGROUP_TARGETS = ("apple7:3.1", "apple9:3.2")
K_CHUNK = 1024
"""The K of one exact float partial (codegen/lower_dot.py `INT8_K_CHUNK`)."""


@triton.jit
def int8_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_K: tl.constexpr):
    """c = c + a @ b (int8 operands, the int32 start values read from c), masked in M, N and K."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    c_ptrs = c_ptr + rm[:, None] * N + rn[None, :]
    c_mask = (rm[:, None] < M) & (rn[None, :] < N)
    acc = tl.load(c_ptrs, mask=c_mask, other=0)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kk = k * BLOCK_K + rk
        a = tl.load(a_ptr + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0)
        b = tl.load(b_ptr + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptrs, acc, mask=c_mask)


@triton.jit
def int8_dot_tile(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    """c = c + a @ b in one dot of the whole (M x K) @ (K x N) tile."""
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c_ptrs = c_ptr + rm[:, None] * N + rn[None, :]
    tl.store(c_ptrs, tl.dot(a, b, tl.load(c_ptrs)))


def wrapped(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """`c + a @ b` in int64, reduced mod 2^32 to int32 (Triton's int32 accumulator wraps)."""
    exact = c.astype(np.int64) + a.astype(np.int64) @ b.astype(np.int64)
    return ((exact + 2**31) % 2**32 - 2**31).astype(np.int32)


def run(a: np.ndarray, b: np.ndarray, c: np.ndarray, bm: int, bn: int, bk: int, warps: int) -> np.ndarray:
    (m, k), n = a.shape, b.shape[1]
    out = c.copy()
    grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
    run_both(int8_matmul, grid, a_ptr=a, b_ptr=b, c_ptr=out, M=m, N=n, K=k, BLOCK_M=bm, BLOCK_N=bn,
             BLOCK_K=bk, num_warps=warps)
    return out


def run_tile(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """`int8_dot_tile` on one program of 4 warps (2 x 2 SIMD groups of one 8 x 8 fragment each)."""
    (m, k), n = a.shape, b.shape[1]
    out = c.copy()
    run_both(int8_dot_tile, (1,), a_ptr=a, b_ptr=b, c_ptr=out, M=m, N=n, K=k, num_warps=4)
    return out


def report(kernel: Any, *args: Any, **constexprs: Any) -> dict[str, Any]:
    """The dot report of `kernel`'s one dot, compiled for the current target."""
    compiled = kernel.warmup(np.int8, np.int8, np.int32, *args, grid=(1,), **constexprs)
    [dot] = compiled.msl.metadata["dot_reports"]
    return dot


def extremes(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """int8 values drawn from the ends of the range and from all of it, half and half."""
    ends = rng.choice(np.array([-128, -127, 127], np.int8), shape)
    return np.where(rng.random(shape) < 0.5, ends, rng.integers(-128, 128, shape)).astype(np.int8)


@pytest.fixture(params=SIMDGROUP_TARGETS)
def simdgroup_target(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("TRITON_METAL_TARGET", request.param)
    return request.param


def test_one_chunk_of_minus_128_squares_is_exact_and_wraps(simdgroup_target: str):
    # K = 1024 in one dot: row 0 of A and column 0 of B are all -128, so that element's partial is
    # 1024 * 2^14 = 2^24 exactly, the largest a chunk can reach; start values near both int32
    # limits make the sums wrap
    rng = np.random.default_rng(1)
    m, n, k = 16, 16, K_CHUNK
    a, b = extremes(rng, (m, k)), extremes(rng, (k, n))
    a[0], b[:, 0] = -128, -128
    a[1], b[:, 1] = 127, -128  # -(2^24 - 2^17): the most negative a column of partials reaches
    c = rng.integers(-(2**31), 2**31, (m, n)).astype(np.int32)
    c[0, 0], c[1, 1] = 2**31 - 2**23, -(2**31) + 2**23
    out = run_tile(a, b, c)
    want = wrapped(a, b, c)
    assert out[0, 0] == want[0, 0] == -(2**31) + 2**24 - 2**23  # wrapped past the largest int32
    np.testing.assert_array_equal(out, want)
    dot = report(int8_dot_tile, M=m, N=n, K=k, num_warps=4)
    assert dot["fragments"] == "float x float -> float" and dot["k_chunk"] == K_CHUNK
    # 2 x 2 SIMD groups of one 8 x 8 fragment each: k / 8 products, 2 registers folded once
    assert dot["fragment_products"] == k // 8 and dot["partial_folds"] == 2


def test_k_past_one_chunk_sums_exact_partials(monkeypatch: pytest.MonkeyPatch):
    # K = 2048 in one dot: two chunks. Row 0 x column 0 sums 1025 products of 2^14 and then 127
    # products of 1: one float sum over all K would pass 2^24 before the odd products, and round
    # each of them away (float has no odd integers above 2^24); chunked, each partial is exact.
    # One target: the kernel is large to compile, and the lowering is the same on both
    monkeypatch.setenv("TRITON_METAL_TARGET", "apple9:3.2")
    rng = np.random.default_rng(2)
    m, n, k = 16, 16, 2 * K_CHUNK
    a, b = extremes(rng, (m, k)), extremes(rng, (k, n))
    a[0, : K_CHUNK + 1], b[: K_CHUNK + 1, 0] = -128, -128
    a[0, K_CHUNK + 1:], b[K_CHUNK + 1:, 0] = 0, 1
    a[0, K_CHUNK + 8 :: 8] = 1  # one product of 1 per fragment product of 8 terms
    c = np.zeros((m, n), np.int32)
    out = run_tile(a, b, c)
    want = wrapped(a, b, c)
    assert want[0, 0] == (K_CHUNK + 1) * 2**14 + 127
    assert np.float32(want[0, 0]) != want[0, 0]  # not a float: one float sum could not return it
    np.testing.assert_array_equal(out, want)
    dot = report(int8_dot_tile, M=m, N=n, K=k, num_warps=4)
    assert dot["k_chunk"] == K_CHUNK and dot["partial_folds"] == 2 * 2  # 2 registers, 2 chunks


@pytest.mark.parametrize("m,n,k", [(50, 70, 3000), (32, 32, 40)])
@pytest.mark.parametrize("target", [*SIMDGROUP_TARGETS, "apple10:4.0"])
def test_k_loop_with_masked_tails_wraps_like_int32(target: str, m: int, n: int, k: int,
                                                   monkeypatch: pytest.MonkeyPatch):
    # 32 x 32 x 64 tiles on 4 warps, K looped past one chunk in many dots; the tensor-op target
    # takes its own (unchanged) int8 path for this whole tile
    monkeypatch.setenv("TRITON_METAL_TARGET", target)
    rng = np.random.default_rng(m + n + k)
    a, b = extremes(rng, (m, k)), extremes(rng, (k, n))
    a[:3], b[:, :3] = -128, -128
    c = rng.integers(-(2**31), 2**31, (m, n)).astype(np.int32)
    out = run(a, b, c, 32, 32, 64, 4)
    np.testing.assert_array_equal(out, wrapped(a, b, c))
    dot = report(int8_matmul, 64, 64, 64, BLOCK_M=32, BLOCK_N=32, BLOCK_K=64, num_warps=4)
    if target == "apple10:4.0":
        assert dot["path"] == "tensor_ops"
    else:
        assert dot["path"] == "simdgroup" and dot["fragments"] == "float x float -> float"
        assert dot["fragment_products"] == 2 * 2 * 64 // 8 and dot["barriers_per_k_step"] == 1
