"""What checking the disk cache costs: medians of each check beside the work it guards.

    python benchmarks/cache_checks.py [--repeat N]

Rows, each in this process on a warm cache (`$TRITON_METAL_CACHE_DIR`, default
`~/.cache/triton_metal`):
* MSL entry: reading and parsing it (the baseline) vs `disk_cache.load` (parse, entry name, key
  and checksum, MSLKernel rebuilt);
* kernel library, runtime library, precompiled header: `verify_artifact` the first time in a
  process (size and SHA-256 against the checksum record) vs a plain read of the file (the
  baseline: what loading it reads anyway), and again (a stat: what later builds in the process
  pay);
* a cached launch: the Python work of `kernel[grid](...)` with the variant in memory (the
  checks are not on this path; baseline: the same launch with the global-constexpr check list
  empty).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.runtime import cache_files, disk_cache

SCALE = tl.constexpr(3)


@triton.jit
def scaled(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * SCALE, mask=mask)


def median(fn: Callable[[], object], repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def row(label: str, checked: float, baseline: float, baseline_label: str) -> None:
    print(f"{label:<44} {checked * 1e6:10.1f} us   {baseline_label}: {baseline * 1e6:10.1f} us"
          f"   ratio {checked / baseline:6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=21)
    repeat = parser.parse_args().repeat
    x = np.arange(4096, dtype=np.float32)
    out = np.empty_like(x)
    scaled[(4,)](x, out, x.size, BLOCK=1024)  # compiles (or loads) everything once
    root = disk_cache.cache_root()
    print(f"cache: {root}")

    entry = max((root / "msl").glob("*.json"), key=lambda p: p.stat().st_mtime)
    row("MSL entry: load with checks", median(lambda: disk_cache.load(entry.stem), repeat),
        median(lambda: json.loads(entry.read_bytes()), repeat), "read+parse")

    folder = root / "emulator"
    for label, pattern in (("kernel library", "kernel-*.so"), ("runtime library", "libtmrt-*.so"),
                           ("precompiled header", "prelude-*.h.gch")):
        path = max(folder.glob(pattern), key=lambda p: p.stat().st_mtime)
        record = (folder / (path.name + ".sum")).read_bytes()
        key = _key_of(path)

        def first() -> None:
            cache_files._verified.clear()
            assert cache_files.verify_artifact(path, key)

        row(f"{label}: first check in a process", median(first, repeat),
            median(path.read_bytes, repeat), "read")
        row(f"{label}: later checks (stat)", median(lambda: cache_files.verify_artifact(path, key), repeat),
            median(lambda: path.stat(), repeat), "stat")
        assert record  # the record is there: the check above really hashed the file

    launch = scaled[(4,)]
    checked = median(lambda: launch(x, out, x.size, BLOCK=1024), repeat)
    saved = scaled._used_globals
    scaled._used_globals = ()
    plain = median(lambda: launch(x, out, x.size, BLOCK=1024), repeat)
    scaled._used_globals = saved
    row("cached launch (emulator run included)", checked, plain, "no globals check")


def _key_of(path: Path) -> str:
    """The artifact's key: its file name after the kind (what `build` named it by)."""
    name = path.name
    if name.startswith("prelude-"):
        return name[len("prelude-"):].split(".")[0]
    return name.rsplit("-", 1)[1].split(".")[0]


if __name__ == "__main__":
    main()
