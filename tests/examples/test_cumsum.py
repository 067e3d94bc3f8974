from __future__ import annotations

import triton_metal

import numpy as np
import pytest

from examples import cumsum


def test_main(mode, capsys):
    assert cumsum.main() == 0
    assert f"OK (backend: {triton_metal.active_backend_name()})" in capsys.readouterr().out


@pytest.mark.parametrize("shape", [(1, 1), (4, 16), (9, 100), (3, 513)])
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_int32(shape, num_warps):
    x = np.random.default_rng(shape[1]).integers(-50, 50, size=shape).astype(np.int32)
    np.testing.assert_array_equal(cumsum.cumsum(x, num_warps=num_warps), cumsum.reference(x))


@pytest.mark.parametrize("shape", [(5, 33), (2, 1000)])
def test_float32(shape):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    # the scan's association order may differ from NumPy's left fold
    np.testing.assert_allclose(cumsum.cumsum(x), np.cumsum(x.astype(np.float64), axis=1),
                               rtol=1e-5, atol=1e-4)


def test_int32_wraps_like_numpy():
    x = np.full((1, 4), 2**30, np.int32)
    np.testing.assert_array_equal(cumsum.cumsum(x), cumsum.reference(x))


def test_mlx_array():
    import mlx.core as mx

    x = np.random.default_rng(4).integers(-9, 9, size=(6, 70)).astype(np.int32)
    out = cumsum.cumsum(mx.array(x))
    np.testing.assert_array_equal(np.array(out), cumsum.reference(x))
