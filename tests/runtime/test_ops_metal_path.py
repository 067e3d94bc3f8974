"""The ops whose kernels changed most recently (the norms, the activations' backward, prefill and
decode attention, the quantized GEMV and tiled matmul among them), on the Metal path: the
recording `metal_kernel` stand-in runs the exact MSL on the emulator into sentinel-filled
outputs, so an element a kernel fails to write shows up, and the results are compared with MLX's
own ops (or float64)."""

from __future__ import annotations

import numpy as np
import pytest

mx = pytest.importorskip("mlx.core")

from triton_metal import ops  # noqa: E402


def _close(got, want, tol):
    np.testing.assert_allclose(np.array(got.astype(mx.float32)), np.array(want.astype(mx.float32)),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("n_cols", [300, 4096, 16384, 16385])
@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16])
def test_softmax(metal_stand_in, dtype, n_cols):
    # rows of 4096 take a program of 4 warps or more, whose runs of 8 16-bit elements move as one
    # 16-byte access (docs/codegen.md); rows of 300 a smaller program, with 8-byte vectors; rows
    # of 16384, the longest held in registers, 16 warps, and one more element streams the row
    x = mx.array(np.random.default_rng(0).standard_normal((6, n_cols)).astype(np.float32)).astype(dtype)
    _close(ops.softmax(x, axis=-1), mx.softmax(x.astype(mx.float32), axis=-1), 1e-2)
    assert metal_stand_in.fast.launches
    if n_cols == 4096:
        assert any("uint4" in c["source"] for c in metal_stand_in.fast.factory_calls)


def _logits(seed: int, rows: int, classes: int) -> tuple[mx.array, mx.array, mx.array]:
    """bfloat16 logits, int32 targets, and the logits' log-softmax in float32 (the reference)."""
    rng = np.random.default_rng(seed)
    logits = mx.array(rng.standard_normal((rows, classes)).astype(np.float32)).astype(mx.bfloat16)
    targets = mx.array(rng.integers(0, classes, rows).astype(np.int32))
    lf = logits.astype(mx.float32)
    return logits, targets, lf - mx.logsumexp(lf, axis=-1, keepdims=True)


def test_entropy_and_cross_entropy(metal_stand_in):
    logits, targets, logp = _logits(1, 5, 1000)
    _close(ops.entropy(logits), -(mx.exp(logp) * logp).sum(axis=-1), 2e-2)
    want = -mx.take_along_axis(logp, targets[:, None], axis=-1)[:, 0]
    _close(ops.cross_entropy(logits, targets), want, 2e-2)


def test_streamed_cross_entropy_with_label_smoothing(metal_stand_in):
    # rows of 5000 logits, longer than a block of 4096: streamed, a masked tail block, label
    # smoothing's sum of the logits, into sentinel-filled outputs
    logits, targets, logp = _logits(2, 3, 5000)
    nll = -mx.take_along_axis(logp, targets[:, None], axis=-1)[:, 0]
    _close(ops.cross_entropy(logits, targets, label_smoothing=0.1), 0.9 * nll - 0.1 * logp.mean(axis=-1), 2e-2)
    assert any(call["name"].startswith("_xent_fwd") for call in metal_stand_in.fast.launches)


def test_rope(metal_stand_in):
    x = mx.array(np.random.default_rng(2).standard_normal((1, 4, 16, 64)).astype(np.float16))
    got = ops.rope(x, 64, traditional=False, base=10000.0, scale=1.0, offset=3)
    _close(got, mx.fast.rope(x, 64, traditional=False, base=10000.0, scale=1.0, offset=3), 3e-3)
    assert metal_stand_in.fast.launches


