"""The ops' config pruning: what cannot fit is dropped before anything is timed."""

from __future__ import annotations

import mlx.core as mx
import pytest

from triton_metal.ops import _rows, activations, attention, losses, quantized


@pytest.fixture
def tuning(monkeypatch):
    monkeypatch.setenv("TRITON_METAL_TUNE_OPS", "1")


def test_untuned_backends_run_the_first_survivor(monkeypatch):
    monkeypatch.delenv("TRITON_METAL_TUNE_OPS", raising=False)
    kept = _rows.prune_row_configs(_rows.row_configs(), {}, BLOCK=4096, ONE_PASS=True)
    assert [c.num_warps for c in kept] == [8]  # the default for 4096-wide rows


def test_row_configs(tuning):
    warps = lambda block, one_pass: sorted(  # noqa: E731
        c.num_warps for c in _rows.prune_row_configs(_rows.row_configs(), {}, BLOCK=block, ONE_PASS=one_pass))
    assert warps(16, True) == [1]                  # 32 threads cover 16 elements; never more
    assert warps(8192, True) == [4, 8, 16]         # at most 64 elements per thread in registers
    assert warps(16384, True) == [8, 16]           # the longest row held in registers
    assert warps(2048, False) == [1, 2, 4, 8, 16]  # streamed rows: any width fits, 16 warps first
    assert _rows.prune_row_configs(_rows.row_configs(), {}, BLOCK=2048, ONE_PASS=False)[0].num_warps == 16


def test_activation_configs(tuning):
    kept = activations._prune(activations._CONFIGS, {"n": 100})
    assert kept and all(32 * c.num_warps <= c.kwargs["BLOCK"] for c in kept)
    assert kept[0].kwargs["BLOCK"] == 1024  # the default: the smallest block, also for small arrays


def test_attention_tiles_fit_threadgroup_memory(tuning):
    kept = attention._prune_tiles(attention._TILES, {}, BLOCK_D=128)
    assert kept and all(attention._fits(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], 128, 4) for c in kept)
    assert len(kept) < len(attention._TILES)  # 64 x 64 fp32 tiles with 128-wide heads do not fit
    assert len(attention._prune_tiles(attention._TILES, {}, BLOCK_D=64)) > len(kept)


@pytest.mark.parametrize("dtype, itemsize", [("float32", 4), ("float16", 2), ("bfloat16", 2)])
def test_attention_forward_tiles_count_the_operands_real_size(tuning, dtype, itemsize):
    import mlx.core as mx

    q = mx.zeros((1, 1, 4, 128), getattr(mx, dtype))
    kept = attention._prune_tiles(attention._TILES, {"q_ptr": q}, BLOCK_D=128)
    tiles = [(cf.kwargs["BLOCK_M"], cf.kwargs["BLOCK_N"]) for cf in kept]
    # q (M x D) before the key loop, then k^T (D x N), p (M x N) and v (N x D) in its space,
    # at `itemsize` bytes within 32 KiB
    expect = [(m, n) for m, n in ((64, 32), (32, 32), (64, 32), (32, 64), (64, 64), (16, 16))
              if max(m * 128, 128 * n + m * n + n * 128) * itemsize <= 32 * 1024]
    assert tiles == expect
    assert ((64, 32) in tiles) == (itemsize == 2)
    assert (32, 32) in tiles if itemsize == 2 else tiles == [(16, 16)]


def test_half_attention_prefill_at_head_dim_128_runs_the_larger_tile(monkeypatch):
    import mlx.core as mx
    import numpy as np

    from triton_metal import ops

    monkeypatch.delenv("TRITON_METAL_TUNE_OPS", raising=False)
    rng = np.random.default_rng(0)
    q, k, v = (mx.array(rng.standard_normal((1, 1, 40, 128)).astype(np.float16)) for _ in range(3))
    out = ops.scaled_dot_product_attention(q, k, v, scale=128 ** -0.5, mask="causal")
    cfg = attention._attn_fwd.best_config
    assert (cfg.kwargs["BLOCK_M"], cfg.kwargs["BLOCK_N"], cfg.num_warps) == (64, 32, 4)
    f32 = [a.astype(mx.float32) for a in (q, k, v)]
    ref = mx.fast.scaled_dot_product_attention(*f32, scale=128 ** -0.5, mask="causal")
    assert float(mx.max(mx.abs(out.astype(mx.float32) - ref))) < 2e-3


def test_quantized_configs(tuning):
    tiled = quantized._prune(quantized._CONFIGS, {})
    assert tiled and all(c.kwargs["BLOCK_M"] > 16 for c in tiled)
    assert all(c.kwargs["BLOCK_M"] == 16 for c in quantized._prune(quantized._CONFIGS, {}, DECODE=True))
    decode = quantized._prune_decode(quantized._DECODE_CONFIGS, {})
    assert decode and all(8 * c.kwargs["BLOCK_N"] * c.kwargs["BLOCK_K"] <= 4096 * c.num_warps for c in decode)


