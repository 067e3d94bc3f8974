"""Shape ops through the whole compiler on the emulator: trans, permute, reshape, join, split,
interleave, cat, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from harness import C, compile_source, run

import triton_metal as triton
import triton_metal.language as tl

RNG = np.random.default_rng(8)


@triton.jit
def shapes_kernel(x_ptr, t_ptr, flat_ptr, a_ptr, b_ptr, inter_ptr, M: tl.constexpr, N: tl.constexpr, OP: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    if OP == "trans":
        t = tl.trans(x)
        tl.store(t_ptr + cols[:, None] * M + rows[None, :], t)
    elif OP == "reshape":
        f = tl.reshape(x, (M * N,))
        tl.store(flat_ptr + tl.arange(0, M * N), f + 1)
    else:
        a, b = tl.split(tl.reshape(x, (M, N // 2, 2)))
        half = tl.arange(0, N // 2)
        tl.store(a_ptr + rows[:, None] * (N // 2) + half[None, :], a)
        tl.store(b_ptr + rows[:, None] * (N // 2) + half[None, :], b)
        inter = tl.interleave(b, a)
        tl.store(inter_ptr + rows[:, None] * N + cols[None, :], inter)


@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize("op", ["trans", "reshape", "split"])
def test_shape_ops(op: str, num_warps: int):
    m, n = 16, 32
    x = RNG.integers(-1000, 1000, (m, n)).astype(np.int32)
    k = compile_source(shapes_kernel, "*i32", "*i32", "*i32", "*i32", "*i32", "*i32", C(m), C(n), C(op),
                       num_warps=num_warps)
    outs = run(k, (1,), x_ptr=x, t_ptr=np.zeros((n, m), np.int32), flat_ptr=np.zeros(m * n, np.int32),
               a_ptr=np.zeros((m, n // 2), np.int32), b_ptr=np.zeros((m, n // 2), np.int32),
               inter_ptr=np.zeros((m, n), np.int32))
    if op == "trans":
        np.testing.assert_array_equal(outs["t_ptr"], x.T)
    elif op == "reshape":
        np.testing.assert_array_equal(outs["flat_ptr"], x.reshape(-1) + 1)
    else:
        np.testing.assert_array_equal(outs["a_ptr"], x[:, 0::2])
        np.testing.assert_array_equal(outs["b_ptr"], x[:, 1::2])
        want = np.empty_like(x)
        want[:, 0::2], want[:, 1::2] = x[:, 1::2], x[:, 0::2]
        np.testing.assert_array_equal(outs["inter_ptr"], want)


@triton.jit
def cat_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    c = tl.cat(x, y, can_reorder=True)
    tl.store(out_ptr + tl.arange(0, 2 * N), c)


def test_cat_keeps_every_element():
    n = 64
    x = RNG.integers(-100, 100, n).astype(np.int32)
    y = RNG.integers(-100, 100, n).astype(np.int32)
    # one SIMD group: each half of the result holds whole CTA tiles (the layout pass's condition)
    k = compile_source(cat_kernel, "*i32", "*i32", "*i32", C(n), num_warps=1)
    out = run(k, (1,), x_ptr=x, y_ptr=y, out_ptr=np.zeros(2 * n, np.int32))["out_ptr"]
    # cat may reorder elements (can_reorder): compare as multisets
    np.testing.assert_array_equal(np.sort(out), np.sort(np.concatenate([x, y])))