@pytest.mark.parametrize("bits", [4, 8])
def test_quantized_gemv(metal_stand_in, bits):
    rng = np.random.default_rng(3)
    # K = 4096: the shape whose default config reads runs of words as vectors
    w = mx.array(rng.standard_normal((64, 4096)).astype(np.float32)).astype(mx.float16)
    x = mx.array(rng.standard_normal((1, 4096)).astype(np.float32)).astype(mx.float16)
    wq, scales, biases = mx.quantize(w, group_size=64, bits=bits)
    got = ops.quantized_matmul(x, wq, scales, biases, transpose=True, group_size=64, bits=bits)
    # against float64 of the dequantized weights (MLX's CPU quantized_matmul rounds more on the way)
    dense = np.array(mx.dequantize(wq, scales, biases, group_size=64, bits=bits).astype(mx.float32))
    want = np.array(x.astype(mx.float32)).astype(np.float64) @ dense.astype(np.float64).T
    err = np.abs(np.array(got.astype(mx.float32)) - want).max()
    assert err <= 3e-3 * np.abs(want).max()
    assert metal_stand_in.fast.launches


@pytest.mark.parametrize("n_keys, group, shape", [(300, 4, (4, 4, 2, 1)), (64, 4, (4, 4, 2, 2)),
                                                  (64, 8, (2, 4, 1, 4)), (300, 8, (2, 4, 1, 2)),
                                                  (16640, 4, (2, 4, 1, 2))])
