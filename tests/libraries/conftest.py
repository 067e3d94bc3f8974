"""Unmodified Triton libraries on torch CPU tensors through `install_as_triton()`, on every path a
launch can take: the emulator, the interpreter, the Metal path (the MLX driver with the recording
`metal_kernel` stand-in of tests/runtime/fake_mlx.py, which runs the MSL it receives on the
emulator) and the torch_mps path (the recording stand-in for `torch.mps.compile_shader`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "runtime"))  # fake_mlx

BACKENDS = ["emulator", "interpret", "metal", "torch_mps"]
SHARED_CHECK_BACKENDS = ["emulator", "interpret"]
"""For the costliest variants: the two paths of the shared check (one program, one answer)."""
STAND_IN_BACKENDS = ["metal", "torch_mps"]
"""The Mac-only paths, through their recording stand-ins."""


@contextmanager
def _on(path: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Runs the launches inside on one path; each stand-in must have been used."""
    for name in ("TRITON_METAL_INTERPRET", "TRITON_METAL_DEBUG", "TRITON_METAL_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    if path == "interpret":
        monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
        yield path
    elif path == "emulator":
        yield path
    elif path == "metal":
        from fake_mlx import FakeMx

        from triton_metal.backends.metal import driver
        from triton_metal.runtime import backend as runtime_backend

        stand_in = FakeMx()
        monkeypatch.setattr(runtime_backend, "_metal", True)
        monkeypatch.setattr(driver, "_mlx", lambda: stand_in)
        yield path
        assert stand_in.fast.launches, "no launch reached the metal_kernel stand-in"
    else:
        from triton_metal.backends.torch_mps.standin import RecordingCompiler

        monkeypatch.setenv("TRITON_METAL_BACKEND", "torch_mps")
        with RecordingCompiler().installed() as recorder:
            yield path
        assert recorder.calls, "no launch reached the compile_shader stand-in"


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every path a launch on torch CPU tensors can take."""
    with _on(request.param, monkeypatch) as path:
        yield path


@pytest.fixture(params=SHARED_CHECK_BACKENDS)
def shared_check_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The emulator and the interpreter only."""
    with _on(request.param, monkeypatch) as path:
        yield path


@pytest.fixture(params=STAND_IN_BACKENDS)
def stand_in_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The Metal path and the torch_mps path only."""
    with _on(request.param, monkeypatch) as path:
        yield path
