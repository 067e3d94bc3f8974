"""The Apple GPU as the Metal backend sees it: the chip facts (`triton_metal/chip.py`,
re-exported here), the GPU core count from `ioreg`, and the Metal Shading Language version
MLX compiles with on this macOS.
"""

from __future__ import annotations

import functools
import plistlib
import subprocess
import sys
from collections.abc import Callable
from ...chip import (  # noqa: F401 - the backend's names for the chip facts
    MAX_THREADS_PER_THREADGROUP,
    SIMD_WIDTH,
    THREADGROUP_MEMORY_BYTES,
    ChipInfo,
    chip_info,
    device_info,
    parse_architecture,
)

IOREG_COMMAND = ("ioreg", "-a", "-r", "-d", "1", "-c", "AGXAccelerator")


def _run_ioreg() -> bytes | None:
    try:
        done = subprocess.run(IOREG_COMMAND, capture_output=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def parse_gpu_core_count(plist: bytes | None) -> int | None:
    """The first `gpu-core-count` of the `ioreg -a` plist (an array of registry entries)."""
    if not plist:
        return None
    try:
        entries = plistlib.loads(plist)
    except (plistlib.InvalidFileException, ValueError, TypeError, OverflowError):
        return None
    for entry in entries if isinstance(entries, list) else [entries]:
        cores = entry.get("gpu-core-count") if isinstance(entry, dict) else None
        if isinstance(cores, int) and not isinstance(cores, bool) and cores > 0:
            return cores
    return None


@functools.lru_cache(maxsize=1)
def _cached_gpu_core_count() -> int | None:
    return parse_gpu_core_count(_run_ioreg()) if sys.platform == "darwin" else None


def gpu_core_count(read: Callable[[], bytes | None] | None = None) -> int | None:
    """The GPU's core count (module docstring); `read` stands in for running `ioreg`."""
    if read is not None:
        return parse_gpu_core_count(read())
    return _cached_gpu_core_count()
