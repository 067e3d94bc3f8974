"""Reproducers of compiled-code bugs that were fixed, kept as regression tests against NumPy."""

from __future__ import annotations

import numpy as np

import triton_metal as triton
import triton_metal.language as tl


@triton.jit
def bool_to_int(f_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(o_ptr + offs, tl.load(f_ptr + offs).to(tl.int32))


def test_bool_to_int_cast_is_zero_or_one():
    flags = np.array([True, False, True, True], np.bool_)
    out = np.zeros(4, np.int32)
    bool_to_int[(1,)](flags, out, N=4)
    np.testing.assert_array_equal(out, [1, 0, 1, 1])


@triton.jit
def bool_not_store(f_ptr, o_ptr, w_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    f = tl.load(f_ptr + offs)
    tl.store(o_ptr + offs, ~f)
    tl.store(w_ptr + offs, (~f).to(tl.int8) + f.to(tl.int8) * 2)


def test_bool_not_stores_zero_or_one_bytes():
    flags = np.array([True, False, False, True, True, False, True, False], np.bool_)
    out = np.zeros(8, np.bool_)
    wide = np.zeros(8, np.int8)
    bool_not_store[(1,)](flags, out, wide, N=8)
    # the bytes themselves, not their truth: a bool array holding 0xFF compares equal to True
    np.testing.assert_array_equal(out.view(np.uint8), (~flags).astype(np.uint8))
    np.testing.assert_array_equal(wide, (~flags).astype(np.int8) + flags.astype(np.int8) * 2)


@triton.jit
def unsigned_to_float(x_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs).to(tl.float32))


def test_unsigned_to_float_keeps_large_values():
    x = np.array([0, 1, 2**31, 2**32 - 1, 3_000_000_000, 7, 2**31 - 1, 123], np.uint32)
    out = np.zeros(8, np.float32)
    unsigned_to_float[(1,)](x, out, N=8)
    np.testing.assert_array_equal(out, x.astype(np.float32))
