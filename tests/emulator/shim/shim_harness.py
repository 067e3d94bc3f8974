"""Compile C++ against the emulator's MSL shim and call it from Python.

Test sources are compiled exactly as kernels are (`-nostdinc`, the shim's include directory,
the kernel flags); functions under test are `extern "C"` and take pointers (NumPy arrays,
written in place) and integers. Three ways to run them, one interface (`lib.name(*args)`):
- natively: a shared library built with g++ and loaded with ctypes;
- natively with clang++ (whose C++ may lack _Float16 and -fsingle-precision-constant);
- on aarch64: cross-compiled with `aarch64-linux-gnu-g++`, linked with `runner.cpp` and served
  under `qemu-aarch64` through a pipe (qemu-user cannot load an aarch64 library into this
  Python). Missing tools skip those tests with the reason, or fail them when
  `TRITON_METAL_REQUIRE_CROSS=1` (CI installs them with `.ci/install-cross.sh`).
`compile_only` reports whether a snippet compiles and the compiler's diagnostics, for the tests
that check what the shim refuses.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

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


# clang has no -fsingle-precision-constant (unsuffixed literals stay double there) and names its
# unknown-attribute warning differently.
CLANG_FLAGS: tuple[str, ...] = tuple(
    f for f in KERNEL_FLAGS if f != "-fsingle-precision-constant"
) + ("-Wno-unknown-attributes",)


def build_library(
    code: str, out_dir: Path, prelude: str = PRELUDE, cxx: str | None = None
) -> ctypes.CDLL:
    """Compile `prelude + code` into a shared library in `out_dir` and load it with ctypes."""
    src = out_dir / "lib.cpp"
    src.write_text(prelude + code)
    lib = out_dir / "lib.so"
    flags = CLANG_FLAGS if cxx == "clang++" else KERNEL_FLAGS
    proc = subprocess.run(
        [cxx or compiler(), *flags, "-I", str(INCLUDE_DIR), "-shared", str(src), "-o", str(lib), "-lm"],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise AssertionError(f"test library failed to compile:\n{proc.stderr}")
    return ctypes.CDLL(str(lib))


def load_source(name: str, out_dir: Path, prelude: str = PRELUDE, cxx: str | None = None) -> ctypes.CDLL:
    """Build the C++ test source `tests/emulator/shim/<name>` as a native library."""
    return build_library((SOURCES_DIR / name).read_text(), out_dir, prelude, cxx)


class NativeLibrary:
    """`lib.name(*args)`: arrays pass as pointers (written in place), ints as ints."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self._lib = lib

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self._lib, name)

        def call(*args: np.ndarray | int) -> int:
            return int(fn(*(ptr(a) if isinstance(a, np.ndarray) else a for a in args)))

        return call


CROSS_GXX = "aarch64-linux-gnu-g++"
QEMU = "qemu-aarch64"
SYSROOT = Path("/usr/aarch64-linux-gnu")


def require_cross_tools(*tools: str, sysroot: bool = True) -> None:
    """Skip naming the missing tools, or fail under TRITON_METAL_REQUIRE_CROSS=1."""
    missing = [t for t in (tools or (CROSS_GXX, QEMU)) if shutil.which(t) is None]
    if sysroot and not (SYSROOT / "lib").is_dir():
        missing.append(f"{SYSROOT} (the aarch64 C library)")
    if missing:
        reason = f"missing {', '.join(missing)}: run .ci/install-cross.sh"
        if os.environ.get("TRITON_METAL_REQUIRE_CROSS") == "1":
            pytest.fail(reason + " (TRITON_METAL_REQUIRE_CROSS=1)")
        pytest.skip(reason)


class QemuLibrary:
    """The same interface as NativeLibrary, served by an aarch64 runner under qemu-user."""

    def __init__(self, source: str, out_dir: Path, prelude: str = PRELUDE) -> None:
        require_cross_tools()
        src = out_dir / "lib.cpp"
        src.write_text(prelude + (SOURCES_DIR / source).read_text())
        obj = out_dir / "lib.o"
        exe = out_dir / "runner"
        steps = [
            [CROSS_GXX, *KERNEL_FLAGS, "-I", str(INCLUDE_DIR), "-c", str(src), "-o", str(obj)],
            [CROSS_GXX, "-O1", "-rdynamic", str(SOURCES_DIR / "runner.cpp"), str(obj), "-o", str(exe),
             "-ldl", "-lm"],
        ]
        for cmd in steps:
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                raise AssertionError(f"aarch64 build failed:\n{' '.join(cmd)}\n{proc.stderr}")
        self._proc = subprocess.Popen(
            [QEMU, "-L", str(SYSROOT), str(exe)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )

    def close(self) -> None:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.close()
        self._proc.wait(timeout=60)
        self._proc.stdout.close()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)

        def call(*args: np.ndarray | int) -> int:
            stdin, stdout = self._proc.stdin, self._proc.stdout
            assert stdin is not None and stdout is not None
            request = bytearray(name.encode() + b"\n" + len(args).to_bytes(8, "little"))
            for a in args:
                if isinstance(a, np.ndarray):
                    assert a.flags.c_contiguous
                    request += b"B" + a.nbytes.to_bytes(8, "little") + a.tobytes()
                else:
                    request += b"I" + (int(a) % 2**64).to_bytes(8, "little")
            stdin.write(bytes(request))
            stdin.flush()
            head = stdout.read(8)
            if len(head) != 8:
                raise AssertionError(f"aarch64 runner died calling {name} (exit {self._proc.poll()})")
            for a in args:
                if isinstance(a, np.ndarray):
                    data = stdout.read(a.nbytes)
                    a[...] = np.frombuffer(data, dtype=a.dtype).reshape(a.shape)
            # The functions return int: the low 32 bits, signed.
            low = int.from_bytes(head[:4], "little")
            return low - 2**32 if low >= 2**31 else low

        return call


def library(kind: str, source: str, out_dir: Path, prelude: str = PRELUDE) -> NativeLibrary | QemuLibrary:
    """A test source built for `kind` ("native", "clang" or "aarch64")."""
    if kind == "native":
        return NativeLibrary(load_source(source, out_dir, prelude))
    if kind == "clang":
        require_cross_tools("clang++", sysroot=False)
        return NativeLibrary(load_source(source, out_dir, prelude, "clang++"))
    return QemuLibrary(source, out_dir, prelude)


TARGETS = ("native", "clang", "aarch64")

Library = NativeLibrary | QemuLibrary


def library_fixture(source: str) -> Any:
    """A module-scoped pytest fixture `lib`: `source` built for each of TARGETS in turn."""

    @pytest.fixture(scope="module", params=TARGETS)
    def lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
        built = library(request.param, source, tmp_path_factory.mktemp(Path(source).stem))
        yield built
        if isinstance(built, QemuLibrary):
            built.close()

    return lib


def ptr(a: np.ndarray) -> ctypes.c_void_p:
    """Address of a C-contiguous array's first element."""
    assert a.flags.c_contiguous
    return ctypes.c_void_p(a.ctypes.data)
