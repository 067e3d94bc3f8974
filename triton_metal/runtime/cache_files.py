"""The files of the disk caches: where they live, how they are written, how they are checked.

Every cache on disk (generated MSL in `msl/`, the emulator's binaries, headers and memos in
`emulator/`, the compiler-hash memo) goes through this module, so one set of rules holds:

* **Where.** `cache_root()` is `$TRITON_METAL_CACHE_DIR` (default `~/.cache/triton_metal`),
  read per call. A root that cannot be written (read-only mount, another user's, full disk, a
  path through a file) is replaced, from the first write that fails, by a temporary directory
  of the process's own, with one `RuntimeWarning` naming `TRITON_METAL_CACHE_DIR`
  (`fall_back`); what could be read from the root before is still valid. The temporary
  directory is removed at exit.
* **Private.** The cache holds shared objects the emulator loads and runs, so only its user may
  write into it. `folder(name)` creates missing folders with mode 0700 and checks, before
  anything in it is read, that the folder and every folder above it up to the root belong to
  the user and are writable by no one else (`trust_problem`). A root that fails (another user's,
  or world- or group-writable, as a shared `TRITON_METAL_CACHE_DIR` may be) is never read: the
  process compiles into a private temporary directory instead, with one `RuntimeWarning` naming
  the folder and the reason (`distrust`). A file that is not the user's alone (another owner, a
  mode that lets others write, a symbolic link) is never loaded either: it is removed and
  rebuilt, with one warning (`verify_artifact`, `disk_cache.load`).
* **Writing.** Through a staging name unique to the process and the thread
  (`.<name>.<host>-<pid>-<thread>.tmp`) and one `os.replace`: a reader sees a whole file or
  none, and threads of one process compiling the same new kernel never share a staging file.
  Build directories are named `tm-build-<host>-<pid>-*`; `clean_stale` removes the build
  directories and staging files of processes that no longer run (a SIGKILL during a compile),
  and those of other hosts or of an unknown owner after a day.
* **Records** (text memos, a few bytes): a first line `tm-record-1 <key digest> <size>
  <sha256>` then the payload. `read_record` returns the payload only when the magic, the key it
  is read for, the size and the checksum all match.
* **Artifacts** (binaries, precompiled headers): a sidecar record `<artifact>.sum` holds the
  artifact's size and SHA-256 under the artifact's key; `verify_artifact` reads and hashes the
  artifact before it is used (a process remembers what it verified by the file's stat stamp,
  so the hash is paid once per process and artifact, never per launch).

Whatever fails a check (truncated, garbled, empty, edited, swapped with another entry's, a
directory in the file's place, bytes that are not UTF-8) is removed and rebuilt by the caller;
`TRITON_METAL_DEBUG=1` logs each such repair (`report_damage`).
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

ENV = "TRITON_METAL_CACHE_DIR"
RECORD_MAGIC = "tm-record-1"
BUILD_PREFIX = "tm-build-"
STALE_SECONDS = 24 * 3600
"""Leftovers whose owner cannot be checked (another host, an older naming) are removed after this."""
PRIVATE_MODE = 0o700
OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH

_lock = threading.Lock()
_fallbacks: dict[str, Path] = {}  # configured root -> the temporary directory used instead
_verified: dict[str, str] = {}  # artifact path -> stat stamp of the verified file
_cleaned: set[str] = set()
_warned: set[str] = set()  # what a trust warning was given for (once per process)
_host = re.sub(r"[^A-Za-z0-9_]", "_", os.uname().nodename if hasattr(os, "uname") else "") or "host"


def configured_root() -> Path:
    """The cache root the environment names (not checked)."""
    return Path(os.environ.get(ENV) or os.path.join(os.path.expanduser("~"), ".cache", "triton_metal"))


def cache_root() -> Path:
    """The cache root in use: the configured one, or this process's fallback (module docstring).
    Nothing is probed here (a warm launch only reads): the first write that fails falls back."""
    root = configured_root()
    if _fallbacks:
        return _fallbacks.get(str(root), root)
    return root


def fall_back(root: Path, error: OSError) -> Path:
    """Use a per-process temporary directory instead of `root` from now on (warned once)."""
    reason = error.strerror or str(error)
    return _replace_root(root, lambda folder: (
        f"triton_metal: the cache directory {root} cannot be written ({reason}); compiled "
        f"kernels are kept in {folder} for this process only. Set {ENV} to a writable "
        "directory to keep them between runs."))


def distrust(root: Path, why: str) -> Path:
    """Use a private per-process temporary directory instead of `root`, which others can write
    into (`why`), from now on: nothing in `root` is read any more (warned once)."""
    return _replace_root(root, lambda folder: (
        f"triton_metal: the cache directory {root} is not private ({why}); nothing is loaded "
        f"from it, and kernels are compiled into {folder} for this process only. Make the "
        f"cache yours and writable by you alone (chmod 700), or set {ENV} to such a directory."))


def _replace_root(root: Path, message: Callable[[Path], str]) -> Path:
    import atexit
    import shutil
    import tempfile
    import warnings

    with _lock:
        key = str(root)
        existing = _fallbacks.get(key)
        if existing is not None:
            return existing
        folder = Path(tempfile.mkdtemp(prefix="triton_metal-cache-"))  # mode 0700
        _fallbacks[key] = folder
        atexit.register(shutil.rmtree, folder, True)
    warnings.warn(message(folder), RuntimeWarning, stacklevel=4)
    return folder


def make_private(path: Path) -> None:
    """Create `path` and its missing parents, each with mode 0700 whatever the umask (raises
    OSError; existing folders are left as they are)."""
    missing: list[Path] = []
    probe = path
    while not os.path.isdir(probe) and probe.parent != probe:
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, PRIVATE_MODE)
        except FileExistsError:
            if not os.path.isdir(folder):
                raise
            continue
        os.chmod(folder, PRIVATE_MODE)


def foreign(st: os.stat_result) -> str:
    """Why a file or folder with this (l)stat could hold what another user wrote ("" when it
    is the user's alone). Always "" where the platform has no user ids."""
    if not hasattr(os, "geteuid"):
        return ""
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link"
    uid = os.geteuid()
    if st.st_uid != uid:
        return f"owned by uid {st.st_uid}, not by this user (uid {uid})"
    if st.st_mode & OTHERS_WRITE:
        who = "everyone" if st.st_mode & stat.S_IWOTH else "its group"
        return f"writable by {who} (mode {stat.S_IMODE(st.st_mode):o})"
    return ""


def trust_problem(path: Path, root: Path) -> str:
    """Why `path` (a folder or file at or under `root`) could hold what another user wrote: the
    first of `path` and the folders above it, up to `root` included, that is not the user's
    alone ("" when none). The root may be reached through a symbolic link; nothing below it may."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return f"{path} is not inside {root}"
    chain = [root] + [root.joinpath(*parts[: i + 1]) for i in range(len(parts))]
    for i, item in enumerate(chain):
        try:
            st = os.stat(item) if i == 0 else os.lstat(item)
        except OSError as error:
            return f"{item}: {error.strerror or type(error).__name__}"
        why = foreign(st)
        if why:
            return f"{item} is {why}"
    return ""


def folder(name: str) -> Path:
    """The cache folder `name` (one level under the root in use), created private, and checked
    private before it is used (module docstring): another user's or a shared root is replaced by
    the process's private one. Raises OSError only when even that cannot be made."""
    root = cache_root()
    path = root / name
    try:
        make_private(path)
    except OSError as error:
        if in_fallback(root):
            raise
        path = fall_back(configured_root(), error) / name
        make_private(path)
        return path
    why = trust_problem(path, root)
    if why and not in_fallback(root):
        path = distrust(configured_root(), why) / name
        make_private(path)
    return path


def reject_foreign(path: Path, why: str) -> None:
    """A cache file someone else could have written is never used: removed (it is rebuilt), with
    one warning per process."""
    import warnings

    if str(path) not in _warned:
        _warned.add(str(path))
        warnings.warn(
            f"triton_metal: the cache file {path} is {why}; it is not loaded, and is rebuilt",
            RuntimeWarning,
            stacklevel=4,
        )
    discard(path)


def in_fallback(path: Path) -> bool:
    text = str(path)
    return any(text.startswith(str(p)) for p in _fallbacks.values())


def _owner() -> str:
    return f"{_host}-{os.getpid()}-{threading.get_ident()}"


def staging_path(path: Path) -> Path:
    """Where `path` is written before it is renamed into place (unique per process and thread)."""
    return path.with_name(f".{path.name}.{_owner()}.tmp")


def build_prefix() -> str:
    """Prefix of a build directory made by this process (`clean_stale` knows its owner by it)."""
    return f"{BUILD_PREFIX}{_host}-{os.getpid()}-"


def replace_into(staged: Path, target: Path) -> None:
    """`os.replace`, after removing a directory that sits where the file belongs. The file loses
    any group or world write permission a umask gave it (such a file is never loaded)."""
    if target.is_dir() and not target.is_symlink():
        discard(target)
    mode = stat.S_IMODE(os.stat(staged).st_mode)
    if mode & OTHERS_WRITE:
        os.chmod(staged, mode & ~OTHERS_WRITE)
    os.replace(staged, target)


def write_atomically(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a staging name and a rename (raises OSError)."""
    staged = staging_path(path)
    try:
        with open(staged, "wb") as f:
            f.write(data)
        replace_into(staged, path)
    except OSError:
        try:
            staged.unlink()
        except OSError:
            pass
        raise


def discard(path: Path) -> None:
    """Remove a damaged cache file (or whatever took its place); never raises."""
    import shutil

    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()
    except OSError:
        pass
    _verified.pop(str(path), None)


def report_damage(path: Path, reason: str) -> None:
    """Log a repair at `TRITON_METAL_DEBUG=1` and remove the file."""
    from .log import debug_level, log

    if debug_level() >= 1:
        log(f"cache: {path} is damaged ({reason}); removed, it is rebuilt")
    discard(path)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _key_digest(key: str) -> str:
    return digest(key.encode("utf-8", "surrogateescape"))[:32]


def encode_record(key: str, payload: bytes) -> bytes:
    return f"{RECORD_MAGIC} {_key_digest(key)} {len(payload)} {digest(payload)}\n".encode() + payload


def decode_record(raw: bytes, key: str) -> tuple[bytes | None, str]:
    """(payload, "") when `raw` is a whole record written for `key`, else (None, why not)."""
    head, newline, payload = raw.partition(b"\n")
    if not newline:
        return None, "no header line" if raw else "empty"
    parts = head.split(b" ")
    if len(parts) != 4 or parts[0] != RECORD_MAGIC.encode():
        return None, "not a record"
    if parts[1].decode("ascii", "replace") != _key_digest(key):
        return None, "written for another key"
    if parts[2] != str(len(payload)).encode():
        return None, f"size {len(payload)} instead of {parts[2].decode('ascii', 'replace')}"
    if parts[3].decode("ascii", "replace") != digest(payload):
        return None, "checksum mismatch"
    return payload, ""


def read_private(path: Path) -> bytes | None:
    """The bytes of a cache file; None when it is absent, or when it is not the user's alone
    (then removed with a warning: `reject_foreign`). Other failures raise OSError."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:  # O_NOFOLLOW met a symbolic link
            reject_foreign(path, "a symbolic link")
            return None
        raise
    with os.fdopen(fd, "rb") as f:
        why = foreign(os.fstat(f.fileno()))
        if why:
            reject_foreign(path, why)
            return None
        return f.read()


def read_record(path: Path, key: str) -> bytes | None:
    """The payload stored at `path` for `key`; None when absent, or damaged (then removed)."""
    try:
        raw = read_private(path)
    except OSError as error:  # a directory, unreadable: rebuilt
        report_damage(path, error.strerror or type(error).__name__)
        return None
    if raw is None:
        return None
    payload, why = decode_record(raw, key)
    if payload is None:
        report_damage(path, why)
    return payload


def read_text_record(path: Path, key: str) -> str | None:
    payload = read_record(path, key)
    if payload is None:
        return None
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError:
        report_damage(path, "not UTF-8")
        return None


def write_record(path: Path, key: str, payload: bytes) -> bool:
    """Store a record; False when the cache cannot be written (the record is only a memo)."""
    try:
        write_atomically(path, encode_record(key, payload))
        return True
    except OSError:
        return False


def sidecar(artifact: Path) -> Path:
    return artifact.with_name(artifact.name + ".sum")


def _stamp(st: os.stat_result) -> str:
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            h.update(chunk)
    return h.hexdigest()


def seal_artifact(artifact: Path, key: str, data_digest: str, size: int) -> None:
    """Write the sidecar of an artifact about to be renamed into place (raises OSError)."""
    write_atomically(sidecar(artifact), encode_record(key, f"{size} {data_digest}".encode()))


def verify_artifact(artifact: Path, key: str) -> bool:
    """True when `artifact` exists and matches its sidecar (size, checksum, key). A damaged
    artifact and its sidecar are removed (and reported); an absent one is simply False."""
    try:
        st = os.lstat(artifact)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as error:
        report_damage(artifact, error.strerror or type(error).__name__)
        return False
    foreign_why = foreign(st)
    if foreign_why:  # checked before the checksum: a valid record proves nothing about the writer
        reject_foreign(artifact, foreign_why)
        discard(sidecar(artifact))
        return False
    path = str(artifact)
    stamp = _stamp(st)
    if _verified.get(path) == stamp:
        return True
    note = sidecar(artifact)
    why = ""
    record = read_record(note, key)
    if record is None:
        why = "no valid checksum record"
    else:
        size, _, expected = record.decode("ascii", "replace").partition(" ")
        if not os.path.isfile(artifact):
            why = "not a file"
        elif size != str(st.st_size):
            why = f"size {st.st_size} instead of {size}"
        else:
            try:
                actual = file_digest(artifact)
            except OSError as error:
                actual, why = "", error.strerror or "unreadable"
            if not why and actual != expected:
                why = "checksum mismatch"
    if why:
        report_damage(artifact, why)
        discard(note)
        return False
    _verified[path] = stamp
    return True


def _record_problem(raw: bytes) -> str:
    """Why `raw` is not a whole record, whatever its key ("" when it is)."""
    head, newline, payload = raw.partition(b"\n")
    parts = head.split(b" ")
    if not newline or len(parts) != 4 or parts[0] != RECORD_MAGIC.encode():
        return "not a record"
    if parts[2] != str(len(payload)).encode() or parts[3].decode("ascii", "replace") != digest(payload):
        return "size or checksum mismatch"
    return ""


def audit_folder(folder: Path) -> dict[str, str]:
    """Every damaged file of an emulator-style folder, by name, with the reason (keys are not
    needed: records are checked for size and checksum, artifacts against their sidecars). Build
    directories and staging files are not looked at; nothing is changed."""
    problems: dict[str, str] = {}
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return problems
    names = {e.name for e in entries}
    for entry in entries:
        name = entry.name
        if name.startswith((".", BUILD_PREFIX)) or name.endswith(".json"):
            continue
        if not entry.is_file(follow_symlinks=False):
            problems[name] = "not a file"
            continue
        if name.endswith((".sum", ".txt")):
            try:
                with open(entry.path, "rb") as f:
                    why = _record_problem(f.read())
            except OSError as error:
                why = error.strerror or "unreadable"
            if why:
                problems[name] = why
            if name.endswith(".sum") and name[:-4] not in names:
                problems[name] = "a checksum record without its artifact"
            continue
        if name + ".sum" not in names:
            problems[name] = "no checksum record"
            continue
        with open(os.path.join(folder, name + ".sum"), "rb") as f:
            raw = f.read()
        if _record_problem(raw):
            continue  # reported with the record
        size, _, expected = raw.partition(b"\n")[2].decode("ascii", "replace").partition(" ")
        if size != str(entry.stat().st_size) or file_digest(Path(entry.path)) != expected:
            problems[name] = "does not match its checksum record"
    return problems


def clean_stale(folder: Path) -> None:
    """Remove build directories and staging files left by processes that no longer run (once per
    folder and process; never raises)."""
    key = str(folder)
    if key in _cleaned:
        return
    _cleaned.add(key)
    now = time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if name.startswith(BUILD_PREFIX):
            owner = name[len(BUILD_PREFIX):]
        elif name.startswith(".") and name.endswith(".tmp"):
            owner = name[:-4].rpartition(".")[2]
        else:
            continue
        if _abandoned(owner, entry, now):
            discard(Path(entry.path))


def _abandoned(owner: str, entry: os.DirEntry[str], now: float) -> bool:
    parts = owner.split("-")
    try:
        age = now - entry.stat(follow_symlinks=False).st_mtime
    except OSError:
        return False
    if len(parts) >= 2 and parts[0] == _host and parts[1].isdigit():
        pid = int(parts[1])
        if pid == os.getpid():
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except OSError:  # alive, owned by another user
            return False
        return False
    return age > STALE_SECONDS


__all__ = [
    "ENV",
    "audit_folder",
    "build_prefix",
    "cache_root",
    "clean_stale",
    "configured_root",
    "decode_record",
    "discard",
    "distrust",
    "encode_record",
    "fall_back",
    "file_digest",
    "folder",
    "foreign",
    "make_private",
    "read_private",
    "read_record",
    "read_text_record",
    "reject_foreign",
    "replace_into",
    "report_damage",
    "seal_artifact",
    "staging_path",
    "trust_problem",
    "verify_artifact",
    "write_atomically",
    "write_record",
]
