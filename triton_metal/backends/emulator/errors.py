"""Errors the emulator raises while building or running a kernel.

A kernel that Metal would reject raises `MSLCompileError` (a `CompilationError` whose location is
the line of the MSL source, as MLX would hand it to the Metal compiler). A kernel that compiles but
misbehaves in a way the emulator can see (a barrier reached by part of a threadgroup, SIMD-group
operations reached by part of a SIMD-group, a spin-wait that never ends, an out-of-bounds access
under ASan) raises `KernelFault`, which is also a `RuntimeError`, as MLX reports GPU-side failures.
"""

from __future__ import annotations

from triton_metal.chip import THREADGROUP_MEMORY_BYTES
from triton_metal.errors import CompilationError, OutOfBoundsError, OutOfResources, TritonError


class MSLCompileError(CompilationError, RuntimeError):
    """The MSL source does not compile (the C++ compiler's diagnostics, mapped to MSL lines)."""


class KernelFault(TritonError, RuntimeError):
    """The kernel ran into an error the emulator detects (divergence, deadlock, out of bounds)."""


class OutOfBoundsAccess(KernelFault, OutOfBoundsError):
    """A bounds-checked access reached outside its buffer (bounds.py)."""


class WatchdogTimeout(KernelFault):
    """A threadgroup ran longer than the watchdog allows (it finished no threadgroup meanwhile)."""


class ThreadgroupMemoryError(OutOfResources, KernelFault):
    """The kernel declares more than Metal's 32 KiB of threadgroup memory."""

    def __init__(self, message: str, required: int = 0) -> None:
        self.required = required
        self.limit = THREADGROUP_MEMORY_BYTES
        self.name = "threadgroup memory"
        self.message = message
        Exception.__init__(self, message)

    def __reduce__(self):
        return (type(self), (self.message, self.required))
