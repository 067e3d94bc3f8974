"""Casts (rounding, truncation, bitcast, bf16) and math functions in the interpreter."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import triton_metal.language as tl
from triton_metal.errors import CompilationError

N = 16


def cast_kernel(dst: Any, rounding: str | None = None, bitcast: bool = False) -> Any:
    # The kernel reads the options as constexprs so that it compiles as well as it interprets.
    ROUNDING = tl.constexpr(rounding)  # noqa: N806
    BITCAST = tl.constexpr(bitcast)  # noqa: N806

    def kernel(x_ptr, o_ptr, N: tl.constexpr):  # noqa: ANN001, ANN202, N803
        offs = tl.arange(0, N)
        x = tl.load(x_ptr + offs)
        if BITCAST:
            y = x.to(dst, bitcast=True)
        else:
            y = x.to(dst, fp_downcast_rounding=ROUNDING)
        tl.store(o_ptr + offs, y)

    return kernel


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """Reference bf16 rounding (nearest even) computed with Python integers."""
    out = []
    for v in np.asarray(values, np.float32).view(np.uint32):
        v = int(v)
        lower = v & 0xFFFF
        upper = v >> 16
        if lower > 0x8000 or (lower == 0x8000 and upper & 1):
            upper += 1
        out.append(upper & 0xFFFF)
    return np.array(out, np.uint16)


def test_float_to_int_truncates_toward_zero(run: Any) -> None:
    x = np.array([2.7, -2.7, 0.5, -0.5, 100.9, -100.9, 3.0, -3.0] * 2, np.float32)
    out = np.zeros(N, np.int32)
    run(cast_kernel(tl.int32), x_ptr=x, o_ptr=out, N=N)
    assert list(out[:8]) == [2, -2, 0, 0, 100, -100, 3, -3]
    u8 = np.zeros(N, np.uint8)
    run(cast_kernel(tl.uint8), x_ptr=np.abs(x), o_ptr=u8, N=N)
    assert list(u8[:8]) == [2, 2, 0, 0, 100, 100, 3, 3]


def test_int_conversions(run: Any) -> None:
    x = np.array([-1, 300, -129, 127] * 4, np.int32)
    i8 = np.zeros(N, np.int8)
    u16 = np.zeros(N, np.uint16)
    i64 = np.zeros(N, np.int64)
    b = np.zeros(N, np.bool_)
    run(cast_kernel(tl.int8), x_ptr=x, o_ptr=i8, N=N)
    run(cast_kernel(tl.uint16), x_ptr=x, o_ptr=u16, N=N)
    run(cast_kernel(tl.int64), x_ptr=x, o_ptr=i64, N=N)
    run(cast_kernel(tl.int1), x_ptr=x, o_ptr=b, N=N)
    assert list(i8[:4]) == [-1, 44, 127, 127]
    assert list(u16[:4]) == [65535, 300, 65407, 127]
    assert list(i64[:4]) == [-1, 300, -129, 127]
    assert list(b[:4]) == [True, True, True, True]
    u = np.array([0xFFFFFFFF, 1, 0, 7] * 4, np.uint32)
    wide = np.zeros(N, np.int64)
    run(cast_kernel(tl.int64), x_ptr=u, o_ptr=wide, N=N)
    assert list(wide[:4]) == [0xFFFFFFFF, 1, 0, 7]  # unsigned sources zero-extend


def test_fp32_to_fp16_rounding_modes(run: Any) -> None:
    one_ulp = 2.0**-10
    x = np.array([1 + one_ulp / 2, 1 + 1.5 * one_ulp, 1 + 0.75 * one_ulp, -(1 + 0.75 * one_ulp),
                  70000.0, -70000.0, 1e-8, 3.0] * 2, np.float32)
    rne = np.zeros(N, np.float16)
    rtz = np.zeros(N, np.float16)
    run(cast_kernel(tl.float16), x_ptr=x, o_ptr=rne, N=N)
    run(cast_kernel(tl.float16, "rtz"), x_ptr=x, o_ptr=rtz, N=N)
    assert list(rne[:8].astype(np.float64)) == [1.0, 1 + 2 * one_ulp, 1 + one_ulp, -(1 + one_ulp),
                                                math.inf, -math.inf, 0.0, 3.0]
    assert list(rtz[:8].astype(np.float64)) == [1.0, 1 + one_ulp, 1.0, -1.0, 65504.0, -65504.0, 0.0, 3.0]


def test_fp32_to_bf16_matches_integer_reference(run: Any) -> None:
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(N) * 100).astype(np.float32)
    x[0] = 1 + 2.0**-8  # exactly half an ulp: ties to even (down)
    x[1] = 1 + 3 * 2.0**-8  # tie: rounds up to the even neighbour
    out = np.zeros(N, np.float32)

    def kernel(x_ptr, o_ptr, N: tl.constexpr):  # noqa: ANN001, ANN202, N803
        offs = tl.arange(0, N)
        tl.store(o_ptr + offs, tl.load(x_ptr + offs).to(tl.bfloat16).to(tl.float32))

    run(kernel, x_ptr=x, o_ptr=out, N=N)
    ref = (bf16_bits(x).astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(out, ref)
    assert out[0] == 1.0 and out[1] == 1 + 2.0**-6


def test_bf16_arithmetic_rounds_every_result(run: Any) -> None:
    x = np.full(N, 1.0, np.float32)
    y = np.full(N, 2.0**-9, np.float32)
    out = np.zeros(N, np.float32)

    def kernel(x_ptr, y_ptr, o_ptr, N: tl.constexpr):  # noqa: ANN001, ANN202, N803
        offs = tl.arange(0, N)
        a = tl.load(x_ptr + offs).to(tl.bfloat16)
        b = tl.load(y_ptr + offs).to(tl.bfloat16)
        s = a + b  # 1 + 2^-9 is below half an ulp of bf16: the sum rounds back to 1
        tl.store(o_ptr + offs, (s + b + b + b).to(tl.float32))

    run(kernel, x_ptr=x, y_ptr=y, o_ptr=out, N=N)
    assert np.all(out == 1.0)


def test_bitcasts(run: Any) -> None:
    f = np.array([1.0, -2.0, 0.0, 0.5] * 4, np.float32)
    bits = np.zeros(N, np.int32)
    run(cast_kernel(tl.int32, bitcast=True), x_ptr=f, o_ptr=bits, N=N)
    assert [int(v) & 0xFFFFFFFF for v in bits[:4]] == [0x3F800000, 0xC0000000, 0, 0x3F000000]
    back = np.zeros(N, np.float32)
    run(cast_kernel(tl.float32, bitcast=True), x_ptr=bits, o_ptr=back, N=N)
    np.testing.assert_array_equal(back, f)
    h = np.zeros(N, np.int16)

    def kernel(x_ptr, o_ptr, N: tl.constexpr):  # noqa: ANN001, ANN202, N803
        offs = tl.arange(0, N)
        tl.store(o_ptr + offs, tl.load(x_ptr + offs).to(tl.bfloat16).to(tl.int16, bitcast=True))

    run(kernel, x_ptr=f, o_ptr=h, N=N)
    assert [int(v) & 0xFFFF for v in h[:4]] == [0x3F80, 0xC000, 0, 0x3F00]


def test_int_to_float(run: Any) -> None:
    x = np.array([-3, 16777217, 2**31 - 1, 0] * 4, np.int32)
    out = np.zeros(N, np.float32)
    run(cast_kernel(tl.float32), x_ptr=x, o_ptr=out, N=N)
    np.testing.assert_array_equal(out, x.astype(np.float32))
    u = np.array([0xFFFFFFFF, 1, 0, 2] * 4, np.uint32)
    run(cast_kernel(tl.float32), x_ptr=u, o_ptr=out, N=N)
    assert out[0] == np.float32(4294967295.0)


MATH = [
    ("exp", np.exp), ("exp2", np.exp2), ("log", np.log), ("log2", np.log2), ("sin", np.sin),
    ("cos", np.cos), ("sqrt", np.sqrt), ("rsqrt", lambda v: 1 / np.sqrt(v)), ("floor", np.floor),
    ("ceil", np.ceil), ("abs", np.abs), ("erf", np.vectorize(math.erf)), ("sqrt_rn", np.sqrt),
    ("sigmoid", lambda v: 1 / (1 + np.exp(-v))),
]


@pytest.mark.parametrize(("name", "ref"), MATH, ids=[m[0] for m in MATH])
def test_math_fp32(run: Any, name: str, ref: Any) -> None:
    x = np.linspace(0.1, 4.0, N).astype(np.float32)
    if name in ("floor", "ceil", "abs", "sin", "cos", "erf", "sigmoid"):
        x = x - 2.0
    out = np.zeros(N, np.float32)
    fn = getattr(tl, name)

    def kernel(x_ptr, o_ptr, N: tl.constexpr):  # noqa: ANN001, ANN202, N803
        offs = tl.arange(0, N)
        tl.store(o_ptr + offs, fn(tl.load(x_ptr + offs)))

    run(kernel, x_ptr=x, o_ptr=out, N=N)
    np.testing.assert_allclose(out, ref(x.astype(np.float64)), rtol=2e-6, atol=1e-7)


def test_math_as_tensor_methods_and_tl_math(run: Any) -> None:
    x = np.linspace(0.5, 2.0, N).astype(np.float32)
    out = np.zeros(N, np.float32)

    def kernel(x_ptr, o_ptr, N: tl.constexpr):  # noqa: ANN001, ANN202, N803
        offs = tl.arange(0, N)
        v = tl.load(x_ptr + offs)
        tl.store(o_ptr + offs, v.exp() + tl.math.exp2(v) + v.log2() + tl.math.fdiv(v, 2.0))

    run(kernel, x_ptr=x, o_ptr=out, N=N)
    np.testing.assert_allclose(out, np.exp(x) + np.exp2(x) + np.log2(x) + x / 2, rtol=2e-6)


@pytest.mark.parametrize("member", [False, True])
def test_fp16_math_is_refused_in_tritons_words(run: Any, member: bool) -> None:
    """tl.exp (exp2, log, log2, cos, sin, sqrt, rsqrt alike) takes fp32 and fp64 only, as
    Triton's `_check_dtype` lists say; its member form too (Triton's
    test_math_member_fn_rejects_fp16)."""
    x = np.linspace(0.1, 2.0, N).astype(np.float16)
    out = np.zeros(N, np.float16)

    def kernel(x_ptr, o_ptr, N: tl.constexpr, MEMBER: tl.constexpr):  # noqa: ANN001, ANN202, N803
        offs = tl.arange(0, N)
        v = tl.load(x_ptr + offs)
        tl.store(o_ptr + offs, v.exp() if MEMBER else tl.exp(v))

    with pytest.raises(CompilationError, match=r"Expected dtype \['fp32', 'fp64'\] but got fp16"):
        run(kernel, x_ptr=x, o_ptr=out, N=N, MEMBER=member)
    assert not out.any()
