"""The torch_mps backend: compiled variants launched on PyTorch's MPS stream.

The generated MSL as a complete kernel source with its own `[[buffer(i)]]` signature
(`source.py`), compiled once per variant with `torch.mps.compile_shader` and called with the
tensors bound in place (`driver.py`). On Linux a recording stand-in runs the very source on the
emulator (`standin.py`). See docs/torch.md.
"""

from __future__ import annotations

from .driver import TorchMpsLauncher, active_compiler, stand_in_active, use_compiler
from .source import BufferArg, TorchKernelSource, build_source

__all__ = [
    "BufferArg",
    "TorchKernelSource",
    "TorchMpsLauncher",
    "active_compiler",
    "build_source",
    "stand_in_active",
    "use_compiler",
]
