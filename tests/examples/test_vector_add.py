from __future__ import annotations

import triton_metal

import mlx.core as mx
import numpy as np
import pytest

from examples import vector_add


def test_main(mode, capsys):
    assert vector_add.main() == 0
    assert f"max abs error vs NumPy: 0 OK (backend: {triton_metal.active_backend_name()})" in capsys.readouterr().out


@pytest.mark.parametrize("size", [1, 15, 1024, 1025, 3000])
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_sizes_and_warps(size, num_warps):
    rng = np.random.default_rng(size)
    x = rng.standard_normal(size).astype(np.float32)
    y = rng.standard_normal(size).astype(np.float32)
    out = vector_add.add(x, y, BLOCK_SIZE=256, num_warps=num_warps)
    np.testing.assert_array_equal(out, x + y)


@pytest.mark.parametrize("dtype", [np.float16, np.int32, np.uint8])
def test_dtypes(dtype):
    rng = np.random.default_rng(0)
    x = (rng.random(777) * 100).astype(dtype)
    y = (rng.random(777) * 100).astype(dtype)
    np.testing.assert_array_equal(vector_add.add(x, y), x + y)


def test_mlx_bfloat16():
    rng = np.random.default_rng(1)
    x = mx.array(rng.standard_normal(999).astype(np.float32)).astype(mx.bfloat16)
    y = mx.array(rng.standard_normal(999).astype(np.float32)).astype(mx.bfloat16)
    out = vector_add.add(x, y)
    assert out.dtype == mx.bfloat16
    # bf16 + bf16 rounds once to bf16, as MLX's own addition does
    np.testing.assert_array_equal(np.array(out.astype(mx.float32)), np.array((x + y).astype(mx.float32)))


def test_strided_numpy_views_are_addresses_of_their_first_element():
    base = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    # the kernel reads 20 contiguous elements from where the view starts
    vector_add.add_kernel[(1,)](base[5:25], base[10:30], out[3:23], 20, BLOCK_SIZE=32)
    np.testing.assert_array_equal(out[3:23], base[5:25] + base[10:30])
    assert not out[:3].any() and not out[23:].any()


def test_every_example_main(capsys):
    from examples.__main__ import EXAMPLES, main

    assert main() == 0
    out = capsys.readouterr().out
    # flash attention (causal or not) and the llama block (dense or 4-bit linears) report twice
    assert out.count(f"OK (backend: {triton_metal.active_backend_name()})") == len(EXAMPLES) + 2
    assert "FAILED" not in out
