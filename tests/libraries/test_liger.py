"""Liger-Kernel 0.8.5, unmodified, on torch CPU tensors through `install_as_triton()`: its
cross-entropy forward and backward over its options, and a few of its other ops, against
torch's own ops in float64, on the emulator, in the interpreter, on the Metal path and on the
torch_mps path (the recording stand-ins: conftest.py). docs/torch.md, "Libraries", lists what runs.

Sizes keep the compiled variants few (each costs a g++ run): vocabularies 77 to 123 share one
block size and the same integer facts, so one variant per option set serves every shape."""

from __future__ import annotations

from importlib import metadata
from typing import Any

import pytest

torch = pytest.importorskip("torch")  # the `torch` extra; CI installs it

import triton_metal  # noqa: E402

triton_metal.install_as_triton()  # before Liger imports triton

try:
    import liger_kernel.ops as liger  # noqa: E402
    from liger_kernel.ops.fused_moe import compute_routing_metadata  # noqa: E402
except ImportError as missing:  # CI installs it (.ci/run); a missing library is a failure, not a skip
    raise ImportError(
        "tests/libraries/test_liger.py needs Liger-Kernel: .venv/bin/pip install --no-deps "
        "liger-kernel==0.8.5 (without its dependencies, which ask for a real triton; README.md)"
    ) from missing

import torch.nn.functional as F  # noqa: E402


LIGER_VERSION = "0.8.5"


def test_the_pinned_release_is_installed():
    assert metadata.version("liger-kernel") == LIGER_VERSION


def _leaf(t: torch.Tensor) -> torch.Tensor:
    return t.detach().clone().requires_grad_(True)


def _close(got: torch.Tensor, want: torch.Tensor, tol: float) -> None:
    torch.testing.assert_close(got.double(), want.double(), rtol=tol, atol=tol)


# -- cross-entropy ------------------------------------------------------------------------------

