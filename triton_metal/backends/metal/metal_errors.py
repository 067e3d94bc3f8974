"""Metal compile errors mapped back to the kernel line.

MLX compiles a variant's MSL when it first evaluates a graph holding it, so a Metal compile
error surfaces at the user's `mx.eval`, as MLX's `RuntimeError`. The MSL carries `#line`
directives, so the Metal compiler's diagnostics name the kernel's Python file and line;
`metal_errors()` re-raises such an error as a `CompilationError` there, for any variant
launched in the process (`_LAUNCHED`, filled by the driver).
"""

from __future__ import annotations

import linecache
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from triton_metal.errors import CompilationError, LaunchError, Loc


_LAUNCHED: dict[str, Any] = {}
"""MSLKernel by name, for every variant launched in this process (for `metal_errors`)."""


@contextmanager
def metal_errors() -> Iterator[None]:
    """Re-raise an MLX evaluation error that a launched kernel caused as a `CompilationError`
    at the kernel line (Metal compile errors surface when the graph is evaluated, not at the
    launch): `with triton_metal.metal_errors(): mx.eval(y)`."""
    try:
        yield
    except (RuntimeError, ValueError) as error:
        msl = _kernel_of(str(error))
        if msl is None:
            raise
        raise map_metal_error(error, msl) from error


def _kernel_of(text: str) -> Any:
    """The launched variant an MLX error names (by its MSL name, or by a kernel file and line
    its `#line` directives point to)."""
    for name, msl in _LAUNCHED.items():
        if name in text:
            return msl
    m = _DIAG.search(text)
    if m is None:
        return None
    marker = f'#line {m.group("line")} "{m.group("file")}"'
    for msl in _LAUNCHED.values():
        if marker in msl.source or marker in msl.header:
            return msl
    for msl in _LAUNCHED.values():
        if f'"{m.group("file")}"' in msl.source:
            return msl
    return None


_DIAG = re.compile(r"(?P<file>[^\s:]+):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>[^\n]*)")


def map_metal_error(error: Exception, msl: Any) -> Exception:
    """An MLX eval error of a new variant as a `CompilationError` at the kernel line, when the
    Metal compiler's diagnostics name one (through the MSL's `#line` directives)."""
    text = str(error)
    if "Unable to build metal library" not in text and "error:" not in text:
        return LaunchError(f"kernel '{msl.name}' failed on the GPU: {text}")
    m = _DIAG.search(text)
    loc = source_line = None
    message = "the Metal compiler rejected the generated MSL"
    if m is not None:
        message += f": {m.group('msg')}"
        if m.group("file").endswith(".py"):
            loc = Loc(m.group("file"), int(m.group("line")), int(m.group("col")) - 1)
            source_line = linecache.getline(loc.file, loc.line).rstrip("\n") or None
    return CompilationError(
        message, loc,
        hint="Metal's diagnostics:\n" + "\n".join(text.splitlines()[:30])
        + "\nrun with TRITON_METAL_DEBUG=3 to print the MSL",
        kernel=msl.name, source_line=source_line,
    )
