"""MLX arrays follow one rule on every backend (docs/runtime.md, "MLX arrays"): a view is its
logical elements in row-major order, so a kernel given the row-major strides of its shape reads
the same values on the emulator (through `mx.fast.metal_kernel`'s rules) and in the interpreter;
writing through an MLX slice rebinds the slice, not the array it was cut from."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl


@triton.jit
def copy_2d(x_ptr, out_ptr, rows, cols, stride_r, stride_c, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + r * stride_r + c * stride_c, mask=c < cols)
    tl.store(out_ptr + r * cols + c, v, mask=c < cols)


@triton.jit
def fill(out_ptr, n, value, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.full((BLOCK,), value, tl.float32), mask=offs < n)


VIEWS = {
    "transposed": lambda a: a.T,
    "column slice": lambda a: a[:, 1:4],
    "row slice": lambda a: a[2:5],
    "strided": lambda a: a[::2, ::3],
}


@pytest.fixture(autouse=True)
def _plain(monkeypatch):
    for name in ("TRITON_METAL_INTERPRET", "TRITON_METAL_DEBUG", "TRITON_METAL_BACKEND"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("view", list(VIEWS))
def test_a_view_reads_as_its_row_major_elements_on_every_backend(view, monkeypatch):
    base = np.arange(48, dtype=np.float32).reshape(6, 8)
    expected = VIEWS[view](base)
    results = []
    for interpret in (False, True):
        if interpret:
            monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
        v = VIEWS[view](mx.array(base))
        rows, cols = v.shape
        out = mx.zeros((rows * cols,), dtype=mx.float32)
        copy_2d[(rows,)](v, out, rows, cols, cols, 1, BLOCK=16)  # row-major strides of its shape
        results.append(np.array(out).reshape(rows, cols))
    np.testing.assert_array_equal(results[0], expected)
    np.testing.assert_array_equal(results[1], expected)


@pytest.mark.parametrize("interpret", [False, True], ids=["emulator", "interpreter"])
def test_writing_through_an_mlx_slice_rebinds_the_slice_only(interpret, monkeypatch):
    if interpret:
        monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    cache = mx.zeros((4, 8), dtype=mx.float32)
    part = cache[2]
    fill[(1,)](part, 8, 5.0, BLOCK=8)
    np.testing.assert_array_equal(np.array(part), 5.0)
    np.testing.assert_array_equal(np.array(cache), 0.0)  # MLX slices are values, not views
    cache[2] = part  # the documented way back
    np.testing.assert_array_equal(np.array(cache)[2], 5.0)
