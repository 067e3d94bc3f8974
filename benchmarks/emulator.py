"""Emulator benchmark: medians of compile, load, barrier and kernel times, beside NumPy.

    python benchmarks/emulator.py [--repeat N]

Rows: cold compile of one kernel (runtime library already built), cached load (disk cache hit
plus loading the library) in this process and in a fresh one (its imports done first, not
timed), one barrier round across 256 threads, vector add of 16M floats, row softmax of 4096x1024
floats. Kernels run through the NumPy launch path (outputs written in place); the NumPy column
times the same work done by NumPy itself. Each row ends with its target and whether the median
meets it; the exit status is 1 when one does not.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np

from triton_metal.backends.emulator import EmulatorKernel
from triton_metal.backends.emulator.runtime_lib import runtime_library
from triton_metal.backends.emulator.signature import InputSpec, OutputSpec, build_kernel_source

# the kernels the emulator tests check against NumPy (tests/ is not a package)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "emulator"))
from msl_kernels import SOFTMAX, VADD  # noqa: E402

BARRIERS = """
uint t = thread_index_in_threadgroup;
threadgroup float buf[256];
for (int k = 0; k < rounds; ++k) {
    buf[t] = float(k);
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
out[t] = buf[255 - t];
"""


def median_time(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def source(name, inputs, body):
    return build_kernel_source(name, inputs, [OutputSpec("out", "float")], body)


_missed: list[str] = []


def row(label: str, seconds: float, numpy_seconds: float | None, target_seconds: float) -> None:
    ours = f"{seconds * 1e3:10.3f} ms" if seconds >= 1e-4 else f"{seconds * 1e6:10.2f} us"
    if target_seconds >= 0.1:
        target = f"< {target_seconds:g} s"
    elif target_seconds >= 1e-4:
        target = f"< {target_seconds * 1e3:g} ms"
    else:
        target = f"< {target_seconds * 1e6:g} us"
    met = seconds < target_seconds
    if not met:
        _missed.append(label)
    verdict = f"target {target:9s} {'met' if met else 'MISSED'}"
    if numpy_seconds is None:
        print(f"{label:40s} {ours}   {'-':>13s}   {'-':>7s}   {verdict}")
    else:
        print(
            f"{label:40s} {ours}   {numpy_seconds * 1e3:10.3f} ms   {seconds / numpy_seconds:6.1f}x"
            f"   {verdict}"
        )


_FRESH_LOAD = """
import sys, time
from triton_metal.backends.emulator import EmulatorKernel
from triton_metal.backends.emulator.signature import InputSpec, OutputSpec, build_kernel_source
inputs = [InputSpec("a", "float", 1, 1 << 24), InputSpec("b", "float", 1, 1 << 24), InputSpec("n", "int32_t", 0, 1)]
src = build_kernel_source("bench_vadd", inputs, [OutputSpec("out", "float")], {body!r})
start = time.perf_counter()
EmulatorKernel.build(src, {body!r})._lib_handle()
print(time.perf_counter() - start)
"""


def fresh_process_load(repeat: int) -> float:
    """Median seconds of a cached build plus library load in a fresh process (the kernel is in
    the disk cache already; the process's imports are not timed)."""
    script = _FRESH_LOAD.format(body=VADD)
    times = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
        times.append(float(out.stdout.split()[-1]))
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    repeat = args.repeat
    runtime_library()  # built once per machine; not part of any row

    vadd_inputs = [
        InputSpec("a", "float", 1, 1 << 24),
        InputSpec("b", "float", 1, 1 << 24),
        InputSpec("n", "int32_t", 0, 1),
    ]

    def cold_compile() -> None:
        body = VADD + f"// {uuid.uuid4().hex}\n"  # a new source: never in the cache
        EmulatorKernel.build(source("bench_vadd", vadd_inputs, body), body)

    print(f"emulator benchmark, {os.cpu_count()} cores, medians of {repeat} runs\n")
    print(f"{'':40s} {'emulator':>13s}   {'numpy':>13s}   {'ratio':>7s}")
    row("cold compile (one kernel)", median_time(cold_compile, repeat), None, 0.3)

    src = source("bench_vadd", vadd_inputs, VADD)

    def cached_load() -> None:
        kernel = EmulatorKernel.build(src, VADD)
        kernel._lib_handle()

    row("cached load", median_time(cached_load, repeat), None, 5e-3)
    row("cached load, fresh process", fresh_process_load(repeat), None, 5e-3)

    rounds = 2000
    bsrc = build_kernel_source(
        "bench_barrier", [InputSpec("rounds", "int32_t", 0, 1)], [OutputSpec("out", "float")], BARRIERS
    )
    barrier_kernel = EmulatorKernel.build(bsrc, BARRIERS)
    bout = np.zeros(256, np.float32)
    t = median_time(
        lambda: barrier_kernel.launch([np.array(rounds, np.int32)], [bout], (256, 1, 1), (256, 1, 1)),
        repeat,
    )
    row("barrier round, 256 threads", t / rounds, None, 15e-6)

    n = 1 << 24
    a = np.random.rand(n).astype(np.float32)
    b = np.random.rand(n).astype(np.float32)
    out = np.empty(n, np.float32)
    vadd = EmulatorKernel.build(src, VADD)
    t = median_time(lambda: vadd.launch([a, b, np.array(n, np.int32)], [out], (n, 1, 1), (256, 1, 1)), repeat)
    assert np.array_equal(out, a + b)
    t_np = median_time(lambda: np.add(a, b, out=out), repeat)
    row("vector add, 16M floats", t, t_np, 0.3)

    rows_, cols = 4096, 1024
    x = np.random.randn(rows_, cols).astype(np.float32)
    sout = np.empty_like(x)
    ssrc = build_kernel_source(
        "bench_softmax",
        [InputSpec("x", "float", 2, x.size), InputSpec("ncols", "int32_t", 0, 1)],
        [OutputSpec("out", "float")],
        SOFTMAX,
    )
    softmax = EmulatorKernel.build(ssrc, SOFTMAX)
    t = median_time(
        lambda: softmax.launch([x, np.array(cols, np.int32)], [sout], (rows_ * 256, 1, 1), (256, 1, 1)),
        repeat,
    )

    def np_softmax() -> np.ndarray:
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    assert np.allclose(sout, np_softmax(), atol=1e-6)
    t_np = median_time(np_softmax, repeat)
    row("softmax 4096x1024", t, t_np, 0.5)
    print("\nall targets met" if not _missed else f"\ntargets missed: {', '.join(_missed)}")
    return 1 if _missed else 0


if __name__ == "__main__":
    sys.exit(main())
