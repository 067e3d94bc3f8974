"""The autotuned matmul example: it picks a config and saves it, and a NEW PROCESS reuses the
choice without benchmarking (`testing.do_bench` is wrapped to count its calls there)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, sys
import numpy as np
import triton_metal.testing as testing
from examples import matmul_autotuned as ex

calls = []
real = testing.do_bench
def counting(*args, **kwargs):
    calls.append(1)
    return real(*args, **kwargs)
testing.do_bench = counting

a, b = ex.inputs()
c = np.asarray(ex.matmul(a, b), dtype=np.float32)
ref = a.astype(np.float32) @ b.astype(np.float32)
print(json.dumps({
    "benchmarks": len(calls),
    "origin": ex.matmul_tuned.last_origin,
    "best": ex.matmul_tuned.best_config.to_dict(),
    "skipped": [str(c) for c in ex.matmul_tuned.skipped],
    "error": float(np.max(np.abs(c - ref))),
    "scale": float(np.max(np.abs(ref))),
}))
"""


def run_process(cache: Path, shipped: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRITON_METAL_INTERPRET", "TRITON_METAL_BACKEND", "TRITON_METAL_DEBUG")}
    env.update(TRITON_METAL_CACHE_DIR=str(cache), TRITON_METAL_AUTOTUNE_SHIPPED_DIR=str(shipped),
               PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_new_process_reuses_the_choice_without_benchmarking(tmp_path):
    cache, shipped = tmp_path / "cache", tmp_path / "no_shipped"
    shipped.mkdir()
    first = run_process(cache, shipped)
    assert first["origin"] == "benchmark"
    assert first["benchmarks"] == 7  # seven configs; the 8x8 one runs as tl.dot's product form
    assert first["skipped"] == []
    assert first["error"] <= 1e-2 * first["scale"]
    assert len(list((cache / "autotune").glob("*/matmul_kernel-*.json"))) == 1

    second = run_process(cache, shipped)
    assert second["benchmarks"] == 0
    assert second["origin"] == "user"
    assert second["best"] == first["best"]
    assert second["error"] <= 1e-2 * second["scale"]
    assert np.isfinite(second["error"])
