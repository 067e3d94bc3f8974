"""Fault injection into the disk cache: every kind of cache file, damaged in every way the
reliability audit found (truncated, garbled, swapped with another kernel's, empty, replaced by a
directory, edited, JSON of the wrong type, bytes that are not UTF-8), is healed by the next
process: its kernels compute the right values, and the cache it leaves passes its checks.

One damage per round, applied to every kind of file at once, then one fresh process; rounds
whose damage only fits text files leave the binaries alone, so the whole file runs in a few
compiles. `FIGURES` collects faults injected and healed (printed by the last test)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from reliability_support import run_child, seeded

# kind of cache file -> (glob under the cache root, its "other" for swaps)
ARTIFACTS: dict[str, tuple[str, str]] = {
    "MSL entry": ("msl/*.json", "msl/*.json"),
    "compiler-hash memo": ("msl/compiler-*.txt", "emulator/files-*.txt"),
    "kernel library": ("emulator/kernel-*.so", "emulator/kernel-*.so"),
    "kernel checksum record": ("emulator/kernel-*.so.sum", "emulator/kernel-*.so.sum"),
    "runtime library": ("emulator/libtmrt-*.so", "emulator/kernel-*.so"),
    "precompiled header": ("emulator/prelude-*.h.gch", "emulator/kernel-*.so"),
    "prelude header": ("emulator/prelude-*.h", "emulator/compiler-*.txt"),
    "compiler memo": ("emulator/compiler-*.txt", "emulator/files-*.txt"),
    "headers memo": ("emulator/files-*.txt", "msl/compiler-*.txt"),
}
TEXT = {"MSL entry", "compiler-hash memo", "kernel checksum record", "prelude header",
        "compiler memo", "headers memo"}


def _truncate(path: Path, other: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garble(path: Path, other: Path) -> None:
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    for i in range(max(0, middle - 32), min(len(data), middle + 32)):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


def _swap(path: Path, other: Path) -> None:
    shutil.copyfile(other, path)


def _empty(path: Path, other: Path) -> None:
    path.write_bytes(b"")


def _directory(path: Path, other: Path) -> None:
    path.unlink()
    path.mkdir()
    (path / "inside").write_text("x")


def _edit(path: Path, other: Path) -> None:
    """A change that keeps the file's size and form (one digit, or the last byte)."""
    data = bytearray(path.read_bytes())
    digits = [i for i, b in enumerate(data) if 0x31 <= b <= 0x38]
    i = digits[len(digits) // 2] if digits else len(data) - 1
    data[i] = data[i] + 1 if digits else data[i] ^ 1
    path.write_bytes(bytes(data))


def _not_utf8(path: Path, other: Path) -> None:
    path.write_bytes(b"\xff\xfe\x80 not utf-8 \xc3\x28")


def _json(text: str) -> Callable[[Path, Path], None]:
    def write(path: Path, other: Path) -> None:
        path.write_text(text)

    return write


DAMAGES: dict[str, tuple[Callable[[Path, Path], None], bool]] = {
    # name -> (damage, whether it applies to binaries too)
    "truncated": (_truncate, True),
    "garbled": (_garble, True),
    "swapped with another's": (_swap, True),
    "empty": (_empty, True),
    "a directory": (_directory, True),
    "edited": (_edit, True),
    "not UTF-8": (_not_utf8, False),
    "JSON []": (_json("[]"), False),
    "JSON null": (_json("null"), False),
    "JSON number": (_json("42"), False),
    "JSON string": (_json('"entry"'), False),
    "JSON object of other fields": (_json('{"format": 2, "kernel": {}}'), False),
}

FIGURES = {"faults injected": 0, "healed": 0}
DEBUG = {"TRITON_METAL_DEBUG": "1"}
"""The rounds log each repair; the debug level is part of a kernel's specialization (it compiles
device asserts in), so the warm cache is made under it too."""


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory: pytest.TempPathFactory, seed_cache: Path) -> Path:
    """A cache in which both kernels of the child are compiled, and nothing else (so every
    damaged file is one the next process needs). Rounds damage it in place (a kernel's key names
    the cache's path, so a copy elsewhere would compile anew): each round starts from the
    healthy cache the previous round's process left."""
    cache = seeded(seed_cache, tmp_path_factory.mktemp("warm"))
    result = run_child(cache, [], **DEBUG)
    assert result["ok"] and result["damaged"] == {}, result
    return cache


