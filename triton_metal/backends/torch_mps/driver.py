"""Which `compile_shader` the torch_mps backend uses, and on which device its tensors live.

By default PyTorch's own `torch.mps.compile_shader` on the "mps" device (refused where PyTorch
has no MPS device). `use_compiler(stand_in, "cpu")` installs a stand-in instead (the recording
one in `standin.py`, whose "device" is the CPU); `use_compiler(None)` restores PyTorch's.
The launcher that calls the compiled kernel is `runtime/launch_torch_mps.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import LaunchError

Compiler = Callable[[str], Any]

_ACTIVE: list[tuple[Compiler, str] | None] = [None]
"""The (compile_shader, device type) in use; None: torch.mps.compile_shader on "mps"."""


def use_compiler(compiler: Compiler | None, device_type: str = "cpu") -> None:
    """Make launches compile with `compiler` (a stand-in for `torch.mps.compile_shader`) and
    bind tensors of `device_type`; None restores PyTorch's own."""
    _ACTIVE[0] = None if compiler is None else (compiler, device_type)


def active_compiler() -> tuple[Compiler, str]:
    active = _ACTIVE[0]
    if active is not None:
        return active
    import torch

    if not torch.backends.mps.is_available():
        raise LaunchError(
            "the torch_mps backend needs PyTorch with an MPS device (a Mac with Apple silicon); "
            "pass CPU tensors to run on the emulator here"
        )
    return torch.mps.compile_shader, "mps"


def stand_in_active() -> bool:
    return _ACTIVE[0] is not None
