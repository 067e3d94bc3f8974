"""`backend`: a test launching kernels runs once on the emulator and once in the interpreter, the
two backends that accept and refuse the same programs from one shared check."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["emulator", "interpret"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("TRITON_METAL_INTERPRET", raising=False)
    if request.param == "interpret":
        monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    return request.param
