"""The Apple GPU a Metal launch runs on, from MLX's device information (mlx_api.md section 4).

`chip_info(mx=None) -> ChipInfo`: `architecture` (`applegpu_g15s`), `device_name`
(`Apple M3 Max`), the generation (two digits before the tier letter: 13 = M1, 14 = M2, 15 = M3,
16 = M4, 17 = M5) and the tier letter. The limits Metal does not report through MLX are the
fixed values of every Apple GPU family MLX runs on: 32 KiB of threadgroup memory, 1024 threads
per threadgroup, SIMD width 32. Without Metal (MLX's CPU build) the architecture is the host's
(`x86_64`) and the generation is None.
"""

from __future__ import annotations

import functools
import plistlib
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

THREADGROUP_MEMORY_BYTES = 32 * 1024
MAX_THREADS_PER_THREADGROUP = 1024
SIMD_WIDTH = 32

_ARCH = re.compile(r"^applegpu_g(\d+)([a-z])$")
_MAC_CHIPS = {13: "M1", 14: "M2", 15: "M3", 16: "M4", 17: "M5"}


@dataclass(frozen=True)
class ChipInfo:
    architecture: str
    device_name: str
    generation: int | None
    tier: str | None
    threadgroup_memory_bytes: int = THREADGROUP_MEMORY_BYTES
    max_threads_per_threadgroup: int = MAX_THREADS_PER_THREADGROUP
    simd_width: int = SIMD_WIDTH

    @property
    def family(self) -> str | None:
        """"M3" for generation 15 (Mac chips; phone tiers number differently)."""
        if self.generation is None or self.tier == "p":
            return None
        return _MAC_CHIPS.get(self.generation)

    @property
    def key(self) -> str:
        """The chip as tuning results are filed: architecture and device name."""
        return f"{self.architecture}|{self.device_name}"


def parse_architecture(architecture: str) -> tuple[int | None, str | None]:
    """`applegpu_g15s` -> (15, "s"); anything else -> (None, None)."""
    m = _ARCH.match(architecture)
    if m is None:
        return None, None
    return int(m.group(1)), m.group(2)


def device_info(mx: Any) -> dict[str, Any]:
    """`mx.device_info(mx.gpu)` (MLX 0.30.4+), else the deprecated `mx.metal.device_info()`."""
    getter = getattr(mx, "device_info", None)
    if getter is not None:
        try:
            return dict(getter(mx.gpu))
        except (TypeError, ValueError, RuntimeError, AttributeError):
            try:
                return dict(getter())
            except (TypeError, ValueError, RuntimeError):
                pass
    metal = getattr(mx, "metal", None)
    if metal is not None and hasattr(metal, "device_info"):
        return dict(metal.device_info())
    return {}


def chip_info(mx: Any = None) -> ChipInfo:
    if mx is None:
        import mlx.core as mx
    info = device_info(mx)
    architecture = str(info.get("architecture", "unknown"))
    generation, tier = parse_architecture(architecture)
    return ChipInfo(architecture, str(info.get("device_name", "unknown")), generation, tier)


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
