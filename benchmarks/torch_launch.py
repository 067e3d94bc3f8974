"""Python cost of a cached torch_mps launch: `python benchmarks/torch_launch.py [--repeat N]`.

Times `add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)` once its variant is compiled, with torch
tensors on the torch_mps path, where `torch.mps.compile_shader` is replaced by a stand-in whose
kernel function returns at once: what remains is our Python (binding, specialization of torch
tensors, cache lookup, argument checks, the call's argument list). The baseline, measured in the
same run, is the same launch with NumPy arrays on the emulator path with its launcher replaced
by a no-op (the runtime's own cached-launch cost). PyTorch's own encoding cost on a Mac is not
included and is unmeasured here. Target: the torch_mps launch under 10 us.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import triton_metal as triton  # noqa: E402
from examples.vector_add import add_kernel  # noqa: E402
from triton_metal.backends.torch_mps import use_compiler  # noqa: E402

TARGET_US = 10.0


class _NullLibrary:
    def __getattr__(self, name: str):  # noqa: ANN204
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *args, threads=None, group_size=None: None


def _batch_us(launch, per_batch: int) -> float:
    start = time.perf_counter()
    for _ in range(per_batch):
        launch()
    return (time.perf_counter() - start) / per_batch * 1e6


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=31, help="batches of each launch")
    parser.add_argument("--per-batch", type=int, default=500)
    args = parser.parse_args()
    n = 4096
    grid = (triton.cdiv(n, 1024),)

    os.environ["TRITON_METAL_BACKEND"] = "emulator"
    xn, yn, on = (np.ones(n, np.float32) for _ in range(3))
    add_kernel[grid](xn, yn, on, n, BLOCK_SIZE=1024)
    for compiled in add_kernel.cache.by_facts.values():
        compiled.launcher = lambda values, grid: None

    use_compiler(lambda source: _NullLibrary(), "cpu")
    xt, yt, ot = (torch.ones(n) for _ in range(3))
    os.environ["TRITON_METAL_BACKEND"] = "torch_mps"
    add_kernel[grid](xt, yt, ot, n, BLOCK_SIZE=1024)

    def numpy_launch() -> None:
        add_kernel[grid](xn, yn, on, n, BLOCK_SIZE=1024)

    def torch_launch() -> None:
        add_kernel[grid](xt, yt, ot, n, BLOCK_SIZE=1024)

    # batches alternate, so a change in the machine's load touches both series alike
    base_samples, torch_samples = [], []
    for _ in range(args.repeat):
        os.environ["TRITON_METAL_BACKEND"] = "emulator"
        base_samples.append(_batch_us(numpy_launch, args.per_batch))
        os.environ["TRITON_METAL_BACKEND"] = "torch_mps"
        torch_samples.append(_batch_us(torch_launch, args.per_batch))
    use_compiler(None)
    base = statistics.median(base_samples)
    cost = statistics.median(torch_samples)

    verdict = "ok" if cost <= TARGET_US else "OVER TARGET"
    print(f"cached launch, NumPy on the emulator path, launcher stubbed (baseline): {base:.2f} us")
    print(f"cached launch, torch tensors on the torch_mps path, PyTorch call stubbed: {cost:.2f} us "
          f"(target {TARGET_US:g} us: {verdict}; {cost / base:.2f}x the baseline)")
    return 0 if cost <= TARGET_US else 1


if __name__ == "__main__":
    raise SystemExit(main())
