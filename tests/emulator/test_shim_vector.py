"""The shim's vector types: MSL constructors, swizzles, operators, layout and refusals."""

from __future__ import annotations


import numpy as np
import pytest

try:
    from .shim.shim_harness import Library, compile_only, library_fixture
except ImportError:
    from shim.shim_harness import Library, compile_only, library_fixture  # type: ignore[no-redef]


lib = library_fixture("vector_ops.cpp")


def test_constructors(lib: Library) -> None:
    out = np.zeros(128, np.float32)
    n = lib.constructors(out)
    expected = [
        1, 2,  # float2(1, 2)
        1, 2, 3,  # float3(a, 3)
        0.5, 1, 2, 3,  # float4(0.5, b)
        1, 2, 2, 1,  # float4(a, a.yx)
        7, 7, 7, 7,  # splat
        1, 2, 3, 4,  # braces
        1, 2, 3, 4,  # float4(a.x, b.yz, 4)
        9, 9, 9,  # float3 h = 9
        1, -2, 3, -4,  # float4(int4)
        0.5, 1.5, -2, 65504,  # float4(half4)
        1, -1, 2, 0,  # int4(float4) truncates toward zero
        8, 7,  # uint2(int4.wz)
        0, 1, 1,  # bool3(int3)
        3, 4,  # from a packed vector
        1, -3,  # long2 braces
    ]
    assert n == len(expected)
    np.testing.assert_array_equal(out[:n], np.array(expected, np.float32))


def test_swizzles_read_and_write(lib: Library) -> None:
    v = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    out = np.zeros(128, np.float32)
    n = lib.swizzles(v, out)
    x, y, z, w = v
    expected = [
        w, z, y, x,  # wzyx
        x, x, y, y,  # xxyy
        x, y, z, w,  # rgba
        z, x,  # zx
        z, y, x,  # bgr
        z, y, x, w,  # float4(v.xyz.zyx, v.w) through a float3 value
        z, z, z, x,  # float3 swizzle
        y, x, y, x,  # float2 swizzle
        0,  # .rgba and .xyzw alias the same lanes
        w,  # v.wx[0]
        10, 20, z, w,  # w.xy = ...
        x, y, y, x,  # w.wz = v.xy
        x + 2, y, z + 1, w,  # w.zx += (1, 2)
        x, x, x, x,  # w.yzw = w.xxx
        5, -1, z, 2 * w,  # single components and v[i]
        y, x, z, w,  # w.xy = w.yx
    ]
    assert n == len(expected)
    np.testing.assert_array_equal(out[:n], np.array(expected, np.float32))


def test_float_arithmetic_matches_numpy(lib: Library) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 4)).astype(np.float32)
    b = rng.standard_normal((64, 4)).astype(np.float32)
    out = np.zeros((64, 8, 4), np.float32)
    lib.arithmetic(a, b, out, 64)
    f = np.float32
    np.testing.assert_array_equal(out[:, 0], a + b)
    np.testing.assert_array_equal(out[:, 1], a - b)
    np.testing.assert_array_equal(out[:, 2], a * b)
    np.testing.assert_array_equal(out[:, 3], a / b)
    np.testing.assert_array_equal(out[:, 4], -a)
    np.testing.assert_array_equal(out[:, 5], a * f(2) + f(1))
    np.testing.assert_array_equal(out[:, 6], f(3) - a[:, ::-1])
    np.testing.assert_array_equal(out[:, 7], (a + b) * f(0.5))


def test_integer_operators_match_numpy(lib: Library) -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(-(2**20), 2**20, (64, 4)).astype(np.int32)
    b = rng.integers(-(2**20), 2**20, (64, 4)).astype(np.int32)
    out = np.zeros((64, 9, 4), np.int32)
    lib.integer_ops(a, b, out, 64)
    np.testing.assert_array_equal(out[:, 0], a & b)
    np.testing.assert_array_equal(out[:, 1], a | b)
    np.testing.assert_array_equal(out[:, 2], a ^ b)
    np.testing.assert_array_equal(out[:, 3], ~a)
    np.testing.assert_array_equal(out[:, 4], a << 3)
    np.testing.assert_array_equal(out[:, 5], a >> (b & 7))
    # C++ integer division and remainder truncate toward zero.
    np.testing.assert_array_equal(out[:, 6], np.fmod(a, 7))
    q = np.trunc(a.astype(np.float64) / (b | 1)).astype(np.int32)
    np.testing.assert_array_equal(out[:, 7], q)
    np.testing.assert_array_equal(out[:, 8], (a ^ 0x55) >> 1)


def test_unsigned_vectors_wrap(lib: Library) -> None:
    a = np.array([[0, 1, 2**31, 2**32 - 1]] * 2, np.uint32)
    out = np.zeros_like(a)
    lib.unsigned_wrap(a, out, 2)
    expected = (a.astype(np.uint64) * 3 + 0xFFFFFFF0) % 2**32
    np.testing.assert_array_equal(out, expected.astype(np.uint32))


