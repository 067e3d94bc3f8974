from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from triton_metal import ops

from .helpers import assert_close, check_grads, randn


def _quantized(N, K, transpose, **kw):
    w = randn((N, K) if transpose else (K, N), seed=5)
    return mx.quantize(w, **kw)


def _ternary_reference(xq, xs, wp, ws):
    codes = (np.array(wp)[:, :, None] >> np.array([0, 2, 4, 6], np.uint8)) & 3
    ternary = codes.reshape(wp.shape[0], -1).astype(np.float64) - 1
    return (np.array(xq).astype(np.float64) * np.array(xs)[:, None]) @ (ternary * float(ws)).T


@pytest.mark.parametrize("bits", [2, 3, 4, 5, 6, 8])
@pytest.mark.parametrize("group_size", [32, 64, 128])
def test_affine_layouts_decode(bits, group_size):
    # every width and group size through one compiled variant (they are run-time arguments)
    x = randn((3, 256))
    wq, s, b = _quantized(40, 256, True, group_size=group_size, bits=bits)
    kw = dict(transpose=True, group_size=group_size, bits=bits)
    assert_close(ops.quantized_matmul(x, wq, s, b, **kw), mx.quantized_matmul(x, wq, s, b, **kw), "float32",
                 scale=20)


@pytest.mark.parametrize("M, transpose, bits", [(1, True, 4), (8, False, 3), (33, True, 5), (20, False, 8)])
def test_affine_decode_and_tiled_with_grad(M, transpose, bits):
    x = randn((M, 128))
    wq, s, b = _quantized(128 if not transpose else 96, 128, transpose, group_size=64, bits=bits)
    kw = dict(transpose=transpose, group_size=64, bits=bits)
    ours = lambda a: ops.quantized_matmul(a, wq, s, b, **kw)  # noqa: E731
    ref = lambda a: mx.quantized_matmul(a, wq, s, b, **kw)  # noqa: E731
    assert_close(ours(x), ref(x), "float32", scale=20)
    check_grads(ours, ref, (x,), "float32", scale=50)


@pytest.mark.parametrize("M", [1, 2, 3, 8])
def test_gemv_rows_and_steps(M):
    # the GEMV variants per row count (3 pads to 4 rows); K = 1024 in groups of 32 makes several
    # steps of the K loop; N = 40 leaves a partial block of outputs
    x = randn((M, 1024), seed=M)
    wq, s, b = _quantized(40, 1024, True, group_size=32, bits=4)
    kw = dict(group_size=32, bits=4)
    assert_close(ops.quantized_matmul(x, wq, s, b, **kw), mx.quantized_matmul(x, wq, s, b, **kw), "float32",
                 scale=20)


@pytest.mark.parametrize("mode, M, default", [("affine", 1, (4, 64, 4, 2)), ("affine", 2, (4, 16, 2, 2)),
                                             ("affine", 8, (4, 16, 2, 2)), ("mxfp4", 1, (4, 64, 2, 4)),
                                             ("mxfp4", 4, (4, 32, 2, 2))])
def test_gemv_default_per_rows(monkeypatch, mode, M, default):
    # untuned, the GEMV takes the default of its mode and row count (fewer words of a row a
    # thread from 2 rows of x on), at K = 4096 where each fits, and agrees with float64 of MLX's
    # dequantization (float32 sums, a float16 result)
    from triton_metal.ops import _common, quantized

    monkeypatch.setattr(_common, "tuning_enabled", lambda: False)
    monkeypatch.setattr(quantized._gemv, "cache", {})
    x = randn((M, 4096), seed=M).astype(mx.float16)
    kw = dict(group_size=64, bits=4) if mode == "affine" else dict(mode=mode)
    wq, *sb = mx.quantize(randn((8, 4096), seed=5).astype(mx.float16), **kw)
    ours = np.array(ops.quantized_matmul(x, wq, *sb, **kw).astype(mx.float32)).astype(np.float64)
    # float16 scales and biases dequantize in float32 (a float16 matrix would round each weight)
    exact = [a.astype(mx.float32) if a.dtype == mx.float16 else a for a in sb]
    w = np.array(mx.dequantize(wq, *exact, **kw).astype(mx.float32)).astype(np.float64)
    ref = np.array(x.astype(mx.float32)).astype(np.float64) @ w.T
    assert np.abs(ours - ref).max() <= 2.0 ** -10 * np.abs(ref).max()
    best = quantized._gemv.best_config
    assert (best.kwargs["BLOCK_N"], best.kwargs["BLOCK_G"], best.kwargs["WPT"], best.num_warps) == default


