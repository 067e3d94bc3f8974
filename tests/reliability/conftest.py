"""Reliability tests: each test gets its own cache directory, seeded with the emulator's runtime
library and precompiled header from the session's cache (they do not depend on the cache's path,
and rebuilding them in every test would only cost time), and runs fresh processes against it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SEEDED = ("libtmrt-", "prelude-", "compiler-", "files-")


@pytest.fixture(scope="session")
def seed_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache whose emulator folder holds the runtime library and the precompiled header."""
    seed = tmp_path_factory.mktemp("seed-cache")
    result = run_child(seed, [])
    assert result["ok"], result
    return seed


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
