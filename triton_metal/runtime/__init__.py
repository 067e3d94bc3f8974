"""The host side: `@jit`, argument binding, specialization, grids, the compile cache and launch.

`runtime/` drives the stages (front end, and later passes and code generation) and the backends;
nothing but the top-level package imports it.
"""

from __future__ import annotations

from .backend import active_backend_name, interpret_mode
from .cache import COMPILER_VERSION, CompiledKernel, KernelCache
from .jit import JITFunction, jit
from .specialization import (
    ConstexprArg,
    PointerArg,
    ScalarArg,
    SpecializationKey,
)
from .utils import cdiv, next_power_of_2, reinterpret
from .autotune_config import Config
from .autotuner import Autotuner, autotune
from .heuristics import Heuristics, heuristics
from ..errors import InterpreterError, OutOfResources

__all__ = [
    "Autotuner",
    "COMPILER_VERSION",
    "Config",
    "Heuristics",
    "InterpreterError",
    "OutOfResources",
    "autotune",
    "heuristics",
    "CompiledKernel",
    "ConstexprArg",
    "JITFunction",
    "KernelCache",
    "PointerArg",
    "ScalarArg",
    "SpecializationKey",
    "active_backend_name",
    "cdiv",
    "interpret_mode",
    "jit",
    "next_power_of_2",
    "reinterpret",
]
