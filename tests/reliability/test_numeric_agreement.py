"""The emulator and the interpreter compute the same values where MSL leaves the answer open:
float -> int of out-of-range values and NaN, signed zeros in minimum/maximum; and both refuse a
float32 view misaligned by one byte."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from conftest import BACKENDS, on_backend
from triton_metal.errors import LaunchError


@triton.jit
def _to_ints(a, o32, o64, u32, o8, u8, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(a + i)
    tl.store(o32 + i, x.to(tl.int32))
    tl.store(o64 + i, x.to(tl.int64))
    tl.store(u32 + i, x.to(tl.uint32))
    tl.store(o8 + i, x.to(tl.int8))
    tl.store(u8 + i, x.to(tl.uint8))


def _saturate(x: float, dt: type) -> int:
    """Truncate, saturate, NaN -> 0 (docs/language.md), from Python floats."""
    info = np.iinfo(dt)
    if x != x:
        return 0
    if x >= float(info.max) + 1:
        return int(info.max)
    if x <= float(info.min):
        return int(info.min)
    return int(x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_float_to_int_saturates(backend: str) -> None:
    x = np.array([np.nan, 1e20, -1e20, 3.7, -3.7, 2.5e9, -2.5e9, 300.0, np.inf, -np.inf,
                  -0.5, 255.9, 2147483520.0, -2147483648.0, 9.3e18, -129.0], np.float32)
    dts = (np.int32, np.int64, np.uint32, np.int8, np.uint8)
    outs = [np.full(16, 7, dt) for dt in dts]
    with on_backend(backend):
        _to_ints[(1,)](x, *outs, N=16)
    for out, dt in zip(outs, dts):
        assert out.tolist() == [_saturate(float(v), dt) for v in x], dt


@triton.jit
def _min_max(a, b, lo, hi, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(a + i)
    y = tl.load(b + i)
    tl.store(lo + i, tl.minimum(x, y))
    tl.store(hi + i, tl.maximum(x, y))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", [np.float32, np.float16])
def test_signed_zeros_in_min_max(backend: str, dt: type) -> None:
    a = np.array([-0.0, 0.0, -0.0, 0.0, 1.0, np.nan, -2.0, 3.0], dt)
    b = np.array([0.0, -0.0, -0.0, 0.0, 1.0, 2.0, 5.0, np.nan], dt)
    lo, hi = np.ones(8, dt), np.ones(8, dt)
    with on_backend(backend):
        _min_max[(1,)](a, b, lo, hi, N=8)
    assert np.signbit(lo[:4]).tolist() == [True, True, True, False]
    assert np.signbit(hi[:4]).tolist() == [False, False, True, False]
    np.testing.assert_array_equal(lo[4:], np.fmin(a[4:], b[4:]))
    np.testing.assert_array_equal(hi[4:], np.fmax(a[4:], b[4:]))


@triton.jit
def _copy(a, o, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(o + i, tl.load(a + i))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("which", ["input", "output"])
def test_misaligned_view_refused(backend: str, which: str) -> None:
    raw = np.zeros(4 * 8 + 1, np.uint8)
    view = raw[1:].view(np.float32)
    other = np.ones(8, np.float32)
    args = (view, other) if which == "input" else (other, view)
    before = raw.copy(), other.copy()
    with on_backend(backend), pytest.raises(LaunchError, match=r"kernel '_copy': argument '(a|o)'.*1 byte"):
        _copy[(1,)](*args, N=8)
    np.testing.assert_array_equal(raw, before[0])
    np.testing.assert_array_equal(other, before[1])
