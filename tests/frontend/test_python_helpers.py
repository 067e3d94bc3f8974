"""Plain Python helpers called from a kernel run as Python at compile time, as the interpreter
runs them: on constexprs they compute values, on tensors they build IR through the kernel's
semantic. Compiled and interpreted launches give the same answer."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError
from triton_metal.runtime.dependencies import cache_key

sys.path.insert(0, str(Path(__file__).resolve().parent))
import python_helpers_mod as helpers  # noqa: E402


def scaled_sigmoid(x, k):  # noqa: ANN001, ANN201
    return tl.sigmoid(x) * k


def bad_helper(x):  # noqa: ANN001, ANN201
    return x.no_such_method()


@triton.jit
def helper_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    NB: tl.constexpr = helpers.blocks(BLOCK, 32)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = helpers.affine(x, 2) + scaled_sigmoid(x, 3.0) + NB + triton.next_power_of_2(3)
    tl.store(y_ptr + offs, y, mask=mask)


@triton.jit
def bad_kernel(x_ptr, n):
    x = tl.load(x_ptr)
    tl.store(x_ptr, bad_helper(x))


@pytest.fixture(params=["compiled", "interpret"])
def backend(request, monkeypatch):
    monkeypatch.delenv("TRITON_METAL_BACKEND", raising=False)
    if request.param == "interpret":
        monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    else:
        monkeypatch.setenv("TRITON_METAL_BACKEND", "emulator")
        monkeypatch.delenv("TRITON_METAL_INTERPRET", raising=False)
    return request.param


def test_python_helpers_compute_like_the_interpreter(backend):
    x = np.linspace(-3, 3, 50).astype(np.float32)
    y = np.zeros(50, np.float32)
    helper_kernel[(1,)](x, y, 50, BLOCK=64)
    expected = x * 2 + 1 + 3.0 / (1 + np.exp(-x)) + 2 + 4
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)


def kinds(x, n, m=None, *, scale):  # noqa: ANN001, ANN201
    # what the helper is given, told apart in the value it returns
    code = (1 if type(n) is int else 2) + (10 if type(m) is int else 20)
    code += 100 if type(scale) is float else 200
    return x + code


def tagged(n):  # noqa: ANN001, ANN201
    return n + 1


@triton.jit
def kinds_kernel(y_ptr, N: tl.constexpr, S: tl.constexpr):
    K: tl.constexpr = tagged(N)  # a Python scalar result: a compile-time value
    tl.store(y_ptr + tl.arange(0, K), kinds(tl.zeros([K], tl.float32), N, m=N, scale=S))


def test_a_helper_gets_compile_time_values_as_python_values_positional_and_keyword(backend):
    # every backend passes a helper the same values: the kernel's compile-time parameters as
    # Python values whether given by position or by keyword (111: int, int, float)
    y = np.zeros(4, np.float32)
    kinds_kernel[(1,)](y, N=3, S=0.5)
    np.testing.assert_array_equal(y, np.array([111, 111, 111, 111], np.float32))


def test_a_failing_helper_is_reported_at_the_call(monkeypatch):
    monkeypatch.setenv("TRITON_METAL_BACKEND", "emulator")
    monkeypatch.delenv("TRITON_METAL_INTERPRET", raising=False)
    with pytest.raises(CompilationError, match="the Python function 'bad_helper'.*raised"):
        bad_kernel[(1,)](np.zeros(1, np.float32), 1)


def test_editing_a_helper_changes_the_kernel_cache_key(monkeypatch):
    before = cache_key(helper_kernel)

    def scaled_sigmoid(x, k):  # noqa: ANN001, ANN202 - same name, different body
        return tl.sigmoid(x) * k * 2

    monkeypatch.setitem(helper_kernel.__globals__, "scaled_sigmoid", scaled_sigmoid)
    assert cache_key(helper_kernel) != before
