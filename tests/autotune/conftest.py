"""Autotuning tests: the default environment but for `TRITON_METAL_AUTOTUNE=measure` (these tests
are about timing configs, which is off by default off a GPU; `test_first_runs.py` unsets it), one
compile cache for the session (compiling is slow on the emulator), and for every test an empty
tuning-results folder and an empty shipped folder, so no result leaks between tests or in from
the repository."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("triton_metal_cache")


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, session_cache: Path, tmp_path: Path) -> None:
    for name in ("TRITON_METAL_INTERPRET", "TRITON_METAL_DEBUG", "TRITON_METAL_BACKEND",
                 "TRITON_METAL_PRINT_AUTOTUNING"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TRITON_METAL_AUTOTUNE", "measure")
    monkeypatch.setenv("TRITON_METAL_CACHE_DIR", str(session_cache))
    shutil.rmtree(session_cache / "autotune", ignore_errors=True)
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    monkeypatch.setenv("TRITON_METAL_AUTOTUNE_SHIPPED_DIR", str(shipped))


@pytest.fixture
def shipped_dir(tmp_path: Path) -> Path:
    return tmp_path / "shipped"