@pytest.mark.parametrize("M", [1, 3])
def test_ternary_gemv(M):
    # K a multiple of 64: the GEMV kernel on the bytes viewed as words
    w, x = randn((24, 256), seed=2), randn((M, 256), seed=M)
    wp, ws = ops.pack_ternary(w)
    xq, xs = ops.quantize_activations(x)
    ref = _ternary_reference(xq, xs, wp, ws)
    np.testing.assert_allclose(np.array(ops.ternary_matmul(xq, xs, wp, ws)), ref, rtol=1e-5, atol=1e-4)


def test_int8_gemv_extremes():
    # -128 (which pack_int8 never makes) and 127 through the sign-flip decoding
    wq = mx.array(np.tile(np.array([-128, 127, -1, 0], np.int8), (8, 8)))
    s = randn((8,), seed=3)
    x = randn((1, 32), seed=4)
    ref = np.array(x, np.float64) @ (np.array(wq, np.float64) * np.array(s, np.float64)[:, None]).T
    np.testing.assert_allclose(np.array(ops.int8_matmul(x, wq, s)), ref, rtol=1e-5, atol=1e-4)


def _affine(bits, group):
    def run(M, K):
        x = randn((M, K), seed=M)
        wq, s, b = _quantized(40, K, True, group_size=group, bits=bits)
        kw = dict(group_size=group, bits=bits)
        return ops.quantized_matmul(x, wq, s, b, **kw), mx.quantized_matmul(x, wq, s, b, **kw)
    return run


def _float_run(mode):
    def run(M, K):
        x = randn((M, K), seed=M)
        wq, s = _quantized(40, K, True, mode=mode)
        return ops.quantized_matmul(x, wq, s, mode=mode), mx.quantized_matmul(x, wq, s, mode=mode)
    return run


def _int8_run(M, K):
    x = randn((M, K), seed=M)
    w = randn((40, K), seed=7)
    wq, s = ops.pack_int8(w)
    ref = np.array(x, np.float64) @ (np.array(wq, np.float64) * np.array(s, np.float64)[:, None]).T
    return ops.int8_matmul(x, wq, s), ref


def _ternary_run(M, K):
    wp, ws = ops.pack_ternary(randn((40, K), seed=2))
    xq, xs = ops.quantize_activations(randn((M, K), seed=M))
    return ops.ternary_matmul(xq, xs, wp, ws), _ternary_reference(xq, xs, wp, ws)


@pytest.mark.parametrize("run, M, K, block_g, wpt", [
    (_affine(4, 64), 3, 2048, 16, 4),   # 2 runs of 4 words a group, padded rows of x
    (_affine(8, 128), 1, 1024, 4, 4),   # 8 runs a group
    (_affine(2, 32), 2, 2048, 32, 2),   # a run is the whole group
    (_float_run("mxfp4"), 1, 1024, 16, 2),
    (_float_run("mxfp8"), 1, 1024, 16, 2),   # 4 runs of 2 words a group of 8 words
    (_float_run("mxfp8"), 5, 1024, 16, 4),   # a run is half a group
    (_float_run("nvfp4"), 1, 1024, 32, 2),   # a run is the whole group of 2 words
    (_float_run("nvfp4"), 2, 1024, 16, 1),
    (_int8_run, 1, 1024, 32, 4),
    (_ternary_run, 2, 2048, 16, 2),
])
def test_gemv_runs_of_words(monkeypatch, run, M, K, block_g, wpt):
    # each thread's run of WPT words of a group read as one vector (the defaults at these small
    # shapes fall back to single words): one config forced, two steps of the K loop, N = 40
    # leaving a partial block of outputs
    from triton_metal.ops import quantized

    config = quantized.triton.Config({"BLOCK_N": 8, "BLOCK_G": block_g, "WPT": wpt}, num_warps=1)
    monkeypatch.setattr(quantized._gemv, "configs", [config])
    monkeypatch.setattr(quantized._gemv, "cache", {})
    ours, ref = run(M, K)
    assert quantized._gemv.best_config.kwargs["WPT"] == wpt
    if isinstance(ref, np.ndarray):
        np.testing.assert_allclose(np.array(ours), ref, rtol=1e-5, atol=1e-4 * np.abs(ref).max())
    else:
        assert_close(ours, ref, "float32", scale=20)


