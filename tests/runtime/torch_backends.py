"""The `torch_backend` fixture: a test module imports it to run on torch CPU tensors through the
emulator, the interpreter and the torch_mps path (`from torch_backends import torch_backend`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


def run_through(param: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The body of a fixture parametrized over backends: "interpret" sets
    TRITON_METAL_INTERPRET=1; "torch_mps" runs the test through the recording stand-in for
    `torch.mps.compile_shader` (on the emulator), which must be called; anything else runs as
    the environment says (the emulator here)."""
    if param == "interpret":
        monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    if param != "torch_mps":
        yield param
        return
    from triton_metal.backends.torch_mps.standin import RecordingCompiler

    monkeypatch.setenv("TRITON_METAL_BACKEND", "torch_mps")
    with RecordingCompiler().installed() as recorder:
        yield param
    assert recorder.calls, "the torch_mps path made no call"


@pytest.fixture(params=["emulator", "interpret", "torch_mps"])
def torch_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Launches on torch CPU tensors through the emulator, the interpreter, and the torch_mps
    path (the recording stand-in for `torch.mps.compile_shader`, which must be called)."""
    yield from run_through(request.param, monkeypatch)
