"""Diagnostics tests run with the default environment (no interpret switch, no debug log, the
automatic backend) and a cache directory of their own, shared by the session so the emulator's
runtime is built once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def _session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("triton_metal_cache")


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch, _session_cache: Path) -> Iterator[None]:
    for name in ("TRITON_METAL_INTERPRET", "TRITON_METAL_DEBUG", "TRITON_METAL_BACKEND", "TRITON_METAL_DUMP_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TRITON_METAL_CACHE_DIR", str(_session_cache))
    yield
    from triton_metal.runtime.observer import OBSERVER

    OBSERVER.current = None
