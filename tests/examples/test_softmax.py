from __future__ import annotations

import triton_metal

import mlx.core as mx
import numpy as np
import pytest

from examples import softmax


def test_main(mode, capsys):
    assert softmax.main() == 0
    assert f"OK (backend: {triton_metal.active_backend_name()})" in capsys.readouterr().out


@pytest.mark.parametrize("shape", [(1, 1), (3, 16), (17, 100), (64, 257), (5, 1024)])
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_shapes(shape, num_warps):
    x = np.random.default_rng(shape[1]).standard_normal(shape).astype(np.float32) * 4
    out = softmax.softmax(x, num_warps=num_warps, max_programs=4)
    np.testing.assert_allclose(out, softmax.reference(x), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-5)


def test_float16():
    x = np.random.default_rng(0).standard_normal((20, 300)).astype(np.float16)
    out = softmax.softmax(x)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out.astype(np.float32), softmax.reference(x), atol=1e-3)


def test_mlx_bfloat16():
    x32 = np.random.default_rng(0).standard_normal((9, 130)).astype(np.float32)
    x = mx.array(x32).astype(mx.bfloat16)
    out = softmax.softmax(x)
    assert out.dtype == mx.bfloat16
    ref = softmax.reference(np.array(x.astype(mx.float32)))
    np.testing.assert_allclose(np.array(out.astype(mx.float32)), ref, atol=4e-3)


def test_row_stride_of_a_view():
    big = np.random.default_rng(3).standard_normal((10, 200)).astype(np.float32)
    view = big[:, :150]  # rows 200 apart, 150 long
    np.testing.assert_allclose(softmax.softmax(view), softmax.reference(view), rtol=1e-5, atol=1e-7)
