"""Cold first calls: `python benchmarks/cold_start.py [--repeat N] [--only NAME]`.

Each case runs in a fresh process with an empty `TRITON_METAL_CACHE_DIR`, so its first call
compiles everything it needs (the emulator's runtime library included) and tunes every autotuned
kernel it meets:

* `llama forward`: the first forward pass of `examples/llama_block.py`'s block built from
  `triton_metal.ops` (dense linears; batch 2, 12 tokens), checked against the `mlx.nn` block;
* `llama mx.grad`: the first `mx.grad` of the same block's loss (its forward kernels compile
  within it), checked against `mlx.nn`'s gradients;
* `tutorial matmul`: the first call of `examples/matmul_autotuned.py` (tutorial 03's kernel with
  five configs, fp16 256x256x128), checked against NumPy.

Every case runs twice in the same invocation: "before", with `TRITON_METAL_AUTOTUNE=measure`
(each config compiled and timed, as autotuning did off a GPU before), and "after", with the
default (off a GPU: the stored choice for the chip, else the first config that fits, untimed).
Printed: the median seconds of each over `--repeat` processes (the two modes alternate) and the
ratio before/after, with each mode's largest error. The figures are CPU times of the emulator on
this machine; they say nothing about a Mac.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ("llama forward", "llama mx.grad", "tutorial matmul")
MODES = {"before (measure)": "measure", "after (default)": ""}


def _llama(grad: bool) -> tuple[float, float, str]:
    import mlx.core as mx
    import mlx.nn as nn
    import numpy as np

    from examples.llama_block import BlockConfig, make_pair

    cfg = BlockConfig()
    ours, theirs = make_pair(cfg)
    rng = np.random.default_rng(1)
    x = mx.array(rng.standard_normal((2, 12, cfg.dim)).astype(np.float32))
    targets = mx.array(rng.integers(0, cfg.vocab, size=(2, 12)).astype(np.int32))

    def run(block):  # type: ignore[no-untyped-def]
        if not grad:
            out = block(x)
            mx.eval(out)
            return [out]
        g = nn.value_and_grad(block, block.loss)(x, targets)[1]
        flat = [v for _, v in nn.utils.tree_flatten(g)]
        mx.eval(flat)
        return flat

    start = time.perf_counter()
    mine = run(ours)
    seconds = time.perf_counter() - start
    error = max(float(mx.max(mx.abs(a - b))) for a, b in zip(mine, run(theirs)))
    return seconds, error, "mlx.nn"


def _matmul() -> tuple[float, float, str]:
    import numpy as np

    from examples import matmul_autotuned as ex

    a, b = ex.inputs()
    start = time.perf_counter()
    c = ex.to_numpy(ex.matmul(a, b)).astype(np.float32)
    seconds = time.perf_counter() - start
    error = float(np.max(np.abs(c - a.astype(np.float32) @ b.astype(np.float32))))
    return seconds, error, f"NumPy; config from {ex.matmul_tuned.last_origin}"


def child(case: str) -> None:
    """One case in this (fresh) process: prints its JSON line."""
    sys.path.insert(0, str(ROOT))
    if case == "tutorial matmul":
        seconds, error, against = _matmul()
    else:
        seconds, error, against = _llama(grad=case == "llama mx.grad")
    print(json.dumps({"seconds": seconds, "error": error, "against": against}))


def run_case(case: str, mode: str, timeout: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="tm-cold-") as cache:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_METAL_")}
        env.update(TRITON_METAL_CACHE_DIR=cache, TRITON_METAL_BACKEND="emulator", PYTHONPATH=str(ROOT))
        if mode:
            env["TRITON_METAL_AUTOTUNE"] = mode
        proc = subprocess.run([sys.executable, __file__, "--child", case], env=env,
                              capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise SystemExit(f"{case} ({mode or 'default'}) failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=1, help="fresh processes per case and mode")
    parser.add_argument("--only", choices=CASES, action="append", help="run only these cases")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per process")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return 0
    print(f"cold first calls on the emulator, fresh process and empty cache each "
          f"(median of {args.repeat}); CPU times on this machine, not a Mac's")
    print(f"{'case':<18}{'before (measure)':>18}{'after (default)':>18}{'ratio':>8}  max error (against)")
    for case in args.only or CASES:
        results: dict[str, list[dict[str, object]]] = {label: [] for label in MODES}
        for _ in range(args.repeat):  # the modes alternate, so a change in the machine's load hits both
            for label, mode in MODES.items():
                results[label].append(run_case(case, mode, args.timeout))
        before, after = (statistics.median(float(r["seconds"]) for r in results[label]) for label in MODES)
        errors = ", ".join(f"{max(float(r['error']) for r in rs):.2g} ({rs[0]['against']})"
                           for rs in results.values())
        spread = "; ".join(f"{label.split()[0]} " + ", ".join(f"{float(r['seconds']):.1f}" for r in rs)
                           for label, rs in results.items())
        print(f"{case:<18}{before:>16.1f} s{after:>16.1f} s{before / after:>7.1f}x  {errors}", flush=True)
        print(f"{'':<18}every run (s): {spread}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
