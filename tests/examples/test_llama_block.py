from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn
import numpy as np

from examples import llama_block


def test_main(capsys):
    assert llama_block.main() == 0
    out = capsys.readouterr().out
    assert "llama_block (dense linears)" in out and "llama_block (4-bit linears)" in out


def test_the_two_blocks_differ_only_in_their_kernels():
    cfg = llama_block.BlockConfig(quantized=True)
    ours, theirs = llama_block.make_pair(cfg)
    # same weights, the quantized ones frozen in both: only the norms and the head train
    trainable = sorted(k for k, _ in nn.utils.tree_flatten(ours.trainable_parameters()))
    assert trainable == sorted(k for k, _ in nn.utils.tree_flatten(theirs.trainable_parameters()))
    assert trainable == ["attention_norm", "ffn_norm", "head"]
    x = mx.array(np.random.default_rng(0).standard_normal((1, 5, cfg.dim)).astype(np.float32))
    targets = mx.array([[1, 2, 3, 4, 5]])
    _, g = nn.value_and_grad(ours, ours.loss)(x, targets)
    # the norms' gradients come from the ops' backward kernels and are not zero
    assert float(mx.abs(g["attention_norm"]).max()) > 0 and float(mx.abs(g["ffn_norm"]).max()) > 0