@pytest.mark.parametrize("mode", ["mxfp4", "mxfp8", "nvfp4"])
@pytest.mark.parametrize("M, transpose", [(1, True), (4, True), (3, False), (17, True), (17, False)])
def test_float_modes(mode, M, transpose):
    # every path (decode and tiled, both orientations) and the gradient, against MLX's own op
    x = randn((2, M, 96))
    wq, s = _quantized(64, 96, transpose, mode=mode)
    kw = dict(transpose=transpose, mode=mode)
    ours = lambda a: ops.quantized_matmul(a, wq, s, **kw)  # noqa: E731
    ref = lambda a: mx.quantized_matmul(a, wq, s, **kw)  # noqa: E731
    assert_close(ours(x), ref(x), "float32", scale=20)
    check_grads(ours, ref, (x,), "float32", scale=50)


@pytest.mark.parametrize("M, transpose", [(1, True), (5, False), (20, True)])
def test_affine_one_bit(M, transpose):
    x = randn((M, 128))
    wq, s, b = _quantized(64, 128, transpose, group_size=32, bits=1)
    kw = dict(transpose=transpose, group_size=32, bits=1)
    ours = lambda a: ops.quantized_matmul(a, wq, s, b, **kw)  # noqa: E731
    ref = lambda a: mx.quantized_matmul(a, wq, s, b, **kw)  # noqa: E731
    assert_close(ours(x), ref(x), "float32", scale=20)
    check_grads(ours, ref, (x,), "float32", scale=50)


def _e4m3(codes):
    """E4M3 (OCP FP8, `fn`: no infinities, 0x7F and 0xFF NaN) in float64, from the format's
    definition."""
    codes = np.asarray(codes, np.int64)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    e, m = (codes >> 3) & 15, codes & 7
    value = np.where(e == 0, m / 8 * 2.0 ** -6, (1 + m / 8) * np.exp2(e - 7.0))
    return np.where((codes & 0x7F) == 0x7F, np.nan, sign * value)


@pytest.mark.parametrize("M", [1, 12])
def test_mxfp8_every_code_and_scale(M):
    # all 256 E4M3 codes in every byte position (subnormals and both NaNs included) under E8M0
    # scales from 2 ** -27 to 2 ** 100, against the format's values in float64; a row holding
    # a NaN code gives NaN, as MLX's dequantization does
    codes = (np.arange(16 * 256).reshape(16, 256) * 7 + np.arange(16)[:, None]) % 256
    codes[:12] -= (codes[:12] & 0x7F) == 0x7F  # NaN codes in the last 4 rows only
    words = (codes.reshape(16, 64, 4).astype(np.uint64) << (8 * np.arange(4, dtype=np.uint64))).sum(-1)
    scales = np.array([100, 127, 140, 200, 227, 110, 127, 130] * 16, np.uint8).reshape(16, 8)
    w = _e4m3(codes) * np.exp2(np.repeat(scales.astype(np.float64), 32, 1) - 127)
    x = randn((M, 256), seed=9) * 2.0 ** -20
    x64 = np.array(x, np.float64)
    ours = np.array(ops.quantized_matmul(x, mx.array(words.astype(np.uint32)), mx.array(scales), mode="mxfp8"),
                    np.float64)
    finite = ~np.isnan(w).any(1)
    assert finite.sum() > 0 and np.isnan(ours[:, ~finite]).all()
    ref = x64 @ np.where(np.isnan(w), 0, w).T
    bound = 1e-5 * (np.abs(x64) @ np.abs(np.where(np.isnan(w), 0, w)).T)
    assert np.all(np.abs(ours - ref)[:, finite] <= bound[:, finite])


