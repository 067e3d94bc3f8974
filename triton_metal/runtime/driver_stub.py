"""`triton.runtime.driver` under `install_as_triton()`: what real libraries ask the driver.

Triton's driver object answers questions about the current CUDA/HIP device. Libraries use a few
of them to size grids (`driver.active.utils.get_device_properties(dev)["multiprocessor_count"]`,
`driver.active.get_current_device()`, `driver.active.get_current_target()`); those answer with
Apple GPU facts (one device, 32-wide SIMD groups, 32 KiB of threadgroup memory). The number of
cores is not exposed by MLX or PyTorch: `multiprocessor_count` is the CPU's core count, an
estimate for sizing persistent grids, never a measured GPU figure. Everything else raises
`NotImplementedError` naming the member, rather than answering wrongly.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GPUTarget:
    backend: str
    arch: str
    warp_size: int


class _Utils:
    def get_device_properties(self, device: int = 0) -> dict[str, int]:
        cores = os.cpu_count() or 8
        return {
            "multiprocessor_count": cores,
            "max_shared_mem": 32768,
            "max_num_regs": 65536,
            "warpSize": 32,
            "max_threads_per_block": 1024,
        }

    def __getattr__(self, name: str) -> Any:
        raise NotImplementedError(f"triton.runtime.driver.active.utils.{name} has no Apple GPU counterpart here")


class _ActiveDriver:
    utils = _Utils()

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: int) -> None:
        if device != 0:
            raise ValueError(f"there is one Apple GPU (device 0), not device {device}")

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def get_current_target(self) -> GPUTarget:
        return GPUTarget("metal", "apple", 32)

    def __getattr__(self, name: str) -> Any:
        raise NotImplementedError(f"triton.runtime.driver.active.{name} has no Apple GPU counterpart here")


active = _ActiveDriver()
