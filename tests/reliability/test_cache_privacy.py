"""The disk cache holds shared objects the emulator loads and runs, so nothing another user could
have written into it is ever loaded (`runtime/cache_files.py`, "Private").

Each test plants a shared object whose load constructor writes a marker file, under the name and
with the checksum record of an artifact the cache would use, then makes the cache (or the file)
writable by someone else: world- or group-writable, or owned by another uid (the tests may run as
root, so `os.chown` stands in for another user). The planted library must never run: no marker,
the genuine code is compiled into a private folder instead, with one warning. A control shows
that the same plant in the user's own private cache is loaded (the marker appears), so the
checks, not the plant, are what keeps it out."""

from __future__ import annotations

import ctypes
import os
import stat
import subprocess
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from reliability_support import run_child, seeded
from triton_metal.backends.emulator import toolchain
from triton_metal.runtime import cache_files

OTHER_UID = 4321
GENUINE = 'extern "C" int tm_probe(void) { return 7; }\n'
PLANTED = r"""
#include <stdio.h>
__attribute__((constructor)) static void tm_planted(void) {
    FILE *f = fopen("@MARKER@", "w");
    if (f) { fputs("the planted library ran", f); fclose(f); }
}
extern "C" int tm_probe(void) { return 666; }
"""
COMMAND = ["-shared", "-fPIC", "-o", "{out}", "probe.cpp"]

pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid"), reason="a platform without user ids")


@pytest.fixture(autouse=True)
def _fresh_cache_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test sees a process that has not fallen back, verified or warned yet."""
    monkeypatch.setattr(cache_files, "_fallbacks", {})
    monkeypatch.setattr(cache_files, "_verified", {})
    monkeypatch.setattr(cache_files, "_warned", set())
    yield


@pytest.fixture(scope="module")
def planted_library(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a shared object that writes its marker when loaded, where the marker goes)."""
    folder = tmp_path_factory.mktemp("planted")
    marker = folder / "MARKER"
    source = folder / "planted.cpp"
    source.write_text(PLANTED.replace("@MARKER@", str(marker)))
    library = folder / "planted.so"
    compiler = toolchain.find_compiler().path
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return library, marker


def _plant(artifact: Path, library: Path) -> None:
    """Put `library` in the artifact's place with a checksum record that matches it."""
    data = library.read_bytes()
    key = artifact.name.split("-", 1)[1].split(".", 1)[0]
    cache_files.seal_artifact(artifact, key, cache_files.digest(data), len(data))
    artifact.write_bytes(data)
    os.chmod(artifact, 0o700)


def _build() -> Path:
    return toolchain.build("probe", ".so", {"probe.cpp": GENUINE}, COMMAND)


def _probe(path: Path) -> int:
    return int(ctypes.CDLL(str(path)).tm_probe())


def _planted_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, library: Path) -> Path:
    """A private cache whose probe artifact was replaced by the planted library."""
    root = tmp_path / "cache"
    monkeypatch.setenv(cache_files.ENV, str(root))
    artifact = _build()
    assert artifact.parent == root / "emulator"
    _plant(artifact, library)
    cache_files._verified.clear()
    return artifact


def _world_writable(root: Path, artifact: Path) -> None:
    os.chmod(root / "emulator", 0o777)


def _group_writable_root(root: Path, artifact: Path) -> None:
    os.chmod(root, 0o770)


def _another_owner(root: Path, artifact: Path) -> None:
    os.chown(root / "emulator", OTHER_UID, -1)


FOLDERS: dict[str, Callable[[Path, Path], None]] = {
    "world-writable folder": _world_writable,
    "group-writable root": _group_writable_root,
    "folder of another owner": _another_owner,
}


def test_new_cache_folders_are_private_whatever_the_umask(tmp_path, monkeypatch):
    monkeypatch.setenv(cache_files.ENV, str(tmp_path / "a" / "b" / "cache"))
    previous = os.umask(0)
    try:
        folder = cache_files.folder("emulator")
    finally:
        os.umask(previous)
    for path in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "cache", folder):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    assert folder == tmp_path / "a" / "b" / "cache" / "emulator"