@pytest.mark.parametrize("M", [1, 12])
def test_nvfp4_every_code_and_scale(M):
    # all 16 E2M1 codes in every nibble position under E4M3 scales of both signs, subnormal and
    # normal, up to 448, against the formats' values in float64
    e2m1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])
    codes = (np.arange(8 * 128).reshape(8, 128) * 5 + np.arange(8)[:, None]) % 16
    words = (codes.reshape(8, 16, 8).astype(np.uint64) << (4 * np.arange(8, dtype=np.uint64))).sum(-1)
    scales = np.array([0x01, 0x07, 0x08, 0x38, 0x7E, 0xB8, 0xFE, 0x30] * 8, np.uint8).reshape(8, 8)
    w = e2m1[codes] * np.repeat(_e4m3(scales), 16, 1)
    x = randn((M, 128), seed=9)
    x64 = np.array(x, np.float64)
    ours = ops.quantized_matmul(x, mx.array(words.astype(np.uint32)), mx.array(scales), mode="nvfp4")
    bound = 1e-5 * (np.abs(x64) @ np.abs(w).T)
    assert np.all(np.abs(np.array(ours, np.float64) - x64 @ w.T) <= bound)


def test_mxfp4_every_code_and_scale():
    # all 16 E2M1 codes in every nibble position (the decode moves bits into a half, code 1 a
    # subnormal one) under E8M0 scales from 2 ** -27 to 2 ** 127 (the largest finite one: the
    # kernel's 2 ** 14 must not overflow it), against the documented values in float64
    e2m1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])
    codes = (np.arange(8 * 64).reshape(8, 64) * 5 + np.arange(8)[:, None]) % 16
    words = (codes.reshape(8, 8, 8).astype(np.uint64) << (4 * np.arange(8, dtype=np.uint64))).sum(-1)
    scales = np.array([[100, 127], [140, 160], [254, 200], [127, 130]] * 2, np.uint8)
    x = randn((1, 64), seed=9) * 2.0 ** -20
    w = e2m1[codes] * np.exp2(np.repeat(scales.astype(np.float64), 32, 1) - 127)
    x64 = np.array(x, np.float64)
    ours = ops.quantized_matmul(x, mx.array(words.astype(np.uint32)), mx.array(scales), mode="mxfp4")
    bound = 1e-5 * (np.abs(x64) @ np.abs(w).T)  # a float32 dot product's error, row by row
    assert np.all(np.abs(np.array(ours, np.float64) - x64 @ w.T) <= bound)


@pytest.mark.parametrize("mode", ["mxfp4", "mxfp8", "nvfp4"])
@pytest.mark.parametrize("target, dtype", [("apple9:3.2", "float16"), ("apple9:3.2", "bfloat16"),
                                           ("apple10:4.0", "float16"), ("apple10:4.0", "bfloat16")])
def test_float_modes_tiled_through_dot_scaled(monkeypatch, target, dtype, mode):
    # M > 8 with 16-bit activations: the packed bytes and scales go to tl.dot_scaled as the MX
    # format (`_qmm_mx`; nvfp4's E4M3 scales a group of 16 as Triton's NVFP4 operand takes
    # them): fragments on apple9:3.2, each SIMD group's tensor-op inputs on apple10:4.0. M = 70,
    # N = 96 leave partial tiles, K = 160 a partial K step. Against float64 on MLX's own
    # dequantization: float32 sums, rounded once to the dtype
    from triton_metal.ops import quantized
    from triton_metal.runtime.heuristics import base_jit_function

    monkeypatch.setenv("TRITON_METAL_TARGET", target)
    monkeypatch.delenv("TRITON_METAL_TUNE_OPS", raising=False)
    monkeypatch.setattr(quantized._qmm_mx, "cache", {})
    M, N, K = 70, 96, 160
    number, group, bits = quantized.FLOAT_MODES[mode]
    x = randn((M, K), dtype, seed=13)
    wq, s = _quantized(N, K, True, mode=mode)
    y = ops.quantized_matmul(x, wq, s, mode=mode)
    w64 = np.array(mx.dequantize(wq, s, group_size=group, bits=bits, mode=mode).astype(mx.float32), np.float64)
    ref = np.array(x.astype(mx.float32), np.float64) @ w64.T
    ulp = 2.0 ** (-11 if dtype == "float16" else -8)
    np.testing.assert_allclose(np.array(y.astype(mx.float32)), ref, rtol=ulp, atol=ulp * np.abs(ref).max())
    cf = quantized._qmm_mx.best_config
    compiled = base_jit_function(quantized._qmm_mx).warmup(x, wq, s, y, M, N, K, XF=quantized._MX_FORMATS[dtype],
                                                           MODE=number, grid=(1,), **cf.all_kwargs())
    (report,) = compiled.msl.metadata["dot_reports"]
    operand = "e4m3" if mode == "mxfp8" else "e2m1"
    assert report["dtypes"] == f"{quantized._MX_FORMATS[dtype]} x {operand} -> f32"
    if target == "apple10:4.0":
        assert (report["path"], report["input_tensors"], report["warp_tile"]) == ("tensor_ops", (32, 32), (32, 32))
    else:
        assert report["path"] == "simdgroup" and report["fragments_per_simdgroup"] == 16
    assert report["barriers_per_k_step"] == 2


