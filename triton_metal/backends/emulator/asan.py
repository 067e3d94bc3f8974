"""AddressSanitizer mode (`TRITON_METAL_EMULATOR_ASAN=1`).

ASan's runtime must be loaded before anything else in a process, which a running Python cannot
arrange, so an ASan build of a kernel is an executable: `run` writes the buffers to a file, runs
it, and reads the outputs back (layout in `runtime/standalone_main.cpp`). Each buffer is its own
heap block there and threadgroup variables are surrounded by poisoned red zones, so reads and writes
past the end of a device or threadgroup array are reported. The report becomes a `KernelFault`
naming the kernel line of the bad access (from the `#line` mapping and debug information).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from triton_metal.backends.emulator.standalone import read_buffers, write_buffers

_STATUS_FAULT = 1
_WARNED_PRINTS: set[str] = set()


def warn_prints_dropped(kernel: str) -> None:
    """An ASan run collects no `tl.device_print` output (the records stay in the executable):
    said once per kernel."""
    if kernel in _WARNED_PRINTS:
        return
    _WARNED_PRINTS.add(kernel)
    warnings.warn(
        f"kernel '{kernel}': tl.device_print prints nothing in ASan mode "
        "(TRITON_METAL_EMULATOR_ASAN=1); run without it to see the output",
        RuntimeWarning,
        stacklevel=4,
    )


def run(
    executable: Path,
    buffers: Sequence[np.ndarray],
    writeback: Sequence[bool],
    grid: tuple[int, int, int],
    tpt: tuple[int, int, int],
    watchdog: float,
    workers: int,
) -> tuple[int, str]:
    """Run an ASan kernel executable; returns (status, message) like the in-process launch."""
    with tempfile.TemporaryDirectory(prefix="tm-asan-") as tmp:
        src = os.path.join(tmp, "in.bin")
        dst = os.path.join(tmp, "out.bin")
        write_buffers(src, buffers, writeback, grid, tpt, watchdog, workers)
        env = dict(os.environ)
        # Report the first error and stop; keep fiber stacks from tripping the stack checks.
        env["ASAN_OPTIONS"] = "detect_leaks=0:halt_on_error=1:detect_stack_use_after_return=0"
        proc = subprocess.run([str(executable), src, dst], capture_output=True, text=True, env=env)
        if proc.returncode == 0:
            read_buffers(dst, buffers, writeback)
            return 0, ""
        marker = re.search(r"TM-RUNTIME-ERROR (\d+)\n(.*)", proc.stderr, re.S)
        if marker:
            return int(marker.group(1)), marker.group(2).strip()
        return _STATUS_FAULT, summarize(proc.stderr, proc.returncode)


def summarize(report: str, returncode: int) -> str:
    """The ASan report cut down to what went wrong and the kernel line where it happened."""
    kind = re.search(r"ERROR: AddressSanitizer: ([\w-]+)", report)
    access = re.search(r"^(READ|WRITE) of size (\d+)", report, re.M)
    frame = re.search(r"#\d+ 0x[0-9a-f]+ in .*? ([^\s]+\.metal):(\d+)(?::(\d+))?", report)
    if kind is None:
        tail = "\n".join(report.strip().splitlines()[-20:])
        return f"the ASan kernel process failed with exit status {returncode}:\n{tail}"
    parts = [f"AddressSanitizer: {kind.group(1)}"]
    if access:
        parts.append(f"({access.group(1).lower()} of {access.group(2)} bytes)")
    if frame:
        parts.append(f"at {os.path.basename(frame.group(1))}:{frame.group(2)}")
    where = ""
    if "threadgroup" in report or "use-after-poison" in kind.group(1):
        where = " (threadgroup memory)"
    details = "\n".join(report.strip().splitlines()[:30])
    return " ".join(parts) + where + "\n" + details
