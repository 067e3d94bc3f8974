"""`triton.runtime.driver` under `install_as_triton()`: what real libraries ask the driver.

Triton's driver object answers questions about the current CUDA/HIP device. Libraries use a few
of them to size grids (`driver.active.utils.get_device_properties(dev)["multiprocessor_count"]`,
`driver.active.get_current_device()`, `driver.active.get_current_target()`); those answer with
Apple GPU facts (one device, 32-wide SIMD groups, 32 KiB of threadgroup memory). Triton's
tutorials start with `DEVICE = driver.active.get_active_torch_device()`: the device whose torch
tensors kernels here run on in place, `mps` where PyTorch has an MPS device and `cpu` elsewhere
(the emulator and the interpreter run on CPU tensors' memory). The number of
cores is not exposed by MLX or PyTorch: `multiprocessor_count` is the CPU's core count, an
estimate for sizing persistent grids, never a measured GPU figure. Everything else raises
`NotImplementedError` naming the member, rather than answering wrongly.

Handing out the CPU as the active device also completes torch's CPU stream API: torch.cpu has
`Stream`, `current_stream` and the `stream` context manager "to facilitate device-agnostic code",
but no `set_stream`, which device-agnostic host code calls as `getattr(torch, DEVICE.type)`
(tutorial 02's benchmark). The CPU runs everything on its one stream in order, so selecting a
stream changes no ordering; `torch.cpu.set_stream` is added only where torch lacks it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..chip import MAX_THREADS_PER_THREADGROUP, SIMD_WIDTH, THREADGROUP_MEMORY_BYTES


@dataclass(frozen=True)
class GPUTarget:
    backend: str
    arch: str
    warp_size: int


def target() -> GPUTarget:
    """What `get_current_target()` answers."""
    return GPUTarget("metal", "apple", 32)


def active_torch_device() -> Any:
    """`torch.device("mps")` where PyTorch has an MPS device, else `torch.device("cpu")`."""
    import torch

    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    add_cpu_set_stream(torch)
    return torch.device("cpu")


def add_cpu_set_stream(torch: Any) -> None:
    """Give `torch.cpu` a `set_stream` where it has none (torch 2.13 has none)."""
    if not hasattr(torch.cpu, "set_stream"):
        torch.cpu.set_stream = _cpu_set_stream


def _cpu_set_stream(stream: Any) -> None:
    """`torch.cpu.set_stream(stream)`: as `torch.cuda.set_stream`, makes `stream` the current
    one (what `torch.cpu.current_stream()` answers), and does nothing for `None`. It is entering
    torch's own `torch.cpu.stream(stream)` context without leaving it: torch.cpu keeps the
    current stream only for device-agnostic code, and the CPU runs work in order whatever it is."""
    import torch

    torch.cpu.StreamContext(stream).__enter__()


class _Utils:
    def get_device_properties(self, device: int = 0) -> dict[str, int]:
        cores = os.cpu_count() or 8
        return {
            "multiprocessor_count": cores,
            "max_shared_mem": THREADGROUP_MEMORY_BYTES,
            "max_num_regs": 65536,
            "warpSize": SIMD_WIDTH,
            "max_threads_per_block": MAX_THREADS_PER_THREADGROUP,
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
        return target()

    def get_active_torch_device(self) -> Any:
        return active_torch_device()

    def __getattr__(self, name: str) -> Any:
        raise NotImplementedError(f"triton.runtime.driver.active.{name} has no Apple GPU counterpart here")


active = _ActiveDriver()
