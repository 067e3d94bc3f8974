"""The ops' config pruning: what cannot fit is dropped before anything is timed."""

from __future__ import annotations

import pytest

from triton_metal.ops import _rows, activations, attention, quantized


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
    assert warps(2048, False) == [1, 2, 4, 8, 16]  # streamed rows: any width fits


def test_activation_configs(tuning):
    kept = activations._prune(activations._CONFIGS, {"n": 100})
    assert kept and all(32 * c.num_warps <= c.kwargs["BLOCK"] for c in kept)
    assert kept[0].kwargs["BLOCK"] == 1024  # small arrays start with the smallest block


def test_attention_tiles_fit_threadgroup_memory(tuning):
    kept = attention._prune_tiles(attention._TILES, {}, BLOCK_D=128)
    assert kept and all(attention._fits(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], 128, 4) for c in kept)
    assert len(kept) < len(attention._TILES)  # 64 x 64 fp32 tiles with 128-wide heads do not fit
    assert len(attention._prune_tiles(attention._TILES, {}, BLOCK_D=64)) > len(kept)


def test_quantized_configs(tuning):
    tiled = quantized._prune(quantized._CONFIGS, {})
    assert tiled and all(c.kwargs["BLOCK_M"] > 16 for c in tiled)
    assert all(c.kwargs["BLOCK_M"] == 16 for c in quantized._prune(quantized._CONFIGS, {}, DECODE=True))
    decode = quantized._prune_decode(quantized._DECODE_CONFIGS, {})
    assert decode and all(8 * c.kwargs["BLOCK_N"] * c.kwargs["BLOCK_K"] <= 4096 * c.num_warps for c in decode)
