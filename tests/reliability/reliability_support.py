"""What the reliability tests share (imported by name: every test folder has a `conftest`
module, so `from conftest import ...` would find whichever was imported first).

`on_backend(name)` switches where the launches of its block run; `run_child` runs
`cache_child.py` in a fresh process against a cache directory, `seeded` makes a cache holding
the emulator's runtime library and precompiled header of a seed cache."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

BACKENDS = ("emulator", "interpreter")
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SEEDED = ("libtmrt-", "prelude-", "compiler-", "files-")


@contextlib.contextmanager
def on_backend(name: str) -> Iterator[None]:
    """Launches inside the block run on `name` ("emulator" or "interpreter")."""
    saved = {k: os.environ.get(k) for k in ("TRITON_METAL_INTERPRET", "TRITON_METAL_BACKEND")}
    try:
        if name == "interpreter":
            os.environ["TRITON_METAL_INTERPRET"] = "1"
            os.environ.pop("TRITON_METAL_BACKEND", None)
        else:
            os.environ.pop("TRITON_METAL_INTERPRET", None)
            os.environ["TRITON_METAL_BACKEND"] = name
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def seeded(seed: Path, target: Path) -> Path:
    """`target` made a cache holding the seed's runtime and header (no kernels)."""
    folder = target / "emulator"
    folder.mkdir(parents=True, exist_ok=True)
    for path in (seed / "emulator").iterdir():
        if path.name.startswith(SEEDED) and path.is_file():
            shutil.copy2(path, folder / path.name)
    return target


def child_env(cache: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_METAL_")}
    env["TRITON_METAL_CACHE_DIR"] = str(cache)
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def run_child(cache: Path, args: list[str], timeout: float = 120, **extra: str) -> dict:
    """Run `cache_child.py` in a fresh process; its JSON line, with its stderr."""
    proc = subprocess.run(
        [sys.executable, str(HERE / "cache_child.py"), *args],
        env=child_env(cache, **extra), capture_output=True, text=True, timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["stderr"] = proc.stderr
    return result
