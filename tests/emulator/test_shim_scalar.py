"""The shim's half and bfloat: rounding after every operation, conversions, MSL's type rules."""

from __future__ import annotations


import mlx.core as mx
import numpy as np
import pytest

try:
    from .shim.shim_harness import PRELUDE, Library, NativeLibrary, build_library, compile_only, library_fixture
except ImportError:
    from shim.shim_harness import (  # type: ignore[no-redef]
        PRELUDE, Library, NativeLibrary, build_library, compile_only, library_fixture,
    )

F16 = np.float16


lib = library_fixture("scalar_ops.cpp")


def _halves(rng: np.random.Generator, n: int) -> np.ndarray:
    return (rng.standard_normal(n) * 4).astype(F16)


def test_half_rounds_after_each_operation(lib: Library) -> None:
    rng = np.random.default_rng(0)
    a, b, c = _halves(rng, 4096), _halves(rng, 4096), _halves(rng, 4096)
    out = np.empty(4096, F16)
    lib.half_mul_add(a, b, c, out, 4096)
    # NumPy float16 arithmetic rounds every operation to half.
    np.testing.assert_array_equal(out, (a * b) + c)
    # ... which differs from rounding once at the end somewhere in this sample.
    once = (a.astype(np.float32) * b.astype(np.float32) + c.astype(np.float32)).astype(F16)
    assert np.any(once != out)


def test_half_division_and_subtraction(lib: Library) -> None:
    rng = np.random.default_rng(1)
    a, b = _halves(rng, 4096), _halves(rng, 4096)
    b[b == 0] = F16(1)
    out = np.empty(4096, F16)
    lib.half_div_sub(a, b, out, 4096)
    np.testing.assert_array_equal(out, a / b - a)


def test_half_accumulator_rounds_every_step(lib: Library) -> None:
    ones = np.ones(3000, F16)
    out = np.empty(1, F16)
    lib.half_accumulate(ones, out, 3000)
    # 2048 + 1 rounds back to 2048 in half: the sum stops growing there.
    assert out[0] == F16(2048)


def test_float_to_half_is_round_to_nearest_even(lib: Library) -> None:
    rng = np.random.default_rng(2)
    bits = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    x = x[np.isfinite(x)]
    # Exact ties between neighbouring halves, overflow, subnormal halves.
    ties = (np.arange(-64, 64, dtype=np.float32) + np.float32(0.5)) * np.float32(2.0**-10)
    extra = np.array([65504, 65519.99, 65520, 1e9, -1e9, 2.0**-24, 2.0**-25, 3 * 2.0**-26, 1e-30, -0.0], np.float32)
    x = np.concatenate([x, ties, extra]).astype(np.float32)
    out = np.empty(x.size, F16)
    lib.half_from_float(x, out, x.size)
    with np.errstate(over="ignore"):  # overflow to infinity is the expected result
        expected = x.astype(F16)
    np.testing.assert_array_equal(out.view(np.uint16), expected.view(np.uint16))


def test_half_plus_float_is_float(lib: Library) -> None:
    a = np.array([1.0, 0.1, -3.5], F16)
    b = np.array([2.0**-20, 0.2, 1e-3], np.float32)
    out = np.empty(3, np.float32)
    lib.half_plus_float(a, b, out, 3)
    np.testing.assert_array_equal(out, a.astype(np.float32) + b)


# ---------------------------------------------------------------- bfloat

