"""The emulator's warm path: cached artifacts are found by stat and hash alone, and a changed
compiler or header never reuses an artifact."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from triton_metal.backends.emulator import toolchain

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh_toolchain(tmp_path, monkeypatch):
    """An empty cache directory and no per-process memo (as a new process would start)."""
    monkeypatch.setenv("TRITON_METAL_CACHE_DIR", str(tmp_path / "cache"))
    toolchain.find_compiler.cache_clear()
    monkeypatch.setattr(toolchain, "_digests", {})
    yield tmp_path
    toolchain.find_compiler.cache_clear()


def _fake_compiler(path: Path, version: str) -> None:
    """A 'compiler' answering --version and copying its one input to -o (argv: -o OUT IN)."""
    path.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then echo "{version}"; exit 0; fi\ncp "$3" "$2"\n')
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def _age(monkeypatch) -> None:
    """Treat every file as settled (written long ago), so stamps are trusted at once."""
    monkeypatch.setattr(toolchain, "RACY_SECONDS", -1.0)


def _count_runs(monkeypatch) -> list[list[str]]:
    runs: list[list[str]] = []
    real_run = subprocess.run

    def recording(argv, *args, **kwargs):
        runs.append(list(argv))
        return real_run(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", recording)
    return runs


def test_compiler_identity_is_asked_once_per_compiler(fresh_toolchain, monkeypatch):
    _age(monkeypatch)
    cxx = fresh_toolchain / "fakecxx"
    _fake_compiler(cxx, "fakecxx 1.0")
    monkeypatch.setenv("CXX", str(cxx))
    runs = _count_runs(monkeypatch)
    first = toolchain.find_compiler()
    assert first.identity == f"fakecxx 1.0 ({cxx})" and not first.is_clang
    assert runs == [[str(cxx), "--version"]]
    toolchain.find_compiler.cache_clear()  # a new process: the answer comes from the disk memo
    assert toolchain.find_compiler() == first
    assert len(runs) == 1


def test_replaced_compiler_is_asked_again_and_keys_change(fresh_toolchain, monkeypatch):
    _age(monkeypatch)
    cxx = fresh_toolchain / "fakecxx"
    _fake_compiler(cxx, "fakecxx 1.0")
    monkeypatch.setenv("CXX", str(cxx))
    command = ["-o", "{out}", "in.txt"]
    one = toolchain.build("probe", ".txt", {"in.txt": "data"}, command)
    assert one.read_text() == "data"
    assert toolchain.build("probe", ".txt", {"in.txt": "data"}, command) == one
    # Same version string, same size, modification time put back: the change time still moves.
    before = cxx.stat()
    time.sleep(0.02)
    _fake_compiler(cxx, "fakecxx 1.0")
    os.utime(cxx, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert cxx.stat().st_size == before.st_size
    toolchain.find_compiler.cache_clear()
    runs = _count_runs(monkeypatch)
    other = toolchain.build("probe", ".txt", {"in.txt": "data"}, command)
    assert other != one
    assert [str(cxx), "--version"] in runs


def test_files_digest_follows_contents(fresh_toolchain, monkeypatch):
    _age(monkeypatch)
    f = fresh_toolchain / "h.h"
    f.write_text("int a;\n")
    g = fresh_toolchain / "g.h"
    g.write_text("int b;\n")
    first = toolchain.files_digest([f, g])
    assert first == toolchain.files_digest([f, g])
    assert first != toolchain.files_digest([g, f])  # order is part of the set
    # Known stamps are not read again: from the in-process memo, then from the disk memo.
    monkeypatch.setattr(toolchain, "_digests", {})
    with monkeypatch.context() as m:
        m.setattr(Path, "read_bytes", lambda self: pytest.fail(f"read {self}"))
        assert toolchain.files_digest([f, g]) == first
    # An edit of the same size with the modification time put back changes the digest.
    before = f.stat()
    time.sleep(0.02)
    f.write_text("int c;\n")
    os.utime(f, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert toolchain.files_digest([f, g]) != first


def test_recent_files_are_read_not_remembered(fresh_toolchain):
    f = fresh_toolchain / "h.h"
    f.write_text("int a;\n")
    digest = toolchain.files_digest([f])  # just written: within RACY_SECONDS
    assert not list((fresh_toolchain / "cache" / "emulator").glob("files-*"))
    f.write_text("int b;\n")  # perhaps within the same file-time tick: must still be seen
    assert toolchain.files_digest([f]) != digest


_WARM = textwrap.dedent(
    """
    import subprocess, sys
    import numpy as np
    sys.path.insert(0, {root!r})
    from examples.vector_add import add_kernel
    import triton_metal.backends.emulator  # imports before the guard: only the launch is checked
    if {guard}:
        def refuse(*args, **kwargs):
            raise AssertionError(f"warm launch started a process: {{args}}")
        subprocess.Popen = refuse
    x = np.arange(3000, dtype=np.float32)
    out = np.zeros_like(x)
    add_kernel[(3,)](x, x, out, 3000, BLOCK_SIZE=1024)
    assert (out == 2 * x).all()
    (compiled,) = add_kernel.cache.entries.values()
    from triton_metal.runtime.compiler import compiler_hash
    print(compiled.origin, compiler_hash())
    """
)


def test_warm_first_launch_runs_no_process(tmp_path):
    """A fresh process with a warm cache neither compiles nor asks the compiler its version."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_METAL_INTERPRET"}
    env["TRITON_METAL_CACHE_DIR"] = str(tmp_path)
    env.pop("TRITON_METAL_BACKEND", None)
    cold = subprocess.run([sys.executable, "-c", _WARM.format(root=str(ROOT), guard=False)],
                          env=env, capture_output=True, text=True)
    assert cold.returncode == 0, cold.stderr
    cold_hash = cold.stdout.split()[1]
    # Stamps of just-written files are not trusted for RACY_SECONDS: wait until they settle.
    time.sleep(toolchain.RACY_SECONDS + 0.1)
    for _ in range(2):  # the second run also finds the digests the first one remembered
        warm = subprocess.run([sys.executable, "-c", _WARM.format(root=str(ROOT), guard=True)],
                              env=env, capture_output=True, text=True)
        assert warm.returncode == 0, warm.stderr
        origin, warm_hash = warm.stdout.split()
        # From the disk cache, unless the compiler's sources were edited meanwhile (a new
        # compiler hash): then the variant is compiled again, to the same MSL, with no process.
        assert origin == "disk" or warm_hash != cold_hash


