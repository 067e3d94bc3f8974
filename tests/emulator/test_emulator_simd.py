"""SIMD-group and quad functions over the active lanes, and simdgroup_matrix's lane layout.

References are written lane by lane in NumPy from the MSL definitions (metal.md 5.6, 5.7). A
threadgroup of 48 threads has a full SIMD-group and one of 16 lanes, so every function is also
checked on a partial SIMD-group.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from triton_metal.backends.emulator import metal_kernel

RNG = np.random.default_rng(7)
W = 32

FLOAT_OPS = [
    ("simd_sum(v)", "sum"),
    ("simd_product(v)", "product"),
    ("simd_min(v)", "min"),
    ("simd_max(v)", "max"),
    ("simd_prefix_exclusive_sum(v)", "exsum"),
    ("simd_prefix_inclusive_sum(v)", "insum"),
    ("simd_prefix_exclusive_product(v)", "exprod"),
    ("simd_prefix_inclusive_product(v)", "inprod"),
    ("simd_shuffle(v, (lane * 7 + 3) % 32)", "shuffle"),
    ("simd_shuffle_xor(v, 5)", "xor5"),
    ("simd_shuffle_up(v, 3)", "up3"),
    ("simd_shuffle_down(v, 3)", "down3"),
    ("simd_shuffle_rotate_up(v, 3)", "rotup3"),
    ("simd_shuffle_rotate_down(v, 3)", "rotdown3"),
    ("simd_broadcast(v, 2)", "bcast2"),
    ("simd_broadcast_first(v)", "first"),
    ("quad_sum(v)", "qsum"),
    ("quad_min(v)", "qmin"),
    ("quad_max(v)", "qmax"),
    ("quad_shuffle(v, 1)", "qshuf1"),
    ("quad_shuffle_xor(v, 3)", "qxor3"),
    ("quad_broadcast(v, 2)", "qbcast2"),
    ("float((uint)(ulong)simd_ballot(v > 0.0f))", "ballot"),
    ("float(simd_all(v > -100.0f))", "all"),
    ("float(simd_any(v > 1.5f))", "any"),
    ("float(simd_is_first())", "is_first"),
]

INT_OPS = [("simd_and(w)", "and"), ("simd_or(w)", "or"), ("simd_xor(w)", "xor")]


def reference(kind: str, vals: np.ndarray) -> np.ndarray:
    """One SIMD-group's results; `vals` holds its active lanes (lanes 0..n-1)."""
    n = len(vals)
    lanes = np.arange(n)
    nan = np.float32(np.nan)

    def read(src):
        return np.array([vals[s] if 0 <= s < n else nan for s in src], np.float32)

    if kind == "sum":
        return np.full(n, np.add.reduce(vals, dtype=np.float32))
    if kind == "product":
        return np.full(n, np.multiply.reduce(vals, dtype=np.float32))
    if kind == "min":
        return np.full(n, vals.min())
    if kind == "max":
        return np.full(n, vals.max())
    if kind in ("exsum", "insum"):
        inc = np.cumsum(vals, dtype=np.float32)
        return inc if kind == "insum" else np.concatenate([[0], inc[:-1]]).astype(np.float32)
    if kind in ("exprod", "inprod"):
        inc = np.cumprod(vals, dtype=np.float32)
        return inc if kind == "inprod" else np.concatenate([[1], inc[:-1]]).astype(np.float32)
    if kind == "shuffle":
        return read((lanes * 7 + 3) % W)
    if kind == "xor5":
        return read(lanes ^ 5)
    if kind == "up3":
        return read(np.where(lanes >= 3, lanes - 3, lanes))
    if kind == "down3":
        return read(np.where(lanes + 3 < W, lanes + 3, lanes))
    if kind == "rotup3":
        return read((lanes - 3) % W)
    if kind == "rotdown3":
        return read((lanes + 3) % W)
    if kind == "bcast2":
        return read(np.full(n, 2))
    if kind == "first":
        return np.full(n, vals[0])
    if kind in ("qsum", "qmin", "qmax"):
        out = np.empty(n, np.float32)
        for q in range(0, n, 4):
            part = vals[q : q + 4]
            out[q : q + 4] = {"qsum": part.sum(dtype=np.float32), "qmin": part.min(), "qmax": part.max()}[kind]
        return out
    if kind == "qshuf1":
        return read((lanes & ~3) + 1)
    if kind == "qxor3":
        return read(lanes ^ 3)
    if kind == "qbcast2":
        return read((lanes & ~3) + 2)
    if kind == "ballot":
        bits = sum(1 << int(lane) for lane in lanes if vals[lane] > 0)
        return np.full(n, np.float32(bits))
    if kind == "all":
        return np.full(n, np.float32(bool((vals > -100).all())))
    if kind == "any":
        return np.full(n, np.float32(bool((vals > 1.5).any())))
    if kind == "is_first":
        return (lanes == 0).astype(np.float32)
    raise AssertionError(kind)


