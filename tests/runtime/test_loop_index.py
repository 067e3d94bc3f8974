"""A loop's index is a `tl` scalar of the compiled loop's index type in the interpreter too, so
`row.to(tl.int64)` and `row.dtype` mean the same on every backend (one program, one answer);
`tl.static_range` keeps compile-time integers."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl


@triton.jit
def indexed_rows(out_ptr, n, N: tl.constexpr):
    for row in tl.range(0, N):  # constant bounds
        tl.static_assert(row.dtype == tl.int32)
        r = row.to(tl.int64)
        tl.store(out_ptr + r, r * 3)
    for i in range(n):  # a run-time bound, through Python's range
        tl.static_assert(i.dtype == tl.int32)
        tl.store(out_ptr + N + i.to(tl.int64), i.to(tl.int64) - 1)
    for k in tl.static_range(2):  # unrolled: a compile-time integer
        tl.static_assert(k == 0 or k == 1)
        tl.store(out_ptr + 2 * N + k, k + 10)


@pytest.mark.parametrize("interpret", ["", "1"], ids=["emulator", "interpreter"])
def test_loop_indices_are_tl_scalars(monkeypatch: pytest.MonkeyPatch, interpret: str):
    monkeypatch.setenv("TRITON_METAL_INTERPRET", interpret)
    n, N = 3, 4
    out = np.full(2 * N + 2, -99, np.int64)
    indexed_rows[(1,)](out, n, N=N)
    want = np.concatenate([np.arange(N) * 3, np.arange(n) - 1, [-99] * (N - n), [10, 11]])
    np.testing.assert_array_equal(out, want)
