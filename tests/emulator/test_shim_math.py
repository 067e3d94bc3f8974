"""metal:: math in the shim against NumPy: float, half, vectors, precise::/fast::, integers."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

try:
    from .shim.shim_harness import Library, compile_only, library_fixture
except ImportError:
    from shim.shim_harness import Library, compile_only, library_fixture  # type: ignore[no-redef]

N = 4096  # a multiple of 4, so the float4 variants cover every element
F32, F16 = np.float32, np.float16


lib = library_fixture("math_ops.cpp")


def _uniform(lo: float, hi: float) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.uniform(lo, hi, N).astype(F32)


def _round_half_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


@dataclass(frozen=True)
class Case:
    name: str
    reference: Callable[..., np.ndarray]  # evaluated in float64
    domains: tuple[Callable[[np.random.Generator], np.ndarray], ...]
    ulps: float = 4.0
    atol: float = 0.0


WIDE = _uniform(-20, 20)
UNARY = [
    Case("exp", np.exp, (_uniform(-80, 80),)),
    Case("exp2", np.exp2, (_uniform(-120, 120),)),
    Case("exp10", lambda x: 10.0**x, (_uniform(-30, 30),), ulps=8),
    Case("log", np.log, (_uniform(1e-6, 1e6),)),
    Case("log2", np.log2, (_uniform(1e-6, 1e6),)),
    Case("log10", np.log10, (_uniform(1e-6, 1e6),)),
    Case("sin", np.sin, (WIDE,), atol=1e-7),
    Case("cos", np.cos, (WIDE,), atol=1e-7),
    Case("tan", np.tan, (_uniform(-1.5, 1.5),)),
    Case("asin", np.arcsin, (_uniform(-1, 1),)),
    Case("acos", np.arccos, (_uniform(-1, 1),)),
    Case("atan", np.arctan, (WIDE,)),
    Case("sinh", np.sinh, (_uniform(-10, 10),)),
    Case("cosh", np.cosh, (_uniform(-10, 10),)),
    Case("tanh", np.tanh, (_uniform(-10, 10),)),
    Case("asinh", np.arcsinh, (WIDE,)),
    Case("acosh", np.arccosh, (_uniform(1, 100),)),
    Case("atanh", np.arctanh, (_uniform(-0.99, 0.99),)),
    Case("sinpi", lambda x: np.sin(np.pi * x), (_uniform(-100, 100),), atol=1e-6),
    Case("cospi", lambda x: np.cos(np.pi * x), (_uniform(-100, 100),), atol=1e-6),
    Case("sqrt", np.sqrt, (_uniform(0, 1e6),), ulps=0.5),
    Case("rsqrt", lambda x: 1 / np.sqrt(x), (_uniform(1e-6, 1e6),), ulps=2),
    Case("fabs", np.abs, (WIDE,), ulps=0),
    Case("abs", np.abs, (WIDE,), ulps=0),
    Case("floor", np.floor, (WIDE,), ulps=0),
    Case("ceil", np.ceil, (WIDE,), ulps=0),
    Case("round", _round_half_away, (lambda rng: (rng.integers(-40, 40, N) / 2).astype(F32),), ulps=0),
    Case("rint", np.rint, (lambda rng: (rng.integers(-40, 40, N) / 2).astype(F32),), ulps=0),
    Case("trunc", np.trunc, (WIDE,), ulps=0),
    Case("fract", lambda x: np.minimum(x - np.floor(x), 1 - 2.0**-24), (WIDE,), ulps=0, atol=1e-6),
    Case("saturate", lambda x: np.clip(x, 0, 1), (_uniform(-2, 2),), ulps=0),
    Case("sign", lambda x: np.sign(x), (lambda rng: rng.integers(-2, 3, N).astype(F32),), ulps=0),
]
BINARY = [
    Case("pow", np.power, (_uniform(0.1, 10), _uniform(-4, 4)), ulps=8),
    Case("powr", np.power, (_uniform(0.1, 10), _uniform(-4, 4)), ulps=8),
    Case("atan2", np.arctan2, (WIDE, WIDE)),
    Case("fmod", np.fmod, (WIDE, _uniform(0.5, 5)), ulps=0),
    Case("fmin", np.fmin, (WIDE, WIDE), ulps=0),
    Case("fmax", np.fmax, (WIDE, WIDE), ulps=0),
    Case("min", np.fmin, (WIDE, WIDE), ulps=0),
    Case("max", np.fmax, (WIDE, WIDE), ulps=0),
    Case("copysign", np.copysign, (WIDE, WIDE), ulps=0),
    Case("fdim", lambda a, b: np.maximum(a - b, 0), (WIDE, WIDE), ulps=0.5),
    Case("divide", np.divide, (WIDE, _uniform(0.5, 5)), ulps=0.5),
    Case("step", lambda e, x: np.where(x < e, 0.0, 1.0), (WIDE, WIDE), ulps=0),
]
TERNARY = [
    Case("fma", lambda a, b, c: a * b + c, (WIDE, WIDE, WIDE), ulps=1),
    Case("clamp", lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi), (WIDE, _uniform(-5, 0), _uniform(0, 5)), ulps=0),
    Case("mix", lambda x, y, a: x + (y - x) * a, (WIDE, WIDE, _uniform(0, 1)), ulps=4, atol=1e-5),
    Case(
        "smoothstep",
        lambda e0, e1, x: (lambda t: t * t * (3 - 2 * t))(np.clip((x - e0) / (e1 - e0), 0, 1)),
        (_uniform(-5, -1), _uniform(1, 5), WIDE),
        ulps=8,
        atol=1e-6,
    ),
    Case("median3", lambda a, b, c: np.median(np.stack([a, b, c]), axis=0), (WIDE, WIDE, WIDE), ulps=0),
]


def _within(out: np.ndarray, ref: np.ndarray, ulps: float, atol: float, dtype: type) -> None:
    with np.errstate(over="ignore", invalid="ignore"):  # results beyond the type's range are inf
        ref_t = ref.astype(dtype)
        tol = ulps * np.spacing(np.abs(ref_t)).astype(np.float64) + atol
        err = np.abs(out.astype(np.float64) - ref.astype(np.float64))
    bad = ~(err <= tol) & ~(np.isnan(out) & np.isnan(ref_t)) & ~(out == ref_t)
    assert not bad.any(), (
        f"{int(bad.sum())} mismatches, e.g. inputs->out {out[bad][:4]} vs reference {ref[bad][:4]}"
    )


def _call(lib: Library, prefix: str, name: str, args: list[np.ndarray], out: np.ndarray) -> None:
    getattr(lib, f"{prefix}_{name}")(*(a for a in args), out, out.size)


@pytest.mark.parametrize("case", UNARY + BINARY + TERNARY, ids=lambda c: c.name)
def test_float_functions(lib: Library, case: Case) -> None:
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    args = [d(rng) for d in case.domains]
    out = np.empty(N, F32)
    _call(lib, "f", case.name, args, out)
    with np.errstate(over="ignore"):
        ref = case.reference(*(a.astype(np.float64) for a in args))
    _within(out, ref, case.ulps, case.atol, F32)
    # The float4 form computes the same function per component.
    out_v = np.empty(N, F32)
    _call(lib, "v", case.name, args, out_v)
    np.testing.assert_array_equal(out_v, out)


@pytest.mark.parametrize("case", UNARY + BINARY[:2], ids=lambda c: c.name)
def test_half_functions_round_the_float_result(lib: Library, case: Case) -> None:
    rng = np.random.default_rng(zlib.crc32(case.name.encode()) + 1)
    args = [np.clip(d(rng), -60000, 60000).astype(F16) for d in case.domains]
    out = np.empty(N, F16)
    _call(lib, "h", case.name, args, out)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        ref = case.reference(*(a.astype(np.float64) for a in args))
    # Computed in float and rounded once: within one half ulp of the exact result, plus the
    # reference's own absolute slack.
    _within(out, ref, 1.0, case.atol, F16)
    if case.domains and len(case.domains) == 1:
        out_v = np.empty(N, F16)
        _call(lib, "hv", case.name, args, out_v)
        np.testing.assert_array_equal(out_v.view(np.uint16), out.view(np.uint16))


@pytest.mark.parametrize("case", [c for c in UNARY if c.name != "sign"], ids=lambda c: c.name)
def test_precise_and_fast_namespaces(lib: Library, case: Case) -> None:
    rng = np.random.default_rng(7)
    args = [d(rng) for d in case.domains]
    out = np.empty(N, F32)
    _call(lib, "f", case.name, args, out)
    for prefix in ("p", "q"):
        other = np.empty(N, F32)
        _call(lib, prefix, case.name, args, other)
        np.testing.assert_array_equal(other, out)


def test_fast_divide_is_approximate_within_its_bound(lib: Library) -> None:
    rng = np.random.default_rng(11)
    a = rng.uniform(-100, 100, N).astype(F32)
    b = rng.uniform(0.01, 1e4, N).astype(F32) * rng.choice([-1, 1], N).astype(F32)
    exact = np.empty(N, F32)
    _call(lib, "p", "divide", [a, b], exact)
    np.testing.assert_array_equal(exact, a / b)  # precise:: is the IEEE division
    fast = np.empty(N, F32)
    _call(lib, "q", "divide", [a, b], fast)
    steps = np.abs(fast.view(np.int32).astype(np.int64) - exact.view(np.int32).astype(np.int64))
    assert steps.max() == 2 and (steps == 0).mean() < 0.5  # moved, within the documented 2.5 ulp
    fast_v = np.empty(N, F32)
    _call(lib, "qv", "divide", [a, b], fast_v)
    np.testing.assert_array_equal(fast_v, fast)
    # outside |y| in [2^-126, 2^126] the result is unspecified: the shim says NaN
    huge = np.array([2.0**127, -(2.0**127), 1e-39, 0.0], F32)
    out = np.empty(4, F32)
    _call(lib, "q", "divide", [np.ones(4, F32), huge], out)
    assert np.isnan(out).all()


def test_nan_and_infinity_rules(lib: Library) -> None:
    nan, inf = np.nan, np.inf
    a = np.array([nan, 1, nan, -inf, 0, -0.0, 2, -2] * 4, F32)
    b = np.array([1, nan, nan, 1, -0.0, 0, -1, 3] * 4, F32)
    out = np.empty(a.size, F32)
    _call(lib, "f", "fmin", [a, b], out)
    np.testing.assert_array_equal(out, np.fmin(a, b))  # NaN operand: the other one wins
    _call(lib, "f", "max", [a, b], out)
    np.testing.assert_array_equal(out, np.fmax(a, b))
    _call(lib, "f", "powr", [a, b], out)
    assert np.isnan(out[7])  # powr of a negative base is NaN
    _call(lib, "f", "sign", [a], out)
    np.testing.assert_array_equal(out[:8], [0, 1, 0, -1, 0, 0, 1, -1])
    assert np.signbit(out[5]) and not np.signbit(out[4])  # sign(+-0) keeps the zero's sign
    _call(lib, "f", "exp", [np.array([-inf, inf, nan, -200] * 8, F32)], out[:32])
    np.testing.assert_array_equal(out[:4], [0, inf, nan, 0])
    _call(lib, "f", "fract", [np.array([-1e-9, 5.75, -0.25, 1e9] * 8, F32)], out[:32])
    np.testing.assert_array_equal(out[:4], np.array([1 - 2.0**-24, 0.75, 0.75, 0], F32))


def test_predicates(lib: Library) -> None:
    a = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, 1.0, -3.5], F32)
    out = np.empty((8, 5), np.bool_)
    lib.predicates(a, out, 8)
    expected = np.stack([np.isnan(a), np.isinf(a), np.isfinite(a),
                         np.isfinite(a) & (np.abs(a) >= np.finfo(F32).tiny), np.signbit(a)], axis=1)
    np.testing.assert_array_equal(out, expected)
    out4 = np.empty((2, 5, 4), np.bool_)
    lib.predicates4(a, out4, 8)
    np.testing.assert_array_equal(out4.transpose(0, 2, 1).reshape(8, 5), expected)


def test_decompositions(lib: Library) -> None:
    a = np.array([1.0, -3.75, 0.1, 1024.5, -1e-3, 6.0], F32)
    out = np.empty((6, 7), F32)
    lib.decompose(a, out, 6)
    mant, expo = np.frexp(a)
    np.testing.assert_array_equal(out[:, 0], mant)
    np.testing.assert_array_equal(out[:, 1], expo)
    np.testing.assert_array_equal(out[:, 2], np.ldexp(a, 3))
    frac, whole = np.modf(a)
    np.testing.assert_array_equal(out[:, 3], frac)
    np.testing.assert_array_equal(out[:, 4], whole)
    np.testing.assert_allclose(out[:, 5], np.sin(a.astype(np.float64)), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(out[:, 6], np.cos(a.astype(np.float64)), rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------- integer functions

def _bits(x: int, width: int) -> str:
    return format(x % (1 << width), f"0{width}b")


def _int_reference(x: int, y: int, width: int, signed: bool) -> list[int]:
    mask = (1 << width) - 1
    lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, mask)
    ux = x & mask
    b = _bits(x, width)
    s = (y & mask) % width
    rot = ((ux << s) | (ux >> (width - s))) & mask if s else ux
    wrap = (lambda v: ((v + (1 << (width - 1))) & mask) - (1 << (width - 1))) if signed else (lambda v: v & mask)
    clamp_lo, clamp_hi = min(y, 1000), max(y, 1000)
    return [
        b.count("1"),
        len(b) - len(b.lstrip("0")),
        len(b) - len(b.rstrip("0")),
        wrap(int(b[::-1], 2)),
        wrap(rot),
        (x * y) >> width,
        abs(x - y),
        min(max(x + y, lo), hi),
        min(max(x - y, lo), hi),
        (x + y) >> 1,
        (x + y + 1) >> 1,
        min(x, y),
        max(x, y),
        min(max(x, clamp_lo), clamp_hi),
    ]


def test_uint_functions(lib: Library) -> None:
    rng = np.random.default_rng(11)
    a = np.concatenate([rng.integers(0, 2**32, 500), [0, 1, 2**31, 2**32 - 1, 0x80000001]]).astype(np.uint32)
    b = np.concatenate([rng.integers(0, 2**32, 500), [0, 31, 2**32 - 1, 1, 33]]).astype(np.uint32)
    out = np.empty((a.size, 14), np.uint32)
    lib.uint_functions(a, b, out, a.size)
    for i in range(a.size):
        expected = _int_reference(int(a[i]), int(b[i]), 32, signed=False)
        assert [int(v) for v in out[i]] == expected, (int(a[i]), int(b[i]))


def test_int_functions(lib: Library) -> None:
    rng = np.random.default_rng(12)
    extremes = [0, -1, 1, -(2**31), 2**31 - 1, -5]
    a = np.concatenate([rng.integers(-(2**31), 2**31, 500), extremes]).astype(np.int32)
    b = np.concatenate([rng.integers(-(2**31), 2**31, 500), [-(2**31), 2**31 - 1, -1, 1, 1, 7]]).astype(np.int32)
    out = np.empty((a.size, 15), np.int32)
    lib.int_functions(a, b, out, a.size)
    for i in range(a.size):
        x, y = int(a[i]), int(b[i])
        expected = _int_reference(x, y, 32, signed=True)
        expected[6] = ((abs(x - y) + 2**31) % 2**32) - 2**31  # absdiff is unsigned; read back as int
        expected.append(((abs(x) + 2**31) % 2**32) - 2**31)  # abs(INT_MIN) wraps to INT_MIN
        assert [int(v) for v in out[i]] == expected, (x, y)


def test_narrow_and_wide_integer_functions(lib: Library) -> None:
    a = np.array([0, 1, 0xF0, 0x8000000000000000, 0xFFFFFFFFFFFFFFFF, 12345678912345], np.uint64)
    b = np.array([5, 0xFFFFFFFFFFFFFFFF, 3, 2, 0xFFFFFFFFFFFFFFFF, 98765432198765], np.uint64)
    out = np.empty((6, 6), np.uint64)
    lib.width_functions(a, b, out, 6)
    for i in range(6):
        x, y = int(a[i]), int(b[i])
        c = x & 0xFF
        sx = x - (1 << 64) if x >= 1 << 63 else x
        sy = y - (1 << 64) if y >= 1 << 63 else y
        expected = [
            8 - c.bit_length(), bin(c).count("1"), 64 - x.bit_length(), bin(x).count("1"),
            (x * y) >> 64, ((sx * sy) >> 64) % (1 << 64),
        ]
        assert [int(v) for v in out[i]] == expected, (x, y)


def test_integer_vector_functions(lib: Library) -> None:
    rng = np.random.default_rng(13)
    a = rng.integers(-1000, 1000, 64).astype(np.int32)
    b = rng.integers(-1000, 1000, 64).astype(np.int32)
    out = np.empty((16, 5, 4), np.int32)
    lib.int4_functions(a, b, out, 64)
    a4, b4 = a.reshape(16, 4), b.reshape(16, 4)
    np.testing.assert_array_equal(out[:, 0], np.minimum(a4, b4))
    np.testing.assert_array_equal(out[:, 1], np.maximum(a4, b4))
    np.testing.assert_array_equal(out[:, 2], np.clip(a4, -100, 100))
    np.testing.assert_array_equal(out[:, 3], np.abs(a4))
    popcount = np.vectorize(lambda v: bin(int(v) & 0xFFFFFFFF).count("1"))
    np.testing.assert_array_equal(out[:, 4], popcount(a4))


# ---------------------------------------------------------------- what MSL does not have

@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("float f(float x) { return erf(x); }", "erf"),
        ("float f(float x) { return metal::erf(x); }", "erf"),
        ("float f(float x) { return log1p(x); }", "log1p"),
        ("float f(float x) { return metal::hypot(x, x); }", "hypot"),
        ("float f(float x) { return cbrt(x); }", "cbrt"),
        ("float f(float x) { return expf(x); }", "expf"),
        ("float f(float x) { return __builtin_expf(x); }", "__builtin_expf"),
        ("int f(float x) { return fetch(x); }", "fetch"),
        ("int f(uint a, int b) { return min(a, b); }", "ambiguous"),
        ("float f(float4 a, float b) { return fmin(a, b).x; }", "no matching function"),
        ("bfloat f(bfloat b) { bfloat r = exp(b); return r; }", "conversion from"),
    ],
    ids=["erf", "metal-erf", "log1p", "hypot", "cbrt", "expf", "builtin-expf", "undeclared",
         "mixed-int-min", "vector-scalar-fmin", "bfloat-math-result"],
)
def test_functions_msl_lacks_do_not_compile(code: str, message: str) -> None:
    result = compile_only(code)
    assert not result.ok, f"compiled but MSL has no such function: {code}"
    assert message in result.stderr, result.stderr
