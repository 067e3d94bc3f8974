"""Arithmetic on a signalling NaN returns a quiet NaN (IEEE 754 6.2), on both backends: the
emulator's C++ compiler must not fold `x - (m ? y : 0)` into `m ? x - y : x`, which would pass
the signalling NaN through where the mask is off (`-fsignaling-nans`)."""

from __future__ import annotations

import numpy as np

import triton_metal as triton
import triton_metal.language as tl

from differential import run_both


@triton.jit
def minus_masked_in_place(y_ptr, x_ptr, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    x = tl.load(x_ptr + o, mask=m, other=0)
    y = tl.load(y_ptr + o, mask=m & (o % 3 != 2), other=0)  # every third lane subtracts 0.0
    tl.store(y_ptr + o, x - y, mask=m)


def test_arithmetic_quiets_a_signalling_nan() -> None:
    n = 96
    x = np.tile(np.array([0x7FA00001, 0xFFA00001], np.uint32), n // 2).view(np.float32)
    y = np.ones(n, np.float32)
    run_both(minus_masked_in_place, (3,), y_ptr=y, x_ptr=x, n=n, BLOCK=32, num_warps=1)
    quiet = x.view(np.uint32) | np.uint32(0x00400000)  # the quiet bit set, payload and sign kept
    np.testing.assert_array_equal(y.view(np.uint32), quiet)
