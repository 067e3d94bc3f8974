from __future__ import annotations

import triton_metal

import numpy as np
import pytest

from examples import matmul


def test_main(mode, capsys):
    assert matmul.main() == 0
    assert f"OK (backend: {triton_metal.active_backend_name()})" in capsys.readouterr().out


@pytest.mark.parametrize("mode", ["torch_mps"], indirect=True)
def test_main_on_tensor_ops(mode, capsys, monkeypatch):
    # the torch MPS path (a whole shader library) carries the Metal 4 tensor-op MSL and its
    # includes intact (the MLX path: test_float16_and_warps)
    monkeypatch.setenv("TRITON_METAL_TARGET", "apple10:4.0")
    assert matmul.main() == 0
    assert "OK" in capsys.readouterr().out
    a, b = np.zeros((200, 150), np.float16), np.zeros((150, 170), np.float16)  # main's shapes
    assert "mpp::tensor_ops::matmul2d<" in compiled_msl(a, b)


@pytest.mark.parametrize("shape", [(16, 16, 16), (32, 64, 48), (45, 70, 33), (100, 20, 90)])
@pytest.mark.parametrize("activation", ["", "leaky_relu"])
def test_float32(shape, activation):
    M, K, N = shape
    rng = np.random.default_rng(M * N)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = matmul.matmul(a, b, activation, BLOCK_SIZE_M=16, BLOCK_SIZE_N=32, BLOCK_SIZE_K=16,
                      GROUP_SIZE_M=2)
    np.testing.assert_allclose(c, matmul.reference(a, b, activation), rtol=1e-4, atol=1e-4)
    if activation:
        assert (c < 0).any()  # the negative part is scaled, not clipped


TARGETS = ("apple9:3.2", "apple10:4.0")
"""Simdgroup matrices (MSL 3.2) and Metal 4 tensor ops (MSL 4.0): docs/dot.md."""


def compiled_msl(a, b, **meta) -> str:
    """The MSL of the example's kernel for these arguments (its default 32 x 32 x 32 tile)."""
    c = np.empty((a.shape[0], b.shape[1]), a.dtype)
    return matmul.matmul_kernel.warmup(
        a, b, c, a.shape[0], b.shape[1], a.shape[1], a.shape[1], 1, b.shape[1], 1, b.shape[1], 1,
        BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION="leaky_relu",
        num_warps=meta.get("num_warps", 4), grid=(1,)).asm["msl"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_float16_and_warps(num_warps, target, monkeypatch):
    monkeypatch.setenv("TRITON_METAL_TARGET", target)
    rng = np.random.default_rng(num_warps)
    a = rng.standard_normal((70, 50)).astype(np.float16)
    b = rng.standard_normal((50, 40)).astype(np.float16)
    c = matmul.matmul(a, b, "leaky_relu", num_warps=num_warps)
    assert c.dtype == np.float16
    ref = matmul.reference(a, b, "leaky_relu")
    # fp32 accumulation, one rounding to fp16 at the end
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=2e-3, atol=2e-3)
    msl = compiled_msl(a, b, num_warps=num_warps)
    assert ("mpp::tensor_ops::matmul2d<" in msl) == (target == "apple10:4.0")
    assert ("simdgroup_multiply_accumulate(" in msl) == (target == "apple9:3.2")


def test_grouped_ordering_covers_every_tile():
    # 7 x 5 tiles with groups of 3 rows: the last group is partial
    rng = np.random.default_rng(7)
    a = rng.standard_normal((7 * 16, 16)).astype(np.float32)
    b = rng.standard_normal((16, 5 * 16)).astype(np.float32)
    c = matmul.matmul(a, b, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16, GROUP_SIZE_M=3)
    np.testing.assert_allclose(c, matmul.reference(a, b), rtol=1e-4, atol=1e-4)


def test_transposed_view_uses_its_strides():
    rng = np.random.default_rng(9)
    a = rng.standard_normal((40, 24)).astype(np.float32)
    bt = rng.standard_normal((36, 24)).astype(np.float32)
    b = bt.T  # a (24, 36) view with element strides (1, 24): no copy
    assert not b.flags.c_contiguous
    c = matmul.matmul(a, b)
    np.testing.assert_allclose(c, matmul.reference(a, np.ascontiguousarray(b)), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target", TARGETS)
def test_mlx_bfloat16(target, monkeypatch):
    import mlx.core as mx

    monkeypatch.setenv("TRITON_METAL_TARGET", target)
    rng = np.random.default_rng(11)
    a = mx.array(rng.standard_normal((48, 40)).astype(np.float32)).astype(mx.bfloat16)
    b = mx.array(rng.standard_normal((40, 56)).astype(np.float32)).astype(mx.bfloat16)
    c = matmul.matmul(a, b)
    assert c.dtype == mx.bfloat16
    ref = matmul.reference(np.array(a.astype(mx.float32)), np.array(b.astype(mx.float32)))
    # fp32 accumulation, one rounding to bf16 (8 significant bits) at the end
    np.testing.assert_allclose(np.array(c.astype(mx.float32)), ref, rtol=8e-3, atol=8e-3)


@pytest.mark.parametrize("shape", [(40, 200, 36), (70, 33, 45)])
def test_int8_matmul_is_exact(shape):
    # operands from the ends of the int8 range (the selftest's data): int32 results equal to
    # NumPy's int64 product (masked tails in M, N and K)
    M, K, N = shape
    rng = np.random.default_rng(K)
    a = rng.choice(np.array([-128, -127, 127, 1], np.int8), (M, K))
    b = rng.choice(np.array([-128, -127, 127, 1], np.int8), (K, N))
    c = matmul.int8_matmul(a, b)
    assert c.dtype == np.int32
    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))
