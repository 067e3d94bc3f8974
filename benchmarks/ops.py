"""`triton_metal.ops` beside MLX's built-ins: `python benchmarks/ops.py [--iters N] [--only NAME...]`.

For every op (`triton_metal/selftest/ops_cases.py`: the same cases the self-test's `--bench`
runs) both calls run on the same MLX arrays in the same process, each warmed up (which compiles)
and then timed `--iters` times with its results evaluated; the table shows the medians, the rate
(GB/s of compulsory traffic, or TFLOP/s) and ours / MLX's time (below 1.0: ours is faster). On a
Mac the op runs on the GPU through Metal and MLX's on the GPU too. Elsewhere ours runs on the CPU
emulator and MLX's on MLX's CPU backend: a correctness-scale figure comparing two CPU
implementations, not a GPU figure.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import triton_metal  # noqa: E402
from triton_metal.selftest.ops_cases import op_bench_cases  # noqa: E402
from triton_metal.tools.timing import load_mlx, time_ms  # noqa: E402


def _rate(bytes_moved: int, flops: int, ms: float) -> str:
    if flops:
        return f"{flops / (ms * 1e-3) / 1e12:.3f} TFLOP/s"
    return f"{bytes_moved / (ms * 1e-3) / 1e9:.2f} GB/s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--only", nargs="*", help="case names, first word (ops.softmax, ops.rope, ...)")
    args = parser.parse_args(argv)
    mx = load_mlx()
    backend = triton_metal.active_backend_name()
    large = backend == "metal"
    print(f"backend: {backend}; MLX {mx.__version__} ({'GPU' if large else 'CPU'}); "
          f"sizes: {'GPU' if large else 'CPU-scale'}; medians of {args.iters} runs")
    if not large:
        print("note: ours on the CPU emulator, MLX on its CPU backend; not an Apple GPU figure")
    print("| op | triton_metal ms | rate | MLX built-in | MLX ms | rate | ours / MLX |")
    print("|---|---|---|---|---|---|---|")
    for case in op_bench_cases(mx, large):
        if args.only and case.name.split()[0] not in args.only:
            continue
        ours = statistics.median(time_ms(case.kernel, warmup=1, iters=args.iters, mx=mx))
        theirs = statistics.median(time_ms(case.builtin, warmup=1, iters=args.iters, mx=mx))
        print(f"| {case.name} | {ours:.3f} | {_rate(case.bytes_moved, case.flops, ours)} | "
              f"{case.builtin_name} | {theirs:.3f} | {_rate(case.bytes_moved, case.flops, theirs)} | "
              f"{ours / theirs:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
