"""Reductions, scans and dot in the interpreter against NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import triton_metal
import triton_metal.language as tl
from triton_metal.errors import CompilationError
from triton_metal.language import JITCallable

M, K = 8, 16


@triton_metal.jit
def load2d(ptr):  # noqa: ANN001, ANN201
    r = tl.arange(0, 8)
    c = tl.arange(0, 16)
    return tl.load(ptr + r[:, None] * 16 + c[None, :])


@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("keep_dims", [False, True])
@pytest.mark.parametrize("name", ["sum", "max", "min"])
def test_float_reductions(run: Any, axis: Any, keep_dims: bool, name: str) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((M, K)).astype(np.float32)
    ref = getattr(np, name)(x, axis=axis, keepdims=keep_dims)
    out = np.zeros(np.asarray(ref).shape, np.float32)
    fn = getattr(tl, name)
    AXIS = tl.constexpr(axis)  # noqa: N806
    KEEP_DIMS = tl.constexpr(keep_dims)  # noqa: N806

    def kernel(x_ptr, o_ptr):  # noqa: ANN001, ANN202
        r = fn(load2d(x_ptr), axis=AXIS, keep_dims=KEEP_DIMS)
        if AXIS == 0:
            idx = tl.arange(0, 16)
            idx = idx[None, :] if KEEP_DIMS else idx
        elif AXIS == 1:
            idx = tl.arange(0, 8)
            idx = idx[:, None] if KEEP_DIMS else idx
        else:
            idx = tl.zeros((1, 1), tl.int32) if KEEP_DIMS else 0
        tl.store(o_ptr + idx, r)

    run(kernel, x_ptr=x, o_ptr=out)
    np.testing.assert_allclose(out, ref, rtol=1e-5)


def test_reduction_result_dtypes(run: Any) -> None:
    out = np.zeros(1, np.int32)

    def kernel(o_ptr):  # noqa: ANN001, ANN202
        i8 = tl.full((16,), 100, tl.int8)
        tl.static_assert(tl.sum(i8).dtype == tl.int32)
        tl.static_assert(tl.sum(i8.to(tl.uint8)).dtype == tl.uint32)
        tl.static_assert(tl.sum(i8, dtype=tl.int64).dtype == tl.int64)
        tl.static_assert(tl.max(i8).dtype == tl.int32)
        tl.static_assert(tl.sum(i8.to(tl.float16)).dtype == tl.float16)
        tl.static_assert(tl.sum(i8.to(tl.bfloat16)).dtype == tl.float32)
        tl.static_assert(tl.max(i8.to(tl.float16)).dtype == tl.float32)
        tl.static_assert(tl.cumsum(i8, 0).dtype == tl.int32)
        tl.device_assert(tl.sum(i8) == 1600, "small ints sum without overflow")
        tl.store(o_ptr, tl.sum(i8))

    run(kernel, o_ptr=out)
    assert out.tolist() == [1600]


def test_argmax_argmin_break_ties_to_the_left(run: Any) -> None:
    x = np.array([1, 3, 3, 2, 0, 0, 3, 1] * 2, np.float32)
    out = np.zeros(4, np.int32)

    def kernel(x_ptr, o_ptr):  # noqa: ANN001, ANN202
        v = tl.load(x_ptr + tl.arange(0, 16))
        tl.store(o_ptr, tl.argmax(v, 0))
        tl.store(o_ptr + 1, tl.argmin(v, 0))
        m, i = tl.max(v, 0, return_indices=True)
        tl.store(o_ptr + 2, i + m.to(tl.int32) * 100)
        tl.store(o_ptr + 3, v.argmax(0, tie_break_left=True))

    run(kernel, x_ptr=x, o_ptr=out)
    assert out.tolist() == [1, 4, 301, 1]


def test_argmax_2d_and_nan(run: Any) -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((M, K)).astype(np.float32)
    x[2, 5] = np.nan
    out0 = np.zeros(K, np.int32)
    out1 = np.zeros(M, np.int32)

    def kernel(x_ptr, a_ptr, b_ptr):  # noqa: ANN001, ANN202
        v = load2d(x_ptr)
        tl.store(a_ptr + tl.arange(0, 16), tl.argmax(v, 0))
        tl.store(b_ptr + tl.arange(0, 8), tl.argmin(v, 1))

    run(kernel, x_ptr=x, a_ptr=out0, b_ptr=out1)
    # Triton's interpreter reduces with nanargmax/nanargmin: the NaN is skipped
    np.testing.assert_array_equal(out0, np.nanargmax(x, 0))
    np.testing.assert_array_equal(out1, np.nanargmin(x, 1))


@JITCallable
def _mul_combine(a, b):  # noqa: ANN001, ANN202
    return a * b


@JITCallable
def _max_and_count(v1, c1, v2, c2):  # noqa: ANN001, ANN202
    bigger = v1 > v2
    same = v1 == v2
    return tl.where(bigger | same, v1, v2), tl.where(same, c1 + c2, tl.where(bigger, c1, c2))


def test_reduce_with_custom_and_tuple_combine(run: Any) -> None:
    x = np.array([1, 2, 3, 1, 1, 2, 1, 1] * 2, np.int32)
    out = np.zeros(3, np.int32)

    def kernel(x_ptr, o_ptr):  # noqa: ANN001, ANN202
        v = tl.load(x_ptr + tl.arange(0, 16))
        tl.store(o_ptr, tl.reduce(v, 0, _mul_combine))
        m, c = tl.reduce((v, tl.full((16,), 1, tl.int32)), 0, _max_and_count)
        tl.store(o_ptr + 1, m)
        tl.store(o_ptr + 2, c)

    run(kernel, x_ptr=x, o_ptr=out)
    assert out.tolist() == [int(np.prod(x)), 3, 2]


def test_xor_sum_and_reduce_or(run: Any) -> None:
    x = np.array([3, 5, 9, 17, 33, 65, 129, 0], np.int32)
    out = np.zeros(2, np.int32)

    def kernel(x_ptr, o_ptr):  # noqa: ANN001, ANN202
        v = tl.load(x_ptr + tl.arange(0, 8))
        tl.store(o_ptr, tl.xor_sum(v, 0))
        tl.store(o_ptr + 1, tl.reduce_or(v, 0))

    run(kernel, x_ptr=x, o_ptr=out)
    assert out.tolist() == [int(np.bitwise_xor.reduce(x)), int(np.bitwise_or.reduce(x))]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
def test_cumsum_cumprod(run: Any, reverse: bool, axis: int) -> None:
    rng = np.random.default_rng(2)
    x = rng.integers(-3, 4, (M, K)).astype(np.int32)
    s = np.zeros((M, K), np.int32)
    p = np.zeros((M, K), np.int32)
    AXIS = tl.constexpr(axis)  # noqa: N806
    REVERSE = tl.constexpr(reverse)  # noqa: N806

    def kernel(x_ptr, s_ptr, p_ptr):  # noqa: ANN001, ANN202
        r = tl.arange(0, 8)[:, None] * 16 + tl.arange(0, 16)[None, :]
        v = tl.load(x_ptr + r)
        tl.store(s_ptr + r, tl.cumsum(v, AXIS, reverse=REVERSE))
        tl.store(p_ptr + r, v.cumprod(axis=AXIS, reverse=REVERSE))

    run(kernel, x_ptr=x, s_ptr=s, p_ptr=p)
    xs = np.flip(x, axis) if reverse else x
    ref_s, ref_p = np.cumsum(xs, axis), np.cumprod(xs, axis)
    if reverse:
        ref_s, ref_p = np.flip(ref_s, axis), np.flip(ref_p, axis)
    np.testing.assert_array_equal(s, ref_s)
    np.testing.assert_array_equal(p, ref_p.astype(np.int32))


@JITCallable
def _running_max(a, b):  # noqa: ANN001, ANN202
    return tl.maximum(a, b)


def test_associative_scan_custom_and_bool_cumsum(run: Any) -> None:
    x = np.array([3, 1, 4, 1, 5, 9, 2, 6], np.float32)
    out = np.zeros(8, np.float32)
    cnt = np.zeros(8, np.int32)

    def kernel(x_ptr, o_ptr, c_ptr):  # noqa: ANN001, ANN202
        offs = tl.arange(0, 8)
        v = tl.load(x_ptr + offs)
        tl.store(o_ptr + offs, tl.associative_scan(v, 0, _running_max))
        c = tl.cumsum(v > 2.0, 0)
        tl.static_assert(c.dtype == tl.uint32)  # int1 counts as unsigned, as in Triton
        tl.store(c_ptr + offs, c)

    run(kernel, x_ptr=x, o_ptr=out, c_ptr=cnt)
    np.testing.assert_array_equal(out, np.maximum.accumulate(x))
    np.testing.assert_array_equal(cnt, np.cumsum(x > 2))


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16", "int8"])
def test_dot(run: Any, dt: str) -> None:
    rng = np.random.default_rng(9)
    if dt == "int8":
        a = rng.integers(-100, 100, (16, 32)).astype(np.int8)
        b = rng.integers(-100, 100, (32, 16)).astype(np.int8)
        ref = a.astype(np.int64) @ b.astype(np.int64) + 5
        out = np.zeros((16, 16), np.int32)
    else:
        a = rng.standard_normal((16, 32)).astype(np.float32)
        b = rng.standard_normal((32, 16)).astype(np.float32)
        out = np.zeros((16, 16), np.float32)
    cast = {"float32": tl.float32, "float16": tl.float16, "bfloat16": tl.bfloat16, "int8": tl.int8}[dt]
    acc_ty = tl.int32 if dt == "int8" else tl.float32

    def kernel(a_ptr, b_ptr, o_ptr):  # noqa: ANN001, ANN202
        r16 = tl.arange(0, 16)
        r32 = tl.arange(0, 32)
        x = tl.load(a_ptr + r16[:, None] * 32 + r32[None, :]).to(cast)
        y = tl.load(b_ptr + r32[:, None] * 16 + r16[None, :]).to(cast)
        acc = tl.full((16, 16), 5, acc_ty)
        tl.store(o_ptr + r16[:, None] * 16 + r16[None, :], tl.dot(x, y, acc, allow_tf32=False))

    run(kernel, a_ptr=a, b_ptr=b, o_ptr=out)
    if dt == "int8":
        np.testing.assert_array_equal(out, ref)
        return
    if dt == "float16":
        a, b = a.astype(np.float16).astype(np.float64), b.astype(np.float16).astype(np.float64)
    elif dt == "bfloat16":
        a = (a.view(np.uint32) + 0x8000 & 0xFFFF0000).view(np.float32).astype(np.float64)
        b = (b.view(np.uint32) + 0x8000 & 0xFFFF0000).view(np.float32).astype(np.float64)
    np.testing.assert_allclose(out, a @ b + 5, rtol=1e-4, atol=1e-3 if dt == "bfloat16" else 1e-4)


def test_dot_fp16_out_and_batched(run: Any) -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 16, 16)).astype(np.float16)
    b = rng.standard_normal((2, 16, 16)).astype(np.float16)
    out = np.zeros((2, 16, 16), np.float16)

    def kernel(a_ptr, b_ptr, o_ptr):  # noqa: ANN001, ANN202
        r = tl.arange(0, 16)
        bt = tl.arange(0, 2)
        idx = bt[:, None, None] * 256 + r[None, :, None] * 16 + r[None, None, :]
        c = tl.dot(tl.load(a_ptr + idx), tl.load(b_ptr + idx), out_dtype=tl.float16)
        tl.static_assert(c.dtype == tl.float16)
        tl.store(o_ptr + idx, c)

    run(kernel, a_ptr=a, b_ptr=b, o_ptr=out)
    ref = np.matmul(a.astype(np.float32), b.astype(np.float32))
    np.testing.assert_allclose(out.astype(np.float32), ref, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize(
    ("shapes", "match"),
    [(((16, 16), (32, 16)), "do not chain"),
     (((16,), (16,)), "one rank, at least 2"),
     (((2, 16, 16), (2, 2, 16, 16)), "one rank, at least 2"),
     (((2, 4, 16, 16), (4, 2, 16, 16)), r"batch sizes differ: \[2, 4\] and \[4, 2\]")],
)
def test_dot_shape_refusals(run: Any, shapes: Any, match: str) -> None:
    (sa, sb) = shapes

    def kernel(SA: tl.constexpr, SB: tl.constexpr):  # noqa: ANN202
        tl.dot(tl.zeros(SA, tl.float32), tl.zeros(SB, tl.float32))

    with pytest.raises(CompilationError, match=match):
        run(kernel, SA=sa, SB=sb)


def test_dot_dtype_refusals(run: Any) -> None:
    def mixed():  # noqa: ANN202
        tl.dot(tl.zeros((16, 16), tl.float16), tl.zeros((16, 16), tl.float32))

    with pytest.raises(CompilationError, match="one dtype"):
        run(mixed)

    def bf16_out():  # noqa: ANN202
        tl.dot(tl.zeros((16, 16), tl.float16), tl.zeros((16, 16), tl.float16), out_dtype=tl.bfloat16)

    with pytest.raises(CompilationError, match="out_dtype=bfloat16"):
        run(bf16_out)

    def bad_acc():  # noqa: ANN202
        tl.dot(tl.zeros((16, 16), tl.float32), tl.zeros((16, 16), tl.float32), tl.zeros((16, 16), tl.float16))

    with pytest.raises(CompilationError, match="accumulator has type"):
        run(bad_acc)


def test_softmax(run: Any) -> None:
    rng = np.random.default_rng(8)
    x = rng.standard_normal((M, K)).astype(np.float32)
    out = np.zeros((M, K), np.float32)

    def kernel(x_ptr, o_ptr):  # noqa: ANN001, ANN202
        r = tl.arange(0, 8)[:, None] * 16 + tl.arange(0, 16)[None, :]
        tl.store(o_ptr + r, tl.softmax(tl.load(x_ptr + r), dim=1))

    run(kernel, x_ptr=x, o_ptr=out)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5)
