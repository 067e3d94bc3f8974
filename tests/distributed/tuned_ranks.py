"""One rank of the autotuning test (`test_data_parallel.py`), launched by `mlx.launch`.

Each rank's benchmark is scripted so that, left alone, rank r would pick config r; under the
shared choice every rank runs rank 0's. A second kernel has no config that compiles: rank 0's
error must reach every rank (none may wait for a choice that never comes). Prints one JSON line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import mlx.core as mx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "autotune"))

from autotune_kernels import ScriptedBench, fill_block, grid_of, needs_big_block  # noqa: E402

import triton_metal as triton  # noqa: E402

CONFIGS = [triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})]


def main() -> int:
    group = mx.distributed.init()
    rank = group.rank()
    fast, slow = [1.0, 1.0, 1.0], [2.0, 2.0, 2.0]
    bench = ScriptedBench([fast, slow] if rank == 0 else [slow, fast])
    tuned = triton.autotune(configs=CONFIGS, key=["n"], do_bench=bench, cache_results=False)(fill_block)
    out = np.zeros(100, np.int32)
    tuned[grid_of(100)](out, 100)
    failing = triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})],
                              key=["n"])(needs_big_block)
    try:
        failing[grid_of(100)](np.zeros(100, np.int32), 100)
        error = ""
    except Exception as exc:  # noqa: BLE001 - reported to the test
        error = f"{type(exc).__name__}: {exc}"
    print(json.dumps({"rank": rank, "size": group.size(), "ran": sorted(set(out.tolist())),
                      "origin": tuned.last_origin, "benchmarks": bench.calls, "error": error}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
