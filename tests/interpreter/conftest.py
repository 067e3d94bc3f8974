"""Run a kernel function in the interpreter: `run(fn, grid, **args)`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from triton_metal.backends.interpreter import launch
from triton_metal.language import JITCallable


def _run(fn: Callable[..., Any], grid: tuple[int, ...] = (1,), **args: Any) -> None:
    g = tuple(grid) + (1,) * (3 - len(grid))
    launch(JITCallable(fn), (g[0], g[1], g[2]), args)


@pytest.fixture
def run() -> Callable[..., None]:
    return _run
