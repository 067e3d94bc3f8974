"""The pytest plugin the Triton-suite runner loads into pytest (and into every pytest-xdist
worker): it makes `import triton` resolve to triton_metal before any test file is imported, and
supplies the fixtures Triton's own `conftest.py` files would (`device` is "cpu": torch CPU
tensors, which the emulator and the interpreter run on in place)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ...as_triton import install_as_triton

install_as_triton()

MARKERS = ("interpreter", "cpu", "forked", "multi_gpu", "gpu")
"""Markers Triton's test files use; registered so that pytest does not warn about them."""


def pytest_configure(config: pytest.Config) -> None:
    for marker in MARKERS:
        config.addinivalue_line("markers", f"{marker}: a marker of Triton's own test files")


@pytest.fixture
def device() -> str:
    """The torch device Triton's tests allocate on: the CPU (see the module docstring)."""
    return "cpu"


@pytest.fixture
def with_allocator() -> Iterator[None]:
    """Triton's fixture: a scratch allocator installed for the test, removed after it."""
    import triton

    from .helpers import default_alloc_fn

    triton.set_allocator(default_alloc_fn)
    try:
        yield
    finally:
        triton.set_allocator(None)


@pytest.fixture
def fresh_triton_cache(tmp_path: Any) -> Iterator[str]:
    """Triton's fixture: a private kernel cache for the test."""
    yield str(tmp_path)
