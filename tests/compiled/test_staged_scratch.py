"""Tensors past Apple's 32 KiB of threadgroup memory move through it in pieces: a layout
conversion (a transpose) and a gather of 64 KiB each, and a reduction whose cross-SIMD-group
partials need 64 KiB; a gather of 32 KiB shares its bytes with the conversions around it;
compiled on the emulator against the interpreter and NumPy. (Triton's
test_permute, test_gather and test_chained_reductions use such sizes; NVIDIA GPUs' shared memory
holds them whole.)"""

from __future__ import annotations

import numpy as np

import triton_metal.language as tl
from differential import run_both


def staged(x_ptr, i_ptr, t_ptr, g_ptr, M: tl.constexpr, N: tl.constexpr):  # noqa: ANN001, ANN201, N803
    r = tl.arange(0, M)[:, None]
    c = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + r * N + c)
    tl.store(t_ptr + c * M + r, x)  # stored by columns: the transpose's conversion
    tl.store(g_ptr + r * N + c, tl.gather(x, tl.load(i_ptr + r * N + c), 1))


def test_a_transpose_and_a_gather_of_64_kib_each() -> None:
    rng = np.random.default_rng(8)
    m, n = 64, 128  # int64: 64 KiB
    x = rng.integers(-(2**40), 2**40, (m, n)).astype(np.int64)
    idx = rng.integers(0, n, (m, n)).astype(np.int32)
    t = np.zeros((n, m), np.int64)
    g = np.zeros((m, n), np.int64)
    run_both(staged, num_warps=16, x_ptr=x, i_ptr=idx, t_ptr=t, g_ptr=g, M=m, N=n)
    np.testing.assert_array_equal(t, x.T)
    np.testing.assert_array_equal(g, np.take_along_axis(x, idx, 1))


def gather_rows(x_ptr, i_ptr, g_ptr, M: tl.constexpr, N: tl.constexpr, R: tl.constexpr):  # noqa: ANN001, ANN201, N803
    c = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + c)
    rows = tl.arange(0, R)[:, None] * N + c
    tl.store(g_ptr + rows, tl.gather(x, tl.load(i_ptr + rows), 0))


def test_a_gather_of_32_kib_shares_bytes_with_the_conversions_beside_it() -> None:
    # the source (128 x 64 float32) is 32 KiB whole: its buffer takes the same bytes as the
    # kernel's conversions instead of coming after them (48 KiB, refused before)
    rng = np.random.default_rng(10)
    m, n, r = 128, 64, 256
    x = rng.standard_normal((m, n)).astype(np.float32)
    idx = rng.integers(0, m, (r, n)).astype(np.int64)  # as torch.randint gives them
    g = np.zeros((r, n), np.float32)
    run_both(gather_rows, x_ptr=x, i_ptr=idx, g_ptr=g, M=m, N=n, R=r)
    np.testing.assert_array_equal(g, np.take_along_axis(x, idx, 0))


def chained_sums(x_ptr, o_ptr, S0: tl.constexpr, S1: tl.constexpr, S2: tl.constexpr,  # noqa: ANN001, ANN201, N803
                 S3: tl.constexpr, S4: tl.constexpr):  # noqa: N803
    flat = tl.arange(0, S0 * S1 * S2 * S3 * S4)
    x = tl.permute(tl.load(x_ptr + flat.reshape(S0, S1, S2, S3, S4)), [4, 0, 1, 3, 2])
    r = tl.sum(tl.sum(tl.sum(x, 0), 2), 0)  # the middle sum's partials need 64 KiB
    tl.store(o_ptr + tl.arange(0, r.shape[0] * r.shape[1]).reshape(r.shape), r)


def test_a_reduction_whose_partials_need_64_kib() -> None:
    shape = (8, 2, 32, 4, 16)
    x = np.random.default_rng(9).random(shape).astype(np.float32)
    ref = x.transpose(4, 0, 1, 3, 2).sum(0).sum(2).sum(0)
    out = np.zeros(ref.size, np.float32)
    run_both(chained_sums, num_warps=16, x_ptr=x, o_ptr=out, S0=8, S1=2, S2=32, S3=4, S4=16, rtol=1e-4)
    np.testing.assert_allclose(out, ref.ravel(), rtol=1e-4)