def test_numpy_launch_after_memo_is_correct(fresh_toolchain):
    """The whole build path with an empty memo and then a warm one gives working kernels."""
    from triton_metal.backends.emulator import EmulatorKernel
    from triton_metal.backends.emulator.signature import InputSpec, OutputSpec

    spec = [InputSpec("a", "float", 1, 64)]
    body = "uint i = thread_position_in_grid.x; out[i] = a[i] * 3.0f;"
    one = EmulatorKernel.compile("triple", spec, [OutputSpec("out", "float")], body)
    toolchain.find_compiler.cache_clear()
    two = EmulatorKernel.compile("triple", spec, [OutputSpec("out", "float")], body)
    assert one.artifact == two.artifact
    a = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    two.launch([a], [out], (64, 1, 1), (32, 1, 1))
    np.testing.assert_array_equal(out, a * 3)


def test_which_finds_what_shutil_finds(tmp_path, monkeypatch):
    import shutil

    exe = tmp_path / "bin" / "fakecxx"
    exe.parent.mkdir()
    _fake_compiler(exe, "fakecxx 1.0")
    plain = tmp_path / "bin" / "notexec"
    plain.write_text("")
    monkeypatch.setenv("PATH", os.pathsep.join([str(tmp_path / "missing"), str(exe.parent), os.environ["PATH"]]))
    for name in ("fakecxx", "notexec", "bin", "g++", "no-such-compiler", str(exe), str(plain), "/nonexistent/g++"):
        assert toolchain._which(name) == shutil.which(name), name
