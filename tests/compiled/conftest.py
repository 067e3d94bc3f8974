"""Compiled differential tests: the runtime's default path (the emulator on this machine)
against the NumPy interpreter and NumPy, with a clean environment.

`TRITON_METAL_TEST_BACKEND=torch_mps` runs every compiled launch of these suites through the
torch_mps backend instead (the complete source handed to the recording stand-in for
`torch.mps.compile_shader`, which runs it on the emulator with the same buffers)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from differential import run_both  # noqa: E402


TEST_BACKEND = os.environ.get("TRITON_METAL_TEST_BACKEND", "emulator")


@pytest.fixture(autouse=True)
def _compiled_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("TRITON_METAL_INTERPRET", "TRITON_METAL_DEBUG", "TRITON_METAL_DUMP_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TRITON_METAL_BACKEND", TEST_BACKEND)
    if TEST_BACKEND != "torch_mps":
        yield
        return
    from triton_metal.backends.torch_mps.standin import RecordingCompiler

    with RecordingCompiler().installed():
        yield


@pytest.fixture(params=["emulator", "interpreter"])
def each_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs the test once compiled (the suite's backend) and once in the interpreter."""
    if request.param == "interpreter":
        monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    return str(request.param)


@pytest.fixture
def run() -> Callable[..., None]:
    """The interpreter tests' `run(fn, grid, **args)`, run in both modes and compared."""
    return run_both


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "compiled: runs kernels compiled on the emulator")


KNOWN_BUGS: dict[str, str] = {}
"""Tests of other suites that fail compiled because of a bug owned elsewhere, by test name."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        reason = KNOWN_BUGS.get(getattr(item, "originalname", item.name))
        if reason is not None and str(item.fspath).endswith("test_interpreter_ops.py"):
            item.add_marker(pytest.mark.xfail(strict=True, reason=reason))