@pytest.mark.parametrize("itemsize, block_d, slot_lanes", [(2, 128, 2), (4, 128, 1), (2, 64, 4)])
def test_decode_attention_configs(tuning, itemsize, block_d, slot_lanes):
    # a split holds whole steps of SLOTS x ROWS keys, and where any config's slots are the
    # lanes a key row of 16-byte vectors leaves free times its warps, only those are kept
    q = type("Q", (), {"itemsize": itemsize})()
    kept = attention._prune_decode(attention._DECODE, {"q_ptr": q}, GROUP_P=4, BLOCK_D=block_d, SPLIT=64)
    assert kept and all(64 % (c.kwargs["SLOTS"] * c.kwargs["ROWS"]) == 0 for c in kept)
    assert all(c.kwargs["SLOTS"] == slot_lanes * c.num_warps for c in kept)
    assert attention._slot_lanes(block_d, itemsize) == slot_lanes


# (group_p, WHOLE, SPLIT, default (SLOTS, ROWS, warps, HSPLIT, V_AHEAD)): docs/ops.md, "Decode
# speed", tenth and thirteenth rounds
DECODE_DEFAULTS = [
    (1, True, 64, (4, 4, 2, 1, True)),
    (2, True, 64, (4, 4, 2, 2, False)),
    (4, True, 64, (4, 4, 2, 2, False)),
    (4, False, 64, (4, 4, 2, 1, True)),
    (8, True, 64, (2, 4, 1, 4, True)),
    (8, False, 64, (2, 4, 1, 2, True)),
    (1, True, 256, (4, 4, 2, 1, True)),
    (2, True, 256, (2, 4, 1, 2, True)),
    (4, True, 256, (2, 4, 1, 2, True)),
    (8, True, 256, (2, 4, 1, 4, True)),
]


@pytest.mark.parametrize("group_p, whole, split, default", DECODE_DEFAULTS)
def test_decode_attention_default(tuning, group_p, whole, split, default):
    # the default config (first): two query heads a program where every split is whole steps
    # (a group of one never has a second program), up to four where not; one SIMD group for a
    # group of 8 and for groups of 2 or more in long splits
    q = type("Q", (), {"itemsize": 2})()
    kept = attention._prune_decode(attention._DECODE, {"q_ptr": q}, GROUP_P=group_p, BLOCK_D=128, SPLIT=split,
                                   WHOLE=whole)
    first = kept[0]
    assert (first.kwargs["SLOTS"], first.kwargs["ROWS"], first.num_warps, first.kwargs["HSPLIT"],
            first.kwargs["V_AHEAD"]) == default
    assert all(c.kwargs["HSPLIT"] <= group_p for c in kept)
    assert len({(tuple(sorted(c.kwargs.items())), c.num_warps) for c in kept}) == len(kept)


