"""Cost of `tl.device_print` on the emulator, against the same kernel without a print measured
in the same run.

    python benchmarks/device_print.py [--repeat N]

Kernels (NumPy arrays, emulator, compiled before timing; the median of `--repeat` launches each):
1. `scale`: y = 2x over 4096 floats, no print (the baseline);
2. `scale_dormant`: the same with a `tl.device_print` of the block under a branch never taken
   (what carrying a print costs a launch that prints nothing);
3. `scale_printing`: the same printing x (4096 lines per launch, to a StringIO), and the same
   launch in the interpreter (`TRITON_METAL_INTERPRET=1`) for reference.
Prints medians, the ratios to the baseline and the cost per printed line.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import triton_metal as triton  # noqa: E402
import triton_metal.language as tl  # noqa: E402

N, BLOCK = 4096, 1024


@triton.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, x * 2, mask=offs < n)


@triton.jit
def scale_dormant(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if n < 0:
        tl.device_print("x", x)
    tl.store(y_ptr + offs, x * 2, mask=offs < n)


@triton.jit
def scale_printing(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.device_print("x", x)
    tl.store(y_ptr + offs, x * 2, mask=offs < n)


def median_times(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """Median time of each function, the functions alternating so that load on the machine
    hits all alike."""
    for fn in fns:
        fn()  # compiles
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, out in zip(fns, times):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    os.environ["TRITON_METAL_BACKEND"] = "emulator"
    os.environ.pop("TRITON_METAL_INTERPRET", None)
    x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    y = np.empty_like(x)
    grid = (N // BLOCK,)
    sink = io.StringIO()

    def launch(kernel: triton.JITFunction) -> Callable[[], object]:
        def run() -> None:
            with contextlib.redirect_stdout(sink):
                kernel[grid](x, y, N, BLOCK=BLOCK)
            sink.seek(0)
            sink.truncate()
        return run

    base, dormant = median_times([launch(scale), launch(scale_dormant)], args.repeat)
    (printing,) = median_times([launch(scale_printing)], args.repeat)
    os.environ["TRITON_METAL_INTERPRET"] = "1"
    (interpreted,) = median_times([launch(scale_printing)], max(3, args.repeat // 10))
    os.environ.pop("TRITON_METAL_INTERPRET")
    print(f"emulator, {N} float32 elements, {grid[0]} programs; medians of {args.repeat} launches")
    print(f"{'scale (no print, baseline)':44s} {base * 1e3:9.3f} ms  1.00x")
    print(f"{'scale_dormant (a print never executed)':44s} {dormant * 1e3:9.3f} ms  {dormant / base:.2f}x")
    print(f"{'scale_printing (4096 lines)':44s} {printing * 1e3:9.3f} ms  {printing / base:.2f}x  "
          f"{(printing - base) / N * 1e6:.2f} us per line")
    print(f"{'scale_printing in the interpreter':44s} {interpreted * 1e3:9.3f} ms  "
          f"{(interpreted) / N * 1e6:.2f} us per line")


if __name__ == "__main__":
    main()
