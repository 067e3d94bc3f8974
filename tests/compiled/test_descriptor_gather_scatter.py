"""Tensor-descriptor `gather` / `scatter` (rows by index, columns from an offset), in the
interpreter and compiled (`run_both`), against NumPy; Triton's checks on their operands."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError

from differential import run_both


@triton.jit
def gather_scatter(x_ptr, idx_ptr, out_ptr, M, N, y0, R: tl.constexpr, BY: tl.constexpr, BX: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BX, BY])
    dst = tl.make_tensor_descriptor(out_ptr, [M, N], [N, 1], [BX, BY])
    rows = tl.load(idx_ptr + tl.arange(0, R))
    dst.scatter(src.gather(rows, y0) * 2 + 1, rows, y0)


@pytest.mark.parametrize("y0", [8, 20, -4])  # inside, past the right edge, before the left one
def test_rows_by_index_from_a_column(y0):
    x = np.arange(20 * 40, dtype=np.float32).reshape(20, 40)
    idx = np.array([3, 0, 19, 25, 7, -1, 11, 2], np.int32)  # two rows outside the shape
    out = np.full_like(x, -5.0)
    run_both(gather_scatter, (1,), x_ptr=x, idx_ptr=idx, out_ptr=out, M=20, N=40, y0=y0, R=8, BY=32, BX=1)
    ref = np.full_like(x, -5.0)
    cols = np.arange(y0, y0 + 32)
    cols = cols[(cols >= 0) & (cols < 40)]
    for r in idx:
        if 0 <= r < 20:
            ref[r, cols] = x[r, cols] * 2 + 1
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize(("rows", "by", "bx", "message"), [
    (8, 32, 2, "descriptor block must have 1 row"),
    (4, 32, 1, "descriptor gather must have at least 8 rows"),
    (8, 4, 1, "descriptor gather of fp32 must have at least 8 columns"),
])
def test_triton_checks(rows, by, bx, message):
    x = np.zeros((20, 40), np.float32)
    with pytest.raises(CompilationError, match=message):
        run_both(gather_scatter, (1,), x_ptr=x, idx_ptr=np.zeros(8, np.int32), out_ptr=x.copy(),
                 M=20, N=40, y0=0, R=rows, BY=by, BX=bx)


@triton.jit
def descriptor_chosen_at_run_time(x_ptr, out_ptr, flag, N: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, [N], [1], [N])
    if flag > 0:  # a run-time choice of window over the same array
        desc = tl.make_tensor_descriptor(x_ptr + 4, [N - 6], [1], [N])
    acc = tl.zeros([N], tl.float32)
    for i in range(3):  # and a descriptor carried through a loop, moved each iteration
        acc += desc.load([0])
        desc = tl.make_tensor_descriptor(x_ptr + i, [N - i], [1], [N])
    tl.store(out_ptr + tl.arange(0, N), acc)


@pytest.mark.parametrize("flag", [0, 2])  # run-time values (1 would be a compile-time one)
def test_descriptors_reassigned_under_run_time_control_flow(flag):
    x = np.arange(1, 17, dtype=np.float32)
    out = np.zeros(16, np.float32)
    run_both(descriptor_chosen_at_run_time, (1,), x_ptr=x, out_ptr=out, flag=flag, N=16)

    def window(start, n):
        w = np.zeros(16, np.float32)
        w[:n] = x[start:start + n]
        return w

    first = window(4, 10) if flag else window(0, 16)
    np.testing.assert_array_equal(out, first + window(0, 16) + window(1, 15))


@triton.jit
def descriptor_over_two_arrays(x_ptr, y_ptr, out_ptr, flag, N: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, [N], [1], [N])
    if flag > 0:
        desc = tl.make_tensor_descriptor(y_ptr, [N], [1], [N])
    tl.store(out_ptr + tl.arange(0, N), desc.load([0]))


def test_a_descriptor_merged_from_two_arrays_is_refused_alike():
    x = np.zeros(16, np.float32)
    with pytest.raises(CompilationError, match="pointer must point into one array"):
        run_both(descriptor_over_two_arrays, (1,), x_ptr=x, y_ptr=x.copy(), out_ptr=x.copy(), flag=2, N=16)
