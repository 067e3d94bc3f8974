"""The semantic layer in force while a kernel body runs in the interpreter.

Builtins receive `_semantic=` from the front end. When they are called as plain Python (the
interpreter runs the kernel body for real), they find the semantic here instead. The interpreter
sets it for the duration of one launch with `active_semantic(...)`; nothing else mutates it, and a
`ContextVar` keeps concurrent launches on other threads apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .semantic import Semantic

_ACTIVE: ContextVar[Semantic | None] = ContextVar("triton_metal_active_semantic", default=None)


def current_semantic() -> Semantic | None:
    """The semantic of the launch running on this thread, or None outside any kernel."""
    return _ACTIVE.get()


@contextmanager
def active_semantic(semantic: Semantic) -> Iterator[Semantic]:
    """Make `semantic` the one builtins use while the `with` block runs."""
    token = _ACTIVE.set(semantic)
    try:
        yield semantic
    finally:
        _ACTIVE.reset(token)


_QUIET_STATIC_PRINTS: ContextVar[bool] = ContextVar("triton_metal_quiet_static_prints", default=False)


def static_prints_quiet() -> bool:
    """Whether `tl.static_print` prints nothing on this thread now (`quiet_static_prints`)."""
    return _QUIET_STATIC_PRINTS.get()


@contextmanager
def quiet_static_prints() -> Iterator[None]:
    """Compile without `tl.static_print` output: the interpreter's legality check, whose kernel
    body then prints it when it runs (once per launch, as Triton's interpreter does)."""
    token = _QUIET_STATIC_PRINTS.set(True)
    try:
        yield
    finally:
        _QUIET_STATIC_PRINTS.reset(token)
