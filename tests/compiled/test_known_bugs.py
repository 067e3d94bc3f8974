"""Minimal reproducers of compiled-code bugs owned outside the runtime, kept as strict xfails
so that the fix turns them into failures to remove."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl


@triton.jit
def bool_to_int(f_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(o_ptr + offs, tl.load(f_ptr + offs).to(tl.int32))


@pytest.mark.xfail(strict=True, reason="code generator: int1 -> int32 casts sign-extend (True becomes -1)")
def test_bool_to_int_cast_is_zero_or_one():
    flags = np.array([True, False, True, True], np.bool_)
    out = np.zeros(4, np.int32)
    bool_to_int[(1,)](flags, out, N=4)
    np.testing.assert_array_equal(out, [1, 0, 1, 1])
