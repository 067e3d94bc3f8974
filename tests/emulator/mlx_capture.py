"""Test helper: the kernel source MLX itself generates for a `mx.fast.metal_kernel` call.

Without Metal, MLX refuses to run a custom kernel but still builds it inside
`mx.export_function` tracing, and with `verbose=True` it prints the generated source through
C++ `std::cout` as

    Generated source code for `<name>`:
    ```
    <source>
    ```

The print bypasses Python's `sys.stdout`, so `captured_fd_output` redirects file descriptor 1
itself. `mlx_kernel_source` returns `<source>` exactly (without the newline MLX adds after it).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import mlx.core as mx


def mlx_version() -> tuple[int, ...]:
    return tuple(int(part) for part in mx.__version__.split(".")[:3] if part.isdigit())


MLX_SANITIZES_MINUS = mlx_version() >= (0, 32, 4)
"""Whether MLX turns the `-` of negative template arguments into `_` in kernel names.

Older versions leave it there, which makes an invalid identifier; `build_kernel_source` always
follows the newer rule, so comparisons with negative template arguments need a newer MLX.
"""


@dataclass
class CapturedText:
    """What was written to the captured descriptor; filled when the `with` block ends."""

    text: str = field(default="")


@contextmanager
def captured_fd_output(fd: int = 1) -> Iterator[CapturedText]:
    """Capture everything written to file descriptor `fd` (C, C++ and Python writers alike)."""
    result = CapturedText()
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), fd)
        try:
            yield result
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)
            sink.seek(0)
            result.text = sink.read().decode("utf-8", errors="replace")


def trace_with_output(fn: Callable[..., Any], *args: mx.array) -> str:
    """Trace `fn(*args)` for export (nothing runs) and return what it printed on fd 1."""
    with tempfile.TemporaryDirectory() as tmp:
        with captured_fd_output() as out:
            mx.export_function(os.path.join(tmp, "traced.mlxfn"), fn, *args)
    return out.text


def mlx_kernel_source(
    name: str,
    input_names: Sequence[str],
    output_names: Sequence[str],
    source: str,
    inputs: Sequence[mx.array],
    output_dtypes: Sequence[mx.Dtype],
    header: str = "",
    template: Sequence[tuple[str, bool | int | mx.Dtype]] = (),
    atomic_outputs: bool = False,
) -> str:
    """The source MLX generates for this call (what it would compile after its utils preamble)."""
    kernel = mx.fast.metal_kernel(
        name=name,
        input_names=list(input_names),
        output_names=list(output_names),
        source=source,
        header=header,
        atomic_outputs=atomic_outputs,
    )

    def call(*arrays: mx.array) -> list[mx.array]:
        return kernel(
            inputs=list(arrays),
            output_shapes=[(4,)] * len(output_names),
            output_dtypes=list(output_dtypes),
            grid=(4, 1, 1),
            threadgroup=(4, 1, 1),
            template=list(template) if template else None,
            verbose=True,
        )

    printed = trace_with_output(call, *inputs)
    prefix = f"Generated source code for `{name}`:\n```\n"
    suffix = "\n```\n"
    if not printed.startswith(prefix) or not printed.endswith(suffix):
        raise AssertionError(f"unexpected MLX verbose output:\n{printed}")
    body = printed[len(prefix) : -len(suffix)]
    if prefix in body:
        raise AssertionError(f"MLX printed more than one kernel:\n{printed}")
    return body
