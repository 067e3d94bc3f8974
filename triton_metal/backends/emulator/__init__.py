"""The emulator backend: runs the MSL that `mx.fast.metal_kernel` would compile, on the CPU.

The exact kernel source MLX would build (`signature.py`) is compiled by the system C++ compiler
against a strict shim of the Metal standard library (`include/`) and the runtime (`runtime/`):
threads of a threadgroup run as fibers that switch at barriers and SIMD-group functions,
threadgroups run in parallel on a few OS threads. See docs/emulator.md.

Public entry points:
- `metal_kernel(...)`: the same factory and call signature as `mx.fast.metal_kernel`;
- `EmulatorKernel.build(source, body, header)` / `.launch(inputs, outputs, grid, threadgroup)`:
  the NumPy path for the compiler's runtime (outputs written in place).
"""

from __future__ import annotations

from triton_metal.backends.emulator.api import MetalKernel, metal_kernel
from triton_metal.backends.emulator.errors import (
    KernelFault,
    MSLCompileError,
    OutOfBoundsAccess,
    ThreadgroupMemoryError,
    WatchdogTimeout,
)
from triton_metal.backends.emulator.kernel import EmulatorKernel, dispatch_dims
from triton_metal.backends.emulator.toolchain import CompilerNotFound

__all__ = [
    "CompilerNotFound",
    "EmulatorKernel",
    "KernelFault",
    "MSLCompileError",
    "MetalKernel",
    "OutOfBoundsAccess",
    "ThreadgroupMemoryError",
    "WatchdogTimeout",
    "dispatch_dims",
    "metal_kernel",
]
