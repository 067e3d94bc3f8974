"""Cost of the emulator's bounds checks: the example suite with checks (the default) against the
same suite with `TRITON_METAL_EMULATOR_CHECKS=0`, measured in the same run.

    python benchmarks/bounds_checks.py [--repeat N]

Each configuration first runs once untimed (its kernels compiled and cached: checked and
unchecked builds are different kernels), then `--repeat` timed runs of `python -m examples` in
fresh processes, alternating the two configurations so that load on the machine hits both alike.
Prints each configuration's median wall time and the ratio checked / unchecked against the goal
(at most 1.5); the exit status is 1 when the goal is missed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
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
