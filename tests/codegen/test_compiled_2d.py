"""Compiled 2-D tile kernels (broadcast, expand_dims, row and column reductions, trans) against
NumPy on the emulator, with a test-side layout assignment (see `harness.compile_2d`)."""

from __future__ import annotations

import numpy as np
import pytest
from harness import C, compile_2d, run

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.ir.layouts import CoalescedLayout

RNG = np.random.default_rng(2)


@triton.jit
def tile_kernel(x_ptr, b_ptr, out_ptr, rows_ptr, cols_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    b = tl.load(b_ptr + cols)
    s = tl.sum(x, axis=1)
    m = tl.max(x, axis=0)
    y = x + b[None, :] - s[:, None] * m[None, :]
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], y)
    tl.store(rows_ptr + rows, s)
    tl.store(cols_ptr + cols, m)


LAYOUTS = [
    CoalescedLayout((1, 1), (4, 8), (4, 1), (1, 0)),
    CoalescedLayout((1, 4), (8, 4), (2, 2), (1, 0)),
    CoalescedLayout((2, 1), (2, 16), (1, 4), (0, 1)),
    CoalescedLayout((1, 1), (32, 1), (1, 4), (1, 0)),
]


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
@pytest.mark.parametrize("shape", [(16, 32), (64, 16), (8, 4)])
def test_tile_broadcast_and_reductions(layout: CoalescedLayout, shape: tuple[int, int]):
    m_, n_ = shape
    x = RNG.standard_normal((m_, n_)).astype(np.float32)
    b = RNG.standard_normal(n_).astype(np.float32)
    k = compile_2d(tile_kernel, "*fp32", "*fp32", "*fp32", "*fp32", "*fp32", C(m_), C(n_), parent=layout)
    outs = run(k, (1,), x_ptr=x, b_ptr=b, out_ptr=np.zeros((m_, n_), np.float32),
               rows_ptr=np.zeros(m_, np.float32), cols_ptr=np.zeros(n_, np.float32))
    s = x.astype(np.float64).sum(axis=1)
    mx_ = x.max(axis=0)
    np.testing.assert_allclose(outs["rows_ptr"], s, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(outs["cols_ptr"], mx_)
    np.testing.assert_allclose(outs["out_ptr"], x + b[None, :] - s[:, None] * mx_[None, :], rtol=1e-5, atol=1e-5)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + cols, y, mask=mask)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_softmax_rows(num_warps: int):
    from harness import compile_1d

    rows, cols = 37, 781
    x = RNG.standard_normal((rows, cols)).astype(np.float32)
    k = compile_1d(softmax_kernel, "*fp32/16", "*fp32/16", "i32", "i32", "i32", C(1024), num_warps=num_warps,
                   spt=4)
    out = run(k, (rows,), out_ptr=np.zeros_like(x), in_ptr=x, in_stride=cols, out_stride=cols, n_cols=cols)["out_ptr"]
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_softmax_golden_structure():
    """Softmax: SIMD reductions, threadgroup memory only across SIMD groups, two barriers per
    reduction and no others."""
    from harness import compile_1d

    k = compile_1d(softmax_kernel, "*fp32/16", "*fp32/16", "i32", "i32", "i32", C(1024), num_warps=4, spt=4)
    src = k.source
    assert "simd_max(" in src and "simd_sum(" in src
    assert src.count("threadgroup_barrier(mem_flags::mem_threadgroup)") == 4
    assert "threadgroup float4 km_smem[" in src
    assert "fast::exp(" in src  # tl.exp is Triton's approximate exponential
    assert "thread_position_in_grid" in src
    one = compile_1d(softmax_kernel, "*fp32/16", "*fp32/16", "i32", "i32", "i32", C(1024), num_warps=1, spt=4)
    assert "threadgroup_barrier" not in one.source and "km_smem" not in one.source
