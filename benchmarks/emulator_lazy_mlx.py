"""Lazy against eager emulator launches with MLX arrays: `python benchmarks/emulator_lazy_mlx.py
[--repeat N] [--size N]`.

A launch with MLX arrays on the emulator is a lazy `EmulatorKernel` node (backends/emulator/
lazy_mlx.py), or, with `TRITON_METAL_EMULATOR_LAZY=0`, runs at the call through NumPy copies of
its inputs (the eager path). Per path, measured in the same run on the same kernel (an
element-wise `x * 0.5 + exp(y)` over `--size` float32 elements, cached variant), the median in
microseconds of:

* the launch alone (lazy: building the node; eager: running the kernel);
* a launch and `mx.eval` of its result (the kernel's run included on both paths);
* ten launches chained through their outputs, then one `mx.eval` (a graph of ten nodes).

The ratio column divides by the eager path (the baseline). CPU figures of the machine it runs
on; nothing here says anything about Metal.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import mlx.core as mx
import numpy as np

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.backends.emulator import lazy_mlx


@triton.jit
def scaled_add(x_ptr, y_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * scale + tl.exp(y), mask=mask)


def launch(x: mx.array, y: mx.array) -> mx.array:
    out = mx.zeros_like(x)
    scaled_add[(triton.cdiv(x.size, 256),)](x, y, out, x.size, 0.5, BLOCK=256)
    return out


def chain(x: mx.array, y: mx.array) -> mx.array:
    for _ in range(10):
        x = launch(x, y)
    return x


def median_us(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def measure(x: mx.array, y: mx.array, repeat: int) -> dict[str, float]:
    mx.eval(launch(x, y))  # compiled and cached before timing
    return {
        "launch": median_us(lambda: launch(x, y), repeat),
        "launch + eval": median_us(lambda: mx.eval(launch(x, y)), repeat),
        "10 chained + eval": median_us(lambda: mx.eval(chain(x, y)), max(repeat // 10, 5)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=100)
    parser.add_argument("--size", type=int, default=4096)
    args = parser.parse_args()
    if not lazy_mlx.available():
        raise SystemExit("the lazy-launch extension cannot be built here (see the warning)")
    rng = np.random.default_rng(0)
    x = mx.array(rng.standard_normal(args.size).astype(np.float32))
    y = mx.array(rng.standard_normal(args.size).astype(np.float32))
    results = {}
    for mode in ("0", "1"):
        os.environ["TRITON_METAL_EMULATOR_LAZY"] = mode
        results[mode] = measure(x, y, args.repeat)
    os.environ.pop("TRITON_METAL_EMULATOR_LAZY")
    print(f"{args.size} float32 elements, medians of {args.repeat} rounds (us)")
    print(f"{'':20} {'eager':>10} {'lazy':>10} {'lazy/eager':>11}")
    for row in results["0"]:
        eager, lazy = results["0"][row], results["1"][row]
        print(f"{row:20} {eager:10.1f} {lazy:10.1f} {lazy / eager:11.2f}")


if __name__ == "__main__":
    main()
