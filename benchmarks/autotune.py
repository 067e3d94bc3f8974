"""Autotuning benchmark: tuning time per kernel, and the chosen config against the slowest and the
default config, all measured in the same run.

    python benchmarks/autotune.py [--warm] [--rep MS]

Kernels: the autotuned matmul example (fp16 256x256x128, its seven configs) and tutorial 01's
vector add (fp32, 2**20 elements, four configs). For each kernel:

1. tuning time: the first launch through `autotune`, i.e. compiling every config and timing it
   with `testing.do_bench` (cold: a fresh `TRITON_METAL_CACHE_DIR`, so compiles are included;
   `--warm` keeps the user's cache, where compiled variants and tuning results may already be);
2. then every config that compiles is timed again with `testing.do_bench` (p50 of `--rep` ms),
   and the chosen one is compared with the slowest and with the default (the config a user would
   write without tuning: the tutorials' block sizes).

Timings are taken on the active backend; on the emulator they are CPU times of the emulated GPU
program and say nothing about any Apple GPU.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for `examples`

import triton_metal as triton  # noqa: E402
from triton_metal import testing  # noqa: E402
from triton_metal.runtime import autotune_cache  # noqa: E402


@dataclass
class Case:
    name: str
    kernel: Any  # the @jit kernel
    configs: list[triton.Config]
    default: triton.Config
    key: list[str]
    launch: Callable[[Any, dict[str, Any]], None]  # (kernel or autotuner, config kwargs) -> None


def matmul_case() -> Case:
    from examples import matmul_autotuned as ex

    a, b = ex.inputs()
    M, K = a.shape
    N = b.shape[1]
    c = np.zeros((M, N), np.float16)

    def launch(kernel: Any, options: dict[str, Any]) -> None:
        kernel[ex._grid(M, N)](a, b, c, M, N, K, *ex.strides(a), *ex.strides(b), *ex.strides(c),
                               **options)

    return Case("matmul fp16 256x256x128", ex.matmul_kernel, ex.CONFIGS, ex.DEFAULT_CONFIG,
                ["M", "N", "K"], launch)


def vector_add_case() -> Case:
    from examples.vector_add import add_kernel

    n = 1 << 20
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)

    def launch(kernel: Any, options: dict[str, Any]) -> None:
        grid = lambda META: (triton.cdiv(n, META["BLOCK_SIZE"]),)  # noqa: E731
        kernel[grid](x, y, out, n, **options)

    configs = [triton.Config({"BLOCK_SIZE": 1024}, num_warps=4),
               triton.Config({"BLOCK_SIZE": 256}, num_warps=1),
               triton.Config({"BLOCK_SIZE": 4096}, num_warps=8),
               triton.Config({"BLOCK_SIZE": 512}, num_warps=2)]
    return Case("vector add fp32 2**20", add_kernel, configs, configs[0], ["n_elements"], launch)


def run_case(case: Case, rep: float) -> None:
    tuned = triton.autotune(case.configs, key=case.key, rep=rep)(case.kernel)
    start = time.perf_counter()
    case.launch(tuned, {})
    tuning = time.perf_counter() - start
    best = tuned.best_config
    times: dict[triton.Config, float] = {}
    for config in case.configs:
        if config in tuned.skipped:
            continue
        options = config.all_kwargs()
        result = testing.do_bench(lambda: case.launch(case.kernel, options), rep=rep, quantiles=[0.5])
        times[config] = float(result)  # type: ignore[arg-type]
    slowest = max(times, key=times.__getitem__)
    print(f"\n{case.name}: tuned in {tuning:.2f} s ({tuned.last_origin}; "
          f"{len(times)} configs timed, {len(tuned.skipped)} skipped)")
    for config, ms in times.items():
        marks = [m for m, c in (("chosen", best), ("default", case.default), ("slowest", slowest)) if c == config]
        print(f"  {ms:9.3f} ms  {{{config}}} {' '.join(marks)}")
    for config, reason in tuned.skipped.items():
        print(f"  {'skipped':>12}  {{{config}}}: {reason.splitlines()[0]}")
    chosen = times[best]
    print(f"  chosen vs slowest: {times[slowest] / chosen:.2f}x faster; "
          f"chosen vs default: {times[case.default] / chosen:.2f}x faster")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warm", action="store_true", help="keep the user's caches (default: a fresh one)")
    parser.add_argument("--rep", type=float, default=300.0, help="do_bench time budget per config, ms")
    args = parser.parse_args()
    os.environ["TRITON_METAL_AUTOTUNE"] = "measure"  # tuning time is what is measured, GPU or not
    if not args.warm:
        os.environ["TRITON_METAL_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton_metal_autotune_bench_")
        os.environ[autotune_cache.SHIPPED_ENV] = os.environ["TRITON_METAL_CACHE_DIR"]  # no defaults
    backend = triton.active_backend_name()
    chip = autotune_cache.current_chip(backend)
    print(f"backend: {backend}; chip: {chip}; timing path: {testing.timing_path()}; "
          f"cache: {'warm' if args.warm else 'cold'}")
    if backend != "metal":
        print("(times are CPU times of the emulated program, not GPU times)")
    for make in (matmul_case, vector_add_case):
        run_case(make(), args.rep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
