"""`triton_metal.backends.metal.check_environment()` and
`python -m triton_metal.backends.metal.check_environment`: is this machine ready to run kernels?

Prints Python, OS and macOS version, Metal availability, MLX version, the GPU name and
architecture, the emulator's C++ compiler, the cache and dump folders and the backend launches
will use, each OK / INFO / MISSING with the fix (`tools/environment.py` holds the checks). The
command exits with status 1 when the configured backend cannot run.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO


def check_environment(mx: Any = None, stream: TextIO | None = sys.stdout) -> Any:
    """Run the checks, print them to `stream`, return the `EnvironmentReport` (`.ok`, `.checks`)."""
    from ....tools.environment import check_environment as run

    return run(mx=mx, stream=stream)


def main(argv: list[str] | None = None) -> int:
    from ....tools.environment import main as run

    return run(argv)


__all__ = ["check_environment", "main"]
