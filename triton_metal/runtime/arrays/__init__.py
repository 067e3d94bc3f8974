"""Array arguments: one adapter per kind of array, behind one protocol (`base.ArrayAdapter`).

| kind | file | memory a kernel reaches | results |
|---|---|---|---|
| `numpy.ndarray` (and subclasses) | `numpy.py` | a flat view from the first element | in place |
| `reinterpret(ndarray, bf16/fp8)` | `numpy.py` | the base array's 16-bit or 8-bit codes | in place |
| `mlx.core.array` | `mlx.py` | the array (MLX hands kernels row-major arrays) | rebound by the Metal driver |
| `torch.Tensor` (CPU, MPS) | `torch.py` | CPU: a NumPy view of its memory; MPS: the tensor | in place |
| `reinterpret(cpu_tensor, tl dtype)` (`TensorWrapper`) | `torch.py` | the tensor's memory as that type | in place |

A new kind is one file defining an adapter and calling `register`, plus its import below. The
functions here are what the rest of the runtime and the backends call; each asks `adapter_of`
once per value, after the launch path's inlined cases (MLX arrays, Python scalars).

Element counts decide `index_bits` (`needs_64bit_indices`): a buffer of 2**31 elements or more
needs 64-bit offsets.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np

from ...errors import LaunchError
from ...language import types as tlt
from . import mlx as _mlx_kind
from . import numpy as _numpy_kind  # noqa: F401 - registers its kinds
from . import torch as _torch_kind  # noqa: F401 - registers its kind
from .base import BY_TYPE, KINDS, ArrayAdapter, adapter_of, register
from .numpy import ReinterpretedArray, flat_view, share_elements

__all__ = [
    "BY_TYPE", "INDEX32_LIMIT", "KINDS", "PLAIN_TYPES", "ArrayAdapter", "ReinterpretedArray",
    "adapter_of", "arrays_need_64bit_indices", "element_extent", "element_of_dtype", "flat_view", "host_buffer",
    "host_view", "is_array", "is_host_descriptor", "metal_values", "needs_64bit_indices",
    "register", "share_elements",
]

MLX_ARRAY = _mlx_kind.ARRAY_TYPE
INDEX32_LIMIT = 2**31
_SCALAR_TYPES = frozenset({int, float, bool, type(None), str})
PLAIN_TYPES = _SCALAR_TYPES | ({MLX_ARRAY} if MLX_ARRAY is not None else set())
"""The values the Metal driver takes as they are."""


def is_host_descriptor(value: object) -> bool:
    """`value` is a `tools.tensor_descriptor.TensorDescriptor` (its module is imported by
    whoever made one, so this imports nothing new)."""
    module = sys.modules.get("triton_metal.tools.tensor_descriptor")
    return module is not None and isinstance(value, module.TensorDescriptor)


def element_of_dtype(dtype: object) -> tlt.dtype | None:
    """The element type of an array library's dtype (`np.float16`, `mx.int8`, `torch.bfloat16`),
    or None when `dtype` is none of theirs."""
    for kind in KINDS:
        element = kind.element_of_dtype(dtype)
        if element is not None:
            return element
    return None


def is_array(value: object) -> bool:
    """`value` is an array of a registered kind."""
    return adapter_of(value) is not None


def element_extent(value: object) -> int:
    """How many elements a kernel may address through `value` (0 for non-arrays): an array's
    span, a host tensor descriptor's base, a tuple's largest array."""
    cls = type(value)
    if cls is MLX_ARRAY:  # the common cases first: this runs for every argument of a launch
        return int(value.size)  # type: ignore[attr-defined]
    if cls in _SCALAR_TYPES:
        return 0
    adapter = BY_TYPE.get(cls) or adapter_of(value)  # the lookup inlined: a kind seen before
    if adapter is not None:
        return adapter.element_extent(value)
    if is_host_descriptor(value):  # a tensor descriptor addresses its base
        return element_extent(value.base)  # type: ignore[attr-defined]
    if isinstance(value, tuple):  # a tuple argument: its largest array
        return max(map(element_extent, value), default=0)
    return 0


def needs_64bit_indices(values: Sequence[object]) -> bool:
    for v in values:  # the common cases inlined: this runs on every launch
        cls = type(v)
        if cls is int:
            continue
        if cls is MLX_ARRAY:
            if v.size >= INDEX32_LIMIT:  # type: ignore[attr-defined]
                return True
        elif cls not in _SCALAR_TYPES and element_extent(v) >= INDEX32_LIMIT:
            return True
    return False


def arrays_need_64bit_indices(arrays: tuple[object, ...]) -> bool:
    """`needs_64bit_indices` of the array arguments alone."""
    for v in arrays:
        if (v.size if type(v) is MLX_ARRAY else element_extent(v)) >= INDEX32_LIMIT:  # type: ignore[attr-defined]
            return True
    return False


def host_view(value: object, name: str) -> object:
    """What the interpreter reads through an array argument (`ArrayAdapter.host_view`); a
    value of no registered kind as it is."""
    adapter = adapter_of(value)
    return value if adapter is None else adapter.host_view(value, name)


def host_buffer(value: object, name: str) -> np.ndarray:
    """The flat NumPy buffer the emulator runs on for an array argument (`ArrayAdapter.
    host_buffer`); a value that is no array is refused, naming the parameter."""
    adapter = adapter_of(value)
    if adapter is None:
        raise LaunchError(f"argument '{name}' is a {type(value).__name__}, but the kernel takes an array here")
    return adapter.host_buffer(value, name)


def metal_values(values: tuple[object, ...], names: tuple[str, ...]) -> tuple[object, ...]:
    """The values as the Metal driver takes them (`ArrayAdapter.metal_value`): host arrays as
    the flat buffers of their memory, NumPy scalars as Python scalars, the rest as given.
    Values that are all MLX arrays and Python scalars (the common launch) come back as they are."""
    if PLAIN_TYPES.issuperset(map(type, values)):  # one pass in C
        return values
    out: list[object] = []
    for value, name in zip(values, names):
        adapter = adapter_of(value)
        if adapter is not None:
            value = adapter.metal_value(value, name)
        elif isinstance(value, np.generic):
            value = value.item()
        out.append(value)
    return tuple(out)

