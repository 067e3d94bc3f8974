"""`TRITON_METAL_TARGET`: parsing, the Mac default, the specialization key, dumps, capabilities."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.codegen.target import DEFAULT_TARGET, Target, all_targets, parse_target, target_of_chip
from triton_metal.errors import LaunchError
from triton_metal.runtime.target import active_target, machine_target, macos_release
from triton_metal.tools.hardware import get_hardware_capabilities


@triton.jit
def copy_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2.0)


@pytest.mark.parametrize("text, family, msl", [
    ("apple7:3.1", 7, (3, 1)), ("apple9:3.2", 9, (3, 2)), ("apple10:4.0", 10, (4, 0)), (" Apple8:3.2 ", 8, (3, 2)),
])
def test_parse(text: str, family: int, msl: tuple[int, int]):
    target = parse_target(text)
    assert (target.family, target.msl) == (family, msl)
    assert str(target) == text.strip().lower()
    assert target.has_tensor_ops == (msl >= (4, 0))
    assert target.metal_version == msl[0] * 100 + msl[1] * 10


@pytest.mark.parametrize("text", ["apple9", "apple6:3.1", "apple9:2.4", "m3:3.2", "apple9:3", "apple10:3.2", ""])
def test_bad_targets_list_the_valid_ones(text: str):
    with pytest.raises(ValueError) as info:
        parse_target(text)
    assert "valid targets: apple7:3.1, apple7:3.2, apple7:4.0" in str(info.value)
    assert "apple10:4.0" in str(info.value) and "apple10:3.2" not in str(info.value).split("valid targets:")[1]


def test_every_valid_target_parses_back():
    assert len(all_targets()) == 10
    for target in all_targets():
        assert parse_target(str(target)) == target


@pytest.mark.parametrize("generation, macos, expected", [
    (13, (14, 0), "apple7:3.1"), (14, (15, 5), "apple8:3.2"), (15, (15, 0), "apple9:3.2"),
    (16, (26, 2), "apple9:4.0"), (17, (26, 2), "apple10:4.0"), (17, (26, 4), "apple10:4.0"),
    (18, (27, 0), "apple10:4.0"), (None, None, str(DEFAULT_TARGET)),
    # macOS 26.0 and 26.1 (or a release not found): MSL 3.2, and an M5 takes the newest family
    # that has it
    (17, None, "apple9:3.2"),
    (16, (26, 1), "apple9:3.2"), (17, (26, 0), "apple9:3.2"), (17, (26, 1), "apple9:3.2"),
])
def test_mac_default_from_chip_and_os(generation: int | None, macos: tuple[int, int] | None, expected: str):
    assert str(target_of_chip(generation, macos)) == expected


@pytest.mark.parametrize("text, release", [
    ("26.1", (26, 1)), ("15", (15, 0)), ("26.2.1", (26, 2)), ("14.7.4", (14, 7)), ("", None),
])
def test_macos_release_parses_mac_ver(text: str, release: tuple[int, int] | None):
    assert macos_release(text) == release


def test_environment_selects_the_target_and_refuses_bad_values(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("TRITON_METAL_TARGET", raising=False)
    assert active_target() == machine_target() == get_hardware_capabilities().target
    if sys.platform != "darwin":
        assert machine_target() == str(DEFAULT_TARGET)  # no Metal here: the documented default
    monkeypatch.setenv("TRITON_METAL_TARGET", "apple10:4.0")
    assert active_target() == "apple10:4.0"
    assert get_hardware_capabilities().target == "apple10:4.0"
    monkeypatch.setenv("TRITON_METAL_TARGET", "apple11:4.0")
    with pytest.raises(LaunchError, match="valid targets: .*apple9:3.2"):
        copy_kernel[(1,)](np.ones(32, np.float32), np.zeros(32, np.float32), BLOCK=32)


def test_target_is_part_of_the_key_and_the_dump(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("TRITON_METAL_DUMP_DIR", str(tmp_path))
    x = np.arange(32, dtype=np.float32)
    seen: dict[str, object] = {}
    for text in ("apple7:3.1", "apple10:4.0", "apple7:3.1"):
        monkeypatch.setenv("TRITON_METAL_TARGET", text)
        out = np.zeros(32, np.float32)
        copy_kernel[(1,)](x, out, BLOCK=32)
        np.testing.assert_array_equal(out, x * 2)
        key = copy_kernel.specialization(x, out, BLOCK=32)
        assert key.target == text
        seen.setdefault(text, copy_kernel.cache.get(key))
    first, second = (seen[t] for t in ("apple7:3.1", "apple10:4.0"))
    assert first is not None and second is not None and first is not second
    for compiled, text in ((first, "apple7:3.1"), (second, "apple10:4.0")):
        assert compiled.msl.metadata["target"] == text  # type: ignore[attr-defined]
        launch = json.loads((tmp_path / compiled.msl.name / "launch.json").read_text())  # type: ignore[attr-defined]
        assert launch["target"] == text and text in launch["specialization"]


def test_interpreter_checks_under_the_target(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    monkeypatch.setenv("TRITON_METAL_TARGET", "apple8:4.0")
    x = np.arange(32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    copy_kernel[(1,)](x, out, BLOCK=32)
    np.testing.assert_array_equal(out, x * 2)
    assert Target(8, (4, 0)) == parse_target(active_target())


@triton.jit
def locked_add_kernel(acc_ptr, lock_ptr, x_ptr, N: tl.constexpr):
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + tl.program_id(0) * N + cols)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:  # acq_rel: the lock orders the partial sum
        pass
    tl.store(acc_ptr + cols, tl.load(acc_ptr + cols) + x)
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr, 0)


@pytest.mark.parametrize("interpret", ["", "1"], ids=["emulator", "interpreter"])
def test_a_target_without_a_fence_warns_on_every_machine(monkeypatch: pytest.MonkeyPatch, interpret: str):
    # the fence and the warning follow TRITON_METAL_TARGET, not the machine's macOS: on Linux too
    import warnings

    monkeypatch.setenv("TRITON_METAL_INTERPRET", interpret)
    x = np.arange(4 * 16, dtype=np.float32).reshape(4, 16)
    for target, warns in (("apple7:3.1", True), ("apple7:3.2", False), ("apple9:4.0", False)):
        monkeypatch.setenv("TRITON_METAL_TARGET", target)
        acc, lock = np.zeros(16, np.float32), np.zeros(1, np.int32)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            locked_add_kernel[(4,)](acc, lock, x, N=16)
        messages = [str(w.message) for w in seen if issubclass(w.category, RuntimeWarning)]
        assert bool(messages) == warns, (target, messages)
        if warns:
            assert f"target {target} (MSL 3.1) has no device-scope fence" in messages[0]
        np.testing.assert_array_equal(acc, x.sum(axis=0))  # the CPU orders it regardless
