"""Example tests: each example against its NumPy reference, compiled to IR and interpreted."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TRITON_METAL_INTERPRET", "TRITON_METAL_DEBUG", "TRITON_METAL_BACKEND"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(params=["compiled", "interpret", "torch_mps"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run once through the front end (the default), once with TRITON_METAL_INTERPRET=1 and once
    through the torch_mps backend (its complete source run by the recording stand-in for
    `torch.mps.compile_shader` on the emulator, NumPy arrays bound as zero-copy CPU tensors)."""
    if request.param == "interpret":
        monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    if request.param != "torch_mps":
        yield request.param
        return
    from triton_metal.backends.torch_mps.standin import RecordingCompiler

    monkeypatch.setenv("TRITON_METAL_BACKEND", "torch_mps")
    recorder = RecordingCompiler()
    with recorder.installed():
        yield request.param
    assert recorder.calls, "the torch_mps path made no call"
