"""The emulator's native code on aarch64 (Linux, under qemu) and for Apple targets.

Users run the emulator on aarch64 Linux CI machines and on arm64 Macs, so the context switch is
cross-compiled with `aarch64-linux-gnu-g++` and its test program runs under `qemu-aarch64`; the
Apple variants (leading-underscore symbols, Mach-O directives) are assembled with clang and their
symbols checked. Everything here is a standalone program: qemu-user cannot load an aarch64 shared
object into this (x86-64) Python.

Tools come from `.ci/install-cross.sh`. Where one is missing the test is skipped with the reason,
or fails when `TRITON_METAL_REQUIRE_CROSS=1` (set in CI, where the tools must be present).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

try:  # imported as part of a test package or as a top-level module, depending on the layout
    from .test_context import (
        RUNTIME_DIR,
        STRICT_FLAGS,
        Toolchain,
        assert_all_checks_pass,
        assert_returning_entry_traps,
        build_fiber_test,
        machine,
        parse_switch_ns,
        run_fiber_test,
    )
except ImportError:
    from test_context import (  # type: ignore[no-redef]
        RUNTIME_DIR,
        STRICT_FLAGS,
        Toolchain,
        assert_all_checks_pass,
        assert_returning_entry_traps,
        build_fiber_test,
        machine,
        parse_switch_ns,
        run_fiber_test,
    )

CROSS_GXX = "aarch64-linux-gnu-g++"
QEMU = "qemu-aarch64"
SYSROOT = Path("/usr/aarch64-linux-gnu")
REQUIRED = os.environ.get("TRITON_METAL_REQUIRE_CROSS") == "1"


def require_tools(*tools: str, sysroot: bool = False) -> None:
    """Skip (or fail under TRITON_METAL_REQUIRE_CROSS=1) naming each missing tool."""
    missing = [t for t in tools if shutil.which(t) is None]
    if sysroot and not (SYSROOT / "lib").is_dir():
        missing.append(f"{SYSROOT} (the aarch64 C library)")
    if missing:
        reason = f"missing {', '.join(missing)}: run .ci/install-cross.sh"
        if REQUIRED:
            pytest.fail(reason + " (TRITON_METAL_REQUIRE_CROSS=1)")
        pytest.skip(reason)


def qemu_toolchain() -> Toolchain:
    require_tools(CROSS_GXX, QEMU, sysroot=True)
    return Toolchain(CROSS_GXX, run_prefix=(QEMU, "-L", str(SYSROOT)))


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_fibers_aarch64_qemu(tmp_path: Path, opt: str) -> None:
    toolchain = qemu_toolchain()
    exe = build_fiber_test(toolchain, tmp_path, opt)
    done = run_fiber_test(toolchain, exe)
    assert_all_checks_pass(done)
    # On aarch64 the check covers x19-x29 and d8-d15 (System V x86-64 has no FP callee-saved).
    assert "callee_saved (11 integer, 8 floating-point registers)" in done.stdout


def test_fibers_aarch64_branch_protection_qemu(tmp_path: Path) -> None:
    """With BTI and return-address signing, as hardened aarch64 distributions build."""
    plain = qemu_toolchain()
    toolchain = Toolchain(plain.compiler, plain.run_prefix, ("-mbranch-protection=standard",))
    exe = build_fiber_test(toolchain, tmp_path, "-O2")
    assert_all_checks_pass(run_fiber_test(toolchain, exe))


def test_returning_entry_traps_aarch64_qemu(tmp_path: Path) -> None:
    toolchain = qemu_toolchain()
    exe = build_fiber_test(toolchain, tmp_path, "-O2")
    assert_returning_entry_traps(run_fiber_test(toolchain, exe, "return"), under_qemu=True)


def test_switch_runs_aarch64_qemu(tmp_path: Path) -> None:
    """The benchmark mode works on aarch64 (qemu's timings say nothing about real hardware)."""
    toolchain = qemu_toolchain()
    exe = build_fiber_test(toolchain, tmp_path, "-O2")
    fast, slow = parse_switch_ns(run_fiber_test(toolchain, exe, "bench", "100000"))
    print(f"context switch under qemu-aarch64: {fast:.1f} ns (same FPCR), {slow:.1f} ns (FPCR written)")
    assert fast > 0 and slow > 0


@pytest.mark.skipif(machine() == "aarch64", reason="this machine is aarch64: test_context.py runs it natively")
def test_fibers_aarch64_clang_qemu(tmp_path: Path) -> None:
    require_tools("clang++", QEMU, sysroot=True)
    toolchain = Toolchain(
        "clang++", run_prefix=(QEMU, "-L", str(SYSROOT)), target_flags=("--target=aarch64-linux-gnu",)
    )
    exe = build_fiber_test(toolchain, tmp_path, "-O2")
    assert_all_checks_pass(run_fiber_test(toolchain, exe))


@pytest.mark.parametrize("target", ["arm64-apple-macos11", "x86_64-apple-macos11"])
def test_apple_object_symbols(tmp_path: Path, target: str) -> None:
    """On Mach-O the switch is `_tm_context_switch` and the directives are Apple's."""
    require_tools("clang++", "llvm-nm")
    obj = tmp_path / "context.o"
    cmd = ["clang++", f"--target={target}", "-nostdinc++", *STRICT_FLAGS, "-O2", "-c",
           str(RUNTIME_DIR / "context.cpp"), "-o", str(obj)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert obj.read_bytes()[:4] == bytes.fromhex("cffaedfe"), "not a 64-bit Mach-O object"
    nm = subprocess.run(["llvm-nm", str(obj)], capture_output=True, text=True, timeout=60)
    symbols = {line.split()[-1]: line.split()[-2] for line in nm.stdout.splitlines() if line.strip()}
    assert symbols.get("_tm_context_switch") == "T", nm.stdout
    assert symbols.get("__Z15tm_context_makeP10tm_contextPvmPFvS1_ES1_") == "T", nm.stdout
    assert "_tm_context_trampoline" in symbols, nm.stdout
    assert "tm_context_switch" not in symbols, nm.stdout