@pytest.mark.parametrize("tg", [48, 64, 7])
def test_simd_functions_over_active_lanes(tg):
    groups = 3
    n = tg * groups
    lines = [
        "uint i = thread_position_in_grid.x;",
        "uint lane = thread_index_in_simdgroup;",
        "float v = x[i];",
        "int w = wx[i];",
    ]
    for k, (expr, _) in enumerate(FLOAT_OPS):
        lines.append(f"out[i * {len(FLOAT_OPS)} + {k}] = {expr};")
    for k, (expr, _) in enumerate(INT_OPS):
        lines.append(f"iout[i * {len(INT_OPS)} + {k}] = {expr};")
    kernel = metal_kernel("simdops", ["x", "wx"], ["out", "iout"], "\n".join(lines))
    # Small integers keep sums and products exact whatever the order.
    x = RNG.integers(-3, 4, n).astype(np.float32)
    x[x == 0] = 1
    wx = RNG.integers(0, 2**16, n).astype(np.int32)
    out, iout = kernel(
        inputs=[x, wx],
        output_shapes=[(n, len(FLOAT_OPS)), (n, len(INT_OPS))],
        output_dtypes=[mx.float32, mx.int32],
        grid=(n, 1, 1),
        threadgroup=(tg, 1, 1),
    )
    out, iout = np.array(out), np.array(iout)
    for g in range(groups):
        for s0 in range(0, tg, W):
            lo, hi = g * tg + s0, g * tg + min(s0 + W, tg)
            for k, (expr, kind) in enumerate(FLOAT_OPS):
                np.testing.assert_array_equal(
                    out[lo:hi, k], reference(kind, x[lo:hi]), err_msg=f"{expr}, lanes {lo}..{hi}"
                )
            seg = wx[lo:hi]
            np.testing.assert_array_equal(iout[lo:hi, 0], np.bitwise_and.reduce(seg))
            np.testing.assert_array_equal(iout[lo:hi, 1], np.bitwise_or.reduce(seg))
            np.testing.assert_array_equal(iout[lo:hi, 2], np.bitwise_xor.reduce(seg))


def test_simd_functions_on_vectors_and_small_types():
    src = """
    uint i = thread_position_in_grid.x;
    float2 s = simd_sum(float2(x[i], 2.0f * x[i]));
    half h = simd_max(half(x[i]));
    short t = simd_shuffle_down(short(i), 1);
    uchar u = simd_broadcast(uchar(i), 4);
    out[i * 5 + 0] = s.x;
    out[i * 5 + 1] = s.y;
    out[i * 5 + 2] = float(h);
    out[i * 5 + 3] = float(t);
    out[i * 5 + 4] = float(u);
    """
    kernel = metal_kernel("simdvec", ["x"], ["out"], src)
    x = np.arange(32, dtype=np.float32)
    (out,) = kernel(
        inputs=[x], output_shapes=[(32, 5)], output_dtypes=[mx.float32],
        grid=(32, 1, 1), threadgroup=(32, 1, 1),
    )
    out = np.array(out)
    np.testing.assert_array_equal(out[:, 0], np.full(32, x.sum()))
    np.testing.assert_array_equal(out[:, 1], np.full(32, 2 * x.sum()))
    np.testing.assert_array_equal(out[:, 2], np.full(32, 31.0))
    np.testing.assert_array_equal(out[:, 3], np.array(list(range(1, 32)) + [31], np.float32))
    np.testing.assert_array_equal(out[:, 4], np.full(32, 4.0))


