"""fp32 division as Triton divides on a GPU: `/` is the approximate division (Triton's
div.full.f32, within 2 ulp; here Metal's fast::divide, within 2.5 ulp, for divisors of magnitude
in [2^-126, 2^126] and the IEEE division for the others), `tl.math.div_rn` and
`tl.fdiv(..., ieee_rounding=True)` are the IEEE one. Checked against NumPy's exact quotient on
the emulator (whose `fast::divide` is deliberately inexact within its documented bound) and in
the interpreter."""

from __future__ import annotations

import numpy as np

import triton_metal as triton
import triton_metal.language as tl

from differential import run_both


@triton.jit
def divide_kernel(x_ptr, y_ptr, q_ptr, rn_ptr, ieee_ptr, N: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(q_ptr + offs, x / y)
    tl.store(rn_ptr + offs, tl.math.div_rn(x, y))
    tl.store(ieee_ptr + offs, tl.fdiv(x, y, ieee_rounding=True))


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in representable float32 values (NaN against NaN counts 0)."""
    def ordered(v: np.ndarray) -> np.ndarray:
        i = v.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    d = np.abs(ordered(a) - ordered(b))
    return np.where(np.isnan(a) & np.isnan(b), 0, d)


def _operands(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 3.4028235e38, 1.1754944e-38,
                        1e-45, 2.0**126, 2.0**127, 2.0**-126, 2.0**-127, 7.0, 1e-30], np.float32)
    grid_x, grid_y = np.meshgrid(special, special)
    parts_x = [grid_x.ravel(), rng.standard_normal(n // 2).astype(np.float32)]
    parts_y = [grid_y.ravel(), rng.standard_normal(n // 2).astype(np.float32)]
    rest = n - sum(p.size for p in parts_x)
    parts_x.append(rng.integers(0, 2**32, rest, dtype=np.uint64).astype(np.uint32).view(np.float32))
    parts_y.append(rng.integers(0, 2**32, rest, dtype=np.uint64).astype(np.uint32).view(np.float32))
    x, y = np.concatenate(parts_x), np.concatenate(parts_y)
    quiet = np.float32(np.nan)  # random bits include signalling NaNs: make them quiet ones
    return np.where(np.isnan(x), quiet, x), np.where(np.isnan(y), quiet, y)


def test_fp32_division_bounds_against_numpy():
    n, block = 8192, 1024
    x, y = _operands(n)
    q, rn, ieee = (np.zeros(n, np.float32) for _ in range(3))
    # 2.5 ulp: at most 3 representable values from the rounded quotient (a relative 3.6e-7, or
    # 3 * 2^-149 for a subnormal quotient)
    run_both(divide_kernel, (n // block,), x_ptr=x, y_ptr=y, q_ptr=q, rn_ptr=rn, ieee_ptr=ieee, N=block,
             rtol=3.6e-7, atol=3 * 2.0**-149)
    with np.errstate(all="ignore"):
        exact = x / y  # NumPy's fp32 division is IEEE
    assert _ulps(q, exact).max() <= 3  # fast::divide's 2.5 ulp
    ay = np.abs(y)
    outside = ~((ay >= 2.0**-126) & (ay <= 2.0**126))
    np.testing.assert_array_equal(q[outside & ~np.isnan(exact)], exact[outside & ~np.isnan(exact)])
    np.testing.assert_array_equal(rn.view(np.uint32)[~np.isnan(exact)], exact.view(np.uint32)[~np.isnan(exact)])
    np.testing.assert_array_equal(ieee.view(np.uint32)[~np.isnan(exact)], exact.view(np.uint32)[~np.isnan(exact)])
    assert np.array_equal(np.isnan(q), np.isnan(exact)) and np.array_equal(np.isnan(rn), np.isnan(exact))
    # signs of zero quotients and infinities are exact
    zero_or_inf = (exact == 0) | np.isinf(exact)
    np.testing.assert_array_equal(np.signbit(q[zero_or_inf]), np.signbit(exact[zero_or_inf]))
    np.testing.assert_array_equal(q[zero_or_inf], exact[zero_or_inf])


def test_division_lowering():
    x = np.ones(1024, np.float32)
    compiled = divide_kernel.warmup(x, x, x, x, x, N=1024, grid=(1,))
    assert "arith.divf" in compiled.asm["ir"] and "tt.precise_divf" in compiled.asm["ir"]
    msl = compiled.asm["msl"]
    assert msl.count("km_div_fast(") >= 2 and "fast::divide(x, y)" in msl  # helper definition + use


@triton.jit
def half_divide(x_ptr, y_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs) / tl.load(y_ptr + offs))


def test_half_and_bfloat_division_round_to_their_precision():
    rng = np.random.default_rng(5)
    x = rng.uniform(-4, 4, 256).astype(np.float16)
    y = rng.uniform(0.5, 4, 256).astype(np.float16)
    out = np.zeros(256, np.float16)
    run_both(half_divide, (1,), x_ptr=x, y_ptr=y, o_ptr=out, N=256)
    np.testing.assert_array_equal(out, (x.astype(np.float32) / y.astype(np.float32)).astype(np.float16))
