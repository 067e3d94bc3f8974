"""The emulator runtime library (fiber scheduler, workers, watchdog), built once per machine.

Contract: `runtime_library(asan)` returns the path of `libtmrt` built from the C++ files in
`runtime/` (cached by their text, the compiler and the flags); kernels link against it, so a
kernel's cold compile never recompiles the runtime. `include_dirs()` lists the directories a
kernel translation unit needs on its include path (the shim, then the runtime's kernel header).
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess
import tempfile
from pathlib import Path

from triton_metal.backends.emulator.toolchain import (
    BuildFailure,
    ToolchainError,
    build,
    cache_dir,
    cache_key,
    find_compiler,
)

PACKAGE_DIR = Path(__file__).resolve().parent
RUNTIME_DIR = PACKAGE_DIR / "runtime"
INCLUDE_DIR = PACKAGE_DIR / "include"

# The runtime needs the system headers (threads, signals, mmap); only kernels are compiled strictly.
_RUNTIME_FLAGS = ["-std=c++17", "-fPIC", "-shared", "-pthread", "-U_FORTIFY_SOURCE", "-Wall"]
ASAN_FLAGS = ["-fsanitize=address", "-fno-omit-frame-pointer", "-g", "-O1", "-DTM_ASAN=1"]


def include_dirs() -> list[Path]:
    return [INCLUDE_DIR, RUNTIME_DIR]


def runtime_sources(asan: bool) -> dict[str, str]:
    """Every C++ file of the runtime, by name (the ASan one adds the standalone launcher)."""
    sources: dict[str, str] = {}
    for path in sorted(RUNTIME_DIR.iterdir()):
        if path.suffix not in (".cpp", ".h", ".S"):
            continue
        if path.name == "standalone_main.cpp" and not asan:
            continue
        sources[path.name] = path.read_text()
    return sources


def shared_flags() -> list[str]:
    if platform.system() == "Darwin":
        return ["-undefined", "dynamic_lookup"]
    return []


def runtime_library(asan: bool = False) -> Path:
    """Path of the runtime library (built on first use in the current cache directory)."""
    return _runtime_library(asan, str(cache_dir()))


@functools.lru_cache(maxsize=None)
def _runtime_library(asan: bool, cache: str) -> Path:
    del cache  # part of the memo key only: a new cache directory gets its own build
    sources = runtime_sources(asan)
    units = [name for name in sources if name.endswith((".cpp", ".S"))]
    flags = _RUNTIME_FLAGS + (ASAN_FLAGS if asan else ["-O2"])
    command = [*flags, *shared_flags(), "-o", "{out}", *units]
    try:
        return build("libtmrt-asan" if asan else "libtmrt", ".so", sources, command)
    except BuildFailure as failure:
        raise ToolchainError(
            "the emulator runtime failed to compile (a bug in triton_metal or an unsupported "
            f"compiler):\n{failure.stderr}"
        ) from None


def precompiled_prelude(prelude: str, flags: list[str]) -> Path | None:
    """A header holding `prelude`, with a precompiled `.gch` beside it (built once per flags).

    Parsing the shim dominates a kernel's compile time; a precompiled header built with the very
    flags of the kernel compile cuts it several-fold. Returns None where the compiler cannot
    precompile headers (the caller then includes the prelude as text).
    """
    compiler = find_compiler()
    headers = [p.read_text() for d in include_dirs() for p in sorted(d.iterdir()) if p.is_file()]
    key = cache_key("prelude", compiler.identity, "\0".join(flags), prelude, *headers)
    header = cache_dir() / f"prelude-{key}.h"
    gch = Path(str(header) + ".gch")
    if header.exists() and gch.exists():
        return header
    with tempfile.TemporaryDirectory(prefix="tm-build-", dir=cache_dir()) as tmp:
        src = Path(tmp, "prelude.h")
        src.write_text(prelude)
        out = Path(tmp, "prelude.h.gch")
        proc = subprocess.run(
            [compiler.path, *flags, "-x", "c++-header", str(src), "-o", str(out)],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0 or not out.exists():
            return None
        staged_h = cache_dir() / f".{header.name}.{os.getpid()}.tmp"
        staged_gch = cache_dir() / f".{gch.name}.{os.getpid()}.tmp"
        staged_h.write_text(prelude)
        os.replace(out, staged_gch)
        # The .gch first: a header seen without its .gch only costs a slower (correct) compile.
        os.replace(staged_gch, gch)
        os.replace(staged_h, header)
    return header
