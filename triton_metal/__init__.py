"""triton_metal: a Triton-compatible GPU kernel language and compiler for Apple Silicon.

    import triton_metal as triton
    import triton_metal.language as tl

    @triton.jit
    def kernel(x_ptr, n, BLOCK: tl.constexpr): ...

    kernel[(triton.cdiv(n, 1024),)](x, n, BLOCK=1024)

`op` turns a launcher (a function that allocates outputs and launches kernels) into a
differentiable MLX operation (`mx.custom_function`), and `metal_errors()` re-raises a Metal
compile error met when MLX evaluates a launch's results as a `CompilationError` at the kernel
line (docs/runtime.md, "MLX: laziness, transformations and ops").

The host-side API has Triton's names (`jit`, `JITFunction`, `cdiv`, `next_power_of_2`,
`reinterpret`, `autotune`, `Config`, `heuristics`, `testing.do_bench`, and the error classes), so
ported code keeps working. `install_as_triton()` (or `TRITON_METAL_AS_TRITON=1` when this package
is imported, or `python -m triton_metal.as_triton script.py`) makes `import triton` resolve here,
so libraries written for Triton run unchanged (docs/torch.md).

Diagnostics (docs/diagnostics.md): `start_profiling` / `stop_profiling`,
`get_hardware_capabilities`, `test_memory_bandwidth`, `test_compute_throughput`, `synchronize`,
`clear_cache`, `set_debug_option`, `analyze_memory_access`; on the command line
`python -m triton_metal.backends.metal.check_environment` and `python -m triton_metal.selftest`.
"""

from __future__ import annotations

import os as _os
from typing import Any

from . import language
from .errors import (
    CompilationError,
    DeviceAssertionError,
    InterpreterError,
    LaunchError,
    OpError,
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
from .runtime._allocation import set_allocator
from .runtime.ast_source import compile  # noqa: A004 - Triton's `triton.compile`
from .runtime.autotune_config import Config
from .runtime.autotuner import Autotuner, autotune
from .runtime.cache import COMPILER_VERSION as __version__
from .runtime.heuristics import Heuristics, heuristics
from .as_triton import install_as_triton
from .language.aggregate import aggregate
from .language.core import must_use_result
from .language.jit_marker import ConstexprFunction, constexpr_function

# Imported on first use (PEP 562): a process that only launches kernels never needs them, and
# the memory analysis alone pulls in the IR and its parser (about half of the package's import
# time).
_LAZY = {
    "testing": ".testing",
    "op": ".runtime.mlx_op",
    "metal_errors": ".backends.metal.driver",
    "Op": ".runtime.mlx_op",
    "clear_cache": ".tools.hardware",
    "get_hardware_capabilities": ".tools.hardware",
    "set_debug_option": ".tools.hardware",
    "synchronize": ".tools.hardware",
    "analyze_memory_access": ".tools.memory_analysis",
    "start_profiling": ".tools.profiler",
    "stop_profiling": ".tools.profiler",
    "test_compute_throughput": ".tools.throughput",
    "test_memory_bandwidth": ".tools.throughput",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    module = importlib.import_module(module_name, __name__)
    value = module if module_name == "." + name else getattr(module, name)
    globals()[name] = value
    return value


if _os.environ.get("TRITON_METAL_AS_TRITON", "").strip().lower() not in ("", "0", "false", "no", "off"):
    install_as_triton()


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Autotuner",
    "CompilationError",
    "Config",
    "ConstexprFunction",
    "Heuristics",
    "DeviceAssertionError",
    "InterpreterError",
    "JITFunction",
    "LaunchError",
    "Op",
    "OpError",
    "OutOfResources",
    "TritonError",
    "__version__",
    "active_backend_name",
    "aggregate",
    "analyze_memory_access",
    "autotune",
    "cdiv",
    "clear_cache",
    "compile",
    "constexpr_function",
    "get_hardware_capabilities",
    "heuristics",
    "install_as_triton",
    "jit",
    "must_use_result",
    "language",
    "metal_errors",
    "next_power_of_2",
    "op",
    "reinterpret",
    "set_allocator",
    "set_debug_option",
    "start_profiling",
    "stop_profiling",
    "synchronize",
    "test_compute_throughput",
    "test_memory_bandwidth",
    "testing",
]
