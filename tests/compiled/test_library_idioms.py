"""Idioms of library kernels, run in the interpreter and compiled (`run_both`) against NumPy:
dtype calls (`tl.float32(x)`), pointers made after an early `return`, compile-time helpers in
constexpr annotations (`triton.constexpr_function`, `triton.language.standard._log2`)."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError
from triton_metal.language import core
from triton_metal.language.standard import _log2

from differential import run_both


@triton.jit
def online_max_and_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Running max and sum of exp over blocks, started from dtype calls of Python numbers."""
    m = tl.float32(-float("inf"))
    d = tl.float32(0.0)
    for start in tl.range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=-float("inf"))
        new_m = tl.maximum(m, tl.max(x, 0))
        d = d * tl.exp(m - new_m) + tl.sum(tl.exp(x - new_m), 0)
        m = new_m
    tl.store(out_ptr, m)
    tl.store(out_ptr + 1, d)
    tl.store(out_ptr + 2, tl.float32(tl.int32(tl.load(x_ptr) * 0 + 7.75)))  # a tensor converted
    tl.store(out_ptr + 3, tl.float16(2049).to(tl.float32))  # rounded to half


def test_dtype_calls_make_scalars_and_convert_tensors():
    x = np.random.default_rng(0).standard_normal(300).astype(np.float32)
    out = np.zeros(4, np.float32)
    run_both(online_max_and_sum, (1,), x_ptr=x, out_ptr=out, n=300, BLOCK=64)
    np.testing.assert_allclose(out[:2], [x.max(), np.exp(x.astype(np.float64) - x.max()).sum()], rtol=1e-5)
    assert out[2] == 7.0 and out[3] == np.float32(np.float16(2049))


@triton.jit
def rotate_rows(q_ptr, f_ptr, row_stride, seq_len, batch, HALF: tl.constexpr):
    """In-place complex rotation of (batch, seq) rows; out-of-range programs return first and
    the row pointers exist only after that return."""
    pid = tl.program_id(0)
    b = pid // seq_len
    s = pid % seq_len
    if b >= batch or s >= seq_len:
        return
    q_ptr = q_ptr + (b * seq_len + s) * row_stride  # a parameter reassigned after the return
    d = tl.arange(0, HALF)
    re_ptrs = q_ptr + 2 * d  # a block of pointers that exists only after the return
    re = tl.load(re_ptrs)
    im = tl.load(re_ptrs + 1)
    f = tl.load(f_ptr + s * HALF + d)
    tl.store(re_ptrs, re * f - im)
    tl.store(re_ptrs + 1, im * f + re)


def test_pointers_made_after_an_early_return():
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 3, 8)).astype(np.float32)
    f = rng.standard_normal((3, 4)).astype(np.float32)
    ref = q.copy()
    re, im = q[..., 0::2], q[..., 1::2]
    ref[..., 0::2], ref[..., 1::2] = re * f - im, im * f + re
    run_both(rotate_rows, (8,), q_ptr=q, f_ptr=f, row_stride=8, seq_len=3, batch=2, HALF=4)  # 2 extra programs
    np.testing.assert_allclose(q, ref, rtol=1e-6)


@triton.jit
def _first_or_shifted(p, i, n):
    if i >= n:
        return p
    return p + i


@triton.jit
def pointer_from_returning_helper(x_ptr, out_ptr, n):
    i = tl.program_id(0)
    tl.store(out_ptr + i, tl.load(_first_or_shifted(x_ptr, i, n)))


def test_pointer_returned_on_some_paths_of_a_helper():
    x = np.arange(10, 18, dtype=np.float32)
    out = np.zeros(8, np.float32)
    run_both(pointer_from_returning_helper, (8,), x_ptr=x, out_ptr=out, n=5)
    np.testing.assert_array_equal(out, np.where(np.arange(8) < 5, x, x[0]))


@triton.constexpr_function
def _halved(n):
    return n // 2


@triton.jit
def _weighted(x, dim: core.constexpr):
    _dim: core.constexpr = dim
    n_dims: core.constexpr = _log2(x.shape[_dim])  # a module-level compile-time helper
    return x * n_dims + _halved(x.shape[_dim])


@triton.jit
def constexpr_helpers(out_ptr, BLOCK: tl.constexpr):
    x = tl.arange(0, BLOCK)
    tl.store(out_ptr + x, _weighted(x, 0))


