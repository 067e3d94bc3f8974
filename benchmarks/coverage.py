"""The launch-time coverage check of the Metal path: `python benchmarks/coverage.py [--repeat N]`.

Each example's host function is called at a realistic size with the Metal driver's launch
replaced by a recorder (nothing runs: this measures the host-side check, which is the same on a
Mac). For every launch it prints the verdict and the medians of
1. the first check of a (grid, scalars, sizes): the coverage program swept with NumPy;
2. a repeated launch's check, a memo hit (target about 1 us), beside the baseline measured in
   the same run: building the same key and one dict lookup, the least a memo can cost.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from examples import flash_attention, layer_norm, matmul, softmax, vector_add  # noqa: E402
from triton_metal.backends.metal import driver  # noqa: E402
from triton_metal.runtime import backend  # noqa: E402

HIT_TARGET_US = 1.5


def record_launches() -> list[tuple[Any, tuple[object, ...], tuple[int, int, int]]]:
    rng = np.random.default_rng(0)
    seen: list[tuple[Any, tuple[object, ...], tuple[int, int, int]]] = []
    backend._metal = True

    def record(self: Any, values: Any, grid: tuple[int, int, int]) -> None:
        seen.append((self, tuple(values), grid))

    driver.MetalLauncher.__call__ = record  # type: ignore[method-assign]
    driver._mlx = lambda: None  # no kernel is built
    f32 = np.float32
    vector_add.add(np.zeros(1 << 24, f32), np.zeros(1 << 24, f32))
    softmax.softmax(np.zeros((8192, 4096), f32))
    x = np.zeros((4096, 8192), f32)
    layer_norm.layer_norm_forward(x, np.ones(8192, f32), np.zeros(8192, f32))
    matmul.matmul(np.zeros((2048, 2048), np.float16), np.zeros((2048, 2048), np.float16))
    q = rng.standard_normal((2, 8, 1024, 64)).astype(np.float16)
    flash_attention.attention(q, q, q, True, 0.125)
    return seen


def median_us(fn: Any, repeat: int, number: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number * 1e6)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    launches = record_launches()
    missed = 0
    print(f"{'kernel':32} {'grid':>18} {'proven':>7} {'first check':>12} {'memo hit':>9} {'baseline':>9}")
    for launcher, values, grid in launches:
        sizes = {s.name: int(values[s.arg].size) for s in launcher.plan.outputs  # type: ignore[attr-defined]
                 if s.kind != "pointer_atomic"}

        def first() -> None:
            driver.LaunchCoverage(launcher.msl, launcher.arg_names)(values, grid, sizes)

        check = driver.LaunchCoverage(launcher.msl, launcher.arg_names)
        verdicts = check(values, grid, sizes)
        memo = {(grid, *sizes.values(), *[values[i] for i, _ in check.scalars]): verdicts}
        scalars = check.scalars

        def baseline() -> None:
            memo.get((grid, *sizes.values(), *[values[i] for i, _ in scalars]))

        first_us = median_us(first, args.repeat, 1)
        hit_us = median_us(lambda: check(values, grid, sizes), args.repeat, 20000)
        base_us = median_us(baseline, args.repeat, 20000)
        proven = all(v.proven for v in verdicts.values())
        missed += not proven
        name = launcher.msl.name.rsplit("_", 1)[0]
        print(f"{name:32} {str(grid):>18} {str(proven):>7} {first_us / 1e3:9.2f} ms {hit_us:6.2f} us "
              f"{base_us:6.2f} us  (hit/baseline {hit_us / base_us:.2f}x, target hit <= {HIT_TARGET_US} us)")
    print(f"{len(launches) - missed} of {len(launches)} launches proven (goal: all)")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
