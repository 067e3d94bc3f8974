from __future__ import annotations

import triton_metal

import numpy as np
import pytest

from examples import histogram


def test_main(mode, capsys):
    assert histogram.main() == 0
    assert f"OK (backend: {triton_metal.active_backend_name()})" in capsys.readouterr().out


@pytest.mark.parametrize("size", [1, 999, 4096, 5000])
@pytest.mark.parametrize("num_bins", [16, 64, 256])
def test_counts(size, num_bins):
    x = np.random.default_rng(size).random(size).astype(np.float32)
    hist = histogram.histogram(x, num_bins, BLOCK_SIZE=512)
    np.testing.assert_array_equal(hist, histogram.reference(x, num_bins))
    assert hist.sum() == size


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_many_hits_on_one_bin(num_warps):
    # every lane of every program adds to the same counter
    x = np.full(3000, 0.5, np.float32)
    hist = histogram.histogram(x, 16, BLOCK_SIZE=256, num_warps=num_warps)
    expected = np.zeros(16, np.int32)
    expected[8] = 3000
    np.testing.assert_array_equal(hist, expected)


def test_values_out_of_range_go_to_the_edge_bins():
    x = np.array([-3.0, 0.0, 0.999, 1.0, 7.5], np.float32)
    hist = histogram.histogram(x, 16)
    assert hist[0] == 2 and hist[15] == 3 and hist.sum() == 5


def test_mlx_array():
    import mlx.core as mx

    x = np.random.default_rng(8).random(3333).astype(np.float32)
    hist = histogram.histogram(mx.array(x), 32)
    np.testing.assert_array_equal(np.array(hist), histogram.reference(x, 32))
