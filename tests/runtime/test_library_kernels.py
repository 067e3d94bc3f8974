"""Library-style kernels through `install_as_triton()`, on torch CPU tensors, against torch: on the
emulator, in the interpreter and through the torch_mps path (the recording stand-in)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")  # the `torch` extra; CI installs it

import triton_metal  # noqa: E402
from triton_metal.backends.torch_mps.standin import RecordingCompiler  # noqa: E402

triton_metal.install_as_triton()
sys.path.insert(0, str(Path(__file__).resolve().parent))
import library_kernels as lib  # noqa: E402
import torch.nn.functional as F  # noqa: E402


@pytest.fixture(autouse=True, params=["emulator", "interpret", "torch_mps"])
def _backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The emulator, the interpreter, and the torch_mps path through the recording stand-in."""
    monkeypatch.delenv("TRITON_METAL_INTERPRET", raising=False)
    monkeypatch.setenv("TRITON_METAL_BACKEND", "emulator")
    if request.param == "interpret":
        monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    if request.param != "torch_mps":
        yield
        return
    monkeypatch.setenv("TRITON_METAL_BACKEND", "torch_mps")
    with RecordingCompiler().installed() as recorder:
        yield
    assert recorder.calls


def test_rms_norm():
    torch.manual_seed(0)
    x = torch.randn(3, 5, 200)
    w = torch.randn(200)
    ref = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    torch.testing.assert_close(lib.rms_norm(x, w), ref, rtol=1e-5, atol=1e-5)


def test_layer_norm():
    torch.manual_seed(1)
    x, w, b = torch.randn(7, 300), torch.randn(300), torch.randn(300)
    y, mean, rstd = lib.layer_norm(x, w, b)
    torch.testing.assert_close(y, F.layer_norm(x, (300,), w, b, 1e-5), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(mean, x.mean(-1))


@pytest.mark.parametrize("gelu", [False, True])
def test_swiglu_geglu(gelu):
    torch.manual_seed(2)
    a, b = torch.randn(4, 3, 96), torch.randn(4, 3, 96)
    act = F.gelu(a, approximate="tanh") if gelu else F.silu(a)
    torch.testing.assert_close(lib.gated(a, b, gelu), act * b, rtol=1e-5, atol=1e-5)


def test_rope_in_place():
    torch.manual_seed(3)
    q = torch.randn(2, 5, 4, 16)
    cos, sin = torch.randn(5, 8), torch.randn(5, 8)
    c, s = torch.cat([cos, cos], -1)[None, :, None], torch.cat([sin, sin], -1)[None, :, None]
    rotated = torch.cat([-q[..., 8:], q[..., :8]], -1)
    ref = q * c + rotated * s
    out = lib.rope_(q, cos, sin)
    assert out is q
    torch.testing.assert_close(q, ref, rtol=1e-5, atol=1e-5)


def test_cross_entropy():
    torch.manual_seed(4)
    logits = torch.randn(6, 1500)
    target = torch.tensor([3, 1499, -100, 0, 700, 12])
    ref = F.cross_entropy(logits, target, reduction="none", ignore_index=-100)
    torch.testing.assert_close(lib.cross_entropy(logits, target), ref, rtol=1e-5, atol=1e-5)


def test_softmax_bf16_and_fp32():
    torch.manual_seed(5)
    x = torch.randn(9, 130)
    torch.testing.assert_close(lib.softmax(x), torch.softmax(x, -1))
    xb = x.to(torch.bfloat16)
    torch.testing.assert_close(lib.softmax(xb), torch.softmax(xb.float(), -1).to(torch.bfloat16))


@pytest.mark.parametrize("log_target", [False, True])
def test_kl_divergence(log_target):
    torch.manual_seed(6)
    y_pred = torch.log_softmax(torch.randn(5, 1200), -1)
    t = torch.softmax(torch.randn(5, 1200), -1)
    y_true = t.log() if log_target else t
    ref = F.kl_div(y_pred, y_true, reduction="batchmean", log_target=log_target)
    torch.testing.assert_close(lib.kl_div(y_pred, y_true, log_target), ref, rtol=1e-4, atol=1e-6)