def test_decode_attention_split():
    # 64 keys a program up to 8192 keys, then at most 128 splits a kv head (powers of two)
    assert [attention._split(n) for n in (1, 64, 300, 8192, 8193, 32768)] == [64, 64, 64, 64, 128, 256]
    assert all(-(-n // attention._split(n)) <= 128 for n in (8193, 20000, 100000))


@pytest.mark.parametrize("mode, wpg, steps, rows, default", [
    (quantized.AFFINE, 8, 64, 1, (4, 64, 4, 2)),   # 4-bit, group 64, K = 4096
    (quantized.MXFP4, 4, 128, 1, (4, 64, 2, 4)),
    (quantized.AFFINE, 8, 64, 2, (4, 16, 2, 2)),   # 2 to 8 rows of x: fewer words of a row a thread
    (quantized.AFFINE, 8, 64, 8, (4, 16, 2, 2)),
    (quantized.MXFP4, 4, 128, 4, (4, 32, 2, 2)),
    (quantized.INT8, 4, 256, 4, (4, 64, 2, 4)),   # not measured at M > 1: the M = 1 default
    (quantized.AFFINE, 2, 32, 1, None),            # 2-bit, group 32, K = 1024: the default does not fit
])
def test_gemv_configs(tuning, mode, wpg, steps, rows, default):
    kept = quantized._prune_gemv(quantized._GEMV_CONFIGS, {"steps": steps}, WPG=wpg, MODE=mode, ROWS=rows)
    for c in kept:
        g, t, w = c.kwargs["BLOCK_G"], c.kwargs["WPT"], c.num_warps
        assert steps % g == 0 and wpg % t == 0   # whole steps, a run inside one group
        assert 32 * w <= g * wpg // t             # a run for every thread
        assert g * wpg <= 8 * 32 * w              # at most 8 words of a row a thread
    first = kept[0]
    got = (first.kwargs["BLOCK_N"], first.kwargs["BLOCK_G"], first.kwargs["WPT"], first.num_warps)
    if default is not None:
        assert got == default
    else:
        assert got != quantized._GEMV_DEFAULT[mode] and len(kept) < len(quantized._GEMV_CONFIGS)
    assert any(c.kwargs["WPT"] > 1 for c in kept)


def test_norm_backward_configs(tuning):
    from triton_metal.ops import norms

    kept = norms._prune_bwd(norms._BWD_CONFIGS, {}, BLOCK=4096)
    assert (kept[0].kwargs["AHEAD"], kept[0].num_warps) == (0, 16)  # the default first
    # a thread holds at most 32 elements of x and of dy, twice as many reading ahead
    assert all((1 + c.kwargs["AHEAD"]) * 4096 // (32 * c.num_warps) <= 32 for c in kept)
    assert {(c.kwargs["AHEAD"], c.num_warps) for c in kept} == {(0, 4), (0, 8), (0, 16), (1, 8), (1, 16)}
    small = norms._prune_bwd(norms._BWD_CONFIGS, {}, BLOCK=128)
    assert (small[0].kwargs["AHEAD"], small[0].num_warps) == (0, 1)
    assert all(32 * c.num_warps <= 128 for c in small)
    # an RMS norm reads ahead on a warp per 256 elements, a layer norm from rows of 8192; where
    # reading ahead does not fit (rows of 16384), a run of consecutive rows on 16 warps
    def first(block: int, rms: int) -> tuple[int, int, int]:
        return norms._bwd_shape(norms._prune_bwd(norms._BWD_CONFIGS, {"RMS": rms}, BLOCK=block)[0])

    assert [first(b, 1) for b in (1024, 2048, 4096, 8192, 16384)] == [
        (0, 1, 4), (0, 1, 8), (0, 1, 16), (0, 1, 16), (1, 0, 16)]
    assert [first(b, 0) for b in (2048, 4096, 8192, 16384)] == [(1, 0, 4), (1, 0, 16), (1, 1, 16), (1, 0, 16)]
    # a float16 layer norm reads ahead at 4096 too, on 8 warps, its rows strided; bfloat16 does not
    def layer_4096(dtype: object) -> tuple[int, int, int]:
        dy = mx.zeros((1,), dtype)
        return norms._bwd_shape(norms._prune_bwd(norms._BWD_CONFIGS, {"RMS": 0, "dy_ptr": dy}, BLOCK=4096)[0])

    assert (layer_4096(mx.float16), layer_4096(mx.bfloat16), layer_4096(mx.float32)) == (
        (0, 1, 8), (1, 0, 16), (1, 0, 16))
    # the streamed rows' dx: 8 warps first
    assert norms._prune_bwd_long(_rows.row_configs(), {}, BLOCK=2048)[0].num_warps == 8


@pytest.mark.parametrize("parts, tile", [(1, (32, 128)), (100, (64, 64)), (132, (128, 32)), (256, (256, 16)),
                                         (300, (256, 16)), (528, (512, 8)), (4096, (512, 8))])
def test_partial_sums_default_takes_the_partials_without_a_masked_step(tuning, parts, tile):
    # a tile of 4096 on 8 warps, its rows the largest power of two (32 to 512) that the
    # partials fill: every step but the last whole
    from triton_metal.ops import norms

    kept = norms._prune_sum(norms._SUM_CONFIGS, {"n_parts": parts})
    assert ((kept[0].kwargs["PARTS"], kept[0].kwargs["COLS"]), kept[0].num_warps) == (tile, 8)
    assert len(kept) == len(norms._SUM_CONFIGS)  # tuning times every tile


@pytest.mark.parametrize("one_pass, forward, backward", [(False, 8, 16), (True, 8, 8)])
def test_loss_defaults_stream_forward_rows_on_8_warps(tuning, one_pass, forward, backward):
    # streamed rows (32000 logits in blocks of 4096): the forward on 8 warps, the backward on the
    # streamed rows' 16; a row held in registers keeps a warp per 512 elements either way
    fwd = losses._FWD_TUNING["early_config_prune"](_rows.row_configs(), {}, BLOCK=4096, ONE_PASS=one_pass)
    bwd = _rows.ROW_TUNING["early_config_prune"](_rows.row_configs(), {}, BLOCK=4096, ONE_PASS=one_pass)
    assert (fwd[0].num_warps, bwd[0].num_warps) == (forward, backward)


def test_norm_forward_is_tuned_per_norm():
    # RMS and layer norm share `_norm_fwd` (RMS is a run-time argument) but not its tuned config
    from triton_metal.ops import norms

    named = {"n_cols": 16384, "ONE_PASS": True, "HAS_W": True, "HAS_B": False}
    keys = {norms._norm_fwd.tuning_key({**named, "RMS": rms}) for rms in (0, 1)}
    assert len(keys) == 2
