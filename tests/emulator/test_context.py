"""The emulator's context switch (runtime/context.h) on this machine's architecture.

Builds `runtime/context.cpp` the way the emulator builds kernel code (no system headers, no
exceptions, no RTTI, warnings as errors) together with the C++ test program
`test_context_fibers.cpp`, runs it and reads its report. The same program runs on aarch64 under
qemu in `test_aarch64.py`.
"""

from __future__ import annotations

import platform
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

import triton_metal.backends.emulator as emulator
from triton_metal.backends.emulator.toolchain import find_compiler

HERE = Path(__file__).resolve().parent
RUNTIME_DIR = Path(emulator.__file__).resolve().parent / "runtime"
TEST_PROGRAM = HERE / "test_context_fibers.cpp"
STRICT_FLAGS = ["-std=c++17", "-nostdinc", "-fno-exceptions", "-fno-rtti", "-Wall", "-Wextra", "-Werror"]
EXPECTED_CHECKS = ("pingpong", "callee_saved", "fp_control", "alignment", "stress")


@dataclass(frozen=True)
class Toolchain:
    """A C++ compiler plus how to run what it builds (a prefix such as qemu, or nothing)."""

    compiler: str
    run_prefix: tuple[str, ...] = ()
    target_flags: tuple[str, ...] = ()


def build_fiber_test(toolchain: Toolchain, out_dir: Path, opt: str) -> Path:
    """Compile context.cpp strictly and link the fiber test program; return the executable."""
    obj = out_dir / f"context{opt}.o"
    exe = out_dir / f"fibers{opt}"
    flags = [*toolchain.target_flags, opt, "-g"]
    compile_cmd = [toolchain.compiler, *flags, *STRICT_FLAGS, "-c", str(RUNTIME_DIR / "context.cpp"), "-o", str(obj)]
    link_cmd = [toolchain.compiler, *flags, "-std=c++17", "-Wall", "-Wextra", "-Werror", f"-I{RUNTIME_DIR}",
                str(TEST_PROGRAM), str(obj), "-o", str(exe)]
    for cmd in (compile_cmd, link_cmd):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stdout}{done.stderr}"
    return exe


def run_fiber_test(toolchain: Toolchain, exe: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*toolchain.run_prefix, str(exe), *args], capture_output=True, text=True, timeout=300)


def assert_all_checks_pass(done: subprocess.CompletedProcess[str]) -> None:
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    for name in EXPECTED_CHECKS:
        assert re.search(rf"^ok {name}\b", done.stdout, re.MULTILINE), report
    assert done.stdout.rstrip().endswith("ALL OK"), report


def machine() -> str:
    """This machine's architecture as the context switch names it (macOS says arm64)."""
    name = platform.machine().lower()
    return {"arm64": "aarch64", "amd64": "x86_64"}.get(name, name)


def assert_returning_entry_traps(done: subprocess.CompletedProcess[str], under_qemu: bool) -> None:
    """An entry that returns must stop the program (ud2 / brk), never fall into the caller."""
    assert "returned" not in done.stdout
    trap = {"x86_64": signal.SIGILL, "aarch64": signal.SIGTRAP}
    if under_qemu:
        # qemu-user re-raises the guest's signal on itself: the same signal, seen by the shell.
        assert done.returncode in (-signal.SIGTRAP, 128 + signal.SIGTRAP), done.stderr
    else:
        assert done.returncode == -trap[machine()], done.stderr


def parse_switch_ns(done: subprocess.CompletedProcess[str]) -> tuple[float, float]:
    match = re.search(r"^switch_ns ([0-9.]+) ([0-9.]+)$", done.stdout, re.MULTILINE)
    assert match, done.stdout + done.stderr
    return float(match.group(1)), float(match.group(2))


needs_native = pytest.mark.skipif(
    machine() not in ("x86_64", "aarch64"),
    reason=f"the context switch has no implementation for {platform.machine()}",
)

def native() -> Toolchain:
    """The C++ compiler the emulator itself uses ($CXX, else g++, else clang++)."""
    return Toolchain(find_compiler().path)



@needs_native
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_fibers_native(tmp_path: Path, opt: str) -> None:
    exe = build_fiber_test(native(), tmp_path, opt)
    assert_all_checks_pass(run_fiber_test(native(), exe))


HARDENING_FLAGS = {"x86_64": "-fcf-protection=full", "aarch64": "-mbranch-protection=standard"}


@needs_native
def test_fibers_branch_protection(tmp_path: Path) -> None:
    """Built as hardened distributions build (ENDBR64 / BTI landing pads in the switch)."""
    hardened = Toolchain(native().compiler, target_flags=(HARDENING_FLAGS[machine()],))
    exe = build_fiber_test(hardened, tmp_path, "-O2")
    assert_all_checks_pass(run_fiber_test(hardened, exe))


@needs_native
def test_returning_entry_traps(tmp_path: Path) -> None:
    exe = build_fiber_test(native(), tmp_path, "-O2")
    assert_returning_entry_traps(run_fiber_test(native(), exe, "return"), under_qemu=False)


@needs_native
@pytest.mark.skipif(shutil.which("clang++") is None, reason="clang++ is not installed (apt-get install clang)")
def test_fibers_clang(tmp_path: Path) -> None:
    clang = Toolchain("clang++")
    exe = build_fiber_test(clang, tmp_path, "-O2")
    assert_all_checks_pass(run_fiber_test(clang, exe))


@needs_native
def test_switch_cost(tmp_path: Path) -> None:
    """One switch should cost tens of nanoseconds; the bound is loose for shared CI machines."""
    exe = build_fiber_test(native(), tmp_path, "-O2")
    fast, slow = parse_switch_ns(run_fiber_test(native(), exe, "bench", "1000000"))
    print(f"context switch: {fast:.1f} ns (same FP mode), {slow:.1f} ns (FP mode reloaded)")
    assert 0 < fast < 150
    assert 0 < slow < 300
