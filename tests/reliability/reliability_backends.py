"""Where the reliability tests' launches run: `on_backend(name)` switches the launches of its
block to the emulator or the interpreter.

A module of its own name, not the conftest: several test folders have a `conftest.py`, and
`from conftest import ...` takes whichever of them was imported first."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

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