def test_mxfp4_tiled_float32_and_gradient_keep_the_dequantizing_kernel(monkeypatch):
    # float32 activations have no MX operand format, and the gradient's groups run along its
    # output: both take `_qmm`, whose tiles decode every element before the tl.dot
    from triton_metal.ops import quantized

    calls, run = [], quantized._qmm_mx.run
    monkeypatch.setattr(quantized._qmm_mx, "run", lambda *a, **k: (calls.append(k["XF"]), run(*a, **k))[1])
    x = randn((2, 12, 96))
    wq, s = _quantized(64, 96, True, group_size=32, mode="mxfp4")
    kw = dict(group_size=32, mode="mxfp4")
    ours = lambda a: ops.quantized_matmul(a, wq, s, **kw)  # noqa: E731
    ref = lambda a: mx.quantized_matmul(a, wq, s, **kw)  # noqa: E731
    assert_close(ours(x), ref(x), "float32", scale=20)
    check_grads(ours, ref, (x.astype(mx.float16),), "float16", scale=50)
    assert calls == ["fp16"]  # the float16 forward alone


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_activations(dtype):
    x = randn((5, 128), dtype)
    w = randn((48, 128), dtype, seed=5)
    wq, s, b = mx.quantize(w, group_size=64, bits=4)
    # MLX's CPU result in float32 from the same quantized weights, rounded to the dtype
    expected = mx.quantized_matmul(x.astype(mx.float32), wq, s.astype(mx.float32), b.astype(mx.float32),
                                   group_size=64, bits=4).astype(x.dtype)
    assert_close(ops.quantized_matmul(x, wq, s, b, group_size=64, bits=4), expected, dtype, scale=20)


def test_non_contiguous_activations():
    x = mx.swapaxes(randn((128, 3)), 0, 1)
    wq, s, b = _quantized(40, 128, True, group_size=32, bits=4)
    assert_close(ops.quantized_matmul(x, wq, s, b, group_size=32), mx.quantized_matmul(x, wq, s, b, group_size=32),
                 "float32", scale=20)


def test_int8_matmul():
    w, x = randn((40, 96), seed=1), randn((2, 3, 96))
    wq, s = ops.pack_int8(w)
    assert wq.dtype == mx.int8 and s.shape == (40,)
    np.testing.assert_allclose(np.array(wq.astype(mx.float32) * s[:, None]), np.array(w), atol=float(s.max()))
    ref = lambda a: a @ (wq.astype(mx.float32) * s[:, None]).T  # noqa: E731
    assert_close(ops.int8_matmul(x, wq, s), ref(x), "float32", scale=20)
    check_grads(lambda a: ops.int8_matmul(a, wq, s), ref, (x,), "float32", scale=50)


