"""Negating a 16-bit float flips its sign bit, as Metal negates a half: a signalling NaN stays
signalling and every payload and zero keeps its bits (on the emulator g++ would negate a
_Float16 through float, quieting the NaN; the code generator negates the bits)."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl

_BITS = np.array([0x7D01, 0xFD01, 0x7E00, 0x7C01, 0x0000, 0x8000, 0x3C00, 0x7C00,
                  0x0001, 0xFBFF, 0xFE05, 0x7FFF, 0x0400, 0x83FF, 0xBC00, 0xFC00], np.uint16)
"""Signalling and quiet NaNs with payloads, zeros, one, infinity, denormals, the largest finite
(as float16; as bfloat16 the same bits are other values and NaNs of the same kinds)."""


@triton.jit
def negate(x_ptr, out_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.store(out_ptr + o, -tl.load(x_ptr + o))


@pytest.mark.parametrize("interpret", ["", "1"], ids=["emulator", "interpreter"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_negation_flips_the_sign_bit(monkeypatch: pytest.MonkeyPatch, dtype: str, interpret: str):
    monkeypatch.setenv("TRITON_METAL_INTERPRET", interpret)
    x, out = _BITS.copy(), np.zeros_like(_BITS)
    if dtype == "float16":
        negate[(1,)](x.view(np.float16), out.view(np.float16), N=x.size)
    else:
        negate[(1,)](triton.reinterpret(x, tl.bfloat16), triton.reinterpret(out, tl.bfloat16), N=x.size)
    want = _BITS ^ 0x8000
    if dtype == "bfloat16" and interpret:
        # the interpreter holds bfloat16 in float32 and stores every NaN as 0x7FC0 (payloads are
        # not kept, negated or not): compare the NaNs as NaNs there
        nan = (_BITS & 0x7F80) == 0x7F80
        nan &= (_BITS & 0x007F) != 0
        assert (out[nan] & 0x7FFF == 0x7FC0).all()
        out, want = out[~nan], want[~nan]
    np.testing.assert_array_equal(out, want)
