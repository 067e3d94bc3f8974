"""triton_metal: a Triton-compatible GPU kernel language and compiler for Apple Silicon.

    import triton_metal as triton
    import triton_metal.language as tl

    @triton.jit
    def kernel(x_ptr, n, BLOCK: tl.constexpr): ...

    kernel[(triton.cdiv(n, 1024),)](x, n, BLOCK=1024)

The host-side API has Triton's names (`jit`, `JITFunction`, `cdiv`, `next_power_of_2`,
`reinterpret`, `autotune`, `Config`, `heuristics`, `testing.do_bench`, and the error classes), so
ported code keeps working.

Diagnostics (docs/diagnostics.md): `start_profiling` / `stop_profiling`,
`get_hardware_capabilities`, `test_memory_bandwidth`, `test_compute_throughput`, `synchronize`,
`clear_cache`, `set_debug_option`, `analyze_memory_access`; on the command line
`python -m triton_metal.backends.metal.check_environment` and `python -m triton_metal.selftest`.
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
from .tools.hardware import clear_cache, get_hardware_capabilities, set_debug_option, synchronize
from .tools.memory_analysis import analyze_memory_access
from .tools.profiler import start_profiling, stop_profiling
from .tools.throughput import test_compute_throughput, test_memory_bandwidth

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
    "analyze_memory_access",
    "autotune",
    "cdiv",
    "clear_cache",
    "get_hardware_capabilities",
    "heuristics",
    "jit",
    "language",
    "next_power_of_2",
    "reinterpret",
    "set_debug_option",
    "start_profiling",
    "stop_profiling",
    "synchronize",
    "test_compute_throughput",
    "test_memory_bandwidth",
    "testing",
]
