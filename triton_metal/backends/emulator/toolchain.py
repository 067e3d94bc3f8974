"""The system C++ compiler and the emulator's disk cache.

Contract: `find_compiler()` returns the C++ compiler to use (`$CXX`, else `g++`, else `clang++`)
with a stable identity string, or raises `CompilerNotFound` naming the package to install.
`build(kind, sources, command)` compiles once per distinct input: the cache key hashes every
source text, the compiler identity and the full command line, and the artifact is written under
`$TRITON_METAL_CACHE_DIR` (default `~/.cache/triton_metal`) through a temporary name and an
atomic rename, so concurrent processes never see a half-written file.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from triton_metal.errors import TritonError


class CompilerNotFound(TritonError, RuntimeError):
    """No C++ compiler: the emulator cannot build kernels."""


class ToolchainError(TritonError, RuntimeError):
    """The C++ compiler failed on code the emulator itself generated (not the kernel's fault)."""


@dataclass(frozen=True)
class Compiler:
    path: str
    identity: str
    """First line of `--version` plus the path: part of every cache key."""
    is_clang: bool


def _install_hint() -> str:
    if platform.system() == "Darwin":
        return "install the Xcode command line tools (`xcode-select --install`)"
    return "install a C++ compiler, e.g. `apt-get install g++` (or `build-essential`) on Debian/Ubuntu"


@functools.lru_cache(maxsize=None)
def find_compiler() -> Compiler:
    """The C++ compiler the emulator uses (cached for the process)."""
    candidates = [os.environ["CXX"]] if os.environ.get("CXX") else ["g++", "clang++", "c++"]
    for name in candidates:
        path = shutil.which(name)
        if path is None:
            continue
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True, check=True)
        except (OSError, subprocess.CalledProcessError):
            continue
        first = out.stdout.splitlines()[0] if out.stdout else name
        return Compiler(path, f"{first} ({path})", "clang" in out.stdout.lower())
    raise CompilerNotFound(
        "the Metal emulator needs a C++ compiler and found none "
        f"(tried {', '.join(candidates)}); {_install_hint()}, or set CXX"
    )


def cache_dir() -> Path:
    """Root of the disk cache (created on demand)."""
    root = os.environ.get("TRITON_METAL_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "triton_metal"
    )
    path = Path(root) / "emulator"
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_key(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:32]


class BuildFailure(Exception):
    """The compiler rejected a translation unit; `stderr` holds its diagnostics."""

    def __init__(self, stderr: str, command: tuple[str, ...]) -> None:
        super().__init__(stderr)
        self.stderr = stderr
        self.command = command


def build(
    kind: str,
    suffix: str,
    sources: dict[str, str],
    command: Sequence[str],
    key_parts: Sequence[str] = (),
) -> Path:
    """Compile into the cache and return the artifact's path (reused when already built).

    `sources` maps file names to texts written into a fresh temporary directory; `command` is the
    compiler command line in which `{out}` stands for the output path and `{dir}` for that
    directory. Raises `BuildFailure` when the compiler fails.
    """
    compiler = find_compiler()
    key = cache_key(
        kind,
        compiler.identity,
        "\0".join(command),
        *key_parts,
        *(name + "\0" + text for name, text in sorted(sources.items())),
    )
    target = cache_dir() / f"{kind}-{key}{suffix}"
    if target.exists():
        return target
    with tempfile.TemporaryDirectory(prefix="tm-build-", dir=cache_dir()) as tmp:
        for name, text in sources.items():
            Path(tmp, name).write_text(text)
        out = Path(tmp, "out" + suffix)
        argv = [compiler.path] + [a.replace("{out}", str(out)).replace("{dir}", tmp) for a in command]
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=tmp)
        if proc.returncode != 0:
            raise BuildFailure(proc.stderr.replace(tmp + os.sep, ""), tuple(argv))
        # Rename within one directory: atomic, and a concurrent builder's identical file wins.
        staged = cache_dir() / f".{target.name}.{os.getpid()}.tmp"
        shutil.move(str(out), staged)
        os.replace(staged, target)
    return target
