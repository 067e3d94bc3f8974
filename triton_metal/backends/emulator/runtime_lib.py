"""The emulator runtime library (fiber scheduler, workers, watchdog), built once per machine.

Contract: `runtime_library(asan)` returns the path of `libtmrt` built from the C++ files in
`runtime/` (cached by their contents, the compiler and the flags); kernels link against it, so a
kernel's cold compile never recompiles the runtime. `include_dirs()` lists the directories a
kernel translation unit needs on its include path (the shim, then the runtime's kernel header);
`header_files()` every file in them, and `headers_digest()` their contents digest (part of every
kernel's cache key; found from the files' stat stamps when they have not changed).
`prelude_header(prelude, flags)` names the shim's precompiled header for those flags and
`ensure_prelude` builds it (once per flags, checked by its checksum before each process's first
compile uses it).
"""

from __future__ import annotations

import functools
import os
import platform
from pathlib import Path

from triton_metal.runtime import cache_files
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
        files.extend(_files_under(str(folder)))
    return files


def _files_under(folder: str) -> list[str]:
    """The files of a folder and of its subfolders (`MetalPerformancePrimitives/`), sorted."""
    with os.scandir(folder) as entries:
        found = sorted((e.path, e.is_dir()) for e in entries if e.is_file() or e.is_dir())
    files: list[str] = []
    for path, is_dir in found:
        if is_dir:
            if not os.path.basename(path).startswith(("_", ".")):
                files.extend(_files_under(path))
        else:
            files.append(path)
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


def prelude_header(prelude: str, flags: list[str], digest: str | None = None) -> tuple[Path, str]:
    """(path, key) of the header holding `prelude` for these compile flags, with its precompiled
    `.gch` twin beside it (made by `ensure_prelude`, only when a kernel is compiled).

    Parsing the shim dominates a kernel's compile time; a precompiled header built with the very
    flags of the kernel compile cuts it several-fold. `digest` is `headers_digest()` when the
    caller has it already. Kernels include the header by its bare name through `-iquote` (so a
    cache path with any characters, quotes included, never appears in C++ text).
    """
    compiler = find_compiler()
    digest = headers_digest() if digest is None else digest
    key = cache_key("prelude", compiler.cache_identity, "\0".join(flags), prelude, digest)
    return cache_dir() / f"prelude-{key}.h", key


def ensure_prelude(header: Path, key: str, prelude: str, flags: list[str]) -> None:
    """Make `header` and its `.gch`, unless both are there and match their checksums (a damaged
    `.gch` would crash the compiler). Where the compiler cannot precompile, the header alone
    holds the prelude's text: a slower compile, the same kernel."""
    gch = Path(str(header) + ".gch")
    if cache_files.verify_artifact(gch, key) and cache_files.verify_artifact(header, key):
        return
    import tempfile

    compiler = find_compiler()
    text = prelude.encode()
    with tempfile.TemporaryDirectory(prefix=cache_files.build_prefix(), dir=header.parent) as tmp:
        src = Path(tmp, "prelude.h")
        src.write_bytes(text)
        out = Path(tmp, "prelude.h.gch")
        status, _ = run_compiler([compiler.path, *flags, "-x", "c++-header", str(src), "-o", str(out)])
        if status == 0 and out.exists():
            data = out.read_bytes()
            cache_files.seal_artifact(gch, key, cache_files.digest(data), len(data))
            staged = cache_files.staging_path(gch)
            os.replace(out, staged)
            # The .gch first: a header seen without its .gch only costs a slower (correct) compile.
            cache_files.replace_into(staged, gch)
        else:
            cache_files.discard(gch)
        cache_files.seal_artifact(header, key, cache_files.digest(text), len(text))
        cache_files.write_atomically(header, text)
