"""The emulator runtime library (fiber scheduler, workers, watchdog), built once per machine.

Contract: `runtime_library(asan)` returns the path of `libtmrt` built from the C++ files in
`runtime/` (cached by their contents, the compiler and the flags); kernels link against it, so a
kernel's cold compile never recompiles the runtime. `include_dirs()` lists the directories a
kernel translation unit needs on its include path (the shim, then the runtime's kernel header);
`header_files()` every file in them, and `headers_digest()` their contents digest (part of every
kernel's cache key; found from the files' stat stamps when they have not changed).
`precompiled_prelude(prelude, flags)` builds the shim's precompiled header once per flags.
"""

from __future__ import annotations

import functools
import os
import platform
from pathlib import Path

from triton_metal.backends.emulator.toolchain import (
    BuildFailure,
    SourceFiles,
    ToolchainError,
    build,
    cache_dir,
    cache_key,
    files_digest,
    find_compiler,
    run_compiler,
)

PACKAGE_DIR = Path(__file__).resolve().parent
RUNTIME_DIR = PACKAGE_DIR / "runtime"
INCLUDE_DIR = PACKAGE_DIR / "include"

# The runtime needs the system headers (threads, signals, mmap); only kernels are compiled strictly.
_RUNTIME_FLAGS = ["-std=c++17", "-fPIC", "-shared", "-pthread", "-U_FORTIFY_SOURCE", "-Wall"]
ASAN_FLAGS = ["-fsanitize=address", "-fno-omit-frame-pointer", "-g", "-O1", "-DTM_ASAN=1"]


def include_dirs() -> list[Path]:
    return [INCLUDE_DIR, RUNTIME_DIR]


def header_files() -> list[str]:
    """Every file of the include directories, in a fixed order (what a kernel compile may read);
    plain strings, as this runs on every kernel build."""
    files: list[str] = []
    for folder in include_dirs():
        with os.scandir(folder) as entries:
            files.extend(sorted(e.path for e in entries if e.is_file()))
    return files


def headers_digest() -> str:
    """Contents digest of `header_files()` (stat'ed, read only when a stamp changed)."""
    return files_digest(header_files())


def runtime_files(asan: bool) -> list[Path]:
    """Every C++ file of the runtime (the ASan build adds the standalone launcher)."""
    files: list[Path] = []
    for path in sorted(RUNTIME_DIR.iterdir()):
        if path.suffix not in (".cpp", ".h", ".S"):
            continue
        if path.name == "standalone_main.cpp" and not asan:
            continue
        files.append(path)
    return files


def runtime_sources(asan: bool) -> dict[str, str]:
    """Every C++ file of the runtime, by name (the ASan one adds the standalone launcher)."""
    return SourceFiles(tuple(runtime_files(asan))).read()


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
    files = runtime_files(asan)
    units = [p.name for p in files if p.name.endswith((".cpp", ".S"))]
    flags = _RUNTIME_FLAGS + (ASAN_FLAGS if asan else ["-O2"])
    command = [*flags, *shared_flags(), "-o", "{out}", *units]
    try:
        # Keyed by the files' contents digest: a cached library is found without reading them.
        return build("libtmrt-asan" if asan else "libtmrt", ".so", SourceFiles(tuple(files)), command)
    except BuildFailure as failure:
        raise ToolchainError(
            "the emulator runtime failed to compile (a bug in triton_metal or an unsupported "
            f"compiler):\n{failure.stderr}"
        ) from None


def precompiled_prelude(prelude: str, flags: list[str], digest: str | None = None) -> Path | None:
    """A header holding `prelude`, with a precompiled `.gch` beside it (built once per flags).

    Parsing the shim dominates a kernel's compile time; a precompiled header built with the very
    flags of the kernel compile cuts it several-fold. Returns None where the compiler cannot
    precompile headers (the caller then includes the prelude as text). `digest` is
    `headers_digest()` when the caller has it already.
    """
    compiler = find_compiler()
    digest = headers_digest() if digest is None else digest
    key = cache_key("prelude", compiler.cache_identity, "\0".join(flags), prelude, digest)
    header = cache_dir() / f"prelude-{key}.h"
    gch = Path(str(header) + ".gch")
    if header.exists() and gch.exists():
        return header
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tm-build-", dir=cache_dir()) as tmp:
        src = Path(tmp, "prelude.h")
        src.write_text(prelude)
        out = Path(tmp, "prelude.h.gch")
        status, _ = run_compiler([compiler.path, *flags, "-x", "c++-header", str(src), "-o", str(out)])
        if status != 0 or not out.exists():
            return None
        staged_h = cache_dir() / f".{header.name}.{os.getpid()}.tmp"
        staged_gch = cache_dir() / f".{gch.name}.{os.getpid()}.tmp"
        staged_h.write_text(prelude)
        os.replace(out, staged_gch)
        # The .gch first: a header seen without its .gch only costs a slower (correct) compile.
        os.replace(staged_gch, gch)
        os.replace(staged_h, header)
    return header
