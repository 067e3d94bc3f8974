"""A Llama-style transformer block built from `triton_metal.ops`, checked against `mlx.nn`.

The block: `h = x + Attention(RMSNorm(x))`, `out = h + MLP(RMSNorm(h))`, where the attention
projects to queries, keys and values (grouped-query: fewer key/value heads), applies rotary
embeddings, runs causal scaled-dot-product attention and projects back, and the MLP is SwiGLU
(`down(silu(gate(x)) * up(x))`). Optionally every linear layer is 4-bit quantized (MLX's affine
layout).

`Block(..., use_ops=True)` computes with `triton_metal.ops` (`rms_norm`, `rope`,
`scaled_dot_product_attention`, `swiglu`, `quantized_matmul`, and `cross_entropy` for the loss;
dense linear layers stay MLX matmuls); `use_ops=False` is the same block from `mlx.nn` and
`mx.fast`. `main()` builds both from the same weights and checks the forward pass, the
gradients of every trainable parameter, and a few Adam steps whose losses must track each other.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
import numpy as np

import triton_metal
from triton_metal import ops


@dataclass(frozen=True)
class BlockConfig:
    dim: int = 128
    n_heads: int = 2
    n_kv_heads: int = 1
    hidden: int = 256
    vocab: int = 50
    rope_base: float = 10000.0
    eps: float = 1e-5
    quantized: bool = False
    group_size: int = 64
    bits: int = 4

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads


class Linear(nn.Module):
    """A bias-free linear layer; with `quantized`, its weight in MLX's 4-bit affine layout."""

    def __init__(self, n_in: int, n_out: int, cfg: BlockConfig, use_ops: bool) -> None:
        super().__init__()
        self.use_ops = use_ops
        self.quantized = cfg.quantized
        self.group_size, self.bits = cfg.group_size, cfg.bits
        self.weight = mx.random.normal((n_out, n_in)) * n_in ** -0.5
        if cfg.quantized:
            self.weight, self.scales, self.biases = mx.quantize(self.weight, cfg.group_size, cfg.bits)
            self.freeze(keys=["weight", "scales", "biases"])

    def __call__(self, x: mx.array) -> mx.array:
        if not self.quantized:
            return x @ self.weight.T
        kw = dict(transpose=True, group_size=self.group_size, bits=self.bits)
        qmm = ops.quantized_matmul if self.use_ops else mx.quantized_matmul
        return qmm(x, self.weight, self.scales, self.biases, **kw)


class Block(nn.Module):
    def __init__(self, cfg: BlockConfig, use_ops: bool) -> None:
        super().__init__()
        self.cfg, self.use_ops = cfg, use_ops
        d, hd = cfg.dim, cfg.head_dim
        self.attention_norm = mx.ones((d,))
        self.ffn_norm = mx.ones((d,))
        self.wq = Linear(d, cfg.n_heads * hd, cfg, use_ops)
        self.wk = Linear(d, cfg.n_kv_heads * hd, cfg, use_ops)
        self.wv = Linear(d, cfg.n_kv_heads * hd, cfg, use_ops)
        self.wo = Linear(cfg.n_heads * hd, d, cfg, use_ops)
        self.w1 = Linear(d, cfg.hidden, cfg, use_ops)
        self.w3 = Linear(d, cfg.hidden, cfg, use_ops)
        self.w2 = Linear(cfg.hidden, d, cfg, use_ops)
        self.head = mx.random.normal((cfg.vocab, d)) * d ** -0.5

    # the kernels, from triton_metal.ops or from MLX
    def _rms_norm(self, x: mx.array, w: mx.array) -> mx.array:
        return (ops.rms_norm if self.use_ops else mx.fast.rms_norm)(x, w, self.cfg.eps)

    def _rope(self, x: mx.array) -> mx.array:
        rope = ops.rope if self.use_ops else mx.fast.rope
        return rope(x, self.cfg.head_dim, traditional=False, base=self.cfg.rope_base, scale=1.0, offset=0)

    def _attention(self, q: mx.array, k: mx.array, v: mx.array) -> mx.array:
        sdpa = ops.scaled_dot_product_attention if self.use_ops else mx.fast.scaled_dot_product_attention
        return sdpa(q, k, v, scale=self.cfg.head_dim ** -0.5, mask="causal")

    def _swiglu(self, gate: mx.array, up: mx.array) -> mx.array:
        return ops.swiglu(gate, up) if self.use_ops else nn.silu(gate) * up

    def __call__(self, x: mx.array) -> mx.array:
        cfg = self.cfg
        B, L, _ = x.shape
        h = self._rms_norm(x, self.attention_norm)
        q = self.wq(h).reshape(B, L, cfg.n_heads, cfg.head_dim).transpose(0, 2, 1, 3)
        k = self.wk(h).reshape(B, L, cfg.n_kv_heads, cfg.head_dim).transpose(0, 2, 1, 3)
        v = self.wv(h).reshape(B, L, cfg.n_kv_heads, cfg.head_dim).transpose(0, 2, 1, 3)
        o = self._attention(self._rope(q), self._rope(k), v)
        x = x + self.wo(o.transpose(0, 2, 1, 3).reshape(B, L, -1))
        h = self._rms_norm(x, self.ffn_norm)
        return x + self.w2(self._swiglu(self.w1(h), self.w3(h)))

    def loss(self, x: mx.array, targets: mx.array) -> mx.array:
        logits = self(x) @ self.head.T
        xent = ops.cross_entropy if self.use_ops else nn.losses.cross_entropy
        return xent(logits, targets, reduction="mean")


