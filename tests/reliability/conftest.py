"""Reliability tests: what must never kill, hang or silently mislead, on the emulator and in the
interpreter (shared helpers: `reliability_support.py`).

The disk-cache tests give each test its own cache directory, seeded with the emulator's runtime
library and precompiled header from the session's cache (they do not depend on the cache's path,
and rebuilding them in every test would only cost time), and run fresh processes against it."""

from __future__ import annotations

from pathlib import Path

import pytest
from reliability_support import run_child


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TRITON_METAL_INTERPRET", "TRITON_METAL_DEBUG", "TRITON_METAL_DUMP_DIR",
                 "TRITON_METAL_EMULATOR_CHECKS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TRITON_METAL_BACKEND", "emulator")


@pytest.fixture(scope="session")
def seed_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache whose emulator folder holds the runtime library and the precompiled header."""
    seed = tmp_path_factory.mktemp("seed-cache")
    result = run_child(seed, [])
    assert result["ok"], result
    return seed
