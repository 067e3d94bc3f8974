"""Tensors past Apple's 32 KiB of threadgroup memory move through it in pieces: a layout
conversion (a transpose) and a gather of 64 KiB each, compiled on the emulator against the
interpreter and NumPy. (Triton's test_permute and test_gather use such sizes; on NVIDIA GPUs the
shared memory holds them whole.)"""

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
