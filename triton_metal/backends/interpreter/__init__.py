"""The NumPy interpreter backend (`TRITON_METAL_INTERPRET=1`): kernels run as Python over NumPy.

Entry point: `launch(kernel, grid, args)`; see `launch.py`. The builder (`numpy_builder.py`)
implements the same `Builder` protocol as the compiler's IR builder, so the interpreter applies
exactly the compiler's typing rules.
"""

from __future__ import annotations

from .launch import launch, scalar_argument
from .memory import Memory
from .numpy_builder import NumpyBuilder, TensorHandle

__all__ = ["Memory", "NumpyBuilder", "TensorHandle", "launch", "scalar_argument"]
