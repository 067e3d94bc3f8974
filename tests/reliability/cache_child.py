"""A fresh process for the cache tests: launches kernels on the emulator and prints a JSON line.

    python cache_child.py [--threads N] [--new TAG]

Launches `scale` and `shift` (two kernels of different code), checks each result against NumPy,
and prints {"ok": ..., "origins": [...], "builds": N, "errors": [...], "damaged": {...}, "root": ...}
where `builds` counts the compiler runs of the process (0: everything came from the cache;
`new_builds` those for the `--new` kernel) and
`damaged` lists the cache files that fail their checks when it ends (`disk_cache.audit`). `--new TAG` adds a kernel whose
source depends on TAG (a new entry), launched from N threads at once with `--threads N`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import traceback

import numpy as np

import triton_metal as triton
import triton_metal.language as tl

BUILDS: list[list[str]] = []
_real_run = subprocess.run


def _counting_run(argv, *args, **kwargs):  # type: ignore[no-untyped-def]
    if "--version" not in argv:
        BUILDS.append(list(argv))
    return _real_run(argv, *args, **kwargs)


subprocess.run = _counting_run  # type: ignore[assignment]


@triton.jit
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)


@triton.jit
def shift(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) - 7.0, mask=mask)


def _new_kernel(tag: str):  # type: ignore[no-untyped-def]
    namespace: dict[str, object] = {}
    source = (
        "import triton_metal.language as tl\n"
        "def fresh(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    mask = offs < n\n"
        f"    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + {float(len(tag) + 0.5)!r} + 0.0 * {hash(tag) % 997}, mask=mask)\n"
    )
    import linecache
    name = f"<fresh-{tag}>"
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    exec(compile(source, name, "exec"), namespace)
    return triton.jit(namespace["fresh"]), len(tag) + 0.5


def _launch(kernel, x: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    out = np.zeros_like(x)
    kernel[(triton.cdiv(x.size, 64),)](x, out, x.size, BLOCK=64)
    return out


def main(argv: list[str]) -> int:
    x = np.arange(200, dtype=np.float32)
    errors: list[str] = []
    origins: list[str] = []
    ok = True
    for kernel, expected in ((scale, x * 3.0), (shift, x - 7.0)):
        try:
            ok &= bool(np.array_equal(_launch(kernel, x), expected))
            origins.append(next(iter(kernel.cache.entries.values())).origin)
        except Exception:  # noqa: BLE001 - reported to the test, which fails on it
            ok = False
            errors.append(traceback.format_exc())
    before_new = len(BUILDS)
    if "--new" in argv:
        tag = argv[argv.index("--new") + 1]
        threads = int(argv[argv.index("--threads") + 1]) if "--threads" in argv else 1
        kernel, add = _new_kernel(tag)
        results: list[bool] = []

        def one() -> None:
            try:
                results.append(bool(np.array_equal(_launch(kernel, x), x + np.float32(add))))
            except Exception:  # noqa: BLE001
                errors.append(traceback.format_exc())
                results.append(False)

        workers = [threading.Thread(target=one) for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        ok &= all(results) and len(results) == threads
    from triton_metal.runtime import disk_cache

    print(json.dumps({"ok": ok and not errors, "origins": origins, "builds": len(BUILDS),
                      "new_builds": len(BUILDS) - before_new,
                      "errors": errors, "damaged": disk_cache.audit(),
                      "root": str(disk_cache.cache_root())}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