def _ce_reference(x: torch.Tensor, target: torch.Tensor, opts: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """torch's cross-entropy in float64 with Liger's softcap (`softcap * tanh(x / softcap)` on the
    logits) and z-loss (`scale * logsumexp(logits)**2` per kept row, reduced like the loss)."""
    ignore = opts.get("ignore_index", -100)
    reduction = opts.get("reduction", "mean")
    softcap = opts.get("softcap")
    logits = softcap * torch.tanh(x / softcap) if softcap else x
    weight = opts.get("weight")
    loss = F.cross_entropy(logits, target, weight=None if weight is None else weight.double(),
                           ignore_index=ignore, label_smoothing=opts.get("label_smoothing", 0.0),
                           reduction=reduction)
    kept = target != ignore
    z = opts.get("lse_square_scale", 0.0) * torch.logsumexp(logits, -1) ** 2 * kept
    if reduction == "mean":
        z = z.sum() / kept.sum()
    elif reduction == "sum":
        z = z.sum()
    return loss + z, z


CE_CASES = {
    "mean": dict(shape=(6, 100)),
    "sum-label-smoothing-grad-scaled": dict(shape=(5, 123), reduction="sum", label_smoothing=0.1, grad=2.5),
    "none-z-loss": dict(shape=(7, 77), reduction="none", lse_square_scale=1e-3, return_z_loss=True),
    "softcap-class-weights": dict(shape=(6, 100), softcap=4.0, weighted=True, label_smoothing=0.05),
    "mean-grad-scaled-other-ignore-index": dict(shape=(9, 77), ignore_index=3, grad=0.5),
    "bf16": dict(shape=(4, 100), dtype=torch.bfloat16),
}


STAND_IN_CASES = ["mean", "none-z-loss", "softcap-class-weights"]
"""The cases also run on the Metal and torch_mps paths (each case is a variant of its own, one
g++ run per path from an empty cache: three keep the cost down)."""


@pytest.mark.parametrize("case", CE_CASES, ids=list(CE_CASES))
def test_cross_entropy_forward_and_backward(shared_check_backend: str, case: str) -> None:
    _check_cross_entropy(case)


@pytest.mark.parametrize("case", STAND_IN_CASES)
def test_cross_entropy_on_the_stand_ins(stand_in_backend: str, case: str) -> None:
    _check_cross_entropy(case)


def _check_cross_entropy(case: str) -> None:
    """Liger's cross-entropy for one of `CE_CASES`, forward and backward, against torch."""
    opts = dict(CE_CASES[case])
    rows, vocab = opts.pop("shape")
    dtype = opts.pop("dtype", torch.float32)
    grad = opts.pop("grad", 1.0)
    gen = torch.Generator().manual_seed(len(case))
    x = (torch.randn(rows, vocab, generator=gen) * 3).to(dtype)
    target = torch.randint(0, vocab, (rows,), generator=gen)
    ignore = opts.setdefault("ignore_index", -100)
    target[1] = ignore
    if opts.pop("weighted", False):
        opts["weight"] = torch.rand(vocab, generator=gen) + 0.5
    ours = _leaf(x)
    loss, z_loss, _, _ = liger.LigerCrossEntropyFunction.apply(
        ours, target, opts.get("weight"), ignore, opts.get("lse_square_scale", 0.0),
        opts.get("label_smoothing", 0.0), opts.get("reduction", "mean"), opts.get("softcap"),
        opts.get("return_z_loss", False))
    ref_x = _leaf(x.double())
    ref_loss, ref_z = _ce_reference(ref_x, target, opts)
    upstream = torch.full_like(ref_loss, grad) if ref_loss.ndim == 0 else torch.rand(rows, generator=gen, dtype=torch.float64)
    loss.backward(upstream.to(loss.dtype))
    ref_loss.backward(upstream)
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-5
    _close(loss, ref_loss, tol)
    if opts.get("return_z_loss"):
        _close(z_loss, ref_z, tol)
    _close(ours.grad, ref_x.grad, tol)
    assert not ours.grad[1].any()  # the ignored row's gradient is zero


def test_cross_entropy_accuracy_and_predicted_tokens(backend: str) -> None:
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(8, 100, generator=gen)
    target = torch.randint(0, 100, (8,), generator=gen)
    target[::2] = x.argmax(-1)[::2]  # half the rows predicted right
    target[3] = -100
    loss, _, accuracy, predicted = liger.LigerCrossEntropyFunction.apply(
        x, target, None, -100, 0.0, 0.0, "mean", None, False, True, True)
    kept = target != -100
    _close(loss, F.cross_entropy(x.double(), target), 1e-5)
    assert accuracy.item() == pytest.approx(((x.argmax(-1) == target) & kept).sum().item() / kept.sum().item())
    assert torch.equal(predicted, torch.where(kept, x.argmax(-1), -1))


def test_cross_entropy_over_several_blocks(shared_check_backend: str) -> None:
    """A vocabulary past Liger's largest block (32768): both passes loop over column blocks (a
    32768-wide variant costs about 8 s of g++ per compiled path: two paths only)."""
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(2, 33000, generator=gen) * 4
    target = torch.tensor([32999, 5])
    ours = _leaf(x)
    loss = liger.LigerCrossEntropyFunction.apply(ours, target, None)[0]
    loss.backward()
    ref_x = _leaf(x.double())
    ref = F.cross_entropy(ref_x, target)
    ref.backward()
    _close(loss, ref, 1e-5)
    _close(ours.grad, ref_x.grad, 1e-6)


def test_fused_linear_cross_entropy(backend: str) -> None:
    gen = torch.Generator().manual_seed(5)
    h, w, b = torch.randn(6, 16, generator=gen), torch.randn(77, 16, generator=gen), torch.randn(77, generator=gen)
    target = torch.randint(0, 77, (6,), generator=gen)
    target[0] = -100
    ours = [_leaf(t) for t in (h, w, b)]
    loss = liger.LigerFusedLinearCrossEntropyFunction.apply(ours[0], ours[1], target, ours[2])[0]
    loss.backward()
    refs = [_leaf(t.double()) for t in (h, w, b)]
    ref = F.cross_entropy(refs[0] @ refs[1].T + refs[2], target)
    ref.backward()
    _close(loss, ref, 1e-5)
    for got, want in zip(ours, refs):
        _close(got.grad, want.grad, 1e-5)


# -- other ops ----------------------------------------------------------------------------------

def _rope_pairs(x: torch.Tensor, freqs: torch.Tensor) -> torch.Tensor:
    """Llama 4's RoPE: consecutive (real, imaginary) pairs times the complex frequencies."""
    re, im = x[..., 0::2], x[..., 1::2]
    c, s = freqs.real[None, :, None, :].double(), freqs.imag[None, :, None, :].double()
    return torch.stack([re * c - im * s, re * s + im * c], -1).flatten(-2)


def _rms_norm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def _rope_half(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
    return x * cos[:, None] + rotated * sin[:, None]


OPS: dict[str, Any] = {
    # name: (Liger's call, the float64 reference, input shapes)
    # in_place=False: the default writes the input gradient over dY (test_rms_norm_in_place)
    "rms_norm": (lambda x, w: liger.LigerRMSNormFunction.apply(x, w, 1e-6, 0.0, "llama", False), _rms_norm,
                 [(2, 3, 64), (64,)]),
    "layer_norm": (lambda x, w, b: liger.LigerLayerNormFunction.apply(x, w, b, 1e-5),
                   lambda x, w, b: F.layer_norm(x, (80,), w, b, 1e-5), [(6, 80), (80,), (80,)]),
    "swiglu": (liger.LigerSiLUMulFunction.apply, lambda a, b: F.silu(a) * b, [(3, 4, 40), (3, 4, 40)]),
}


@pytest.mark.parametrize("op", OPS, ids=list(OPS))
def test_op_forward_and_backward(backend: str, op: str) -> None:
    call, reference, shapes = OPS[op]
    gen = torch.Generator().manual_seed(len(op))
    inputs = [torch.randn(s, generator=gen) for s in shapes]
    ours, refs = [_leaf(t) for t in inputs], [_leaf(t.double()) for t in inputs]
    out, ref = call(*ours), reference(*refs)
    upstream = torch.randn(ref.shape, generator=gen, dtype=torch.float64)
    out.backward(upstream.float().clone())  # Liger's RMSNorm writes its input gradient over it
    ref.backward(upstream)
    _close(out, ref, 1e-5)
    for got, want in zip(ours, refs):
        _close(got.grad, want.grad, 1e-4)


def test_rms_norm_in_place(backend: str) -> None:
    """Liger's default RMSNorm backward passes dY as its output dX too, and its row loop loads
    dY after storing dX. In place that is one buffer; on the Metal path, where each written
    argument has its own output, the variant compiles the two parameters as one
    (`PointerArg.same_as`) instead of refusing the launch (docs/runtime.md, "Aliasing")."""
    gen = torch.Generator().manual_seed(9)
    x, w = _leaf(torch.randn(3, 64, generator=gen)), _leaf(torch.randn(64, generator=gen))
    ref_x, ref_w = _leaf(x.double()), _leaf(w.double())
    out = liger.LigerRMSNormFunction.apply(x, w, 1e-6)
    upstream = torch.randn(3, 64, generator=gen, dtype=torch.float64)
    _rms_norm(ref_x, ref_w).backward(upstream)
    out.backward(upstream.float())
    _close(x.grad, ref_x.grad, 1e-4)
    _close(w.grad, ref_w.grad, 1e-4)


def _check_qk(call: Any, reference: Any, q: torch.Tensor, k: torch.Tensor, gen: torch.Generator) -> None:
    """Liger's rotation of q and k, and its backward, against the float64 reference."""
    ours, refs = [_leaf(q), _leaf(k)], [_leaf(q.double()), _leaf(k.double())]
    out = call(*ours)
    ref = [reference(t) for t in refs]
    upstream = [torch.randn(t.shape, generator=gen, dtype=torch.float64) for t in ref]
    torch.autograd.backward(out, [u.float() for u in upstream])
    torch.autograd.backward(ref, upstream)
    for got, want in zip([*out, *(t.grad for t in ours)], [*ref, *(t.grad for t in refs)]):
        _close(got, want, 1e-5)


def test_rope(backend: str) -> None:
    gen = torch.Generator().manual_seed(3)
    angles = torch.randn(1, 5, 8, generator=gen)
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)
    q, k = torch.randn(2, 4, 5, 16, generator=gen), torch.randn(2, 2, 5, 16, generator=gen)
    _check_qk(lambda q, k: liger.LigerRopeFunction.apply(q, k, cos, sin),
              lambda t: _rope_half(t, cos.double(), sin.double()), q, k, gen)


def test_llama4_rope(backend: str) -> None:
    """Pointers into q and k are made after an early `return` (docs/torch.md, "Libraries")."""
    gen = torch.Generator().manual_seed(4)
    freqs = torch.polar(torch.ones(5, 8), torch.randn(5, 8, generator=gen))
    q, k = torch.randn(2, 5, 4, 16, generator=gen), torch.randn(2, 5, 2, 16, generator=gen)
    _check_qk(lambda q, k: liger.LigerLlama4RopeFunction.apply(q, k, freqs), lambda t: _rope_pairs(t, freqs), q, k, gen)


def test_kl_div(backend: str) -> None:
    gen = torch.Generator().manual_seed(6)
    y_pred = torch.log_softmax(torch.randn(4, 100, generator=gen), -1)
    y_true = torch.softmax(torch.randn(4, 100, generator=gen), -1)
    ours, ref_pred = _leaf(y_pred), _leaf(y_pred.double())
    loss = liger.LigerKLDivLossFunction.apply(ours, y_true, "batchmean", False)
    ref = F.kl_div(ref_pred, y_true.double(), reduction="batchmean")
    loss.backward()
    ref.backward()
    _close(loss, ref, 1e-5)
    _close(ours.grad, ref_pred.grad, 1e-6)


def test_moe_routing_metadata(shared_check_backend: str) -> None:
    """Liger's MoE router: a histogram zeroed and then counted into with atomics by one program,
    a prefix sum and a scatter, against a stable sort of the (token, k) assignments (four
    kernels, about 7 s of g++ per compiled path: two paths only)."""
    gen = torch.Generator().manual_seed(8)
    tokens, k, experts = 40, 2, 6
    topk = torch.rand(tokens, experts, generator=gen).topk(k, -1).indices.to(torch.int32)
    count, start, gather, scatter, reverse, _, _ = compute_routing_metadata(topk, experts)
    flat = topk.flatten().long()
    order = torch.argsort(flat, stable=True)
    assert torch.equal(count.long(), torch.bincount(flat, minlength=experts))
    assert torch.equal(start.long(), torch.cat([torch.zeros(1, dtype=torch.long), torch.bincount(flat, minlength=experts).cumsum(0)]))
    assert torch.equal(scatter.long(), order)
    assert torch.equal(gather.long(), order // k)
    assert torch.equal(reverse.long(), torch.argsort(order))
