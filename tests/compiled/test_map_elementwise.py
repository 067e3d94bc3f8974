"""`tl.map_elementwise` on both backends (`run_both`) against NumPy: a function with its own
control flow per element, several results, broadcast arguments, and `pack` handing the function
consecutive row-major elements (a function that tells the elements of a pack apart shows the
grouping); the shared refusals."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError

from differential import run_both


@triton.jit
def _selu_or_count(x, limit, scale):
    if x > 0:
        return x * scale, (x > limit).to(tl.int32)
    else:
        return 1.5 * (tl.exp(x) - 1), -1


@triton.jit
def _weigh_pack(a0, a1, a2, a3, b0, b1, b2, b3):
    # tells the four elements of a pack apart: the grouping decides the values
    return a0 + b3, a1 - b2, a2 * 2 + b1, a3 * 3 + b0


@triton.jit
def map_kernel(x_ptr, s_ptr, u_ptr, v_ptr, w_ptr, limit, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows * N + cols)
    scale = tl.load(s_ptr + cols)  # [1, N], broadcast over the rows
    u, v = tl.map_elementwise(_selu_or_count, x, limit, scale)
    tl.store(u_ptr + rows * N + cols, u)
    tl.store(v_ptr + rows * N + cols, v)
    w = tl.map_elementwise(_weigh_pack, x, x * 10, pack=4)
    tl.store(w_ptr + rows * N + cols, w)


def _weigh_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a4, b4 = a.reshape(-1, 4), b.reshape(-1, 4)
    out = np.stack([a4[:, 0] + b4[:, 3], a4[:, 1] - b4[:, 2], a4[:, 2] * 2 + b4[:, 1], a4[:, 3] * 3 + b4[:, 0]], 1)
    return out.reshape(a.shape)


@pytest.mark.parametrize("seed", [0, 1])
def test_control_flow_results_broadcast_and_pack(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m, n = 8, 16
    x = rng.standard_normal((m, n)).astype(np.float32)
    scale = rng.uniform(0.5, 2.0, n).astype(np.float32)
    u, v, w = np.zeros((m, n), np.float32), np.zeros((m, n), np.int32), np.zeros((m, n), np.float32)
    limit = 0.75
    run_both(map_kernel, (1,), x_ptr=x, s_ptr=scale, u_ptr=u, v_ptr=v, w_ptr=w, limit=limit, M=m, N=n,
             rtol=1e-5, atol=1e-6)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(u, np.where(x > 0, x64 * scale, 1.5 * np.expm1(x64)), rtol=2e-6, atol=2e-6)
    np.testing.assert_array_equal(v, np.where(x > 0, (x > limit).astype(np.int32), -1))
    np.testing.assert_allclose(w, _weigh_reference(x64, (x * 10).astype(np.float64)), rtol=1e-6, atol=1e-5)


@triton.jit
def _one(a):
    return a


@triton.jit
def map_pack3(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.map_elementwise(_one, x, pack=3))


@triton.jit
def _widen(a):
    return tl.zeros([2], tl.float32) + a


@triton.jit
def map_block_result(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.map_elementwise(_widen, x))


@pytest.mark.parametrize("kernel, reason", [
    (map_pack3, "pack must be a power of two, got 3"),
    (map_block_result, "must return scalars"),
])
def test_refusals_are_shared(kernel: object, reason: str) -> None:
    with pytest.raises(CompilationError, match=reason):
        run_both(kernel, (1,), x_ptr=np.zeros(8, np.float32), BLOCK=8)
