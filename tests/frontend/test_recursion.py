"""Recursive `@jit` calls that end when the kernel is compiled: each level is a different
specialization (a shape halved, a constexpr counted down), as Triton compiles each specialization
as a function of its own. Run on the emulator and in the interpreter against NumPy; recursions
that would never end, or end too late, are refused the same way on both."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import UnsupportedLanguageConstruct


@triton.jit
def tree_sum(x):
    """The sum of a 1-D block by halves (Triton's `recursive_reduce` in test_frontend.py)."""
    if x.shape[0] == 1:
        return x
    else:
        x0, x1 = x.reshape((x.shape[0] // 2, 2)).split()
        return tree_sum(x0) + tree_sum(x1)


@triton.jit
def powers(x, N: tl.constexpr):
    """x ** (N + 1), one multiplication per level of a constexpr countdown."""
    if N == 0:
        return x
    return powers(x, N - 1) * x


@triton.jit
def recursion_kernel(x_ptr, sum_ptr, pow_ptr, BLOCK: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(sum_ptr + tl.arange(0, 1), tree_sum(x))
    tl.store(pow_ptr + offs, powers(x, N))


@pytest.mark.parametrize("seed", [0, 1])
def test_recursion_ending_at_compile_time(backend: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(-8, 9, size=16).astype(np.float32)  # sums and cubes are exact in float32
    total = np.zeros(1, np.float32)
    cubes = np.zeros(16, np.float32)
    recursion_kernel[(1,)](x, total, cubes, BLOCK=16, N=2)
    assert total[0] == x.astype(np.float64).sum()
    np.testing.assert_array_equal(cubes, x.astype(np.float64) ** 3)


@triton.jit
def run_time_recursion(x, n):
    if n == 0:
        return x
    return run_time_recursion(x + 1, n - 1)


@triton.jit
def run_time_kernel(x_ptr, n):
    tl.store(x_ptr, run_time_recursion(tl.load(x_ptr), n))


@triton.jit
def deep_kernel(x_ptr, N: tl.constexpr):
    tl.store(x_ptr, powers(tl.load(x_ptr), N))


@pytest.mark.parametrize("case", ["run time", "too deep"])
def test_recursion_that_does_not_end_is_refused(backend: str, case: str) -> None:
    x = np.ones(1, np.float32)
    with pytest.raises(UnsupportedLanguageConstruct) as info:
        if case == "run time":
            run_time_kernel[(1,)](x, 3)
        else:
            deep_kernel[(1,)](x, N=100)
    expected = "same argument types and constexpr values" if case == "run time" else "maximum recursion depth exceeded"
    assert expected in info.value.reason
    assert x[0] == 1.0  # nothing ran
