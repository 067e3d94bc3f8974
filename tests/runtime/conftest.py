"""Runtime tests run with the default environment (no interpret switch, no debug log) and an
empty disk cache of generated MSL per test, so that a test meant to compile does compile
(the emulator's compiled binaries stay in the shared cache: rebuilding them would only cost
time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from triton_metal.runtime import disk_cache


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("TRITON_METAL_INTERPRET", "TRITON_METAL_DEBUG", "TRITON_METAL_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    msl = tmp_path / "cache" / "msl"
    monkeypatch.setattr(disk_cache, "msl_dir", lambda: msl)