def test_control_a_planted_library_in_a_private_cache_is_loaded(planted_library, tmp_path, monkeypatch):
    """The plant is a working attack on a cache's contents: its checksum record is valid."""
    library, marker = planted_library
    artifact = _planted_cache(tmp_path, monkeypatch, library)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _build() == artifact
    assert _probe(artifact) == 666
    assert marker.read_text() == "the planted library ran"
    marker.unlink()


@pytest.mark.parametrize("shared", list(FOLDERS))
def test_a_library_in_a_folder_others_can_write_is_never_loaded(shared, planted_library, tmp_path, monkeypatch):
    library, marker = planted_library
    artifact = _planted_cache(tmp_path, monkeypatch, library)
    root = tmp_path / "cache"
    FOLDERS[shared](root, artifact)
    with pytest.warns(RuntimeWarning, match="is not private") as caught:
        built = _build()
    assert len(caught) == 1 and str(root) in str(caught[0].message)
    assert not built.is_relative_to(root) and cache_files.in_fallback(built)
    assert stat.S_IMODE(built.parent.stat().st_mode) == 0o700
    assert _probe(built) == 7
    assert not marker.exists(), "the planted library was loaded"
    assert artifact.read_bytes() == library.read_bytes()  # another user's folder is left alone
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one warning per process
        assert _build() == built


FILES: dict[str, Callable[[Path], None]] = {
    "owned by another uid": lambda path: os.chown(path, OTHER_UID, -1),
    "world-writable": lambda path: os.chmod(path, 0o777),
    "group-writable": lambda path: os.chmod(path, 0o770),
}


@pytest.mark.parametrize("shared", list(FILES))
def test_a_library_others_can_write_is_rebuilt_not_loaded(shared, planted_library, tmp_path, monkeypatch):
    library, marker = planted_library
    artifact = _planted_cache(tmp_path, monkeypatch, library)
    FILES[shared](artifact)
    with pytest.warns(RuntimeWarning, match="it is not loaded") as caught:
        built = _build()
    assert len(caught) == 1 and str(artifact) in str(caught[0].message)
    assert built == artifact  # the folder is private: the genuine library is rebuilt in place
    info = built.stat()
    assert info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    assert _probe(built) == 7
    assert not marker.exists(), "the planted library was loaded"


def test_a_symbolic_link_in_the_cache_is_not_followed(planted_library, tmp_path, monkeypatch):
    library, marker = planted_library
    artifact = _planted_cache(tmp_path, monkeypatch, library)
    artifact.unlink()
    artifact.symlink_to(library)
    with pytest.warns(RuntimeWarning, match="symbolic link"):
        built = _build()
    assert not built.is_symlink() and _probe(built) == 7
    assert not marker.exists(), "the planted library was loaded"


def _plant_kernels(cache: Path, library: Path) -> list[Path]:
    kernels = sorted((cache / "emulator").glob("kernel-*.so"))
    for path in kernels:
        _plant(path, library)
    return kernels


@pytest.mark.parametrize("shared", ["world-writable root", "root of another owner"])
def test_kernels_launch_right_and_nothing_planted_runs(shared, seed_cache, planted_library, tmp_path):
    """A whole process: its kernels' libraries, planted in a cache others can write, are never
    loaded; the kernels are compiled privately and compute the right values."""
    library, marker = planted_library
    cache = seeded(seed_cache, tmp_path / "cache")
    assert run_child(cache, [])["ok"]
    assert len(_plant_kernels(cache, library)) == 2
    if shared == "world-writable root":
        os.chmod(cache, 0o777)
    else:
        os.chown(cache, OTHER_UID, -1)
    result = run_child(cache, [], PYTHONWARNINGS="default")
    assert result["ok"] and result["errors"] == [], result
    assert result["root"] != str(cache)
    assert not marker.exists(), "a planted kernel library was loaded"
    found = [line for line in result["stderr"].splitlines() if "RuntimeWarning" in line]
    assert len(found) == 1 and "is not private" in found[0], result["stderr"]
