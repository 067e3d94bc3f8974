from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from triton_metal import ops

from .helpers import assert_close, check_grads, randn

sdpa = mx.fast.scaled_dot_product_attention


def _qkv(B, Hq, Hkv, Lq, Lkv, D, dtype="float32"):
    return (randn((B, Hq, Lq, D), dtype, 0), randn((B, Hkv, Lkv, D), dtype, 1),
            randn((B, Hkv, Lkv, D), dtype, 2))


def _mask(kind, B, Lq, Lkv):
    if kind == "additive":
        return randn((Lq, Lkv), seed=3)
    if kind == "boolean":
        keep = np.random.default_rng(4).random((B, 1, Lq, Lkv)) > 0.3
        keep[..., 0] = True  # every query sees a key
        return mx.array(keep)
    return kind


# (B, Hq, Hkv, Lq, Lkv, D, mask): prefill and decode, grouped heads, every head dim, odd lengths
CASES = [
    (1, 4, 2, 7, 7, 64, "causal"),
    (1, 2, 1, 33, 70, 80, "additive"),
    (2, 2, 2, 100, 100, 96, None),
    (1, 2, 1, 7, 40, 128, "boolean"),
    (2, 4, 1, 1, 37, 64, None),
    (1, 4, 2, 1, 50, 96, "additive"),
    (1, 2, 2, 1, 9, 128, "causal"),
]


