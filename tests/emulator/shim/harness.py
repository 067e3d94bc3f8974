"""Compile C++ against the emulator's MSL shim and call it from Python.

Test sources are compiled exactly as kernels are (`-nostdinc`, the shim's include directory,
the kernel flags) into a shared library loaded with ctypes; functions under test are
`extern "C"` and take NumPy buffers. `compile_only` reports whether a snippet compiles and the
compiler's diagnostics, for the tests that check what the shim refuses.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import triton_metal.backends.emulator as emulator

INCLUDE_DIR = Path(emulator.__file__).parent / "include"
SOURCES_DIR = Path(__file__).parent

# The flags the emulator compiles kernels with (see docs/msl_shim.md).
KERNEL_FLAGS: tuple[str, ...] = (
    "-std=c++17",
    "-O2",
    "-nostdinc",
    "-fno-exceptions",
    "-fno-rtti",
    "-fsigned-char",
    "-fsingle-precision-constant",
    "-Wno-attributes",
    "-ffp-contract=off",
    "-fPIC",
)

PRELUDE = "#include <metal_stdlib>\nusing namespace metal;\n"
PRELUDE_MLX = (
    "#define TM_SHIM_DEFER_POISON 1\n#include <metal_stdlib>\n#include <mlx_preamble.h>\n"
    "#include <metal_poison.h>\nusing namespace metal;\n"
)


def compiler() -> str:
    path = shutil.which("g++") or shutil.which("clang++")
    if path is None:
        raise RuntimeError("the shim tests need g++ or clang++ on PATH")
    return path


@dataclass(frozen=True)
class CompileResult:
    ok: bool
    stderr: str


def compile_only(code: str, prelude: str = PRELUDE) -> CompileResult:
    """Compile `prelude + code` to an object file; report success and diagnostics."""
    with tempfile.TemporaryDirectory(prefix="tm-shim-") as tmp:
        src = Path(tmp, "t.cpp")
        src.write_text(prelude + code)
        proc = subprocess.run(
            [compiler(), *KERNEL_FLAGS, "-I", str(INCLUDE_DIR), "-c", str(src), "-o", str(Path(tmp, "t.o"))],
            capture_output=True,
            text=True,
        )
        return CompileResult(proc.returncode == 0, proc.stderr)


def build_library(code: str, out_dir: Path, prelude: str = PRELUDE) -> ctypes.CDLL:
    """Compile `prelude + code` into a shared library in `out_dir` and load it."""
    src = out_dir / "lib.cpp"
    src.write_text(prelude + code)
    lib = out_dir / "lib.so"
    proc = subprocess.run(
        [compiler(), *KERNEL_FLAGS, "-I", str(INCLUDE_DIR), "-shared", str(src), "-o", str(lib), "-lm"],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise AssertionError(f"test library failed to compile:\n{proc.stderr}")
    return ctypes.CDLL(str(lib))


def load_source(name: str, out_dir: Path, prelude: str = PRELUDE) -> ctypes.CDLL:
    """Build the C++ test source `tests/emulator/shim/<name>`."""
    return build_library((SOURCES_DIR / name).read_text(), out_dir, prelude)


def ptr(a: np.ndarray) -> ctypes.c_void_p:
    """Address of a C-contiguous array's first element."""
    assert a.flags.c_contiguous
    return ctypes.c_void_p(a.ctypes.data)
