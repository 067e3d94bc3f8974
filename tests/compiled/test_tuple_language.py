"""Tuples in kernels as Triton's language has them, on both backends (`each_backend`) against
NumPy: list comprehensions and generator expressions over tuples (unrolled at compile time),
`tl.constexpr` elements of tuple arguments staying compile-time (`x.type ==
tl.constexpr_type(v)`, `tl.static_assert` on them), names declared `name: tl.constexpr`
before a tuple is unpacked into them, named tuples (arguments, made in a kernel, their fields)
and `f(*values)` of a tuple. The refusals are the same on both backends."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError


@triton.jit
def _plus_index(values, base):
    return tl.tuple([v + base * i for i, v in zip_index(values)])


@triton.constexpr_function
def zip_index(values):
    return tuple(enumerate(values))


@triton.jit
def comprehended(out, ptrs, scales: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    loaded = [tl.load(p + offs) for p in ptrs]  # tensors, one per pointer
    scaled = tuple(x * s for x, s in zip_pairs(loaded, scales) if s != 0)  # a constant filter
    shifted = _plus_index(scaled, 100.0)
    total = shifted[0]
    for i in tl.static_range(1, len(shifted)):
        total += shifted[i]
    tl.static_assert([k * k for k in range(4)][3] == 9)  # compile-time items stay compile-time
    squares = [k * k for k in range(4)]  # assigned, its numbers become scalars, as in Triton
    tl.store(out + offs, total + squares[2] * len(squares))


@triton.constexpr_function
def zip_pairs(a, b):
    return tuple(zip(a, b))


def test_comprehensions_over_tuples_unroll(each_backend):
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal(16).astype(np.float32) for _ in range(3)]
    out = np.zeros(16, np.float32)
    scales = (2.0, 0, -3.0)  # the middle element is filtered out at compile time
    comprehended[(1,)](out, tuple(xs), scales, 16)
    kept = [x.astype(np.float64) * s for x, s in zip(xs, scales) if s != 0]
    expected = sum(k + 100.0 * i for i, k in enumerate(kept)) + 4 * 4
    np.testing.assert_allclose(out, expected, rtol=1e-6)


@triton.jit
def comprehension_over_tensor(out, N: tl.constexpr):
    x = tl.arange(0, N)
    ys = [v for v in x]
    tl.store(out + tl.arange(0, N), ys[0])


@triton.jit
def filtered_by_tensor(out, N: tl.constexpr):
    n = tl.load(out)
    ys = [k for k in (1, 2, 3) if k < n]
    tl.store(out, len(ys))


@triton.jit
def set_comprehension(out, N: tl.constexpr):
    ys = {v for v in (1, 2)}
    tl.store(out, len(ys))


@triton.jit
def constexpr_members(out, values, nested):
    tl.static_assert(values[1].type == tl.constexpr_type(3))
    tl.static_assert(isinstance(nested[1][0].type, tl.constexpr_type))
    tl.static_assert(nested[1][0] == 2)
    tl.static_assert(nested[0] is None)
    for _ in range(1):  # a new scope: the constexpr elements stay compile-time in it
        tl.static_assert(values[1] + nested[1][0] == 5)
    tl.store(out, tl.load(values[0]) + values[1] * nested[1][0])


def test_constexpr_members_of_tuple_arguments(each_backend):
    x = np.array([8], np.int32)
    out = np.zeros(1, np.int32)
    constexpr_members[(1,)](out, (x, tl.constexpr(3)), (None, (tl.constexpr(2),)))
    assert out[0] == 8 + 3 * 2


@triton.jit
def unpack_declared(out, shape: tl.constexpr):
    d0: tl.constexpr
    d1: tl.constexpr
    d0, d1 = shape
    x = tl.full((d0, d1), d0 * 10 + d1, dtype=tl.int32)
    tl.store(out + tl.arange(0, d0 * d1), tl.reshape(x, (d0 * d1,)))


def test_names_declared_constexpr_stay_compile_time(each_backend):
    out = np.zeros(8, np.int32)
    unpack_declared[(1,)](out, (2, 4))
    np.testing.assert_array_equal(out, np.full(8, 24, np.int32))


@triton.jit
def declared_gets_tensor(out, n):
    d: tl.constexpr
    d = n
    tl.store(out, d)


def test_a_declared_constexpr_refuses_a_run_time_value():
    out = np.zeros(1, np.int32)
    with pytest.raises(CompilationError, match="'d' is annotated tl.constexpr but its value is only known at run time"):
        declared_gets_tensor[(1,)](out, 5)
    assert not out.any()


class Strided(NamedTuple):
    ptr: Any
    stride: tuple
    scale: tl.constexpr


class Closure(NamedTuple):
    fn: tl.constexpr
    captured: tuple


@triton.jit
def _axpy(x, a, b):
    return a * x + b


@triton.jit
def _rows(t, N: tl.constexpr):
    return t.ptr + tl.arange(0, N) * t.stride[0]


@triton.jit
def _restrided(t):
    return Strided(ptr=t.ptr, stride=t.stride, scale=t.scale * 2)  # a named tuple made in a kernel


@triton.jit
def named_tuples(src, dst, op, N: tl.constexpr):
    x = tl.load(_rows(src, N))
    tl.static_assert(_restrided(src).scale == 2 * src.scale)  # a tl.constexpr element stays one
    doubled = _restrided(src)  # assigned: its numbers become scalars, as in Triton
    y = op.fn(x * doubled.scale, *op.captured)  # `*` spreads a tuple into the call
    tl.store(_rows(dst, N), y)


def test_named_tuple_arguments_and_values(each_backend):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(32).astype(np.float32)
    out = np.zeros(16, np.float32)
    named_tuples[(1,)](Strided(x, (2,), tl.constexpr(3)), Strided(out, (1,), 1), Closure(_axpy, (1.5, -0.25)), 16)
    expected = 1.5 * (x[::2].astype(np.float64) * 6) - 0.25
    np.testing.assert_allclose(out, expected, rtol=1e-6)


@triton.jit
def spread_tensor(out, N: tl.constexpr):
    tl.store(*tl.arange(0, N))


@triton.jit
def starred_target(out, N: tl.constexpr):
    first, *rest = (out, 1)
    tl.store(first, 1)


@pytest.mark.parametrize("kernel, reason", [
    (comprehension_over_tensor, "a comprehension in a kernel cannot iterate over a tensor"),
    (filtered_by_tensor, "a comprehension's 'if' must be a compile-time condition, got a tensor"),
    (set_comprehension, "set and dict comprehensions are not supported in kernels"),
    (spread_tensor, "'\\*' in a call needs a tuple, got a tensor"),
    (starred_target, "starred assignment targets are not supported in kernels"),
])
def test_refusals_are_the_same_on_both_backends(each_backend, kernel, reason):
    out = np.zeros(4, np.int32)
    with pytest.raises(CompilationError, match=reason):
        kernel[(1,)](out, 4)
    assert not out.any()