@pytest.mark.parametrize("B, Hq, Hkv, Lq, Lkv, D, kind", CASES)
def test_attention_float32(B, Hq, Hkv, Lq, Lkv, D, kind):
    q, k, v = _qkv(B, Hq, Hkv, Lq, Lkv, D)
    mask = _mask(kind, B, Lq, Lkv)
    scale = D ** -0.5
    ours = lambda a, b, c: ops.scaled_dot_product_attention(a, b, c, scale=scale, mask=mask)  # noqa: E731
    ref = lambda a, b, c: sdpa(a, b, c, scale=scale, mask=mask)  # noqa: E731
    assert_close(ours(q, k, v), ref(q, k, v), "float32", scale=5)
    check_grads(ours, ref, (q, k, v), "float32", (0, 1, 2), scale=5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_attention_half(dtype):
    q, k, v = _qkv(1, 2, 1, 16, 16, 64, dtype)
    kw = dict(scale=0.125, mask="causal")
    assert_close(ops.scaled_dot_product_attention(q, k, v, **kw), sdpa(q, k, v, **kw), dtype, scale=2)
    if dtype == "float16":  # the backward kernels' half path is the same code: one dtype suffices
        return
    check_grads(lambda a, b, c: ops.scaled_dot_product_attention(a, b, c, **kw),
                lambda a, b, c: sdpa(a, b, c, **kw), (q, k, v), dtype, (0, 1, 2), scale=4)


@pytest.mark.parametrize("hidden", [None, (0, 100)])
def test_decode_splits(hidden):
    # flash-decoding: 200 keys over several splits, a group of 3 query heads (padded to 4)
    # sharing each kv head; a boolean mask hiding whole splits (their partials are empty)
    q, k, v = _qkv(2, 6, 2, 1, 200, 64)
    mask = None
    if hidden is not None:
        keep = np.random.default_rng(5).random((2, 6, 1, 200)) > 0.2
        keep[..., hidden[0]:hidden[1]] = False
        mask = mx.array(keep)
    ours = ops.scaled_dot_product_attention(q, k, v, scale=0.125, mask=mask)
    assert_close(ours, sdpa(q, k, v, scale=0.125, mask=mask), "float32", scale=5)


def test_decode_long_cache():
    # past 8192 keys a program reads more than 64 (128 here: 71 splits a kv head, the combine's
    # tile of 128), with a boolean mask hiding a whole split
    q, k, v = _qkv(1, 2, 1, 1, 9000, 64)
    keep = np.random.default_rng(7).random((1, 2, 1, 9000)) > 0.1
    keep[..., 256:384] = False
    mask = mx.array(keep)
    ours = ops.scaled_dot_product_attention(q, k, v, scale=0.125, mask=mask)
    assert_close(ours, sdpa(q, k, v, scale=0.125, mask=mask), "float32", scale=5)


def _decode_float64(q, k, v, scale, bias=None):
    # one query a head against its kv head's keys, in float64
    q, k, v = (np.array(a.astype(mx.float32)).astype(np.float64) for a in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) * scale
    if bias is not None:
        s = s + np.array(bias.astype(mx.float32)).astype(np.float64)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


# (Hq, Hkv, Lkv, D, whole): key counts that are a multiple of the split (64 keys a program up
# to 8192 keys) take the unmasked pass 1, whose every split is whole steps, for groups of up to
# 8 query heads a kv head; the rest (tiny caches, a short last split, larger groups) the masked
# one; groups of 1, 3 (padded to 4), 4 and 8 (by default over four programs unmasked, two
# masked), 16 (masked, over four programs), and a padded head dim (80 in 128) for the unmasked
# form's head-dim mask
DECODE_FORMS = [
    (2, 2, 1, 64, False),
    (8, 2, 5, 64, False),
    (8, 1, 63, 64, False),
    (2, 2, 64, 64, True),
    (8, 2, 192, 64, True),
    (8, 1, 200, 64, False),
    (8, 1, 128, 64, True),
    (4, 1, 128, 80, True),
    (6, 2, 256, 64, True),
    (16, 1, 128, 64, False),
]


@pytest.fixture(params=["emulator", "interpret"])
def decode_forms(request, monkeypatch):
    """Runs the test on each backend; the list it gives receives each pass-1 launch's WHOLE."""
    from triton_metal.ops import attention

    if request.param == "interpret":
        monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    launched = []
    run = attention._attn_decode.run

    def spy(*args, **kwargs):
        launched.append(kwargs["WHOLE"])
        return run(*args, **kwargs)

    monkeypatch.setattr(attention._attn_decode, "run", spy)
    return launched


@pytest.mark.parametrize("Hq, Hkv, Lkv, D, whole", DECODE_FORMS)
def test_decode_forms(decode_forms, Hq, Hkv, Lkv, D, whole):
    q, k, v = _qkv(1, Hq, Hkv, 1, Lkv, D)
    ours = ops.scaled_dot_product_attention(q, k, v, scale=D ** -0.5)
    want = _decode_float64(q, k, v, D ** -0.5)
    np.testing.assert_allclose(np.array(ours).astype(np.float64), want, atol=1e-5, rtol=1e-5)
    assert decode_forms == [whole]


def test_decode_whole_splits_masked(decode_forms):
    # the unmasked form under an additive mask with -inf: keys hidden in every split but one
    # (those splits' partials hold only -inf scores), float16 heads of 128 in groups of 4
    q, k, v = _qkv(1, 8, 2, 1, 256, 128, "float16")
    hide = np.zeros((1, 1, 1, 256), np.float32)
    hide[..., 64:] = -np.inf
    hide[..., 200] = 0.5
    bias = mx.array(hide)
    ours = ops.scaled_dot_product_attention(q, k, v, scale=128 ** -0.5, mask=bias)
    want = _decode_float64(q, k, v, 128 ** -0.5, bias)
    np.testing.assert_allclose(np.array(ours.astype(mx.float32)).astype(np.float64), want,
                               atol=3e-3, rtol=1e-2)
    assert decode_forms == [True]


@pytest.mark.parametrize("slots, rows, warps, hsplit, ahead, Hq", [
    (2, 4, 1, 1, True, 4), (4, 1, 2, 1, True, 4), (4, 4, 2, 1, True, 4), (8, 2, 4, 1, True, 4),
    (8, 8, 4, 1, True, 4), (4, 4, 2, 2, True, 4), (2, 8, 1, 2, False, 4), (8, 2, 4, 2, False, 6),
    (4, 4, 2, 2, True, 6), (2, 4, 1, 4, True, 16), (4, 4, 2, 4, False, 8), (8, 2, 4, 4, True, 14),
])
def test_decode_configs(monkeypatch, slots, rows, warps, hsplit, ahead, Hq):
    # decode configs of every shape of step (key rows a slot, slots, SIMD groups, one step a
    # split: 8 x 8 keys), the group's query heads on one, two or four programs (a group of 3,
    # padded to 4, leaves the second of two programs one padded head; one of 7, padded to 8,
    # the fourth of four), values read a step ahead or in their own step, on float32 heads of
    # 64 (two slots a SIMD group), 300 keys: splits of 64 ending inside a step, the last one
    # short, and an additive mask
    import triton_metal as triton
    from triton_metal.ops import attention

    cf = triton.Config({"SLOTS": slots, "ROWS": rows, "HSPLIT": hsplit, "V_AHEAD": ahead}, num_warps=warps)
    monkeypatch.setattr(attention._attn_decode, "configs", [cf])
    monkeypatch.setattr(attention._attn_decode, "cache", {})  # no choice remembered from another test
    q, k, v = _qkv(1, Hq, 2, 1, 300, 64)
    mask = randn((1, 300), seed=6)
    ours = ops.scaled_dot_product_attention(q, k, v, scale=0.125, mask=mask)
    assert_close(ours, sdpa(q, k, v, scale=0.125, mask=mask), "float32", scale=5)
    assert attention._attn_decode.best_config is cf


@pytest.mark.parametrize("block_m,block_n,warps", [(64, 32, 2), (64, 32, 4)])
def test_prefill_tiles_of_more_rows_per_simd_group(monkeypatch, block_m, block_n, warps):
    # the 64-row tiles the forward's pruning keeps at head dim 128 in float16 (q staged once
    # before the key loop), forced: 16 or 32 query rows a SIMD group, ragged lengths, causal
    import triton_metal as triton
    from triton_metal.ops import attention

    cf = triton.Config({"BLOCK_M": block_m, "BLOCK_N": block_n}, num_warps=warps)
    assert attention._fits(block_m, block_n, 128, 2)
    monkeypatch.setattr(attention._attn_fwd, "configs", [cf])
    monkeypatch.setattr(attention._attn_fwd, "cache", {})
    q, k, v = _qkv(1, 2, 1, 100, 100, 128, "float16")
    kw = dict(scale=0.0884, mask="causal")
    assert_close(ops.scaled_dot_product_attention(q, k, v, **kw), sdpa(q, k, v, **kw), "float16", scale=2)
    assert attention._attn_fwd.best_config is cf


def test_attention_long_sequence():
    q, k, v = _qkv(1, 1, 1, 1000, 1000, 64, "float16")
    kw = dict(scale=0.125, mask="causal")
    assert_close(ops.scaled_dot_product_attention(q, k, v, **kw), sdpa(q, k, v, **kw), "float16", scale=2)


def test_attention_non_contiguous():
    q = mx.swapaxes(randn((1, 7, 2, 64)), 1, 2)
    k = mx.swapaxes(randn((1, 9, 2, 64), seed=1), 1, 2)
    v = mx.swapaxes(randn((1, 9, 2, 64), seed=2), 1, 2)
    assert_close(ops.scaled_dot_product_attention(q, k, v, scale=0.125),
                 sdpa(q, k, v, scale=0.125), "float32", scale=5)


@pytest.mark.parametrize("shapes, kw, match", [
    (((1, 2, 4, 72), (1, 2, 4, 72)), {}, "argument 'q': head dimension 72"),
    (((1, 3, 4, 64), (1, 2, 4, 64)), {}, "argument 'k': its 2 heads do not divide q's 3"),
    (((1, 2, 4, 64), (1, 2, 4, 64)), {"mask": "sliding"}, "argument 'mask': the only string"),
    (((1, 2, 4, 64), (1, 2, 4, 64)), {"mask": mx.zeros((3, 4))}, "argument 'mask': shape"),
    (((2, 4, 64), (2, 4, 64)), {}, "argument 'q': expected 4 dimensions"),
])
def test_bad_input(shapes, kw, match):
    q, k = mx.zeros(shapes[0]), mx.zeros(shapes[1])
    with pytest.raises(ops.OpArgumentError, match="scaled_dot_product_attention: " + match):
        ops.scaled_dot_product_attention(q, k, k, scale=0.1, **kw)


def test_bad_dtype():
    q = mx.zeros((1, 2, 4, 64))
    with pytest.raises(ops.OpArgumentError, match="argument 'v': dtype float16 differs"):
        ops.scaled_dot_product_attention(q, q, q.astype(mx.float16), scale=0.1)


def _float64(*arrays):
    return tuple(np.array(a.astype(mx.float32), np.float64) for a in arrays)


def _probabilities_float64(q, kg, scale, causal):
    """softmax(scale * q k^T) in float64 (`kg`: k repeated over its group of query heads; causal
    aligned to the bottom right, as MLX)."""
    s = scale * q @ np.swapaxes(kg, -1, -2)
    if causal:
        Lq, Lkv = s.shape[-2:]
        s = np.where(np.arange(Lkv)[None, :] <= np.arange(Lq)[:, None] + (Lkv - Lq), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True)


def _attention_float64(q, k, v, scale, causal):
    """softmax(scale * q k^T) v in float64 with NumPy (heads of q share k and v by groups)."""
    q, k, v = _float64(q, k, v)
    group = q.shape[1] // k.shape[1]
    return _probabilities_float64(q, np.repeat(k, group, axis=1), scale, causal) @ np.repeat(v, group, axis=1)


@pytest.mark.parametrize("target", ["apple7:3.1", "apple9:3.2", "apple10:4.0"])
def test_prefill_default_tile_on_each_target(monkeypatch, target):
    # the forward's default at head dim 128 in float16 (nothing tuned): 64 x 32 on 4 SIMD groups
    # of 16 query rows, simdgroup matrices on every target (docs/ops.md, "Prefill tiles"), two
    # barriers per key block; 100 queries (a partial second tile) over 130 keys, causal, grouped
    # heads, against float64
    from triton_metal.ops import attention
    from triton_metal.runtime.heuristics import base_jit_function

    monkeypatch.setenv("TRITON_METAL_TARGET", target)
    monkeypatch.delenv("TRITON_METAL_TUNE_OPS", raising=False)
    monkeypatch.setattr(attention._attn_fwd, "cache", {})
    q, k, v = _qkv(1, 2, 1, 100, 130, 128, "float16")
    out = ops.scaled_dot_product_attention(q, k, v, scale=128 ** -0.5, mask="causal")
    ref = _attention_float64(q, k, v, 128 ** -0.5, causal=True)
    # fp16 operands and p, float32 sums, one rounding to float16
    np.testing.assert_allclose(np.array(out.astype(mx.float32)), ref, rtol=1e-2, atol=4e-3)
    cf = attention._attn_fwd.best_config
    assert (cf.kwargs["BLOCK_M"], cf.kwargs["BLOCK_N"], cf.num_warps) == (64, 32, 4)
    lse = mx.zeros((1, 2, 100), mx.float32)
    compiled = base_jit_function(attention._attn_fwd).warmup(
        q, k, v, q, out, lse, 2, 2, 100, 130, 128, 0.0884, 0, 0, 0, 0, 1, BLOCK_D=128, grid=(1,),
        **cf.all_kwargs())
    reports = compiled.msl.metadata["dot_reports"]
    assert [r["path"] for r in reports] == ["simdgroup", "simdgroup"]
    assert [r["barriers_per_k_step"] for r in reports] == [2, 2]
    assert [r["products_per_load"] for r in reports] == pytest.approx([4 / 3, 16 / 9], abs=1e-3)


def test_prefill_head_dim_64_keeps_its_output_in_the_matrix_unit_on_tensor_op_targets(monkeypatch):
    # at head dim 64 on apple10:4.0 the output accumulator, rescaled every key block
    # (`acc * alpha[:, None] + tl.dot(p, v)`), stays the tensor op's cooperative tensor across
    # the key loop and its elements are scaled in place (docs/dot.md, "Metal 4 tensor ops"): two
    # barriers a key block, as on simdgroup matrices, and p and the row factors staged besides.
    # q k^T, a single dot, would stage q, k and its accumulator every key block, so the cost rule
    # keeps it on simdgroup matrices. 100 queries over 130 keys, causal or not, grouped heads,
    # against float64
    from triton_metal.ops import attention
    from triton_metal.runtime.heuristics import base_jit_function

    monkeypatch.setenv("TRITON_METAL_TARGET", "apple10:4.0")
    monkeypatch.delenv("TRITON_METAL_TUNE_OPS", raising=False)
    monkeypatch.setattr(attention._attn_fwd, "cache", {})
    q, k, v = _qkv(1, 2, 1, 100, 130, 64, "float16")
    for causal in (True, False):
        out = ops.scaled_dot_product_attention(q, k, v, scale=0.125, mask="causal" if causal else None)
        ref = _attention_float64(q, k, v, 0.125, causal=causal)
        np.testing.assert_allclose(np.array(out.astype(mx.float32)), ref, rtol=1e-2, atol=4e-3)
    cf = attention._attn_fwd.best_config
    lse = mx.zeros((1, 2, 100), mx.float32)
    compiled = base_jit_function(attention._attn_fwd).warmup(
        q, k, v, q, out, lse, 2, 2, 100, 130, 64, 0.125, 0, 0, 0, 0, 0, BLOCK_D=64, grid=(1,), **cf.all_kwargs())
    qk, pv = compiled.msl.metadata["dot_reports"]
    assert "km_tensor_scale_rows(" in compiled.msl.source and "km_tensor_dot<" not in compiled.msl.source
    assert [(r["path"], r["form"]) for r in (qk, pv)] == [("simdgroup", ""), ("tensor_ops", "rescaled")]
    # k's conversion and the staging of p, v and the factors: 4 KiB each and 64 floats
    assert (pv["barriers_per_k_step"], pv["threadgroup_bytes_per_k_step"]) == (2, 3 * 4096 + 64 * 4)
    assert pv["path_reason"] == ("a carried accumulator rescaled each step: tensor ops, 2 barriers, 12544 bytes "
                                 "a K step, no more barriers than simdgroup matrices' 2 barriers, 8192 bytes")
    assert qk["path_reason"].startswith("a single dot: simdgroup matrices, 2 barriers, 12544 bytes a K step, "
                                        "where tensor ops take ")


def _attention_grads_float64(q, k, v, scale, causal, d_out):
    """dq, dk, dv of `_attention_float64` for the cotangent `d_out`, in float64 (a key/value head's
    gradients sum over the query heads of its group)."""
    q, k, v, d_out = _float64(q, k, v, d_out)
    group = q.shape[1] // k.shape[1]
    kg, vg = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    p = _probabilities_float64(q, kg, scale, causal)
    dp = d_out @ np.swapaxes(vg, -1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    dq = scale * ds @ kg
    dk = scale * np.swapaxes(ds, -1, -2) @ q
    dv = np.swapaxes(p, -1, -2) @ d_out
    fold = lambda g: g.reshape(g.shape[0], -1, group, *g.shape[2:]).sum(2)  # noqa: E731
    return dq, fold(dk), fold(dv)


@pytest.mark.parametrize("target", ["apple9:3.2", "apple10:4.0"])
def test_prefill_backward_default_tile_on_each_target(monkeypatch, target):
    # the backward kernels' default at head dim 128 in float16 (nothing tuned): the forward's
    # 64 x 32 on 4 warps (the estimate counts real sizes; it kept only 16 x 16 before), 70
    # queries and keys (partial tiles), causal, a group of 2 query heads, against float64.
    # (`apple7:3.1` compiles these kernels to `apple9:3.2`'s MSL but for a comment and the
    # kernel's name: its g++ time is spared here)
    from triton_metal.ops import attention

    monkeypatch.setenv("TRITON_METAL_TARGET", target)
    monkeypatch.delenv("TRITON_METAL_TUNE_OPS", raising=False)
    for kernel in (attention._attn_fwd, attention._attn_bwd_dq, attention._attn_bwd_dkdv):
        monkeypatch.setattr(kernel, "cache", {})
    q, k, v = _qkv(1, 2, 1, 70, 70, 128, "float16")
    scale = 128 ** -0.5
    d_out = randn((1, 2, 70, 128), "float16", seed=9)
    fn = lambda a, b, c: ops.scaled_dot_product_attention(a, b, c, scale=scale, mask="causal")  # noqa: E731
    _, grads = mx.vjp(fn, [q, k, v], [d_out])
    for ours, ref in zip(grads, _attention_grads_float64(q, k, v, scale, True, d_out)):
        # fp16 operands and probabilities, float32 sums: within 0.2% of the largest gradient
        np.testing.assert_allclose(np.array(ours.astype(mx.float32)), ref, rtol=1e-2, atol=2e-3 * np.abs(ref).max())
    for kernel in (attention._attn_bwd_dq, attention._attn_bwd_dkdv):
        cf = kernel.best_config
        assert (cf.kwargs["BLOCK_M"], cf.kwargs["BLOCK_N"], cf.num_warps) == (64, 32, 4)


@pytest.mark.parametrize("shape_q, shape_kv", [
    ((1, 2, 0, 64), (1, 2, 5, 64)),  # no queries
    ((0, 2, 3, 64), (0, 2, 5, 64)),  # no batch
    ((1, 2, 1, 64), (1, 2, 0, 64)),  # decode over no keys
    ((1, 4, 3, 64), (1, 2, 0, 64)),  # prefill over no keys, grouped heads
])
def test_empty_attention_matches_mlx(shape_q, shape_kv):
    """No program has work: the shapes and values MLX gives (zeros over no keys), not a launch
    error or unwritten memory."""
    q, k, v = mx.ones(shape_q), mx.ones(shape_kv), mx.ones(shape_kv)
    got = ops.scaled_dot_product_attention(q, k, v, scale=0.125)
    want = mx.fast.scaled_dot_product_attention(q, k, v, scale=0.125)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.array(got), np.array(want))


def test_zero_kv_heads_for_some_q_heads_are_refused():
    with pytest.raises(ValueError, match="its 0 heads do not divide q's 2 heads"):
        ops.scaled_dot_product_attention(mx.ones((1, 2, 1, 64)), mx.ones((1, 0, 1, 64)),
                                         mx.ones((1, 0, 1, 64)), scale=0.125)
