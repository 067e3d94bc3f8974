"""What the emulator's fibers cost: kernels whose threadgroups synchronise, run here and in a
baseline checkout, in one run.

    python -m benchmarks.emulator_fibers [--baseline PATH] [--repeat N] [--rounds N]

A kernel that synchronises runs each thread of a threadgroup as a fiber (docs/emulator.md), so
its time is mostly fiber switches: every barrier round switches through all of a group's
threads. Rows:
* Triton's `test_load_store_same_ptr` kernel (one load and one store per program, 65,536
  programs of 32 warps: 1,024 fibers a group, one barrier each, as the in-place store waits for
  every thread's load);
* one barrier round of 1,024 threads (a kernel looping over barriers, 64 groups).
Each checkout (this one; `--baseline`, a checkout of an earlier commit, e.g. made with
`git worktree add`) runs in a fresh process with its own kernel cache, after a warm-up launch
that builds the runtime; the rounds alternate between checkouts, and each row prints the medians
and the ratio. The times are the emulator's on this machine's CPU, not anything of an Apple GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

BARRIER_ROUNDS = 200
BARRIER_GROUPS = 64


def child(repeat: int) -> None:
    import numpy as np

    import triton_metal as triton
    import triton_metal.language as tl

    @triton.jit
    def same_ptr(in_out_ptr):
        pid = tl.program_id(axis=0)
        x = tl.load(in_out_ptr + pid)
        tl.store(in_out_ptr + pid, x * 2)

    @triton.jit
    def barrier_rounds(out_ptr, rounds):
        acc = tl.zeros([1024], tl.float32)
        for r in range(rounds):
            # a reduction across the program's 1,024 threads: one barrier round (or more) each
            acc += tl.sum(acc + r, axis=0)
        tl.store(out_ptr + tl.program_id(0) * 1024 + tl.arange(0, 1024), acc)

    def timed(run) -> list[float]:
        run()  # builds the kernel (and, the first time, the runtime)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
        return times

    x = np.ones(65536, np.float32)

    def run_same_ptr() -> None:
        x[:] = 1
        same_ptr[(65536,)](x, num_warps=32)
        assert (x == 2).all()

    out = np.zeros(BARRIER_GROUPS * 1024, np.float32)
    print(json.dumps({
        "same_ptr": timed(run_same_ptr),
        "barriers": timed(lambda: barrier_rounds[(BARRIER_GROUPS,)](out, BARRIER_ROUNDS, num_warps=32)),
    }))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="a checkout of an earlier commit")
    parser.add_argument("--repeat", type=int, default=3, help="timed launches per process")
    parser.add_argument("--rounds", type=int, default=3, help="processes per checkout, alternating")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return 0
    from benchmarks._checkouts import checkouts as both, run_child  # the parent only

    checkouts = both(args.baseline)
    times: dict[str, dict[str, list[float]]] = {label: {} for label, _ in checkouts}
    with tempfile.TemporaryDirectory() as caches:
        for _ in range(args.rounds):
            for label, checkout in checkouts:
                found = run_child(__file__, checkout, [str(args.repeat)], TRITON_METAL_BACKEND="emulator",
                                  TRITON_METAL_CACHE_DIR=str(Path(caches, label)))
                for row, values in found.items():
                    times[label].setdefault(row, []).extend(values)
    rows = {"same_ptr": ("test_load_store_same_ptr's kernel, 65,536 programs x 32 warps", 1.0, "s"),
            "barriers": (f"one barrier round, 1,024 threads ({BARRIER_GROUPS} groups x {BARRIER_ROUNDS})",
                         1e6 / (BARRIER_GROUPS * BARRIER_ROUNDS), "us")}
    print(f"emulator fibers, {os.cpu_count()} cores, medians of {args.rounds} x {args.repeat} launches per checkout")
    for row, (label, scale, unit) in rows.items():
        medians = {name: statistics.median(times[name][row]) * scale for name, _ in checkouts}
        line = "  ".join(f"{name} {value:9.3f} {unit}" for name, value in medians.items())
        ratio = f"  baseline / this {medians['baseline'] / medians['this']:.2f}x" if "baseline" in medians else ""
        print(f"  {label:70} {line}{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
