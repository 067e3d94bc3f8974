"""Runtime tests run with the default environment: no interpret switch, no debug log."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TRITON_METAL_INTERPRET", "TRITON_METAL_DEBUG", "TRITON_METAL_BACKEND"):
        monkeypatch.delenv(name, raising=False)
