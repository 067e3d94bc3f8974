"""A load of a pointer the program stored to earlier in the same launch reads what was stored,
as in place: directly from the output when every element it reads was stored before by the
program itself (the same pointers, under the same or no mask), else through the array kept
relative to its contents on the MLX path. Both backends (`run_both`), the MLX launch path
(separate input and output buffers, on the emulator), and NumPy."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl

from differential import run_both


@triton.jit
def scale_then_reread(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = x_ptr + offs
    tl.store(p, tl.load(p, mask=mask) * 2, mask=mask)
    again = tl.load(p, mask=mask, other=0.0)  # what this program just stored
    tl.store(y_ptr + offs, again + 1, mask=mask)
    total = tl.sum(tl.load(p, mask=mask, other=0.0), axis=0)  # every thread sees all of it
    tl.store(y_ptr + n + tl.program_id(0), total)


def _expected(x: np.ndarray, n: int, block: int) -> tuple[np.ndarray, np.ndarray]:
    doubled = x * 2
    sums = [doubled[i:i + block].sum() for i in range(0, n, block)]
    return doubled, np.concatenate([doubled + 1, np.array(sums, np.float32)])


def test_reads_its_own_stores_numpy():
    n, block = 200, 64
    x = np.arange(n, dtype=np.float32)
    y = np.zeros(n + 4, np.float32)
    run_both(scale_then_reread, (4,), x_ptr=x, y_ptr=y, n=n, BLOCK=block)
    doubled, want = _expected(np.arange(n, dtype=np.float32), n, block)
    np.testing.assert_array_equal(x, doubled)
    np.testing.assert_allclose(y, want, rtol=1e-6)


def test_reads_its_own_stores_through_separate_output_buffers():
    n, block = 200, 64
    x = mx.arange(n).astype(mx.float32)
    y = mx.zeros((n + 4,), mx.float32)
    scale_then_reread[(4,)](x, y, n, BLOCK=block)
    doubled, want = _expected(np.arange(n, dtype=np.float32), n, block)
    np.testing.assert_array_equal(np.array(x), doubled)
    np.testing.assert_allclose(np.array(y), want, rtol=1e-6)


@triton.jit
def reread_in_branch(x_ptr, flag, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, offs.to(tl.float32))
    if flag > 0:
        v = tl.load(x_ptr + offs)
        tl.store(x_ptr + offs, v * v)


@pytest.mark.parametrize("flag", [0, 1])
def test_store_dominating_a_load_in_a_branch(flag: int):
    x = np.full(32, -1, np.float32)
    run_both(reread_in_branch, (1,), x_ptr=x, flag=flag, BLOCK=32)
    base = np.arange(32, dtype=np.float32)
    np.testing.assert_array_equal(x, base * base if flag else base)


@triton.jit
def shifted_reread(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, offs.to(tl.float32))
    tl.store(y_ptr + offs, tl.load(x_ptr + offs + 1))  # another thread's element, and one not stored


@triton.jit
def wider_mask_reread(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, offs.to(tl.float32), mask=offs < 4)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))  # half of them stored


@pytest.mark.parametrize("kernel, want", [
    (shifted_reread, [1, 2, 3, 4, 5, 6, 7, -1]),
    (wider_mask_reread, [0, 1, 2, 3, -1, -1, -1, -1]),
])
def test_loads_of_elements_not_all_stored_read_the_array_as_updated(kernel: triton.JITFunction, want: list[int]):
    x = np.full(9, -1, np.float32)
    y = np.zeros(8, np.float32)
    run_both(kernel, (1,), x_ptr=x, y_ptr=y, BLOCK=8)
    np.testing.assert_array_equal(y, want)
    xm, ym = mx.full((9,), -1.0), mx.zeros((8,))
    kernel[(1,)](xm, ym, BLOCK=8)  # separate outputs: the array is kept relative to its contents
    np.testing.assert_array_equal(np.array(ym), want)
    np.testing.assert_array_equal(np.array(xm), x)


@triton.jit
def neighbour_of_an_atomic_array(a_ptr, v_ptr, s, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(a_ptr + o, tl.load(v_ptr + o))
    if s == 2:  # not taken: the array is still updated atomically somewhere in the kernel
        tl.atomic_xchg(a_ptr + o, 0.0)
    right = tl.load(a_ptr + (o ^ 1))  # another thread's store, as for an array without atomics
    tl.store(a_ptr + o, right * 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("kind", ["numpy", "mlx"])
def test_a_neighbour_load_of_an_atomic_array_waits_for_the_other_threads(kind: str, dtype: type) -> None:
    """An array updated by atomics reads its output; a load of elements other threads of the
    program stored waits for those stores (and they for it), as for any other array."""
    block = 64
    v = (np.arange(block) + 1).astype(dtype)
    want = v[np.arange(block) ^ 1] * 2
    if kind == "numpy":
        a = np.zeros(block, dtype)
        run_both(neighbour_of_an_atomic_array, (1,), a_ptr=a, v_ptr=v, s=0, BLOCK=block)
        np.testing.assert_array_equal(a, want)
    else:
        a = mx.zeros((block,), mx.float32 if dtype == np.float32 else mx.float16)
        neighbour_of_an_atomic_array[(1,)](a, mx.array(v), 0, BLOCK=block, num_warps=2)
        np.testing.assert_array_equal(np.array(a), want)