def bf16_reference(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits by round-to-nearest-even, chosen by distance in float64."""
    with np.errstate(invalid="ignore"):  # NaN lanes are computed, then overwritten
        return _bf16_reference(x.astype(np.float32))


def _bf16_reference(x: np.ndarray) -> np.ndarray:
    bits = x.view(np.uint32)
    nan = np.isnan(x)
    down = bits >> 16  # truncation: the neighbour nearer zero
    up = down + 1  # the neighbour farther from zero
    lo = np.abs((down << 16).view(np.float32).astype(np.float64))
    up_is_inf = (up & 0x7FFF) == 0x7F80
    hi_bits = np.where(up_is_inf, 0, up << 16).astype(np.uint32)
    hi = np.where(up_is_inf, 2.0**128, np.abs(hi_bits.view(np.float32).astype(np.float64)))
    mag = np.abs(x.astype(np.float64))
    d_lo, d_hi = mag - lo, hi - mag
    take_up = (d_hi < d_lo) | ((d_hi == d_lo) & (down % 2 == 1))
    result = np.where(take_up, up, down).astype(np.uint16)
    result[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)
    return result


def _bf_samples() -> np.ndarray:
    rng = np.random.default_rng(3)
    random_bits = rng.integers(0, 2**32, 50000, dtype=np.uint64).astype(np.uint32)
    # Ties: the low 16 bits exactly 0x8000, with even and odd kept parts.
    tie_bits = (rng.integers(0, 2**16, 2000, dtype=np.uint64).astype(np.uint32) << 16) | 0x8000
    specials = np.array(
        [0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001, 0x00000001, 0x00008000,
         0x00018000, 0x007FFFFF, 0x80000000, 0x7F7FFFFF, 0x7F7F8000, 0x7F7F7FFF, 0x3F808000,
         0x3F818000],
        np.uint32,
    )
    return np.concatenate([random_bits, tie_bits, specials]).view(np.float32)


def test_bfloat_from_float_rounds_to_nearest_even(lib: Library) -> None:
    x = _bf_samples()
    out = np.empty(x.size, np.uint16)
    lib.bf_from_float(x, out, x.size)
    expected = bf16_reference(x)
    finite = ~np.isnan(x)
    np.testing.assert_array_equal(out[finite], expected[finite])
    # NaN stays a NaN of the same sign.
    nan_out = out[~finite]
    assert np.all((nan_out & 0x7F80) == 0x7F80) and np.all((nan_out & 0x7F) != 0)
    np.testing.assert_array_equal(nan_out >> 15, x[~finite].view(np.uint32) >> 31)


def test_bfloat_from_float_matches_mlx(lib: Library) -> None:
    x = _bf_samples()
    x = x[np.isfinite(x)]
    out = np.empty(x.size, np.uint16)
    lib.bf_from_float(x, out, x.size)
    mlx_bits = np.array(mx.array(x).astype(mx.bfloat16).view(mx.uint16))
    np.testing.assert_array_equal(out, mlx_bits)


def test_bfloat_from_half_and_int(lib: Library) -> None:
    h = np.random.default_rng(4).standard_normal(5000).astype(F16)
    out = np.empty(h.size, np.uint16)
    lib.bf_from_half(h, out, h.size)
    np.testing.assert_array_equal(out, bf16_reference(h.astype(np.float32)))
    i = np.random.default_rng(5).integers(-(2**24), 2**24, 5000).astype(np.int32)
    out_i = np.empty(i.size, np.uint16)
    lib.bf_from_int(i, out_i, i.size)
    np.testing.assert_array_equal(out_i, bf16_reference(i.astype(np.float32)))


def test_bfloat_widening_and_narrowing(lib: Library) -> None:
    bits = np.random.default_rng(6).integers(0, 2**16, 20000).astype(np.uint16)
    f = np.empty(bits.size, np.float32)
    lib.bf_to_float(bits, f, bits.size)
    np.testing.assert_array_equal(f.view(np.uint32), bits.astype(np.uint32) << 16)
    h = np.empty(bits.size, F16)
    lib.bf_to_half(bits, h, bits.size)
    with np.errstate(over="ignore", invalid="ignore"):  # large values become infinities
        expected_h = f.astype(F16)
    same = (h == expected_h) | (np.isnan(h) & np.isnan(expected_h))
    assert np.all(same)
    small = bits[np.abs(f) < 2.0**30]
    out_i = np.empty(small.size, np.int32)
    lib.bf_to_int(small, out_i, small.size)
    np.testing.assert_array_equal(out_i, np.trunc((small.astype(np.uint32) << 16).view(np.float32)).astype(np.int32))


def _finite_bf(rng: np.random.Generator, n: int) -> np.ndarray:
    return bf16_reference((rng.standard_normal(n) * 8).astype(np.float32))


def test_bfloat_arithmetic_is_correctly_rounded(lib: Library) -> None:
    rng = np.random.default_rng(7)
    a, b = _finite_bf(rng, 20000), _finite_bf(rng, 20000)
    out = np.empty((20000, 4), np.uint16)
    lib.bf_arith(a, b, out, 20000)
    fa = (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    fb = (b.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        exact = [fa + fb, fa - fb, fa * fb, fa / fb]
    for k, e in enumerate(exact):
        # A float64 result rounded to float32 first is still correctly rounded to bfloat
        # for these operands (float32 keeps more than twice bfloat's precision).
        np.testing.assert_array_equal(out[:, k], bf16_reference(e.astype(np.float32)), err_msg=f"op {k}")


def test_bfloat_comparisons(lib: Library) -> None:
    a = np.array([0x3F80, 0x0000, 0x8000, 0x7FC0, 0xBF80], np.uint16)  # 1, +0, -0, NaN, -1
    b = np.array([0x4000, 0x8000, 0x0000, 0x7FC0, 0xBF80], np.uint16)  # 2, -0, +0, NaN, -1
    out = np.empty((5, 3), np.bool_)
    lib.bf_compare(a, b, out, 5)
    expected = np.array(
        [[True, False, False], [False, True, True], [False, True, True], [False, False, False], [False, True, True]]
    )
    np.testing.assert_array_equal(out, expected)


def test_bfloat_accumulator_rounds_every_step(lib: Library) -> None:
    ones = np.full(1000, 0x3F80, np.uint16)
    out = np.empty(1, np.uint16)
    lib.bf_accumulate(ones, out, 1000)
    # bfloat has 8 significant bits: 256 + 1 rounds back to 256.
    assert out[0] == 0x4380


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("half f(bfloat b) { half h = b; return h; }", "cannot convert"),
        ("bfloat f(float x) { bfloat b = x; return b; }", "conversion from"),
        ("bfloat f(half x) { bfloat b = x; return b; }", "conversion from"),
        ("void f(bfloat b, half h) { auto r = b + h; (void)r; }", "deleted"),
        ("bool f(bfloat b, half h) { return b < h; }", "deleted"),
        ("bfloat f(bfloat b) { b += 1.0f; return b; }", "operator+="),
        ("int f(bfloat b) { int i = b; return i; }", "cannot convert"),
        ("half f() { return 1.0h; }", "suffix"),
    ],
    ids=["bf-to-half", "float-to-bf", "half-to-bf", "bf-plus-half", "bf-less-half", "bf-plus-eq-float",
         "bf-to-int", "h-suffix"],
)
def test_msl_conversion_errors(code: str, message: str) -> None:
    result = compile_only(code)
    assert not result.ok, f"compiled but MSL rejects it: {code}"
    assert message in result.stderr, result.stderr


def test_explicit_conversions_compile() -> None:
    code = """
    float f(bfloat b, half h, float x, int i) {
      bfloat c = bfloat(x) + bfloat(h) + bfloat(i);
      half hh = half(b);
      float widened = c;
      return widened + float(hh) + float(int(b)) + (b ? 1.0f : 0.0f);
    }
    """
    result = compile_only(code)
    assert result.ok, result.stderr



_NEGATE = """
extern "C" void half_negate(const ushort* a, ushort* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = as_type<ushort>(-as_type<half>(a[i]));
}
extern "C" void half4_negate(const ushort* a, ushort* out) {
  half4 v = half4(as_type<half>(a[0]), as_type<half>(a[1]), as_type<half>(a[2]), as_type<half>(a[3]));
  half4 r = -v;
  for (int i = 0; i < 4; ++i) out[i] = as_type<ushort>(r[i]);
}
"""


def test_half_class_negation_flips_the_sign_bit(tmp_path) -> None:
    # Metal negates a half by flipping its sign bit: a signalling NaN stays signalling, zeros and
    # payloads keep their bits. The half class (compilers without _Float16) does the same.
    lib = NativeLibrary(build_library(_NEGATE, tmp_path, "#define TM_HALF_AS_CLASS 1\n" + PRELUDE))
    bits = np.array([0x7D01, 0xFD01, 0x7E00, 0x0000, 0x8000, 0x3C00, 0x7C00, 0x0001], np.uint16)
    out = np.zeros_like(bits)
    lib.half_negate(bits, out, bits.size)
    np.testing.assert_array_equal(out, bits ^ 0x8000)
    lib.half4_negate(bits[:4].copy(), out[:4])
    np.testing.assert_array_equal(out[:4], bits[:4] ^ 0x8000)
