"""The Metal backend: compiled kernels through MLX's `mx.fast.metal_kernel` on Apple GPUs.

- `MetalLauncher`: one compiled variant's `metal_kernel` and its launches, `LaunchCoverage`: the
  per-launch coverage verdicts (`driver.py`);
- `LaunchPlan`, `launch_dims`: how bound arguments map onto inputs and outputs (`plan.py`);
- `chip_info()`: the GPU's architecture, generation and limits (`chip.py`);
- `check_environment()`: is this machine ready (`python -m triton_metal.backends.metal.check_environment`).
"""

from __future__ import annotations

from .check_environment import check_environment
from .chip import ChipInfo, chip_info, parse_architecture
from .driver import LaunchCoverage, MetalLauncher, PreparedLaunch, atomic_identity, map_metal_error
from .plan import InputSlot, LaunchPlan, OutputSlot, launch_dims, needs_spread

__all__ = [
    "ChipInfo", "InputSlot", "LaunchCoverage", "LaunchPlan", "MetalLauncher", "OutputSlot", "PreparedLaunch",
    "atomic_identity", "check_environment", "chip_info", "launch_dims", "map_metal_error", "needs_spread",
    "parse_architecture",
]
