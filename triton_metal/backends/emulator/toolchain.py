"""The system C++ compiler and the emulator's disk cache.

Contract: `find_compiler()` returns the C++ compiler to use (`$CXX`, else `g++`, else `clang++`)
with a stable identity, or raises `CompilerNotFound` naming the package to install.
`build(kind, suffix, sources, command)` compiles once per distinct input: the cache key hashes
every source text, the compiler's identity and fingerprint and the full command line, and the
artifact is written under `$TRITON_METAL_CACHE_DIR` (default `~/.cache/triton_metal`) through a
temporary name and an atomic rename, so concurrent processes never see a half-written file.

A process that finds its artifacts cached does no more than stat and hash: the compiler's
`--version` answer is remembered on disk under the compiler's stat stamp (resolved path, size,
modification and change times, inode), so a replaced or upgraded compiler is asked again and
gets a new fingerprint; `files_digest` remembers the digest of a set of files (the shim and
runtime headers) under their stat stamps the same way (a file changed in the last
`RACY_SECONDS` is always read); `SourceFiles` lets `build` key on such a digest and read the
files only when it compiles. None of these files can change without changing its stamp (an
edit moves the change time even when the modification time is put back), so a stale artifact
is never reused.

Every file here is checked before use (`runtime/cache_files.py`): an artifact is returned only
when its sidecar record (key, size, SHA-256) matches it, so a kernel library is loaded only
after its checksum matched; memos are records checked the same way. Anything damaged is removed
and rebuilt; so is a file someone else could have written (another owner, writable by others),
and a cache whose folders others can write into is not used at all (`cache_files.folder`).
Compiles stage in `tm-build-<host>-<pid>-*` directories, and those of dead processes are removed
by the next compile. An unwritable cache moves to a per-process temporary directory.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from triton_metal.errors import TritonError
from triton_metal.runtime import cache_files, progress

# subprocess, shutil and tempfile are imported where a compile runs: a process whose
# artifacts are all cached never needs them (each costs milliseconds to import).


class CompilerNotFound(TritonError, RuntimeError):
    """No C++ compiler: the emulator cannot build kernels."""


class ToolchainError(TritonError, RuntimeError):
    """The C++ compiler failed on code the emulator itself generated (not the kernel's fault)."""


@dataclass(frozen=True)
class Compiler:
    path: str
    identity: str
    """First line of `--version` plus the path (shown to users; part of every cache key)."""
    is_clang: bool
    fingerprint: str = ""
    """Stat stamp of the resolved compiler binary: part of every cache key, so reinstalling or
    replacing the compiler (even under the same version string) never reuses its artifacts."""

    @property
    def cache_identity(self) -> str:
        return f"{self.identity}\0{self.fingerprint}"


def _install_hint() -> str:
    if platform.system() == "Darwin":
        return "install the Xcode command line tools (`xcode-select --install`)"
    return "install a C++ compiler, e.g. `apt-get install g++` (or `build-essential`) on Debian/Ubuntu"


RACY_SECONDS = 2.0
"""A file changed less than this long ago is not remembered by its stamp: file times tick
coarsely (milliseconds), so a second write within one tick could keep the stamp (as git treats
"racily clean" entries)."""


def stat_stamp(path: str | os.PathLike[str]) -> tuple[str, bool]:
    """(stamp, settled): the stamp changes whenever the file's contents can have changed (the
    change time moves on every write, whatever the modification time is set back to); settled
    is False while the file is too recently changed for its stamp to be trusted."""
    st = os.stat(path)
    settled = time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > RACY_SECONDS * 1e9
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}", settled


def _write_memo(path: Path, key: str, text: str) -> None:
    """A checked record (`cache_files`); a read-only cache only loses the memo."""
    cache_files.write_record(path, key, text.encode())


def _read_memo(path: Path, key: str) -> str:
    """The memo's text, or "" when absent or damaged (then removed: it is asked again)."""
    return cache_files.read_text_record(path, key) or ""


