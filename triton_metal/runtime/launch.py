"""Handing a checked launch to the backend that executes it.

The binder returns the values as the caller passed them; backends take plain values: Python
scalars for scalar parameters (NumPy scalars are converted), the unwrapped value for constexpr
parameters (a `tl.constexpr(128)` argument arrives as `128`), and arrays untouched (NumPy arrays
are written in place, MLX arrays are rebound by the backend).

`reinterpret` over a NumPy array as bfloat16 (which NumPy cannot express) arrives as a
`ReinterpretedArray` (`.base`, `.dtype`), which the interpreter reads as the `uint16` bits of
bfloat16 values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .grid import Grid3
from .specialization import ArgSpec, ConstexprArg


def to_launch_args(
    names: list[str], values: tuple[object, ...], facts: tuple[ArgSpec, ...]
) -> dict[str, object]:
    """Name -> value for the backend, in parameter order (see the module docstring)."""
    args: dict[str, object] = {}
    for name, value, fact in zip(names, values, facts):
        if isinstance(fact, ConstexprArg):
            value = fact.value
        elif isinstance(value, np.generic):
            value = value.item()
        args[name] = value
    return args


def launch_on_interpreter(kernel: Any, grid: Grid3, args: dict[str, object]) -> None:
    from ..backends import interpreter

    interpreter.launch(kernel, grid, args)
