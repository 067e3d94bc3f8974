"""The interpreter behind the public API: `@triton_metal.jit` and `kernel[grid](...)`."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal
import triton_metal.language as tl
from triton_metal.errors import InterpreterError


@triton_metal.jit
def _scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):  # noqa: ANN001, ANN202, N803
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


@triton_metal.jit
def _oob_kernel(x_ptr, BLOCK: tl.constexpr):  # noqa: ANN001, ANN202, N803
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 1.0)  # error: no mask


@pytest.fixture(autouse=True)
def _interpret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")


def test_jit_launch_with_numpy_and_mlx() -> None:
    x = np.arange(100, dtype=np.float32)
    out = np.zeros_like(x)
    _scale_kernel[(triton_metal.cdiv(100, 32),)](x, out, 100, 2.5, BLOCK=32)
    np.testing.assert_array_equal(out, x * 2.5)
    mx = pytest.importorskip("mlx.core", reason="MLX is needed for MLX array arguments")
    xm = mx.array(x)
    om = mx.zeros_like(xm)
    _scale_kernel[lambda meta: (triton_metal.cdiv(100, meta["BLOCK"]),)](xm, om, 100, 0.5, BLOCK=64)
    np.testing.assert_array_equal(np.array(om), x * 0.5)


def test_jit_launch_reports_out_of_bounds() -> None:
    x = np.zeros(10, np.float32)
    with pytest.raises(InterpreterError, match=r"'_oob_kernel': out-of-bounds access to 'x_ptr' at index 10 .*\n.*# error"):
        _oob_kernel[(1,)](x, BLOCK=16)
