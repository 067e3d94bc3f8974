"""Reductions and scans compiled on the emulator against the interpreter and NumPy.

The interpreter's own reduction tests build kernels around plain Python helpers and captured
variables, which the compiler refuses (see test_interpreter_ops.py); these are the same
operations written in the kernel language, with the axis and the other choices as constexprs,
over tile shapes that are not square and `num_warps` 1 to 8.
"""

from __future__ import annotations

import numpy as np
import pytest
from differential import run_both

import triton_metal as triton
import triton_metal.language as tl

M, N = 8, 32


@triton.jit
def reduce_2d(x_ptr, o_ptr, OP: tl.constexpr, AXIS: tl.constexpr, KEEP: tl.constexpr,
              M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    if OP == "sum":
        r = tl.sum(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "max":
        r = tl.max(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "min":
        r = tl.min(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "argmax":
        r = tl.argmax(x, axis=AXIS, keep_dims=KEEP)
    else:
        r = tl.argmin(x, axis=AXIS, keep_dims=KEEP)
    if AXIS == 0:
        if KEEP:
            tl.store(o_ptr + cols[None, :], r)
        else:
            tl.store(o_ptr + cols, r)
    else:
        if KEEP:
            tl.store(o_ptr + rows[:, None], r)
        else:
            tl.store(o_ptr + rows, r)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("op", ["sum", "max", "min", "argmax", "argmin"])
def test_reductions_over_a_tile(op: str, axis: int, keep: bool, num_warps: int):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((M, N)).astype(np.float32)
    ref = getattr(np, op)(x, axis=axis)
    if keep:
        ref = np.expand_dims(ref, axis)
    out = np.zeros(ref.size, np.int32 if op.startswith("arg") else np.float32)
    run_both(reduce_2d, (1,), num_warps=num_warps, x_ptr=x, o_ptr=out, OP=op, AXIS=axis, KEEP=keep, M=M, N=N)
    if op.startswith("arg"):
        np.testing.assert_array_equal(out, ref.reshape(-1))
    else:
        np.testing.assert_allclose(out, ref.reshape(-1), rtol=1e-5, atol=1e-6)


@triton.jit
def reduce_all(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(o_ptr, tl.sum(x))
    tl.store(o_ptr + 1, tl.max(x))
    tl.store(o_ptr + 2, tl.min(x))


@pytest.mark.parametrize("num_warps", [1, 2, 8])
def test_whole_tile_reductions_to_scalars(num_warps: int):
    x = np.random.default_rng(3).integers(-100, 100, (M, N)).astype(np.int32)
    out = np.zeros(3, np.int32)
    run_both(reduce_all, (1,), num_warps=num_warps, x_ptr=x, o_ptr=out, M=M, N=N)
    np.testing.assert_array_equal(out, [x.sum(), x.max(), x.min()])


@triton.jit
def scans(x_ptr, s_ptr, p_ptr, AXIS: tl.constexpr, REVERSE: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    v = tl.load(x_ptr + offs)
    tl.store(s_ptr + offs, tl.cumsum(v, AXIS, reverse=REVERSE))
    tl.store(p_ptr + offs, tl.cumprod(v, AXIS, reverse=REVERSE))


@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
def test_cumsum_and_cumprod(axis: int, reverse: bool, num_warps: int):
    x = np.random.default_rng(2).integers(-3, 4, (M, N)).astype(np.int32)
    s = np.zeros((M, N), np.int32)
    p = np.zeros((M, N), np.int32)
    run_both(scans, (1,), num_warps=num_warps, x_ptr=x, s_ptr=s, p_ptr=p, AXIS=axis, REVERSE=reverse, M=M, N=N)
    xs = np.flip(x, axis) if reverse else x
    ref_s, ref_p = np.cumsum(xs, axis), np.cumprod(xs, axis)
    if reverse:
        ref_s, ref_p = np.flip(ref_s, axis), np.flip(ref_p, axis)
    np.testing.assert_array_equal(s, ref_s)
    np.testing.assert_array_equal(p, ref_p.astype(np.int32))
