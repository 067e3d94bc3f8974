from __future__ import annotations

import triton_metal

import numpy as np
import pytest

from examples import dropout

# kept elements are x / (1 - p): Triton's approximate fp32 division, Metal's fast::divide (within
# 2.5 ulp, docs/language.md); the reference divides exactly
DIVISION_RTOL = 3.6e-7


def _assert_matches(out: np.ndarray, want: np.ndarray) -> None:
    np.testing.assert_array_equal(out == 0, want == 0)  # the same elements dropped
    np.testing.assert_allclose(out, want, rtol=DIVISION_RTOL, atol=0)


def test_main(mode, capsys):
    assert dropout.main() == 0
    assert f"OK (backend: {triton_metal.active_backend_name()})" in capsys.readouterr().out


def test_reference_philox_matches_the_published_test_vectors():
    # Random123 kat_vectors, philox4x32 with 10 rounds
    zero = np.zeros(1, np.uint32)
    ones = np.full(1, 0xFFFFFFFF, np.uint32)
    assert [int(w[0]) for w in dropout.philox4x32((zero,) * 4, (0, 0))] == [
        0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert [int(w[0]) for w in dropout.philox4x32((ones,) * 4, (0xFFFFFFFF, 0xFFFFFFFF))] == [
        0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]
    counter = tuple(np.array([v], np.uint32) for v in (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344))
    assert [int(w[0]) for w in dropout.philox4x32(counter, (0xA4093822, 0x299F31D0))] == [
        0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


@pytest.mark.parametrize("size", [1, 100, 1024, 2500])
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_matches_the_philox_reference(size, p):
    x = np.random.default_rng(size).standard_normal(size).astype(np.float32)
    out = dropout.seeded_dropout(x, p, seed=size + 11, BLOCK_SIZE=256)
    _assert_matches(out, dropout.reference(x, p, size + 11))


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_same_seed_same_mask_and_keep_rate(num_warps):
    x = np.ones(20_000, np.float32)
    a = dropout.seeded_dropout(x, 0.3, seed=2**40 + 5, num_warps=num_warps)
    b = dropout.seeded_dropout(x, 0.3, seed=2**40 + 5, num_warps=num_warps)
    c = dropout.seeded_dropout(x, 0.3, seed=2**40 + 6, num_warps=num_warps)
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()
    kept = a != 0
    # kept elements are scaled by 1 / (1 - p); about 70% are kept (binomial sd is 0.3%)
    np.testing.assert_allclose(a[kept], np.float32(1) / (np.float32(1) - np.float32(0.3)), rtol=DIVISION_RTOL)
    assert abs(kept.mean() - 0.7) < 0.02
    _assert_matches(a, dropout.reference(x, 0.3, 2**40 + 5))


def test_mlx_array():
    import mlx.core as mx

    x = np.random.default_rng(3).standard_normal(1500).astype(np.float32)
    out = dropout.seeded_dropout(mx.array(x), 0.25, seed=99)
    _assert_matches(np.array(out), dropout.reference(x, 0.25, 99))
