"""The torch_mps backend: compiled variants launched on PyTorch's MPS stream.

The generated MSL as a complete kernel source with its own `[[buffer(i)]]` signature
(`source.py`), compiled once per variant with the active `compile_shader` (`driver.py`) and
called with the tensors bound in place (`runtime/launch_torch_mps.py`). On Linux a recording
stand-in runs the very source on the emulator (`standin.py`). See docs/torch.md.
"""

from __future__ import annotations

from .driver import active_compiler, stand_in_active, use_compiler
from .source import GRID, SCALAR, TENSOR, BufferArg, TorchKernelSource, build_source

__all__ = [
    "GRID",
    "SCALAR",
    "TENSOR",
    "BufferArg",
    "TorchKernelSource",
    "active_compiler",
    "build_source",
    "stand_in_active",
    "use_compiler",
]
