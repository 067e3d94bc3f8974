"""The `torch_backend` fixture: a test module imports it to run on torch CPU tensors through the
emulator, the interpreter and the torch_mps path (`from torch_backends import torch_backend`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(params=["emulator", "interpret", "torch_mps"])
def torch_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Launches on torch CPU tensors through the emulator, the interpreter, and the torch_mps
    path (the recording stand-in for `torch.mps.compile_shader`, which must be called)."""
    if request.param == "interpret":
        monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    if request.param != "torch_mps":
        yield request.param
        return
    from triton_metal.backends.torch_mps.standin import RecordingCompiler

    monkeypatch.setenv("TRITON_METAL_BACKEND", "torch_mps")
    with RecordingCompiler().installed() as recorder:
        yield request.param
    assert recorder.calls
