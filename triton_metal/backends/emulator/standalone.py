"""Kernels as standalone programs: the files, the compile commands and the buffer file format.

A standalone program is a kernel translation unit with a `main` (see `wrapper.translation_unit`)
linked with the runtime and `runtime/standalone_main.cpp`. ASan mode runs kernels this way, and a
cross-compiled program runs under an emulator such as qemu-user where a Python process cannot
load the kernel. Contract:

- `StandaloneProgram.make(source, body, header)` gives the kernel unit's text and the runtime's
  source files, and `commands(cxx, out, extra_flags)` the compiler invocations that build it
  (any C++17 compiler for any target: nothing here depends on the host);
- `write_buffers(path, ...)` / `read_buffers(path, ...)` write the program's input file and read
  its output file (layout in `runtime/standalone_main.cpp`).
"""

from __future__ import annotations

import platform
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from triton_metal.backends.emulator.rewrite import needs_fibers, rewrite_threadgroup_declarations, uses_tensor_ops
from triton_metal.backends.emulator.runtime_lib import RUNTIME_DIR, include_dirs
from triton_metal.backends.emulator.signature import KernelSource
from triton_metal.backends.emulator.wrapper import translation_unit

KERNEL_FLAGS = (
    "-std=c++17",
    "-nostdinc",
    "-fno-exceptions",
    "-fno-rtti",
    "-fsigned-char",
    "-fsingle-precision-constant",
    "-Wno-attributes",
    "-ffp-contract=off",
    # Arithmetic on a signalling NaN returns a quiet one (IEEE 754 6.2): without this flag g++
    # may fold `x - (m ? y : 0.0f)` into `m ? x - y : x` and pass the NaN through. (clang has no
    # such mode: it warns, ignores the flag and compiles as before.)
    "-fsignaling-nans",
    "-fPIC",
    # Kernels are called from the generated loop in the same file: hidden symbols let the
    # compiler inline them (an exported symbol could be interposed, so calls go through the PLT).
    "-fvisibility=hidden",
) + (
    # Probe every stack page, so a thread whose locals outgrow its fiber stack hits the guard
    # page instead of silently writing into its neighbour's stack. (Apple's clang does not take
    # the flag for every target; there an overflow may go unnoticed.)
    () if platform.system() == "Darwin" else ("-fstack-clash-protection",)
)
"""Flags of every kernel translation unit (plus -O2, or the ASan flags)."""


def kernel_flags(tensor_ops: bool) -> tuple[str, ...]:
    """KERNEL_FLAGS, in C++20 for a kernel that includes Metal 4 tensor ops (their descriptors
    are class-type template arguments)."""
    if not tensor_ops:
        return KERNEL_FLAGS
    return tuple("-std=c++20" if f == "-std=c++17" else f for f in KERNEL_FLAGS)

RUNTIME_FLAGS = ("-std=c++17", "-pthread", "-U_FORTIFY_SOURCE", "-Wall")
"""Flags of the runtime's own files, which use the system headers."""


@dataclass(frozen=True)
class StandaloneProgram:
    kernel_unit: str
    """The kernel translation unit, with `main`."""
    runtime_files: tuple[Path, ...]
    """The runtime's C++ files (the scheduler, the context switch, the standalone launcher)."""

    @classmethod
    def make(cls, source: KernelSource, body: str, header: str = "") -> StandaloneProgram:
        text, _ = rewrite_threadgroup_declarations(source.text)
        unit = translation_unit(source, text, needs_fibers(body, header), asan=True)
        files = tuple(p for p in sorted(RUNTIME_DIR.glob("*.cpp")))
        return cls(unit, files)

    def commands(self, cxx: str, kernel_file: Path, out: Path, extra_flags: Sequence[str] = ()) -> list[list[str]]:
        """Compile commands: the kernel unit (written to `kernel_file`) to an object, then link."""
        includes = [flag for d in include_dirs() for flag in ("-I", str(d))]
        kernel_obj = str(kernel_file) + ".o"
        return [
            [cxx, *kernel_flags(uses_tensor_ops(self.kernel_unit)), "-O2", *extra_flags, *includes, "-c",
             str(kernel_file), "-o", kernel_obj],
            [
                cxx, *RUNTIME_FLAGS, "-O2", *extra_flags, "-I", str(RUNTIME_DIR),
                kernel_obj, *map(str, self.runtime_files), "-o", str(out), "-lm",
            ],
        ]


def write_buffers(
    path: str | Path,
    buffers: Sequence[np.ndarray],
    writeback: Sequence[bool],
    grid: tuple[int, int, int],
    tpt: tuple[int, int, int],
    watchdog: float,
    workers: int,
) -> None:
    with open(path, "wb") as f:
        f.write(b"TMAB")
        f.write(struct.pack("<3I3IdII", *grid, *tpt, watchdog, workers, len(buffers)))
        for buf, wb in zip(buffers, writeback):
            data = np.ascontiguousarray(buf).tobytes()
            f.write(struct.pack("<QI", len(data), 1 if wb else 0))
            f.write(data)


def read_buffers(path: str | Path, buffers: Sequence[np.ndarray], writeback: Sequence[bool]) -> None:
    """Copy the program's outputs back into the writeback buffers (in place)."""
    with open(path, "rb") as f:
        for buf, wb in zip(buffers, writeback):
            if wb and buf.nbytes:
                data = f.read(buf.nbytes)
                buf.reshape(-1).view(np.uint8)[:] = np.frombuffer(data, dtype=np.uint8)
