"""Runtime tests run with the default environment (no interpret switch, no debug log) and an
empty disk cache of generated MSL per test, so that a test meant to compile does compile
(the emulator's compiled binaries stay in the shared cache: rebuilding them would only cost
time)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from triton_metal.runtime import cache_files, disk_cache

sys.path.insert(0, str(Path(__file__).resolve().parent))  # fake_mlx


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("TRITON_METAL_INTERPRET", "TRITON_METAL_DEBUG", "TRITON_METAL_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    msl = tmp_path / "cache" / "msl"

    def msl_dir() -> Path:  # created on use, as the real one is
        cache_files.make_private(msl)
        return msl

    monkeypatch.setattr(disk_cache, "msl_dir", msl_dir)


@pytest.fixture
def metal_stand_in(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The Metal path (`backend._metal`) with the recording stand-in of `metal_kernel` that runs
    the exact MSL on the emulator into sentinel-filled outputs (fake_mlx.py). A kernel launched before
    under another `mx` gets a launcher built for this one (`MetalLauncher.for_current_mlx`)."""
    from fake_mlx import FakeMx

    from triton_metal.backends.metal import driver
    from triton_metal.runtime import backend

    stand_in = FakeMx()
    monkeypatch.setattr(backend, "_metal", True)
    monkeypatch.setattr(driver, "_mlx", lambda: stand_in)
    return stand_in