def _files(cache: Path) -> dict[str, list[Path]]:
    return {kind: sorted(cache.glob(pattern)) for kind, (pattern, _) in ARTIFACTS.items()}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_the_next_process_heals_every_damaged_cache_file(damage, warm_cache, tmp_path):
    cache = warm_cache
    apply, binaries = DAMAGES[damage]
    before = {p.relative_to(cache) for p in cache.rglob("*") if p.is_file()}
    damaged: list[str] = []
    for kind, (pattern, other_pattern) in ARTIFACTS.items():
        if kind not in TEXT and not binaries:
            continue
        files = sorted(cache.glob(pattern))
        others = [p for p in sorted(cache.glob(other_pattern)) if p not in files[:1]]
        assert files and others, (kind, sorted(before))
        apply(files[0], others[0])
        damaged.append(f"{kind}: {files[0].name}")
    FIGURES["faults injected"] += len(damaged)
    result = run_child(cache, [], **DEBUG)
    assert result["ok"], (damage, damaged, result["errors"], result["stderr"][-3000:])
    assert result["damaged"] == {}, (damage, result["damaged"])
    after = {p.relative_to(cache) for p in cache.rglob("*") if p.is_file()}
    assert before <= after, (damage, sorted(before - after))  # everything rebuilt in place
    assert "is damaged" in result["stderr"]  # each repair is logged at TRITON_METAL_DEBUG=1
    FIGURES["healed"] += len(damaged)


def test_a_healed_cache_compiles_nothing_more(warm_cache, tmp_path):
    cache = warm_cache
    for path in cache.glob("emulator/kernel-*.so"):
        _garble(path, path)
    healing = run_child(cache, [], **DEBUG)
    assert healing["ok"] and healing["builds"] == 2, healing  # the two kernel libraries
    again = run_child(cache, [], **DEBUG)
    assert again["ok"] and again["builds"] == 0 and again["origins"] == ["disk", "disk"], again


def test_leftovers_of_killed_compiles_are_removed(seed_cache, tmp_path):
    """A build directory and staging files of a process that died (SIGKILL during g++) go at
    the next compile; those of a live process stay."""
    cache = seeded(seed_cache, tmp_path / "cache")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    host = __import__("re").sub(r"[^A-Za-z0-9_]", "_", os.uname().nodename) or "host"
    folder = cache / "emulator"
    stale_dir = folder / f"tm-build-{host}-{dead}-abc123"
    stale_dir.mkdir()
    (stale_dir / "kernel.cpp").write_text("// half a compile")
    stale_file = folder / f".kernel-0.so.{host}-{dead}-1.tmp"
    stale_file.write_bytes(b"partial")
    live_dir = folder / f"tm-build-{host}-{os.getpid()}-live"
    live_dir.mkdir()
    result = run_child(cache, ["--new", "leftovers"])
    assert result["ok"], result
    assert not stale_dir.exists() and not stale_file.exists()
    assert live_dir.exists()


def test_threads_compiling_one_new_kernel_share_its_build(seed_cache, tmp_path):
    cache = seeded(seed_cache, tmp_path / "cache")
    result = run_child(cache, ["--new", "threads", "--threads", "8"])
    assert result["ok"], result["errors"]
    assert result["new_builds"] == 1, result  # one compile of the new kernel for eight threads


def test_an_unwritable_cache_falls_back_with_one_warning(seed_cache, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = run_child(blocker / "cache", ["--new", "fallback"], PYTHONWARNINGS="default")
    assert result["ok"], result
    assert result["root"] != str(blocker / "cache")
    warnings = [line for line in result["stderr"].splitlines() if "RuntimeWarning" in line]
    assert len(warnings) == 1 and "TRITON_METAL_CACHE_DIR" in warnings[0], result["stderr"]
    assert not Path(result["root"]).exists()  # the temporary cache is removed at exit


def test_a_cache_path_with_any_characters_works(seed_cache, tmp_path):
    cache = seeded(seed_cache, tmp_path / 'odd "quoted" dir with spaces $HOME \\ ;')
    result = run_child(cache, [])
    assert result["ok"] and result["root"] == str(cache), result


def test_figures():
    """The suite's figures (`-s` shows them) over the rounds this process ran (with xdist, each
    worker's share): every fault injected was healed."""
    print(f"\ncache faults injected: {FIGURES['faults injected']}, healed: {FIGURES['healed']}")
    assert FIGURES["healed"] == FIGURES["faults injected"]