@pytest.mark.parametrize("block", [16, 64])
def test_compile_time_helpers_in_constexpr_annotations(block):
    out = np.zeros(block, np.int32)
    run_both(constexpr_helpers, (1,), out_ptr=out, BLOCK=block)
    np.testing.assert_array_equal(out, np.arange(block) * int(np.log2(block)) + block // 2)
    assert _log2(block) == int(np.log2(block)) and _log2(1) == 0 and _halved(9) == 4  # host calls


@triton.jit
def no_pointer_before_return(x_ptr, n):
    if tl.program_id(0) >= n:
        return
    y = x_ptr.to(tl.pointer_type(tl.int32), bitcast=True)
    tl.store(y, 1)


def test_a_pointer_with_no_value_of_its_type_before_the_return_is_refused():
    with pytest.raises(CompilationError, match="no pointer of its type is defined before"):
        run_both(no_pointer_before_return, (1,), x_ptr=np.zeros(1, np.float32), n=1)


@triton.jit
def _to_block(x):
    return x + tl.zeros((1,), tl.int1)  # a scalar as a 1-element block: only its dtype is read


@triton.jit
def _max_with_last_index(a, ia, b, ib):
    """Running maximum keeping the right-most index of ties; NaN wins (a NaN-aware combine)."""
    take_a = a > b
    same = a == b
    if _to_block(a).dtype.is_floating():
        a_nan = a != a
        b_nan = b != b
        take_a |= a_nan and not b_nan
        same |= a_nan and b_nan
    take_a |= same & (ia > ib)
    return tl.where(take_a, a, b), tl.where(take_a, ia, ib)


@triton.jit
def running_max(x_ptr, out_ptr, idx_ptr, block_max_ptr, block_idx_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=-float("inf"))
    v, i = tl.associative_scan((x, offs), 0, _max_with_last_index)
    m, mi = tl.reduce((x, offs), 0, _max_with_last_index)
    tl.store(out_ptr + offs, v, mask=offs < n)
    tl.store(idx_ptr + offs, i, mask=offs < n)
    tl.store(block_max_ptr + tl.program_id(0), m)
    tl.store(block_idx_ptr + tl.program_id(0), mi)


def test_scan_and_reduce_whose_combine_makes_a_block_of_a_scalar():
    x = np.array([1, 3, 2, 3, 5, 0, 5, 4, 9, np.nan, 2, 9], np.float32)
    out, idx = np.zeros(12, np.float32), np.zeros(12, np.int32)
    bmax, bidx = np.zeros(2, np.float32), np.zeros(2, np.int32)
    run_both(running_max, (2,), x_ptr=x, out_ptr=out, idx_ptr=idx, block_max_ptr=bmax, block_idx_ptr=bidx,
             n=12, BLOCK=8)
    ref, ref_idx = np.empty(12, np.float32), np.empty(12, np.int32)
    for start in (0, 8):  # per block, NaN-aware, ties to the later index
        best, at = -np.inf, -1
        for j in range(start, min(start + 8, 12)):
            if np.isnan(x[j]) or not np.isnan(best) and x[j] >= best:
                best, at = x[j], j
            ref[j], ref_idx[j] = best, at
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_array_equal(bmax, [ref[7], ref[11]])
    np.testing.assert_array_equal(bidx, [ref_idx[7], ref_idx[11]])


@triton.jit
def checked_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    assert x >= 0, "negative input"  # a tensor condition: Triton's device assert
    assert BLOCK >= 16, "block too small"  # a compile-time condition
    tl.store(out_ptr + offs, x, mask=offs < n)


def test_python_assert_on_a_tensor_is_a_device_assert(monkeypatch):
    x = np.arange(10, dtype=np.int32)
    out = np.zeros(10, np.int32)
    run_both(checked_copy, (1,), x_ptr=x, out_ptr=out, n=10, BLOCK=16)
    np.testing.assert_array_equal(out, x)
    kernel = triton.jit(checked_copy.fn)
    x[3] = -1
    with pytest.raises(triton.DeviceAssertionError, match="negative input"):
        kernel[(1,)](x, out, 10, BLOCK=16, debug=True)
    monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    with pytest.raises(triton.InterpreterError, match="device_assert failed at index \\(3,\\): negative input"):
        kernel[(1,)](x, out, 10, BLOCK=16)
    with pytest.raises(CompilationError, match="assertion failed: block too small"):
        kernel[(1,)](x, out, 10, BLOCK=8)
