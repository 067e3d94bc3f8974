"""The Apple GPU: its fixed limits, and what MLX reports about it (mlx_api.md section 4).

`chip_info(mx=None) -> ChipInfo`: `architecture` (`applegpu_g15s`), `device_name`
(`Apple M3 Max`), the generation (two digits before the tier letter: 13 = M1, 14 = M2, 15 = M3,
16 = M4, 17 = M5) and the tier letter. The limits Metal does not report through MLX are the
fixed values of every Apple GPU family MLX runs on: 32 KiB of threadgroup memory, 1024 threads
per threadgroup, SIMD width 32. Without Metal (MLX's CPU build) the architecture is the host's
(`x86_64`) and the generation is None.

These are facts about the hardware, below the runtime and the backends: the runtime (dumps,
targets, the autotuning cache, grid checks) and the Metal backend both import them from here.
What only the Metal backend needs (the GPU core count from `ioreg`, the MSL version of this
macOS) stays in `backends/metal/chip.py`.
"""

from __future__ import annotations

import re
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
