"""Data-parallel training of the Llama block across `mx.distributed` ranks.

Every rank builds `examples/llama_block.py`'s block from `triton_metal.ops` with the same weights
(one seed), takes its share of each global batch, computes the gradients of its share's mean loss,
and averages them over the ranks with `mx.distributed.all_sum` (divided by the number of ranks):
with equal shares that is the gradient of the whole batch's mean loss, so every rank applies the
same update and the ranks stay identical, equal (to float32 rounding) to one process stepping on
the whole batch. Autotuned kernels choose once, on rank 0, for every rank
(`triton_metal/runtime/autotune_ranks.py`), so no rank runs other configs than the others.

    mlx.launch -n 2 --backend ring --python .venv/bin/python -m examples.llama_data_parallel
    python -m examples.llama_data_parallel          # one process, stepping on the whole batch

`--save PREFIX` writes each rank's final parameters to `PREFIX<rank>.npz` (the test compares
them); the dims are small, so a step takes well under a second on the CPU emulator.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
import numpy as np

import triton_metal

from .llama_block import Block, BlockConfig

CONFIG = BlockConfig(dim=128, n_heads=2, n_kv_heads=1, hidden=128, vocab=32)  # head dim 64: the least the attention kernels take
GLOBAL_BATCH = 4
SEQ = 8


def batches(steps: int, cfg: BlockConfig = CONFIG, seed: int = 1) -> list[tuple[np.ndarray, np.ndarray]]:
    """The global batches (inputs, targets), the same on every rank."""
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((GLOBAL_BATCH, SEQ, cfg.dim)).astype(np.float32),
             rng.integers(0, cfg.vocab, size=(GLOBAL_BATCH, SEQ)).astype(np.int32))
            for _ in range(steps)]


def shard(array: np.ndarray, rank: int, size: int) -> mx.array:
    """This rank's rows of a global batch (the batch divides evenly among the ranks)."""
    if len(array) % size:
        raise ValueError(f"a global batch of {len(array)} does not split evenly over {size} ranks")
    rows = len(array) // size
    return mx.array(array[rank * rows:(rank + 1) * rows])


def average_gradients(grads: Any, group: Any) -> Any:
    """The mean of every rank's gradients (one `all_sum` per parameter)."""
    size = group.size()
    if size == 1:
        return grads
    return nn.utils.tree_map(lambda g: mx.distributed.all_sum(g, group=group, stream=mx.cpu) / size, grads)


def train(steps: int, group: Any, learning_rate: float = 0.05) -> tuple[Block, list[float]]:
    """`steps` SGD steps of the block on this rank's shards; (block, this rank's losses)."""
    mx.random.seed(0)  # the same initial weights on every rank
    block = Block(CONFIG, use_ops=True)
    opt = optim.SGD(learning_rate=learning_rate)
    loss_and_grad = nn.value_and_grad(block, block.loss)
    losses: list[float] = []
    for x, targets in batches(steps):
        loss, grads = loss_and_grad(shard(x, group.rank(), group.size()),
                                    shard(targets, group.rank(), group.size()))
        opt.update(block, average_gradients(grads, group))
        mx.eval(block.parameters(), opt.state)
        losses.append(float(loss))
    return block, losses


def parameters(block: Block) -> dict[str, np.ndarray]:
    return {k: np.array(v) for k, v in nn.utils.tree_flatten(block.trainable_parameters())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="data-parallel steps of the Llama block")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--save", help="write the final parameters to SAVE<rank>.npz")
    args = parser.parse_args(argv)
    group = mx.distributed.init()
    block, losses = train(args.steps, group)
    if args.save:
        np.savez(f"{args.save}{group.rank()}.npz", **parameters(block))
    print(f"llama_data_parallel: rank {group.rank()} of {group.size()}, losses "
          f"{', '.join(f'{v:.4f}' for v in losses)} (backend: {triton_metal.active_backend_name()})",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
