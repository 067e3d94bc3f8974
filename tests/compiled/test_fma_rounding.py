"""`tl.fma` rounds once, on both backends: the interpreter computes it in float64, where the
sum's own rounding can land halfway between two float32 values the exact result is not
halfway between (ties-to-even then picks the wrong one); it must give what Metal's `fma`
gives, the exact `x * y + z` rounded to float32 once."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

import triton_metal as triton
import triton_metal.language as tl

from differential import run_both


@triton.jit
def fma_kernel(x_ptr, y_ptr, z_ptr, out_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(out_ptr + o, tl.fma(tl.load(x_ptr + o), tl.load(y_ptr + o), tl.load(z_ptr + o)))


def _rounded_once(x: np.float32, y: np.float32, z: np.float32) -> np.float32:
    exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
    near = np.float32(float(exact))
    around = (np.nextafter(near, np.float32(-np.inf)), near, np.nextafter(near, np.float32(np.inf)))
    # nearest, ties to the even significand
    return min(around, key=lambda v: (abs(Fraction(float(v)) - exact), int(v.view(np.uint32)) & 1))


def test_fma_rounds_once_on_both_backends() -> None:
    # (1 + 2^-23) * (1 - 2^-23) 2^-24 + (1 + 2^-23) = 1 + 3 * 2^-24 - 2^-70: in float64 the
    # 2^-70 is lost and the sum is halfway between 1 + 2^-23 and 1 + 2^-22, which ties-to-even
    # rounds up; the exact sum lies below halfway and rounds down
    up, low = np.float32(1 + 2**-23), np.float32((1 - 2**-23) * 2**-24)
    tricky = [(up, low, up), (-up, low, -up), (up, -low, -up), (up * 4, low, up * 4)]
    rng = np.random.default_rng(5)
    rest = rng.standard_normal((60, 3)).astype(np.float32)
    cases = np.concatenate([np.array(tricky, np.float32), rest])
    x, y, z = (np.ascontiguousarray(cases[:, i]) for i in range(3))
    out = np.zeros(64, np.float32)
    run_both(fma_kernel, (1,), x_ptr=x, y_ptr=y, z_ptr=z, out_ptr=out, BLOCK=64, rtol=0.0, atol=0.0)
    want = np.array([_rounded_once(*t) for t in zip(x, y, z)], np.float32)
    np.testing.assert_array_equal(out.view(np.uint32), want.view(np.uint32))
    naive = (x.astype(np.float64) * y + z).astype(np.float32)
    assert (naive[:4] != want[:4]).all(), "the tricky cases no longer tie in float64"


@triton.jit
def fma_widened_kernel(x_ptr, y_ptr, z_ptr, out_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    f = tl.fma(tl.load(x_ptr + o), tl.load(y_ptr + o), tl.load(z_ptr + o))
    tl.store(out_ptr + o, f.to(tl.float32))


def test_bfloat16_fma_rounds_to_bfloat16_on_both_backends() -> None:
    # the interpreter holds bfloat16 values in float32 arrays; its fma must still round to
    # bfloat16, which the widened result shows
    import mlx.core as mx

    rng = np.random.default_rng(3)
    x, y, z = (mx.array(rng.standard_normal(64).astype(np.float32)).astype(mx.bfloat16) for _ in range(3))
    out = np.zeros(64, np.float32)
    run_both(fma_widened_kernel, (1,), x_ptr=x, y_ptr=y, z_ptr=z, out_ptr=out, BLOCK=64, rtol=0.0, atol=0.0)
    exact = [Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
             for a, b, c in zip(*(np.array(v.astype(mx.float32)) for v in (x, y, z)))]
    want = np.array(mx.array(np.array([float(e) for e in exact], np.float64)).astype(mx.bfloat16).astype(mx.float32))
    np.testing.assert_array_equal(out, want)