def test_decode_attention(metal_stand_in, monkeypatch, n_keys, group, shape):
    # one query, groups of 4 or 8 query heads over 2 kv heads of 128 in float16: splits of 64
    # keys (the last one short at 300; one split at 64), or of 256 past 16384 keys, then the
    # combine, each on its default config (SLOTS, ROWS, SIMD groups, HSPLIT: the group over one,
    # two or four programs); both launches write every element of their outputs as they are (no
    # init_value fill, no merge), which the sentinels check
    from triton_metal.ops import _common, attention

    monkeypatch.setattr(_common, "tuning_enabled", lambda: False)
    monkeypatch.setattr(attention._attn_decode, "cache", {})
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal(s).astype(np.float16)
               for s in ((1, 2 * group, 1, 128), (1, 2, n_keys, 128), (1, 2, n_keys, 128)))
    got = ops.scaled_dot_product_attention(mx.array(q), mx.array(k), mx.array(v), scale=128 ** -0.5)
    best = attention._attn_decode.best_config
    assert (best.kwargs["SLOTS"], best.kwargs["ROWS"], best.num_warps, best.kwargs["HSPLIT"]) == shape
    kr, vr = (np.repeat(a.astype(np.float64), group, axis=1) for a in (k, v))
    s = q.astype(np.float64) @ kr.transpose(0, 1, 3, 2) * 128 ** -0.5
    p = np.exp(s - s.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ vr
    assert np.abs(np.array(got.astype(mx.float32)) - want).max() <= 3e-3 * np.abs(want).max()
    launches = metal_stand_in.fast.launches
    names = [call["name"].rsplit("_", 1)[0] for call in launches[-2:]]
    assert names == ["_attn_decode", "_attn_decode_combine"]
    assert all(call.get("init_value") is None for call in launches)


@pytest.mark.parametrize("rows, n", [(40, 256), (300, 256), (40, 16400)])
@pytest.mark.parametrize("kind", ["rms", "layer"])
def test_norm_backward(metal_stand_in, kind, rows, n):
    # rows of 256 over the persistent grid (a program a row at 40; at 300, 64 programs of 4 or 5
    # rows: at least 16 rows a program where that leaves one a core), or 40 streamed rows of
    # 16400 (the weight's and bias's partials from runs of rows a column block), then the
    # partials' sum on its tuned tile; the gradients of x, the weight and the bias against
    # MLX's own norms
    rng = np.random.default_rng(5)
    x, dy = (mx.array(rng.standard_normal((rows, n)).astype(np.float32)) for _ in range(2))
    w, b = (mx.array(rng.standard_normal(n).astype(np.float32)) for _ in range(2))
    if kind == "rms":
        def ours(x, w, b):
            return ops.rms_norm(x, w, 1e-5) * dy

        def theirs(x, w, b):
            return mx.fast.rms_norm(x, w, 1e-5) * dy
    else:
        def ours(x, w, b):
            return ops.layer_norm(x, w, b, 1e-5) * dy

        def theirs(x, w, b):
            return mx.fast.layer_norm(x, w, b, 1e-5) * dy
    got = mx.grad(lambda *a: ours(*a).sum(), argnums=(0, 1, 2))(x, w, b)
    want = mx.grad(lambda *a: theirs(*a).sum(), argnums=(0, 1, 2))(x, w, b)
    for g, e in zip(got[: 3 if kind == "layer" else 2], want):
        _close(g, e, 1e-4)
    assert metal_stand_in.fast.launches


@pytest.mark.parametrize("target, d", [(None, 128), ("apple10:4.0", 64)])
def test_prefill_attention(metal_stand_in, monkeypatch, target, d):
    # fp16 heads of 128, 64 queries over 2 kv heads, causal, against float64, on the tile that
    # Metal's tuning picks (here by the stand-in's timings); at head dim 64 on an MSL 4.0 target
    # that is 16 x 16 on 2 SIMD groups, no whole tensor-op tile, so both dots keep simdgroup
    # matrices (the default tile's tensor-op output: the next test)
    if target is not None:
        monkeypatch.setenv("TRITON_METAL_TARGET", target)
    rng = np.random.default_rng(6)
    q = rng.standard_normal((1, 4, 64, d)).astype(np.float16)
    k, v = (rng.standard_normal((1, 2, 64, d)).astype(np.float16) for _ in range(2))
    got = ops.scaled_dot_product_attention(mx.array(q), mx.array(k), mx.array(v), scale=d ** -0.5,
                                           mask="causal")
    kr, vr = (np.repeat(a.astype(np.float64), 2, axis=1) for a in (k, v))
    s = q.astype(np.float64) @ kr.transpose(0, 1, 3, 2) * d ** -0.5
    s = np.where(np.tril(np.ones((64, 64), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ vr
    assert np.abs(np.array(got.astype(mx.float32)) - want).max() <= 3e-3 * np.abs(want).max()
    assert metal_stand_in.fast.launches
    if target is not None:
        # the variant that ran last (an autotuner without a cached choice builds one per config)
        ran = [launch["name"] for launch in metal_stand_in.fast.launches if "attn" in launch["name"]][-1]
        [call] = [c for c in metal_stand_in.fast.factory_calls if c["name"] == ran]
        assert f"compiled for {target}" in call["header"]
        assert "simdgroup_multiply_accumulate" in call["source"] and "matmul2d" not in call["source"]


def test_prefill_attention_output_on_tensor_ops(metal_stand_in, monkeypatch):
    # head dim 64 on apple10:4.0, 100 queries over 130 keys (a partial second query tile, a
    # partial last key block), causal, on the forward's default (64 x 32, 4 SIMD groups; the
    # tuning that Metal runs is off so that the default is what runs): the output accumulator
    # stays the tensor op's cooperative tensor, rescaled in place every key block (docs/dot.md,
    # "Metal 4 tensor ops"), and every element of the sentinel-filled outputs is written,
    # against float64
    from triton_metal.ops import _common, attention

    monkeypatch.setenv("TRITON_METAL_TARGET", "apple10:4.0")
    monkeypatch.setattr(_common, "tuning_enabled", lambda: False)
    monkeypatch.setattr(attention._attn_fwd, "cache", {})
    rng = np.random.default_rng(8)
    q = rng.standard_normal((1, 2, 100, 64)).astype(np.float16)
    k, v = (rng.standard_normal((1, 1, 130, 64)).astype(np.float16) for _ in range(2))
    got = ops.scaled_dot_product_attention(mx.array(q), mx.array(k), mx.array(v), scale=0.125, mask="causal")
    kr, vr = (np.repeat(a.astype(np.float64), 2, axis=1) for a in (k, v))
    s = q.astype(np.float64) @ kr.transpose(0, 1, 3, 2) * 0.125
    s = np.where(np.tril(np.ones((100, 130), bool), k=30), s, -np.inf)  # the last query sees every key
    p = np.exp(s - s.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ vr
    assert np.abs(np.array(got.astype(mx.float32)) - want).max() <= 3e-3 * np.abs(want).max()
    ran = {launch["name"] for launch in metal_stand_in.fast.launches if "attn" in launch["name"]}
    [call] = [c for c in metal_stand_in.fast.factory_calls if c["name"] in ran]
    assert "km_tensor_scale_rows(" in call["source"] and "matmul2d<" in call["header"]


def test_quantized_matmul_tiled(metal_stand_in):
    # M = 16 > 8: the tiled kernel on its default 64 x 64 x 32 tile, against float64 of the
    # dequantized weights
    rng = np.random.default_rng(7)
    w = mx.array(rng.standard_normal((64, 256)).astype(np.float32)).astype(mx.float16)
    x = mx.array(rng.standard_normal((16, 256)).astype(np.float32)).astype(mx.float16)
    wq, scales, biases = mx.quantize(w, group_size=64, bits=4)
    got = ops.quantized_matmul(x, wq, scales, biases, transpose=True, group_size=64, bits=4)
    dense = np.array(mx.dequantize(wq, scales, biases, group_size=64, bits=4).astype(mx.float32))
    want = np.array(x.astype(mx.float32)).astype(np.float64) @ dense.astype(np.float64).T
    assert np.abs(np.array(got.astype(mx.float32)) - want).max() <= 3e-3 * np.abs(want).max()
    assert metal_stand_in.fast.launches


def _float_mode_error(mode: str, rows: int, K: int, N: int, seed: int) -> float:
    """`ops.quantized_matmul` in a float `mode` on float16 activations (rows x K) and N random
    weight rows: its largest error against float64 of MLX's dequantization, over the largest
    value."""
    from triton_metal.ops import quantized

    rng = np.random.default_rng(seed)
    _, group, bits = quantized.FLOAT_MODES[mode]
    wq, scales = mx.quantize(mx.array(rng.standard_normal((N, K)).astype(np.float32)), mode=mode)
    x = mx.array(rng.standard_normal((rows, K)).astype(np.float32)).astype(mx.float16)
    got = np.array(ops.quantized_matmul(x, wq, scales, mode=mode).astype(mx.float32))
    dense = np.array(mx.dequantize(wq, scales, group_size=group, bits=bits, mode=mode).astype(mx.float32))
    want = np.array(x.astype(mx.float32)).astype(np.float64) @ dense.astype(np.float64).T
    return float(np.abs(got - want).max() / np.abs(want).max())


@pytest.mark.parametrize("mode", ["mxfp4", "mxfp8", "nvfp4"])
@pytest.mark.parametrize("target", ["apple9:3.2", "apple10:4.0"])
def test_float_mode_matmul_tiled_through_dot_scaled(metal_stand_in, monkeypatch, target, mode):
    # the float modes at M = 40 > 8 with float16 activations: `_qmm_mx` (tl.dot_scaled) on its
    # default 64 x 64 x 64 tile, fragments or each SIMD group's input cooperative tensors,
    # partial tiles in M and N, into sentinel-filled outputs, against float64 of MLX's
    # dequantization
    from triton_metal.ops import _common, quantized

    monkeypatch.setenv("TRITON_METAL_TARGET", target)
    monkeypatch.setattr(_common, "tuning_enabled", lambda: False)
    monkeypatch.setattr(quantized._qmm_mx, "cache", {})
    assert _float_mode_error(mode, rows=40, K=192, N=96, seed=8) <= 2.0 ** -11
    [call] = [c for c in metal_stand_in.fast.factory_calls if c["name"].startswith("_qmm_mx")]
    assert ("km_sg_run<32, 32>(" in call["source"]) == (target == "apple10:4.0")


@pytest.mark.parametrize("mode", ["affine", "mxfp4"])
def test_gemv_default_from_two_rows(metal_stand_in, monkeypatch, mode):
    # M = 4: the GEMV on the default of 2 rows of x or more (fewer words of a row a thread), into
    # sentinel-filled outputs, against float64 of MLX's dequantization
    from triton_metal.ops import _common, quantized

    monkeypatch.setattr(_common, "tuning_enabled", lambda: False)
    monkeypatch.setattr(quantized._gemv, "cache", {})
    rng = np.random.default_rng(7)
    w = mx.array(rng.standard_normal((72, 4096)).astype(np.float32))
    kw = dict(group_size=64, bits=4) if mode == "affine" else dict(mode=mode)
    wq, *sb = mx.quantize(w.astype(mx.float16) if mode == "affine" else w, **kw)
    x = mx.array(rng.standard_normal((4, 4096)).astype(np.float32)).astype(mx.float16)
    got = np.array(ops.quantized_matmul(x, wq, *sb, **kw).astype(mx.float32))
    exact = [a.astype(mx.float32) if a.dtype == mx.float16 else a for a in sb]
    dense = np.array(mx.dequantize(wq, *exact, **kw).astype(mx.float32)).astype(np.float64)
    want = np.array(x.astype(mx.float32)).astype(np.float64) @ dense.T
    assert np.abs(got - want).max() <= 2.0 ** -10 * np.abs(want).max()
    best = quantized._gemv.best_config
    number = quantized.AFFINE if mode == "affine" else quantized.MXFP4
    assert (best.kwargs["BLOCK_N"], best.kwargs["BLOCK_G"], best.kwargs["WPT"], best.num_warps) == \
        quantized._GEMV_DEFAULT_ROWS[number]
    assert [c for c in metal_stand_in.fast.factory_calls if c["name"].startswith("_gemv")]


@pytest.mark.parametrize("mode", ["mxfp8", "nvfp4"])
def test_float_mode_gemv(metal_stand_in, monkeypatch, mode):
    # M = 1: the GEMV on its default config (its codes and, for nvfp4, its E4M3 scales decoded by
    # bit moves), into sentinel-filled outputs, against float64 of MLX's dequantization
    from triton_metal.ops import _common, quantized

    monkeypatch.setattr(_common, "tuning_enabled", lambda: False)
    monkeypatch.setattr(quantized._gemv, "cache", {})
    assert _float_mode_error(mode, rows=1, K=8192, N=72, seed=9) <= 2.0 ** -11
    best = quantized._gemv.best_config
    assert (best.kwargs["BLOCK_N"], best.kwargs["BLOCK_G"], best.kwargs["WPT"], best.num_warps) == \
        quantized._GEMV_DEFAULT[quantized.FLOAT_MODES[mode][0]]
    assert [c for c in metal_stand_in.fast.factory_calls if c["name"].startswith("_gemv")]


@pytest.mark.parametrize("mode, M, transpose", [("mxfp4", 1, True), ("mxfp8", 2, True), ("nvfp4", 1, True),
                                               ("mxfp4", 3, False), ("mxfp8", 20, False)])
def test_float_mode_scales_are_exact(metal_stand_in, mode, M, transpose):
    # the emulator computes Metal's fast exp2 exactly, but a GPU need not (docs/language.md):
    # every E8M0 scale and E2M1 exponent is built from bits, so no kernel of the float modes
    # calls exp2; its values against MLX's own op
    rng = np.random.default_rng(10)
    w = mx.array(rng.standard_normal((64, 256) if transpose else (256, 64)).astype(np.float32))
    x = mx.array(rng.standard_normal((M, 256)).astype(np.float32))
    wq, scales = mx.quantize(w, mode=mode)
    got = ops.quantized_matmul(x, wq, scales, transpose=transpose, mode=mode)
    want = mx.quantized_matmul(x, wq, scales, transpose=transpose, mode=mode)
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-5, atol=1e-5 * float(mx.abs(want).max()))
    calls = [c for c in metal_stand_in.fast.factory_calls if c["name"].startswith(("_gemv", "_qmv", "_qmm"))]
    assert calls and not [c["name"] for c in calls if "exp2" in c["source"] + c["header"]]


@pytest.mark.parametrize("n", [1000, 16385])  # held in registers, and streamed twice
def test_layer_norm_far_from_zero(metal_stand_in, n):
    # rows of 1e4 + N(0, 1): the forward's correctly rounded statistics and the streamed path's
    # shifted sums, and the long rows' backward, against float64
    rng = np.random.default_rng(8)
    x64 = 1e4 + rng.standard_normal((2, n))
    dy64 = rng.standard_normal((2, n))
    x, dy = mx.array(x64.astype(np.float32)), mx.array(dy64.astype(np.float32))
    x64 = np.asarray(x, np.float64)  # the float32 inputs, exactly
    xhat = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(np.array(ops.layer_norm(x, None, None, 1e-5)), xhat, atol=2e-2)
    dx = mx.grad(lambda x: (ops.layer_norm(x, None, None, 1e-5) * dy).sum())(x)
    rstd = 1.0 / np.sqrt(x64.var(-1, keepdims=True) + 1e-5)
    want = rstd * (dy64 - dy64.mean(-1, keepdims=True) - xhat * (dy64 * xhat).mean(-1, keepdims=True))
    np.testing.assert_allclose(np.array(dx), want, atol=2e-2)
    assert metal_stand_in.fast.launches


@pytest.mark.parametrize("op", [ops.gelu_approx, ops.silu])
def test_activation_gradients(metal_stand_in, op):
    # the backward's sigmoid slope over inputs from -20 to 1e4, against MLX's own activations
    x = mx.array(np.concatenate([np.linspace(-20, 20, 301), [100.0, 1e3, 1e4]]).astype(np.float32))
    ref = {ops.gelu_approx: lambda t: mx.sigmoid(1.5957691216057308 * (t + 0.044715 * t ** 3)) * t,
           ops.silu: lambda t: t * mx.sigmoid(t)}[op]
    _close(mx.grad(lambda t: op(t).sum())(x), mx.grad(lambda t: ref(t).sum())(x), 1e-4)
    assert metal_stand_in.fast.launches


@pytest.mark.parametrize("dtype, default", [(mx.float16, (0, 1, 8)), (mx.bfloat16, (1, 0, 16))])
def test_layer_norm_backward_default_on_rows_of_4096(metal_stand_in, monkeypatch, dtype, default):
    # float16 rows of 4096 read the next row ahead on 8 SIMD groups by default, their rows
    # strided; bfloat16 ones take runs of rows on 16 (norms._bwd_default). The tuning that Metal
    # runs is off so that the default is what runs, into sentinel-filled outputs; the gradients
    # against MLX's own layer norm
    from triton_metal.ops import _common, norms

    monkeypatch.setattr(_common, "tuning_enabled", lambda: False)
    monkeypatch.setattr(norms._norm_bwd, "cache", {})
    rng = np.random.default_rng(6)
    x, dy = (mx.array(rng.standard_normal((40, 4096)).astype(np.float32)).astype(dtype) for _ in range(2))
    w, b = (mx.array(rng.standard_normal(4096).astype(np.float32)).astype(dtype) for _ in range(2))

    def grads(norm):
        return mx.grad(lambda *a: (norm(*a, 1e-5).astype(mx.float32) * dy.astype(mx.float32)).sum(),
                       argnums=(0, 1, 2))(x, w, b)

    for g, e in zip(grads(ops.layer_norm), grads(mx.fast.layer_norm)):
        np.testing.assert_allclose(np.array(g.astype(mx.float32)), np.array(e.astype(mx.float32)),
                                   rtol=3e-2, atol=3e-2 * float(mx.abs(e.astype(mx.float32)).max()))
    assert norms._bwd_shape(norms._norm_bwd.best_config) == default
    assert any(launch["name"].startswith("_norm_bwd") for launch in metal_stand_in.fast.launches)


@pytest.mark.parametrize("warps, form", [(4, "km_sg_run<16, 16>("), (8, "km_tensor_run<")])
def test_scaled_dot_k_loop_on_tensor_ops(metal_stand_in, monkeypatch, warps: int, form: str):
    # tl.dot_scaled's K loop on apple10:4.0: the accumulator stays in tensor-op cooperative
    # tensors, its operands dequantized each K step into each SIMD group's input cooperative
    # tensors (4 SIMD groups: one 16 x 16 block each) or into bfloat16 tiles (8: docs/fp8.md);
    # e2m1 x e4m3 (uint8 codes) with e8m0 scales, into a sentinel-filled output, against float64
    import triton_metal as triton
    import triton_metal.language as tl
    from triton_metal.fp8 import FORMATS, decode

    @triton.jit
    def scaled_gemm(a_ptr, sa_ptr, b_ptr, sb_ptr, c_ptr, K, M: tl.constexpr, N: tl.constexpr, BK: tl.constexpr):
        rm, rn = tl.arange(0, M), tl.arange(0, N)
        acc = tl.zeros((M, N), tl.float32)
        for k0 in range(0, K, BK):
            ka, kb, ks = k0 // 2 + tl.arange(0, BK // 2), k0 + tl.arange(0, BK), k0 // 32 + tl.arange(0, BK // 32)
            a = tl.load(a_ptr + rm[:, None] * (K // 2) + ka[None, :])
            b = tl.load(b_ptr + kb[:, None] * N + rn[None, :])
            sa = tl.load(sa_ptr + rm[:, None] * (K // 32) + ks[None, :])
            sb = tl.load(sb_ptr + rn[:, None] * (K // 32) + ks[None, :])
            acc = tl.dot_scaled(a, sa, "e2m1", b, sb, "e4m3", acc)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)

    monkeypatch.setenv("TRITON_METAL_TARGET", "apple10:4.0")
    m = n = 32
    k = 128
    rng = np.random.default_rng(11)
    e2m1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
    codes = rng.integers(0, 16, (m, k))
    a_vals = np.where(codes >= 8, -1.0, 1.0) * e2m1[codes % 8]
    a = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
    b_codes = rng.integers(0, 0x70, (k, n)).astype(np.uint8)  # finite, below 2^7
    b_vals = decode(b_codes, FORMATS["fp8e4nv"]).astype(np.float64)
    sa, sb = (rng.integers(120, 134, (r, k // 32)).astype(np.uint8) for r in (m, n))
    want = (a_vals * np.repeat(np.exp2(sa - 127.0), 32, axis=1)) @ (b_vals * np.repeat(np.exp2(sb - 127.0), 32, axis=1).T)
    c = mx.zeros((m, n), mx.float32)
    scaled_gemm[(1,)](mx.array(a), mx.array(sa), mx.array(b_codes), mx.array(sb), c,
                      k, M=m, N=n, BK=64, num_warps=warps)
    got = np.array(c)
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()
    [call] = [cl for cl in metal_stand_in.fast.factory_calls if cl["name"].startswith("scaled_gemm")]
    assert form in call["source"] and "simdgroup_multiply_accumulate" not in call["source"]


def test_float16_accumulator_rounds_once_a_dot(metal_stand_in):
    # a float16 accumulator on simdgroup matrices: the dot's products summed in float, rounded
    # to half once, then added in half (docs/dot.md, "Numerics"), into a sentinel-filled output;
    # products are multiples of 1/64 whose sums float holds exactly, so the model is exact
    import triton_metal as triton
    import triton_metal.language as tl

    @triton.jit
    def fp16_acc(a_ptr, b_ptr, c_ptr, out_ptr, S: tl.constexpr):
        r = tl.arange(0, S)
        offs = r[:, None] * S + r[None, :]
        tl.store(out_ptr + offs, tl.dot(tl.load(a_ptr + offs), tl.load(b_ptr + offs), tl.load(c_ptr + offs)))

    rng = np.random.default_rng(12)
    a, b = ((rng.integers(-16, 17, (32, 32)) / 8).astype(np.float16) for _ in range(2))
    c = (300 + rng.integers(-64, 65, (32, 32)) / 4).astype(np.float16)
    out = mx.zeros((32, 32), mx.float16)
    fp16_acc[(1,)](mx.array(a), mx.array(b), mx.array(c), out, S=32)
    partial = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16)
    np.testing.assert_array_equal(np.array(out), (c.astype(np.float64) + partial).astype(np.float16))
    assert any(launch["name"].startswith("fp16_acc") for launch in metal_stand_in.fast.launches)
