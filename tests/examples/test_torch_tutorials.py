"""Triton's tutorial kernels with torch CPU tensors, compiled and interpreted, against torch."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")  # the `torch` extra; CI installs it

from examples import dropout, flash_attention, layer_norm, matmul, softmax, vector_add  # noqa: E402


@pytest.fixture(params=["compiled", "interpret"])
def torch_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "interpret":
        monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    return request.param


def test_vector_add(torch_mode):
    x, y = torch.randn(5000), torch.randn(5000)
    out = vector_add.add(x, y)
    assert isinstance(out, torch.Tensor)
    assert torch.equal(out, x + y)


def test_fused_softmax_on_a_strided_view(torch_mode):
    torch.manual_seed(0)
    full = torch.randn(40, 300)
    x = full[::2, 5:261]  # rows 600 floats apart: the kernel gets x.stride(0)
    torch.testing.assert_close(softmax.softmax(x), torch.softmax(x, -1))


def test_layer_norm_forward_and_backward(torch_mode):
    torch.manual_seed(1)
    x = torch.randn(64, 200, requires_grad=True)
    w = torch.rand(200, requires_grad=True)
    b = torch.rand(200, requires_grad=True)
    dy = 0.1 * torch.randn(64, 200)
    y_ref = torch.nn.functional.layer_norm(x, (200,), w, b, 1e-5)
    y_ref.backward(dy)
    y, mean, rstd = layer_norm.layer_norm_forward(x.detach(), w.detach(), b.detach())
    dx, dw, db = layer_norm.layer_norm_backward(dy, x.detach(), w.detach(), mean, rstd)
    torch.testing.assert_close(y, y_ref.detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(dx, x.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(dw, w.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(db, b.grad, rtol=1e-4, atol=1e-4)


def test_matmul_fp16(torch_mode):
    torch.manual_seed(2)
    a = torch.randn(70, 50).half()
    b = torch.randn(50, 90).half()
    c = matmul.matmul(a, b, activation="leaky_relu")
    ref = torch.nn.functional.leaky_relu(a.float() @ b.float(), 0.01)
    torch.testing.assert_close(c.float(), ref, rtol=1e-2, atol=1e-2)


def test_seeded_dropout_is_a_mask_of_scaled_inputs(torch_mode):
    x = torch.randn(3000)
    out = dropout.seeded_dropout(x, p=0.5, seed=123)
    kept = out != 0
    torch.testing.assert_close(out[kept], x[kept] / 0.5)
    assert 0.4 < kept.float().mean().item() < 0.6
    assert torch.equal(out, dropout.seeded_dropout(x, p=0.5, seed=123))  # same seed, same mask


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention(torch_mode, causal):
    torch.manual_seed(3)
    q, k, v = (torch.randn(1, 2, 64, 32) for _ in range(3))
    scale = 1.0 / math.sqrt(32)
    out, _ = flash_attention.attention(q, k, v, causal, scale)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
    torch.testing.assert_close(out, ref, rtol=2e-3, atol=2e-3)
