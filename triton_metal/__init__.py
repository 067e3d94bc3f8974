"""triton_metal: a Triton-compatible GPU kernel language and compiler for Apple Silicon.

    import triton_metal as triton
    import triton_metal.language as tl

    @triton.jit
    def kernel(x_ptr, n, BLOCK: tl.constexpr): ...

    kernel[(triton.cdiv(n, 1024),)](x, n, BLOCK=1024)

The host-side API has Triton's names (`jit`, `JITFunction`, `cdiv`, `next_power_of_2`,
`reinterpret`, `autotune`, `Config`, `heuristics`, `testing.do_bench`, and the error classes), so
ported code keeps working.
"""

from __future__ import annotations

from . import language, testing
from .errors import (
    CompilationError,
    InterpreterError,
    LaunchError,
    OutOfResources,
    TritonError,
)
from .runtime import (
    JITFunction,
    active_backend_name,
    cdiv,
    jit,
    next_power_of_2,
    reinterpret,
)
from .runtime.autotune_config import Config
from .runtime.autotuner import Autotuner, autotune
from .runtime.cache import COMPILER_VERSION as __version__
from .runtime.heuristics import Heuristics, heuristics

__all__ = [
    "Autotuner",
    "CompilationError",
    "Config",
    "Heuristics",
    "InterpreterError",
    "JITFunction",
    "LaunchError",
    "OutOfResources",
    "TritonError",
    "__version__",
    "active_backend_name",
    "autotune",
    "cdiv",
    "heuristics",
    "jit",
    "language",
    "next_power_of_2",
    "reinterpret",
    "testing",
]