def test_comparisons_select_all_any(lib: Library) -> None:
    a = np.array([[1, 2, 3, 4], [0, 0, 0, 0], [5, 5, np.nan, -1]], np.float32)
    b = np.array([[2, 2, 1, 5], [1, 1, 1, 1], [5, 4, 0, np.nan]], np.float32)
    cmp = np.zeros((3, 6, 4), np.bool_)
    sel = np.zeros((3, 2, 4), np.float32)
    red = np.zeros((3, 2), np.bool_)
    lib.compare_select(a, b, cmp, sel, red, 3)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(cmp[:, 0], a < b)
        np.testing.assert_array_equal(cmp[:, 1], a <= b)
        np.testing.assert_array_equal(cmp[:, 2], a > b)
        np.testing.assert_array_equal(cmp[:, 3], a >= b)
        np.testing.assert_array_equal(cmp[:, 4], a == b)
        np.testing.assert_array_equal(cmp[:, 5], a == b)
        np.testing.assert_array_equal(sel[:, 0], np.where(a < b, b, a))
        np.testing.assert_array_equal(sel[:, 1], b)
        np.testing.assert_array_equal(red[:, 0], np.all(a < b, axis=1))
        np.testing.assert_array_equal(red[:, 1], np.any(a < b, axis=1))


def test_as_type_reinterprets_bytes(lib: Library) -> None:
    a = np.array([0x3F800000_40490FDB, 0x12345678_9ABCDEF0], np.uint64)
    out = np.zeros((2, 4), np.uint32)
    lib.reinterpret(a, out, 2)
    lo, hi = (a & 0xFFFFFFFF).astype(np.uint32), (a >> 32).astype(np.uint32)
    np.testing.assert_array_equal(out[:, 0], lo)  # little-endian: .x is the low word
    np.testing.assert_array_equal(out[:, 1], hi)
    np.testing.assert_array_equal(out[:, 2], lo)
    swapped = ((hi & 0xFFFF) << 16) | (hi >> 16)
    np.testing.assert_array_equal(out[:, 3], swapped)


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("float4 f(half4 h) { float4 r = h; return r; }", "conversion from"),
        ("void f(float4 a, int4 b) { a = b; }", "no match for"),
        ("auto f(float4 a, int4 b) { return a + b; }", "no match for"),
        ("auto f(int4 a, uint4 b) { return a * b; }", "no match for"),
        ("auto f(half4 a, float s) { return a * s; }", "no match for"),
        ("auto f(int4 a, float s) { return a * s; }", "no match for"),
        ("auto f(bfloat4 a, float s) { return a + s; }", "no match for"),
        ("auto f(float4 a) { return a & 1; }", "no match for"),
        ("auto f(float4 a) { return a << 1; }", "no match for"),
        ("void f(float4 a) { a.xx = float2(1, 2); }", "repeats a component"),
        ("float4 f() { return float4(1.0f, 2.0f); }", "no matching function"),
        ("float4 f(half2 h) { return float4(h, 1.0f, 2.0f); }", "no matching function"),
        ("float2 f(float4 a) { float2 r = a; return r; }", "conversion from"),
        ("float f(float2 a) { return a.z; }", "has no member named"),
        ("float f(float4 a) { return a.xg[0]; }", "has no member named"),
        ("bfloat2 f(float2 a) { bfloat2 r = bfloat2(a.x, a.y); return r; }", "no matching function"),
        ("uint f(float3 a) { return as_type<uint>(a.xy); }", "same size"),
    ],
    ids=[
        "implicit-half4-to-float4", "assign-int4-to-float4", "float4-plus-int4", "int4-times-uint4",
        "half4-times-float", "int4-times-float", "bfloat4-plus-float", "float-bitand", "float-shift",
        "repeated-lane-write", "too-few-components", "mixed-element-pieces", "implicit-narrowing",
        "z-of-float2", "mixed-letter-sets", "float-to-bfloat-pieces", "as-type-size",
    ],
)
def test_msl_vector_errors(code: str, message: str) -> None:
    result = compile_only(code)
    assert not result.ok, f"compiled but MSL rejects it: {code}"
    assert message in result.stderr, result.stderr


def test_msl_vector_forms_compile() -> None:
    code = """
    float f(float4 a, half4 h, int3 i, uint3 tid, bool4 m) {
      float4 b = float4(h) + a.wzyx * a.w - float4(a.xy, 0, 1);
      half4 hh = h * half(2) + 1;
      float2 p = float2(i.xy) + float2(tid.yz);
      int3 j = i + int3(tid);
      float4 s = select(a, b, m) + float4(bfloat4(a));
      return b.x + float(hh.y) + p.y + j.z + s.w + float(all(m)) + float(any(!m));
    }
    """
    result = compile_only(code)
    assert result.ok, result.stderr


def test_geometric_functions(lib: Library) -> None:
    rng = np.random.default_rng(2)
    a = rng.standard_normal((32, 4)).astype(np.float32)
    b = rng.standard_normal((32, 4)).astype(np.float32)
    out = np.zeros((32, 9), np.float32)
    lib.geometric(a, b, out, 32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(out[:, 0], np.sum(a64 * b64, axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[:, 1], np.linalg.norm(a64, axis=1), rtol=1e-6)
    np.testing.assert_allclose(out[:, 2], np.linalg.norm(a64 - b64, axis=1), rtol=1e-6)
    unit = a64[:, :3] / np.linalg.norm(a64[:, :3], axis=1, keepdims=True)
    np.testing.assert_allclose(out[:, 3:6], unit, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[:, 6:9], np.cross(a64[:, :3], b64[:, :3]), rtol=1e-5, atol=1e-5)
