"""Integer division and remainder never trap, and give one answer on every backend: C's
truncating rule, with x / 0 == 0, x % 0 == 0, MIN / -1 == MAX and MIN % -1 == 0
(docs/language.md)."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from conftest import BACKENDS, on_backend


@triton.jit
def _divrem(a, b, q, r, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(a + i)
    y = tl.load(b + i)
    tl.store(q + i, x // y)
    tl.store(r + i, x % y)


@triton.jit
def _divrem_scalar(x, y, q, r):
    tl.store(q, x // y)
    tl.store(r, x % y)


def _expected(x: int, y: int, bits: int) -> tuple[int, int]:
    """The documented rule, from Python integers (an independent reference)."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if y == 0:
        return 0, 0
    q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
    return min(max(q, lo), hi), (0 if y == -1 else x - q * y)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", [np.int8, np.int16, np.int32, np.int64])
def test_tensor_operands(backend: str, dt: type) -> None:
    info = np.iinfo(dt)
    a = np.array([info.min, info.min, 7, -7, 5, info.min, 0, 3, info.max, -9, 9, info.max, 1, -1, 8, info.min], dt)
    b = np.array([-1, 0, 0, 2, -1, 1, -1, -2, -1, 4, -4, 0, info.min, info.min, 3, 2], dt)
    q, r = np.full(16, 99, dt), np.full(16, 99, dt)
    with on_backend(backend):
        _divrem[(1,)](a, b, q, r, N=16)
    bits = np.dtype(dt).itemsize * 8
    want = [_expected(int(x), int(y), bits) for x, y in zip(a, b)]
    assert q.tolist() == [w[0] for w in want]
    assert r.tolist() == [w[1] for w in want]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("x,y", [(-(2**31), -1), (-(2**63), -1), (5, 0), (-(2**31), 0)])
def test_scalar_operands(backend: str, x: int, y: int) -> None:
    dt = np.int64 if x < -(2**31) else np.int32
    q, r = np.full(1, 99, dt), np.full(1, 99, dt)
    with on_backend(backend):
        _divrem_scalar[(1,)](dt(x), dt(y), q, r)
    assert (int(q[0]), int(r[0])) == _expected(x, y, np.dtype(dt).itemsize * 8)
