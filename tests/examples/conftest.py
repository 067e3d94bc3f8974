"""Example tests: each example against its NumPy reference, compiled to IR and interpreted."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from torch_backends import run_through  # noqa: E402 - the backends' fixture body


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TRITON_METAL_INTERPRET", "TRITON_METAL_DEBUG", "TRITON_METAL_BACKEND"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(params=["compiled", "interpret", "torch_mps"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run once through the front end (the default), once with TRITON_METAL_INTERPRET=1 and once
    through the torch_mps backend (its complete source run by the recording stand-in for
    `torch.mps.compile_shader` on the emulator, NumPy arrays bound as zero-copy CPU tensors)."""
    yield from run_through(request.param, monkeypatch)