def test_simd_function_on_bool_does_not_compile():
    from triton_metal.backends.emulator import MSLCompileError

    kernel = metal_kernel(
        "simdbool", ["x"], ["out"], "out[thread_position_in_grid.x] = simd_sum(x[0] > 0.0f);"
    )
    with pytest.raises(MSLCompileError, match="no bool"):
        kernel(
            inputs=[np.zeros(8, np.float32)], output_shapes=[(32,)], output_dtypes=[mx.float32],
            grid=(32, 1, 1), threadgroup=(32, 1, 1),
        )


def lane_coords(lane: int) -> tuple[int, int]:
    q = lane // 4
    return (q & 4) + (lane // 2) % 4, (q & 2) * 2 + (lane % 2) * 2


def test_simdgroup_matrix_lane_layout_load_and_store():
    src = """
    uint lane = thread_index_in_simdgroup;
    simdgroup_float8x8 m;
    simdgroup_load(m, a, 16, ulong2(8, 4));          // rows 4..11, columns 8..15 of a 16x16
    simdgroup_float8x8 t;
    simdgroup_load(t, a, 16, ulong2(0, 0), true);    // transposed top-left block
    elems[lane * 4 + 0] = m.thread_elements()[0];
    elems[lane * 4 + 1] = m.thread_elements()[1];
    elems[lane * 4 + 2] = t.thread_elements()[0];
    elems[lane * 4 + 3] = t.thread_elements()[1];
    simdgroup_store(m, stored, 10, ulong2(1, 2));      // into a 10-wide matrix at row 2, col 1
    """
    kernel = metal_kernel("layout", ["a"], ["elems", "stored"], src)
    a = np.arange(256, dtype=np.float32).reshape(16, 16)
    elems, stored = kernel(
        inputs=[a], output_shapes=[(32, 4), (10, 10)], output_dtypes=[mx.float32, mx.float32],
        grid=(32, 1, 1), threadgroup=(32, 1, 1), init_value=-1.0,
    )
    elems = np.array(elems)
    for lane in range(32):
        r, c = lane_coords(lane)
        np.testing.assert_array_equal(elems[lane, :2], a[4 + r, 8 + c : 8 + c + 2], err_msg=str(lane))
        np.testing.assert_array_equal(elems[lane, 2:], a[c : c + 2, r], err_msg=str(lane))
    expected = np.full((10, 10), -1.0, np.float32)
    expected[2:10, 1:9] = a[4:12, 8:16]
    np.testing.assert_array_equal(np.array(stored), expected)


def test_simdgroup_matrix_fill_diagonal_and_multiply_mixed_types():
    src = """
    uint lane = thread_index_in_simdgroup;
    simdgroup_half8x8 a;
    simdgroup_half8x8 b;
    simdgroup_load(a, x, 8);
    simdgroup_load(b, y, 8);
    simdgroup_float8x8 d;
    simdgroup_multiply(d, a, b);
    simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.5f);
    simdgroup_multiply_accumulate(acc, a, b, acc);
    simdgroup_float8x8 diag(3.0f);
    simdgroup_store(d, prod, 8);
    simdgroup_store(acc, fma, 8);
    simdgroup_store(diag, eye, 8);
    """
    kernel = metal_kernel("mma", ["x", "y"], ["prod", "fma", "eye"], src)
    x = RNG.standard_normal((8, 8)).astype(np.float16)
    y = RNG.standard_normal((8, 8)).astype(np.float16)
    prod, fma, eye = kernel(
        inputs=[mx.array(x), mx.array(y)], output_shapes=[(8, 8)] * 3,
        output_dtypes=[mx.float32] * 3, grid=(32, 1, 1), threadgroup=(32, 1, 1),
    )
    ref = x.astype(np.float64) @ y.astype(np.float64)
    np.testing.assert_allclose(np.array(prod), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.array(fma), ref + 0.5, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.array(eye), 3.0 * np.eye(8, dtype=np.float32))
