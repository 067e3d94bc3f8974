from __future__ import annotations

import triton_metal

import numpy as np
import pytest

from examples import layer_norm


def test_main(mode, capsys):
    assert layer_norm.main() == 0
    assert f"OK (backend: {triton_metal.active_backend_name()})" in capsys.readouterr().out


def _data(M, N, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((M, N)) * 2 + 0.5).astype(dtype)
    w = rng.random(N).astype(dtype)
    b = rng.random(N).astype(dtype)
    dy = (0.1 * rng.standard_normal((M, N))).astype(dtype)
    return x, w, b, dy


@pytest.mark.parametrize("shape", [(1, 16), (7, 100), (33, 257), (300, 64)])
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_forward_and_backward(shape, num_warps):
    M, N = shape
    x, w, b, dy = _data(M, N, np.float32)
    y, mean, rstd = layer_norm.layer_norm_forward(x, w, b, 1e-5, num_warps=num_warps)
    y_ref, mean_ref, rstd_ref = layer_norm.reference_forward(x, w, b, 1e-5)
    np.testing.assert_allclose(y, y_ref, atol=1e-5)
    np.testing.assert_allclose(mean, mean_ref, atol=1e-6)
    np.testing.assert_allclose(rstd, rstd_ref, rtol=1e-5)
    dx, dw, db = layer_norm.layer_norm_backward(dy, x, w, mean, rstd, num_warps=num_warps)
    dx_ref, dw_ref, db_ref = layer_norm.reference_backward(dy, x, w, 1e-5)
    np.testing.assert_allclose(dx, dx_ref, atol=1e-5)
    np.testing.assert_allclose(dw, dw_ref, atol=1e-4)
    np.testing.assert_allclose(db, db_ref, atol=1e-4)


def test_more_rows_than_partial_buffers_accumulate_under_the_lock():
    # N <= 1024 gives 256 partial buffers: 600 rows make programs share buffers
    x, w, b, dy = _data(600, 48, np.float32, seed=5)
    _, mean, rstd = layer_norm.layer_norm_forward(x, w, b)
    _, dw, db = layer_norm.layer_norm_backward(dy, x, w, mean, rstd)
    _, dw_ref, db_ref = layer_norm.reference_backward(dy, x, w, 1e-5)
    np.testing.assert_allclose(dw, dw_ref, atol=1e-4)
    np.testing.assert_allclose(db, db_ref, atol=1e-4)


def test_float16():
    x, w, b, dy = _data(20, 200, np.float16)
    y, mean, rstd = layer_norm.layer_norm_forward(x, w, b)
    assert y.dtype == np.float16
    y_ref, _, _ = layer_norm.reference_forward(x, w, b, 1e-5)
    np.testing.assert_allclose(y.astype(np.float32), y_ref, atol=1e-2)
    dx, dw, db = layer_norm.layer_norm_backward(dy, x, w, mean, rstd)
    dx_ref, dw_ref, db_ref = layer_norm.reference_backward(dy, x, w, 1e-5)
    np.testing.assert_allclose(dx.astype(np.float32), dx_ref, atol=1e-2)
    # fp16 partial sums (as the tutorial keeps them): compare relative to the totals
    np.testing.assert_allclose(dw.astype(np.float32), dw_ref, atol=2e-2 * np.abs(dw_ref).max())
    np.testing.assert_allclose(db.astype(np.float32), db_ref, atol=2e-2 * np.abs(db_ref).max())


def test_mlx_arrays():
    import mlx.core as mx

    x, w, b, dy = _data(40, 96, np.float32, seed=2)
    mx_x, mx_w, mx_b, mx_dy = (mx.array(a) for a in (x, w, b, dy))
    y, mean, rstd = layer_norm.layer_norm_forward(mx_x, mx_w, mx_b)
    dx, dw, db = layer_norm.layer_norm_backward(mx_dy, mx_x, mx_w, mean, rstd)
    y_ref, _, _ = layer_norm.reference_forward(x, w, b, 1e-5)
    dx_ref, dw_ref, db_ref = layer_norm.reference_backward(dy, x, w, 1e-5)
    for got, ref in ((y, y_ref), (dx, dx_ref), (dw, dw_ref), (db, db_ref)):
        assert isinstance(got, mx.array)
        np.testing.assert_allclose(np.array(got), ref, atol=1e-4)