def test_ternary_matmul():
    w, x = randn((40, 96), seed=1), randn((5, 96))
    wp, ws = ops.pack_ternary(w)
    xq, xs = ops.quantize_activations(x)
    assert wp.shape == (40, 24) and wp.dtype == mx.uint8 and ws.shape == ()
    # unpack independently: code = value + 1, four per byte from the low bits
    codes = (np.array(wp)[:, :, None] >> np.array([0, 2, 4, 6], np.uint8)) & 3
    ternary = codes.reshape(40, 96).astype(np.float32) - 1
    expected_codes = np.clip(np.round(np.array(w) / float(ws)), -1, 1)
    np.testing.assert_array_equal(ternary, expected_codes)
    ref = (np.array(xq).astype(np.float32) * np.array(xs)[:, None]) @ (ternary * float(ws)).T
    np.testing.assert_allclose(np.array(ops.ternary_matmul(xq, xs, wp, ws)), ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("call, match", [
    (lambda q: ops.quantized_matmul(mx.zeros((2, 100)), *q), "quantized_matmul: argument 'x': last axis 100"),
    (lambda q: ops.quantized_matmul(mx.zeros((2, 128)), *q, bits=8), "quantized_matmul: argument 'scales': expected shape"),
    (lambda q: ops.quantized_matmul(mx.zeros((2, 128)), *q, bits=7), "argument 'bits'"),
    (lambda q: ops.quantized_matmul(mx.zeros((2, 128)), q[0], q[1], None), "argument 'biases'"),
    (lambda q: ops.quantized_matmul(mx.zeros((2, 128)), q[0].astype(mx.int32), q[1], q[2]), "argument 'w': dtype int32"),
    (lambda q: ops.quantized_matmul(mx.zeros((2, 128), mx.float16), *q), "argument 'scales': dtype float32 differs"),
    (lambda q: ops.quantized_matmul(mx.zeros((2, 128)), *q, mode="mxfp6"), "argument 'mode'"),
    (lambda q: ops.quantized_matmul(mx.zeros((2, 128)), q[0], q[1].astype(mx.uint8), mode="nvfp4", group_size=32),
     "nvfp4 takes group_size 16 and bits 4, got 32 and 4"),
    (lambda q: ops.quantized_matmul(mx.zeros((2, 128)), q[0], q[1].astype(mx.uint8), mode="mxfp8", bits=4),
     "mxfp8 takes group_size 32 and bits 8, got 32 and 4"),
    (lambda q: ops.quantized_matmul(mx.zeros((2, 128)), *q, mode="mxfp8"), "argument 'biases': mxfp8 has no biases"),
    (lambda q: ops.quantized_matmul(mx.zeros((2, 128)), q[0], q[1], mode="nvfp4"), "argument 'scales': dtype float32"),
    (lambda q: ops.int8_matmul(mx.zeros((2, 128)), mx.zeros((4, 128), mx.int8), mx.zeros((3,))), "int8_matmul: argument 'scales'"),
    (lambda q: ops.ternary_matmul(mx.zeros((2, 8), mx.int8), mx.zeros((2,)), mx.zeros((4, 3), mx.uint8), mx.array(1.0)), "ternary_matmul: argument 'w_packed'"),
])
def test_bad_input(call, match):
    q = _quantized(16, 128, True, group_size=64, bits=4)
    with pytest.raises(ops.OpArgumentError, match=match):
        call(q)


def test_tiled_steel_like_config():
    # the tiled kernel at its 64 x 64 config on 2 x 2 SIMD groups (operands staged together,
    # double-buffered over three K steps), fp16 activations, against MLX's own op
    from triton_metal.ops import quantized
    from triton_metal.runtime.heuristics import base_jit_function

    M, N, K, group, bits = 70, 96, 96, 32, 4
    x = randn((M, K)).astype(mx.float16)
    wq, s, b = mx.quantize(randn((N, K), seed=5).astype(mx.float16), group_size=group, bits=bits)
    y = mx.zeros((M, N), mx.float16)
    kernel = base_jit_function(quantized._qmm)
    kernel[(2, 2)](x, wq, s, b, y, M, N, K, wq.shape[1], s.shape[1], bits, group.bit_length() - 1,
                   TRANS=True, MODE=quantized.AFFINE, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, num_warps=4)
    ref = mx.quantized_matmul(x, wq, s, b, transpose=True, group_size=group, bits=bits)
    assert_close(y, ref, "float16", scale=20)


def _affine_float64(wq, s, b, bits):
    """The dequantized (N, K) matrix in float64, unpacked with NumPy from `mx.quantize`'s words
    (codes of `bits` bits, little-endian within each uint32, one scale and bias per group)."""
    words = np.array(wq).astype(np.uint64)
    per_word = 32 // bits
    codes = (words[:, :, None] >> (np.arange(per_word, dtype=np.uint64) * bits)) & ((1 << bits) - 1)
    codes = codes.reshape(words.shape[0], -1).astype(np.float64)
    group = codes.shape[1] // s.shape[1]
    scales = np.repeat(np.array(s.astype(mx.float32), np.float64), group, axis=1)
    biases = np.repeat(np.array(b.astype(mx.float32), np.float64), group, axis=1)
    return codes * scales + biases


@pytest.mark.parametrize("target, path, dtype", [
    ("apple7:3.1", "simdgroup", "float16"), ("apple9:3.2", "simdgroup", "float16"),
    ("apple10:4.0", "tensor_ops", "float16"), ("apple10:4.0", "tensor_ops", "float32"),
])
def test_tiled_default_tile_on_each_target(monkeypatch, target, path, dtype):
    # the default tiled config (nothing tuned): 64 x 64 x 32 on 2 x 2 SIMD groups (simdgroup
    # matrices, steel's reuse) or one tensor-op tile whose K loop carries the accumulator (MSL
    # 4.0; in fp32 too, its accumulator staged over the operands' bytes); M = 70 and N = 96
    # leave partial tiles, K = 160 five K steps; against float64 on the NumPy-unpacked weights
    from triton_metal.ops import quantized
    from triton_metal.runtime.heuristics import base_jit_function

    monkeypatch.setenv("TRITON_METAL_TARGET", target)
    monkeypatch.delenv("TRITON_METAL_TUNE_OPS", raising=False)
    monkeypatch.setattr(quantized._qmm, "cache", {})
    M, N, K, group, bits = 70, 96, 160, 32, 4
    x = randn((M, K), dtype, seed=11)
    wq, s, b = mx.quantize(randn((N, K), dtype, seed=12), group_size=group, bits=bits)
    y = ops.quantized_matmul(x, wq, s, b, group_size=group, bits=bits)
    ref = np.array(x.astype(mx.float32), np.float64) @ _affine_float64(wq, s, b, bits).T
    # float32 sums (rounded once to float16)
    tol = 2e-3 if dtype == "float16" else 2e-5
    np.testing.assert_allclose(np.array(y.astype(mx.float32)), ref, rtol=tol, atol=tol * np.abs(ref).max())
    cf = quantized._qmm.best_config
    assert (cf.kwargs["BLOCK_M"], cf.kwargs["BLOCK_N"], cf.kwargs["BLOCK_K"], cf.num_warps) == (64, 64, 32, 4)
    compiled = base_jit_function(quantized._qmm).warmup(
        x, wq, s, b, y, M, N, K, wq.shape[1], s.shape[1], bits, group.bit_length() - 1, TRANS=True,
        MODE=quantized.AFFINE, grid=(1,), **cf.all_kwargs())
    (report,) = compiled.msl.metadata["dot_reports"]
    assert report["path"] == path
    # one barrier a K step where two sets of the operands fit the 16 KiB of double buffers
    assert report["barriers_per_k_step"] == (1 if dtype == "float16" else 2)
    if path == "simdgroup":
        assert (report["fragments_per_simdgroup"], report["products_per_load"]) == (16, 2)
    else:
        assert report["form"] == "carried"


@pytest.mark.parametrize("bits, group_size, K", [(4, 64, 96), (8, 64, 96), (2, 32, 48)])
def test_a_row_of_a_partial_group_is_refused_as_mlx_refuses_it(bits, group_size, K):
    """Scales come one per whole group: a packed row whose K leaves a partial group (a slice of
    a quantized matrix) has no scale for its tail, which a launch would drop or read past."""
    w = mx.random.normal((3, 2 * K), key=mx.random.key(0))
    wq, s, b = mx.quantize(w, group_size=group_size, bits=bits)
    words = K * bits // 32
    wq, s, b = wq[:, :words], s[:, :K // group_size], b[:, :K // group_size]
    x = mx.ones((1, K))
    with pytest.raises(ValueError, match=f"not a whole number of groups of {group_size}"):
        ops.quantized_matmul(x, wq, s, b, group_size=group_size, bits=bits)
    with pytest.raises(ValueError):
        mx.quantized_matmul(x, wq, s, b, group_size=group_size, bits=bits)
