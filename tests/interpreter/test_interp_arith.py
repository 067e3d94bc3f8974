"""Elementwise arithmetic, comparisons, bitwise ops and shifts in the interpreter vs NumPy/Python."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import triton_metal.language as tl

N = 64
INT_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def binary_kernel(op: str) -> Callable[..., None]:
    src = f"""
def kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, x {op} y)
"""
    ns: dict[str, Any] = {"tl": tl}
    exec(compile(src, f"<binary {op}>", "exec"), ns)
    return ns["kernel"]


def ints(dt: str, rng: np.random.Generator, nonzero: bool = False) -> np.ndarray:
    info = np.iinfo(dt)
    a = rng.integers(info.min, info.max, size=N, dtype=dt, endpoint=True)
    if nonzero:
        a[a == 0] = 1
    return a


def wrap(values: list[int], dt: str) -> np.ndarray:
    bits = np.dtype(dt).itemsize * 8
    out = [v & ((1 << bits) - 1) for v in values]
    if np.dtype(dt).kind == "i":
        out = [v - (1 << bits) if v >= 1 << (bits - 1) else v for v in out]
    return np.array(out, dtype=dt)


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


@pytest.mark.parametrize("dt", INT_TYPES)
@pytest.mark.parametrize("op", ["+", "-", "*", "//", "%", "&", "|", "^"])
def test_integer_binary_ops_wrap_and_truncate(run: Any, dt: str, op: str) -> None:
    rng = np.random.default_rng(zlib.crc32(f"{dt}{op}".encode()))
    x = ints(dt, rng)
    y = ints(dt, rng, nonzero=op in ("//", "%"))
    out = np.zeros(N, dtype=dt)
    run(binary_kernel(op), x_ptr=x, y_ptr=y, out_ptr=out, N=N)
    xs, ys = [int(v) for v in x], [int(v) for v in y]
    ref = {
        "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
        "//": c_div, "%": lambda a, b: a - c_div(a, b) * b,
        "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
    }[op]
    np.testing.assert_array_equal(out, wrap([ref(a, b) for a, b in zip(xs, ys)], dt))


def test_c_division_examples(run: Any) -> None:
    x = np.array([7, -7, 7, -7] * 16, dtype=np.int32)
    y = np.array([2, 2, -2, -2] * 16, dtype=np.int32)
    q = np.zeros(N, np.int32)
    r = np.zeros(N, np.int32)

    def kernel(x_ptr, y_ptr, q_ptr, r_ptr, N: tl.constexpr):  # noqa: ANN001, ANN202, N803
        offs = tl.arange(0, N)
        a = tl.load(x_ptr + offs)
        b = tl.load(y_ptr + offs)
        tl.store(q_ptr + offs, a // b)
        tl.store(r_ptr + offs, a % b)

    run(kernel, x_ptr=x, y_ptr=y, q_ptr=q, r_ptr=r, N=N)
    assert list(q[:4]) == [3, -3, -3, 3]
    assert list(r[:4]) == [1, -1, 1, -1]


@pytest.mark.parametrize("dt", ["float16", "float32"])
@pytest.mark.parametrize("op", ["+", "-", "*", "/", "%"])
def test_float_binary_ops(run: Any, dt: str, op: str) -> None:
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(N) * 10).astype(dt)
    y = (rng.standard_normal(N) * 3 + 0.5).astype(dt)
    out_dt = "float32" if op in ("/", "%") and dt == "float16" else dt
    out = np.zeros(N, dtype=out_dt)
    run(binary_kernel(op), x_ptr=x, y_ptr=y, out_ptr=out, N=N)
    xf, yf = x.astype(out_dt), y.astype(out_dt)
    ref = {"+": xf + yf, "-": xf - yf, "*": xf * yf, "/": xf / yf, "%": np.fmod(xf, yf)}[op]
    np.testing.assert_allclose(out, ref, rtol=1e-6 if out_dt == "float32" else 1e-3)
    if op == "%":
        assert np.all((out == 0) | (np.sign(out) == np.sign(xf)))  # sign of the dividend


@pytest.mark.parametrize("op", ["<", "<=", ">", ">=", "==", "!="])
@pytest.mark.parametrize("dt", ["int32", "uint32", "float32", "int8"])
def test_comparisons(run: Any, op: str, dt: str) -> None:
    rng = np.random.default_rng(3)
    if dt.startswith("float"):
        x = rng.integers(-3, 3, N).astype(dt)
        y = rng.integers(-3, 3, N).astype(dt)
        x[0], y[1] = np.nan, np.nan
    else:
        x = ints(dt, rng) % 4
        y = ints(dt, rng) % 4
    out = np.zeros(N, dtype=np.bool_)
    run(binary_kernel(op), x_ptr=x, y_ptr=y, out_ptr=out, N=N)
    ref = {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y, "==": x == y, "!=": x != y}[op]
    np.testing.assert_array_equal(out, ref)


def test_unsigned_comparison_uses_unsigned_order(run: Any) -> None:
    x = np.array([0xFFFFFFFF, 1] * 32, dtype=np.uint32)
    y = np.array([1, 0xFFFFFFFF] * 32, dtype=np.uint32)
    out = np.zeros(N, np.bool_)
    run(binary_kernel(">"), x_ptr=x, y_ptr=y, out_ptr=out, N=N)
    assert list(out[:2]) == [True, False]


@pytest.mark.parametrize("dt", INT_TYPES)
def test_shifts(run: Any, dt: str) -> None:
    rng = np.random.default_rng(11)
    bits = np.dtype(dt).itemsize * 8
    x = ints(dt, rng)
    s = rng.integers(0, bits, N).astype(dt)
    left = np.zeros(N, dt)
    right = np.zeros(N, dt)

    def kernel(x_ptr, s_ptr, l_ptr, r_ptr, N: tl.constexpr):  # noqa: ANN001, ANN202, N803
        offs = tl.arange(0, N)
        a = tl.load(x_ptr + offs)
        b = tl.load(s_ptr + offs)
        tl.store(l_ptr + offs, a << b)
        tl.store(r_ptr + offs, a >> b)

    run(kernel, x_ptr=x, s_ptr=s, l_ptr=left, r_ptr=right, N=N)
    xs, ss = [int(v) for v in x], [int(v) for v in s]
    np.testing.assert_array_equal(left, wrap([a << b for a, b in zip(xs, ss)], dt))
    # Python's >> on ints is arithmetic; unsigned values are non-negative so it is also logical
    np.testing.assert_array_equal(right, wrap([a >> b for a, b in zip(xs, ss)], dt))


def test_unary_ops(run: Any) -> None:
    x = np.array([-5, 0, 7, -128] * 16, dtype=np.int8)
    neg = np.zeros(N, np.int8)
    inv = np.zeros(N, np.int8)
    ab = np.zeros(N, np.int8)

    def kernel(x_ptr, n_ptr, i_ptr, a_ptr, N: tl.constexpr):  # noqa: ANN001, ANN202, N803
        offs = tl.arange(0, N)
        a = tl.load(x_ptr + offs)
        tl.store(n_ptr + offs, -a)
        tl.store(i_ptr + offs, ~a)
        tl.store(a_ptr + offs, tl.abs(a))

    run(kernel, x_ptr=x, n_ptr=neg, i_ptr=inv, a_ptr=ab, N=N)
    assert list(neg[:4]) == [5, 0, -7, -128]  # wraps
    assert list(inv[:4]) == [4, -1, -8, 127]
    assert list(ab[:4]) == [5, 0, 7, -128]


def test_python_scalar_operands_and_int_pow(run: Any) -> None:
    x = np.arange(N, dtype=np.int32) - 10
    out = np.zeros(N, np.int32)
    fout = np.zeros(N, np.float32)

    def kernel(x_ptr, o_ptr, f_ptr, N: tl.constexpr):  # noqa: ANN001, ANN202, N803
        offs = tl.arange(0, N)
        a = tl.load(x_ptr + offs)
        tl.store(o_ptr + offs, 3 * a ** 3 - 7 + a // 4)
        tl.store(f_ptr + offs, a * 0.5 + 1 / (a + 100))

    run(kernel, x_ptr=x, o_ptr=out, f_ptr=fout, N=N)
    xs = [int(v) for v in x]
    np.testing.assert_array_equal(out, [3 * v**3 - 7 + c_div(v, 4) for v in xs])
    np.testing.assert_allclose(fout, x * 0.5 + 1 / (x + 100.0), rtol=1e-6)


def test_float_pow_and_fma_and_umulhi(run: Any) -> None:
    x = np.linspace(0.5, 3, N).astype(np.float32)
    p = np.zeros(N, np.float32)
    f = np.zeros(N, np.float32)
    u = np.array([0xFFFFFFFF, 0x80000000, 12345, 0] * 16, dtype=np.uint32)
    hi = np.zeros(N, np.uint32)

    def kernel(x_ptr, p_ptr, f_ptr, u_ptr, h_ptr, N: tl.constexpr):  # noqa: ANN001, ANN202, N803
        offs = tl.arange(0, N)
        a = tl.load(x_ptr + offs)
        tl.store(p_ptr + offs, a ** 1.5)
        tl.store(f_ptr + offs, tl.fma(a, a, 1.0))
        b = tl.load(u_ptr + offs)
        tl.store(h_ptr + offs, tl.umulhi(b, b))

    run(kernel, x_ptr=x, p_ptr=p, f_ptr=f, u_ptr=u, h_ptr=hi, N=N)
    np.testing.assert_allclose(p, x.astype(np.float64) ** 1.5, rtol=1e-6)
    np.testing.assert_allclose(f, x.astype(np.float64) ** 2 + 1, rtol=1e-6)
    assert [int(v) for v in hi[:4]] == [(v * v) >> 32 for v in (0xFFFFFFFF, 0x80000000, 12345, 0)]


def test_minimum_maximum_nan_propagation_and_clamp(run: Any) -> None:
    x = np.array([1.0, np.nan, 3.0, -2.0] * 16, dtype=np.float32)
    y = np.array([2.0, 1.0, np.nan, -5.0] * 16, dtype=np.float32)
    outs = [np.zeros(N, np.float32) for _ in range(5)]

    def kernel(x_ptr, y_ptr, a, b, c, d, e, N: tl.constexpr):  # noqa: ANN001, ANN202, N803
        offs = tl.arange(0, N)
        u = tl.load(x_ptr + offs)
        v = tl.load(y_ptr + offs)
        tl.store(a + offs, tl.minimum(u, v))
        tl.store(b + offs, tl.maximum(u, v))
        tl.store(c + offs, tl.minimum(u, v, propagate_nan=tl.PropagateNan.ALL))
        tl.store(d + offs, tl.maximum(u, v, tl.PropagateNan.ALL))
        tl.store(e + offs, tl.clamp(u, -1.0, 2.0))

    run(kernel, x_ptr=x, y_ptr=y, a=outs[0], b=outs[1], c=outs[2], d=outs[3], e=outs[4], N=N)
    np.testing.assert_array_equal(outs[0][:4], [1.0, 1.0, 3.0, -5.0])
    np.testing.assert_array_equal(outs[1][:4], [2.0, 1.0, 3.0, -2.0])
    np.testing.assert_array_equal(outs[2][:4], [1.0, np.nan, np.nan, -5.0])
    np.testing.assert_array_equal(outs[3][:4], [2.0, np.nan, np.nan, -2.0])
    # PropagateNan.NONE: max(NaN, -1) is -1, then min(-1, 2) is -1
    np.testing.assert_array_equal(outs[4][:4], [1.0, -1.0, 2.0, -1.0])


def test_integer_min_max_respect_signedness(run: Any) -> None:
    x = np.array([0xFFFFFFFF, 3] * 32, dtype=np.uint32)
    y = np.array([1, 5] * 32, dtype=np.uint32)
    mx = np.zeros(N, np.uint32)
    mn = np.zeros(N, np.int32)

    def kernel(x_ptr, y_ptr, mx_ptr, mn_ptr, N: tl.constexpr):  # noqa: ANN001, ANN202, N803
        offs = tl.arange(0, N)
        a = tl.load(x_ptr + offs)
        b = tl.load(y_ptr + offs)
        tl.store(mx_ptr + offs, tl.maximum(a, b))
        tl.store(mn_ptr + offs, tl.minimum(a.to(tl.int32, bitcast=True), b.to(tl.int32)))

    run(kernel, x_ptr=x, y_ptr=y, mx_ptr=mx, mn_ptr=mn, N=N)
    assert [int(v) for v in mx[:2]] == [0xFFFFFFFF, 5]
    assert [int(v) for v in mn[:2]] == [-1, 3]


def test_where_with_scalars_and_blocks(run: Any) -> None:
    x = np.arange(N, dtype=np.float32) - 32
    out = np.zeros(N, np.float32)

    def kernel(x_ptr, o_ptr, N: tl.constexpr):  # noqa: ANN001, ANN202, N803
        offs = tl.arange(0, N)
        a = tl.load(x_ptr + offs)
        r = tl.where(a > 0, a, 0.0) + tl.where(offs % 2 == 0, 100, a)
        tl.store(o_ptr + offs, r)

    run(kernel, x_ptr=x, o_ptr=out, N=N)
    ref = np.where(x > 0, x, 0) + np.where(np.arange(N) % 2 == 0, 100, x)
    np.testing.assert_array_equal(out, ref)


def test_one_bit_integers_wrap(run: Any) -> None:
    out = np.zeros(4, np.bool_)

    def kernel(o_ptr):  # noqa: ANN001, ANN202
        a = tl.arange(0, 4) % 2 == 1  # F T F T
        b = tl.arange(0, 4) >= 2  # F F T T
        tl.store(o_ptr + tl.arange(0, 4), a + b)  # 1-bit add is xor

    run(kernel, o_ptr=out)
    assert out.tolist() == [False, True, True, False]


def test_full_refuses_a_fractional_integer_value(run: Any) -> None:
    from triton_metal.errors import CompilationError

    def kernel():  # noqa: ANN202
        tl.full((4,), 1.5, tl.int32)

    with pytest.raises(CompilationError, match="is not an integer"):
        run(kernel)