def _ask_version(path: str) -> tuple[str, bool] | None:
    """(first line of `--version`, is clang), or None when the compiler cannot run."""
    import subprocess

    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    first = out.stdout.splitlines()[0] if out.stdout else os.path.basename(path)
    return first, "clang" in out.stdout.lower()


def _compiler_at(path: str) -> Compiler | None:
    """The compiler at `path`, its `--version` answer read from the disk memo when its stamp is
    known there."""
    real = os.path.realpath(path)
    try:
        stamp, settled = stat_stamp(real)
    except OSError:
        return None
    fingerprint = f"{real}:{stamp}"
    # The memo holds "clang" or "other", a newline, and the version line.
    memo_key = cache_key(path, fingerprint)
    memo = cache_dir() / f"compiler-{memo_key}.txt"
    kind, version = "", ""
    if settled:
        kind, _, version = _read_memo(memo, memo_key).partition("\n")
    if kind not in ("clang", "other") or not version:
        answer = _ask_version(path)
        if answer is None:
            return None
        version, clang = answer
        kind = "clang" if clang else "other"
        if settled:
            _write_memo(memo, memo_key, f"{kind}\n{version}")
    is_clang = kind == "clang"
    return Compiler(path, f"{version} ({path})", is_clang, fingerprint)


def _which(name: str) -> str | None:
    """`shutil.which` for an executable (shutil itself costs milliseconds to import)."""
    folders = [""] if os.path.dirname(name) else os.get_exec_path()
    for folder in folders:
        path = os.path.join(folder, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


@functools.lru_cache(maxsize=None)
def find_compiler() -> Compiler:
    """The C++ compiler the emulator uses (cached for the process)."""
    candidates = [os.environ["CXX"]] if os.environ.get("CXX") else ["g++", "clang++", "c++"]
    for name in candidates:
        path = _which(name)
        if path is None:
            continue
        compiler = _compiler_at(path)
        if compiler is not None:
            return compiler
    raise CompilerNotFound(
        "the Metal emulator needs a C++ compiler and found none "
        f"(tried {', '.join(candidates)}); {_install_hint()}, or set CXX"
    )


def cache_dir() -> Path:
    """The emulator's folder of the disk cache: created private, and checked private before use
    (`cache_files.folder`; `TRITON_METAL_CACHE_DIR` is read per call; an unwritable or shared
    one is replaced by the process's private temporary cache)."""
    return cache_files.folder("emulator")


def cache_key(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:32]


def _contents_digest(items: Sequence[tuple[str, bytes]]) -> str:
    h = hashlib.sha256()
    for name, data in items:
        h.update(len(name).to_bytes(8, "little") + name.encode())
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


_digests: dict[str, str] = {}  # stat stamps of a file set -> its contents digest


def files_digest(paths: Sequence[str | os.PathLike[str]]) -> str:
    """SHA-256 of the files' names and contents, remembered (in the process and on disk) under
    their stat stamps: a file set that has not changed is stat'ed, not read."""
    now = time.time_ns()
    settled = True
    stamps: list[str] = []
    for p in paths:  # the warm path: one stat per file and no Path objects
        st = os.stat(p)
        stamps.append(f"{p}\0{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}")
        settled = settled and now - max(st.st_mtime_ns, st.st_ctime_ns) > RACY_SECONDS * 1e9
    if not settled:
        return _read_digest(paths)
    key = cache_key("\n".join(stamps))
    digest = _digests.get(key)
    if digest is not None:
        return digest
    memo = cache_dir() / f"files-{key}.txt"
    digest = _read_memo(memo, key)
    if len(digest) != 64:
        digest = _read_digest(paths)
        _write_memo(memo, key, digest)
    _digests[key] = digest
    return digest


def _read_digest(paths: Sequence[str | os.PathLike[str]]) -> str:
    return _contents_digest([(os.path.basename(p), Path(p).read_bytes()) for p in paths])


@dataclass(frozen=True)
class SourceFiles:
    """Sources given as files: `build` keys them by `files_digest` and reads them only to compile."""

    paths: tuple[Path, ...]

    def digest(self) -> str:
        return files_digest(self.paths)

    def read(self) -> dict[str, str]:
        return {p.name: p.read_text() for p in self.paths}


class BuildFailure(Exception):
    """The compiler rejected a translation unit; `stderr` holds its diagnostics."""

    def __init__(self, stderr: str, command: tuple[str, ...]) -> None:
        super().__init__(stderr)
        self.stderr = stderr
        self.command = command


def build(
    kind: str,
    suffix: str,
    sources: Mapping[str, str] | SourceFiles,
    command: Sequence[str],
    key_parts: Sequence[str] = (),
    prepare: Callable[[], None] | None = None,
) -> Path:
    """Compile into the cache and return the artifact's path (reused when already built and its
    checksum matches; rebuilt otherwise).

    `sources` maps file names to texts written into a fresh temporary directory (or names files
    to copy there, `SourceFiles`); `command` is the compiler command line in which `{out}`
    stands for the output path and `{dir}` for that directory. `prepare` runs before a compile
    (never when the artifact is found). Raises `BuildFailure` when the compiler fails.
    """
    compiler = find_compiler()
    if isinstance(sources, SourceFiles):
        source_parts: list[str] = ["files\0" + sources.digest()]
    else:
        source_parts = [name + "\0" + text for name, text in sorted(sources.items())]
    key = cache_key(kind, compiler.cache_identity, "\0".join(command), *key_parts, *source_parts)
    target = cache_dir() / f"{kind}-{key}{suffix}"
    if cache_files.verify_artifact(target, key):
        return target
    with _building(key):  # threads of this process wanting one artifact compile it once
        target = cache_dir() / target.name  # the cache in use now (it may have been replaced)
        if cache_files.verify_artifact(target, key):
            return target
        texts = sources.read() if isinstance(sources, SourceFiles) else sources
        try:
            built = _compile(compiler, target, key, texts, command, prepare)
            progress.touch()  # a long C++ compile is part of the call that needs it
            return built
        except OSError as error:
            if cache_files.in_fallback(target):
                raise
            # The cache cannot be written (read-only, full): compile into the process's own.
            cache_files.fall_back(cache_files.configured_root(), error)
    return build(kind, suffix, sources, command, key_parts, prepare)


_locks_guard = threading.Lock()
_locks: dict[str, threading.Lock] = {}


def _building(key: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def _compile(
    compiler: Compiler,
    target: Path,
    key: str,
    texts: Mapping[str, str],
    command: Sequence[str],
    prepare: Callable[[], None] | None,
) -> Path:
    import subprocess
    import tempfile

    folder = target.parent
    cache_files.clean_stale(folder)
    if prepare is not None:
        prepare()
    with tempfile.TemporaryDirectory(prefix=cache_files.build_prefix(), dir=folder) as tmp:
        for name, text in texts.items():
            Path(tmp, name).write_text(text)
        out = Path(tmp, "out" + target.suffix) if target.suffix else Path(tmp, "out")
        argv = [compiler.path] + [a.replace("{out}", str(out)).replace("{dir}", tmp) for a in command]
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=tmp)
        if proc.returncode != 0:
            raise BuildFailure(proc.stderr.replace(tmp + os.sep, ""), tuple(argv))
        data = out.read_bytes()
        # The checksum first, then the artifact, each by a rename within one directory (atomic;
        # a concurrent builder's identical file wins). An artifact seen without its checksum
        # record is rebuilt, never used.
        cache_files.seal_artifact(target, key, cache_files.digest(data), len(data))
        staged = cache_files.staging_path(target)
        os.replace(out, staged)
        cache_files.replace_into(staged, target)
    return target


def run_compiler(argv: Sequence[str], cwd: str | None = None) -> tuple[int, str]:
    """Run one compiler command (imports subprocess on first use): (return code, stderr)."""
    import subprocess

    proc = subprocess.run(list(argv), capture_output=True, text=True, cwd=cwd)
    return proc.returncode, proc.stderr


__all__ = [
    "BuildFailure",
    "Compiler",
    "CompilerNotFound",
    "SourceFiles",
    "ToolchainError",
    "build",
    "cache_dir",
    "cache_key",
    "files_digest",
    "find_compiler",
    "run_compiler",
    "stat_stamp",
]
