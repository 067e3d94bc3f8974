"""The compiler hash's memo: a fresh process stats the compiler's files instead of reading them,
and any edit (even one that puts the modification time back) gives a new hash."""

from __future__ import annotations

import hashlib
import os
import time

import pytest

from triton_metal.runtime import compiler


def _files(folder):
    return lambda: sorted((str(p), p.stat()) for p in folder.iterdir() if p.suffix == ".py")


def _expected(folder) -> str:
    digest = hashlib.sha256()
    for p in sorted(folder.iterdir()):
        if p.suffix == ".py":
            digest.update(p.name.encode() + b"\0" + p.read_bytes())
    return digest.hexdigest()


@pytest.fixture
def sources(tmp_path, monkeypatch):
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "a.py").write_text("x = 1\n")
    (folder / "b.py").write_text("y = 2\n")
    monkeypatch.setattr(compiler, "_compiler_files", _files(folder))
    return folder


def test_settled_files_are_looked_up_by_stamp(sources, tmp_path, monkeypatch):
    monkeypatch.setattr(compiler, "RACY_NS", -1)  # every file counts as written long ago
    memo = tmp_path / "memo"
    first = compiler._compute_compiler_hash(memo)
    assert first == _expected(sources)
    assert len(list(memo.iterdir())) == 1
    # The memo answers without reading the sources.
    real_open = open

    def no_source_reads(path, *args, **kwargs):
        assert not str(path).startswith(str(sources)), f"read {path}"
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", no_source_reads)
    assert compiler._compute_compiler_hash(memo) == first


def test_edit_with_restored_mtime_changes_the_hash(sources, tmp_path, monkeypatch):
    monkeypatch.setattr(compiler, "RACY_NS", -1)
    memo = tmp_path / "memo"
    first = compiler._compute_compiler_hash(memo)
    a = sources / "a.py"
    before = a.stat()
    time.sleep(0.02)  # past the file-time tick, so the change time moves
    a.write_text("x = 3\n")  # same size
    os.utime(a, ns=(before.st_atime_ns, before.st_mtime_ns))
    second = compiler._compute_compiler_hash(memo)
    assert second != first
    assert second == _expected(sources)


def test_recently_changed_files_are_always_read(sources, tmp_path):
    memo = tmp_path / "memo"
    first = compiler._compute_compiler_hash(memo)  # files just written: inside the racy window
    assert first == _expected(sources)
    assert not memo.exists() or not list(memo.iterdir())
    (sources / "a.py").write_text("x = 4\n")  # perhaps within the same tick: still seen
    assert compiler._compute_compiler_hash(memo) == _expected(sources) != first
