from __future__ import annotations

import triton_metal

import numpy as np
import pytest

from examples import flash_attention


def test_main(mode, capsys):
    assert flash_attention.main() == 0
    out = capsys.readouterr().out
    assert out.count(f"OK (backend: {triton_metal.active_backend_name()})") == 2


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(
    ("shape", "blocks"),
    [((1, 1, 32, 16), (16, 16)), ((2, 3, 64, 32), (32, 16)), ((1, 2, 96, 64), (32, 32))],
)
def test_float32(causal, shape, blocks):
    rng = np.random.default_rng(shape[2])
    q, k, v = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
    sm_scale = 1.0 / np.sqrt(shape[3])
    o, M = flash_attention.attention(q, k, v, causal, sm_scale, BLOCK_M=blocks[0], BLOCK_N=blocks[1])
    o_ref, m_ref = flash_attention.reference(q, k, v, causal, sm_scale)
    np.testing.assert_allclose(o, o_ref, atol=2e-5, rtol=1e-4)
    np.testing.assert_allclose(M, m_ref, atol=2e-5, rtol=1e-5)


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_float16(num_warps):
    rng = np.random.default_rng(num_warps)
    shape = (1, 2, 64, 32)
    q, k, v = (rng.standard_normal(shape).astype(np.float16) for _ in range(3))
    o, M = flash_attention.attention(q, k, v, True, 0.3, num_warps=num_warps)
    assert o.dtype == np.float16
    o_ref, m_ref = flash_attention.reference(q, k, v, True, 0.3)
    # P is rounded to fp16 before the second dot, as on the GPU
    np.testing.assert_allclose(o.astype(np.float32), o_ref, atol=5e-3)
    np.testing.assert_allclose(M, m_ref, atol=1e-3)


def test_causal_first_row_attends_only_to_itself():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 1, 32, 16)).astype(np.float32) for _ in range(3))
    o, _ = flash_attention.attention(q, k, v, True, 0.25, BLOCK_M=16, BLOCK_N=16)
    np.testing.assert_allclose(o[0, 0, 0], v[0, 0, 0], rtol=1e-6)


def test_mlx_float16():
    import mlx.core as mx

    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((1, 1, 64, 16)).astype(np.float16) for _ in range(3))
    o, M = flash_attention.attention(mx.array(q), mx.array(k), mx.array(v), True, 0.25,
                                     BLOCK_M=16, BLOCK_N=16)
    assert o.dtype == mx.float16
    o_ref, m_ref = flash_attention.reference(q, k, v, True, 0.25)
    np.testing.assert_allclose(np.array(o).astype(np.float32), o_ref, atol=5e-3)
    np.testing.assert_allclose(np.array(M), m_ref, atol=1e-3)
