"""Reliability tests: what must never kill, hang or silently mislead, on the emulator and in the
interpreter. `on_backend(name)` switches where the launches of its block run."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pytest

BACKENDS = ("emulator", "interpreter")


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


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TRITON_METAL_INTERPRET", "TRITON_METAL_DEBUG", "TRITON_METAL_DUMP_DIR",
                 "TRITON_METAL_EMULATOR_CHECKS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TRITON_METAL_BACKEND", "emulator")