def make_pair(cfg: BlockConfig, seed: int = 0) -> tuple[Block, Block]:
    """The block from triton_metal.ops and the block from mlx.nn, with the same weights."""
    mx.random.seed(seed)
    ours = Block(cfg, use_ops=True)
    theirs = Block(cfg, use_ops=False)
    theirs.update(ours.parameters())
    if cfg.quantized:
        for name in ("wq", "wk", "wv", "wo", "w1", "w3", "w2"):
            getattr(theirs, name).freeze(keys=["weight", "scales", "biases"])
    return ours, theirs


def _max_diff(a: Any, b: Any) -> float:
    return float(np.max(np.abs(np.array(a, dtype=np.float32) - np.array(b, dtype=np.float32))))


def compare(cfg: BlockConfig, batch: int = 2, seq: int = 12, steps: int = 3) -> dict[str, float]:
    """Worst differences between the two blocks: forward, gradients, and losses over `steps`
    Adam steps from the same start."""
    ours, theirs = make_pair(cfg)
    rng = np.random.default_rng(1)
    x = mx.array(rng.standard_normal((batch, seq, cfg.dim)).astype(np.float32))
    targets = mx.array(rng.integers(0, cfg.vocab, size=(batch, seq)).astype(np.int32))
    result = {"forward": _max_diff(ours(x), theirs(x))}
    grads = []
    for block in (ours, theirs):
        _, g = nn.value_and_grad(block, block.loss)(x, targets)
        grads.append(dict(nn.utils.tree_flatten(g)))
    result["gradients"] = max(_max_diff(grads[0][k], grads[1][k]) for k in grads[1])
    losses: list[list[float]] = [[], []]
    for i, block in enumerate((ours, theirs)):
        opt = optim.Adam(learning_rate=1e-3)
        step = nn.value_and_grad(block, block.loss)
        for _ in range(steps):
            loss, g = step(x, targets)
            opt.update(block, g)
            mx.eval(block.parameters(), opt.state)
            losses[i].append(float(loss))
    result["losses"] = max(abs(a - b) for a, b in zip(*losses))
    result["first_loss"], result["last_loss"] = losses[0][0], losses[0][-1]
    return result


def main() -> int:
    ok = True
    for quantized in (False, True):
        cfg = BlockConfig(quantized=quantized)
        r = compare(cfg)
        tol = {"forward": 1e-4, "gradients": 1e-4, "losses": 1e-3}
        good = all(r[k] <= tol[k] for k in tol) and r["last_loss"] < r["first_loss"]
        ok &= good
        label = "4-bit linears" if quantized else "dense linears"
        print(f"llama_block ({label}): forward {r['forward']:.2g}, gradients {r['gradients']:.2g}, "
              f"losses {r['losses']:.2g} (loss {r['first_loss']:.4f} -> {r['last_loss']:.4f}) "
              f"{'OK' if good else 'FAILED'} (backend: {triton_metal.active_backend_name()})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
