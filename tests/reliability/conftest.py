"""Reliability tests: what must never kill, hang or silently mislead, on the emulator and in the
interpreter (`reliability_backends.on_backend` switches where the launches of a block run)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TRITON_METAL_INTERPRET", "TRITON_METAL_DEBUG", "TRITON_METAL_DUMP_DIR",
                 "TRITON_METAL_EMULATOR_CHECKS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TRITON_METAL_BACKEND", "emulator")
