"""Cost of the emulator's bounds checks, measured against the same work with
`TRITON_METAL_EMULATOR_CHECKS=0` in the same run.

    python benchmarks/bounds_checks.py [--repeat N] [--kernels-only]

1. Kernel launches in this process (examples' kernels with NumPy arrays, compiled before timing):
   vector add of 16M floats, softmax of 4096x1024 floats, a 512x512x512 float32 matmul; the
   median of `--repeat` launches with and without checks.
2. The example suite (`python -m examples`, which checks every example against NumPy): each
   configuration runs once untimed (its kernels compiled and cached: checked and unchecked builds
   are different kernels), then `--repeat` timed runs in fresh processes, alternating the two
   configurations so that load on the machine hits both alike.
Prints medians and ratios checked / unchecked; the goal is at most 1.5 for the example suite
(exit status 1 when missed).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL = 1.5


def run_examples(checks: bool) -> float:
    env = dict(os.environ, TRITON_METAL_EMULATOR_CHECKS="1" if checks else "0", TRITON_METAL_BACKEND="emulator")
    env.pop("TRITON_METAL_INTERPRET", None)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "examples"], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _median_launch(fn: Callable[[], object], checks: bool, repeat: int) -> float:
    os.environ["TRITON_METAL_EMULATOR_CHECKS"] = "1" if checks else "0"
    fn()  # compiles this configuration's kernel
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def kernel_rows(repeat: int) -> None:
    os.environ["TRITON_METAL_BACKEND"] = "emulator"
    os.environ.pop("TRITON_METAL_INTERPRET", None)
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from examples.matmul import matmul
    from examples.softmax import softmax
    from examples.vector_add import add

    rng = np.random.default_rng(0)
    x, y = rng.random(1 << 24, dtype=np.float32), rng.random(1 << 24, dtype=np.float32)
    rows = rng.standard_normal((4096, 1024), dtype=np.float32)
    a, b = rng.standard_normal((512, 512), dtype=np.float32), rng.standard_normal((512, 512), dtype=np.float32)
    cases: list[tuple[str, Callable[[], object]]] = [
        ("vector add, 16M floats", lambda: add(x, y)),
        ("softmax 4096x1024", lambda: softmax(rows)),
        ("matmul 512x512x512 fp32", lambda: matmul(a, b)),
    ]
    for label, fn in cases:
        off = _median_launch(fn, False, repeat)
        on = _median_launch(fn, True, repeat)
        print(f"{label:28s} checks off (baseline) {off * 1e3:9.2f} ms   on {on * 1e3:9.2f} ms   "
              f"ratio {on / off:5.2f}")
    os.environ.pop("TRITON_METAL_EMULATOR_CHECKS", None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kernels-only", action="store_true", help="skip the example suite")
    args = parser.parse_args()
    kernel_rows(max(args.repeat, 5))
    if args.kernels_only:
        return 0
    for checks in (True, False):
        run_examples(checks)  # compile and cache
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.repeat):
        for checks in (False, True):
            times[checks].append(run_examples(checks))
    checked, unchecked = statistics.median(times[True]), statistics.median(times[False])
    ratio = checked / unchecked
    print(f"examples, bounds checks off (baseline): median {unchecked:.2f} s over {args.repeat} runs")
    print(f"examples, bounds checks on (default):   median {checked:.2f} s over {args.repeat} runs")
    print(f"ratio on/off: {ratio:.2f} (goal <= {GOAL}): {'met' if ratio <= GOAL else 'MISSED'}")
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
