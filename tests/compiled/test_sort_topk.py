"""`tl.sort`, `tl.topk` and `tl.bitonic_merge` (language/sorting.py), in the interpreter and compiled
(`run_both`), against NumPy: several dtypes, 1-D and 2-D, ties, signed zeros and NaNs."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError

from differential import run_both


@triton.jit
def sort_rows(x_ptr, up_ptr, down_ptr, top_ptr, low_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows * N + cols)
    tl.store(up_ptr + rows * N + cols, tl.sort(x))
    tl.store(down_ptr + rows * N + cols, tl.sort(x, dim=1, descending=True))
    kc = tl.arange(0, K)[None, :]
    tl.store(top_ptr + rows * K + kc, tl.topk(x, K))
    tl.store(low_ptr + rows * K + kc, tl.topk(x, K, descending=False))


def _data(dtype: str, shape: tuple[int, int], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype.startswith("int"):
        return rng.integers(-20, 20, shape).astype(dtype)  # many ties
    x = rng.standard_normal(shape).astype(dtype)
    x.flat[::7] = x.flat[1]  # ties
    x.flat[3], x.flat[5] = -0.0, 0.0
    return x


@pytest.mark.parametrize(("dtype", "shape", "k"), [
    ("float32", (4, 32), 8), ("int32", (2, 16), 4), ("float16", (1, 64), 64), ("uint8", (2, 8), 1),
])
def test_sort_and_topk_against_numpy(dtype, shape, k):
    x = _data(dtype, shape, 0)
    up, down = np.zeros_like(x), np.zeros_like(x)
    top, low = np.zeros((shape[0], k), x.dtype), np.zeros((shape[0], k), x.dtype)
    run_both(sort_rows, (1,), x_ptr=x, up_ptr=up, down_ptr=down, top_ptr=top, low_ptr=low,
             M=shape[0], N=shape[1], K=k)
    ascending = np.sort(x, axis=1)
    np.testing.assert_array_equal(up, ascending)
    np.testing.assert_array_equal(down, ascending[:, ::-1])
    np.testing.assert_array_equal(top, ascending[:, ::-1][:, :k])
    np.testing.assert_array_equal(low, ascending[:, :k])


def test_nans_place_alike_on_both_backends():
    """What a NaN does is the network's, as in Triton: comparisons with it are false, so an
    exchange may copy it over its partner or drop it. Both backends agree (run_both), and rows
    without a NaN are unaffected."""
    x = _data("float32", (4, 32), 1)
    x[1, 4] = x[2, 30] = np.nan
    up, down = np.zeros_like(x), np.zeros_like(x)
    top, low = np.zeros((4, 8), np.float32), np.zeros((4, 8), np.float32)
    run_both(sort_rows, (1,), x_ptr=x, up_ptr=up, down_ptr=down, top_ptr=top, low_ptr=low, M=4, N=32, K=8)
    for row in (0, 3):
        np.testing.assert_array_equal(up[row], np.sort(x[row]))
        np.testing.assert_array_equal(top[row], np.sort(x[row])[::-1][:8])


@triton.jit
def merge_halves(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.bitonic_merge(tl.load(x_ptr + offs), descending=True))


def test_bitonic_merge_sorts_a_bitonic_sequence():
    rng = np.random.default_rng(2)
    x = np.concatenate([np.sort(rng.standard_normal(8)), -np.sort(-rng.standard_normal(8))]).astype(np.float32)
    out = np.zeros_like(x)
    run_both(merge_halves, (1,), x_ptr=x, out_ptr=out, N=16)
    np.testing.assert_array_equal(out, np.sort(x)[::-1])


@triton.jit
def sort_first_axis(out_ptr):
    tl.store(out_ptr + tl.arange(0, 8), tl.max(tl.sort(tl.zeros((4, 8), tl.float32), 0), 0))


@triton.jit
def top_three(out_ptr):
    tl.store(out_ptr + tl.arange(0, 4), tl.topk(tl.arange(0, 8), 3))


@pytest.mark.parametrize(("kernel", "message"), [
    (sort_first_axis, "only minor dimension is currently supported"),  # Triton's words
    (top_three, "k must be a power of two no larger than the axis"),
])
def test_refusals(kernel, message):
    with pytest.raises(CompilationError, match=message):
        run_both(kernel, (1,), out_ptr=np.zeros(8, np.float32))
