"""Kernel arguments as the flat buffers a compiled kernel indexes.

A compiled kernel reaches an array through integer offsets from its first element, using the
strides the caller passes as arguments (Triton's pointer semantics). So every array argument
becomes a 1-D buffer that starts at the first element:

* a NumPy array: a view of the same memory (`flat_view`), from the first element to the last
  element the array's strides can reach; nothing is copied, so the emulator writes in place. A
  view with negative strides or strides that are not a whole number of elements is refused
  (the first element is not its lowest address, which a Metal buffer cannot express).
* `reinterpret(numpy_array, tl.bfloat16)`: the base array's 16-bit words.
* a torch CPU tensor: the NumPy view of its memory (`torch_arrays.host_view`), then as a NumPy
  array; bfloat16 as its 16-bit words.
* an MLX array: a row-major copy (`mlx_to_numpy`; bfloat16 as its uint16 bits); the launcher
  rebinds the caller's array to the result (`rebind_mlx`) when the kernel writes it.

Element counts decide `index_bits` (`needs_64bit_indices`): a buffer of 2**31 elements or more
needs 64-bit offsets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

import numpy as np

from ..errors import LaunchError
from . import torch_arrays
from .specialization import MLX_ARRAY, ReinterpretedArray, is_host_descriptor

INDEX32_LIMIT = 2**31
_SCALAR_TYPES = frozenset({int, float, bool, type(None), str})
PLAIN_TYPES = _SCALAR_TYPES | ({MLX_ARRAY} if MLX_ARRAY is not None else set())
"""The values the Metal driver takes as they are."""


def flat_view(arr: np.ndarray, name: str) -> np.ndarray:
    """A 1-D view over `arr`'s memory from its first element (module docstring)."""
    if arr.flags.c_contiguous:
        return arr.reshape(-1)
    item = arr.itemsize
    extent = 1
    for size, stride in zip(arr.shape, arr.strides):
        if size == 0:  # nothing to address
            return arr.reshape(-1)
        if stride < 0 or stride % item:
            raise LaunchError(
                f"argument '{name}': a view with strides {arr.strides} (bytes) cannot be passed to a "
                "compiled kernel: strides must be non-negative multiples of the element size; pass "
                "np.ascontiguousarray(...) and its strides instead"
            )
        extent += (size - 1) * (stride // item)
    view = np.lib.stride_tricks.as_strided(
        arr, shape=(extent,), strides=(item,), writeable=arr.flags.writeable
    )
    return view


def element_extent(value: object) -> int:
    """How many elements a kernel may address through `value` (0 for non-arrays)."""
    cls = type(value)
    if cls is MLX_ARRAY:  # the common cases first: this runs for every argument of a launch
        return int(value.size)  # type: ignore[attr-defined]
    if cls in _SCALAR_TYPES:
        return 0
    if cls is torch_arrays.TENSOR_TYPE[0]:
        return torch_arrays.element_extent(value)
    if cls is np.ndarray:
        if value.flags.c_contiguous:
            return int(value.size)
        if value.size == 0:
            return 0
        item = value.itemsize
        return 1 + sum((n - 1) * abs(s) // item for n, s in zip(value.shape, value.strides))
    if isinstance(value, ReinterpretedArray):
        return element_extent(value.base)
    if isinstance(value, np.ndarray):
        return element_extent(np.asarray(value))
    if torch_arrays.is_tensor(value):
        return torch_arrays.element_extent(value)
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


def picker(indices: Sequence[int]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """`seq -> tuple(seq[i] for i in indices)` for a tuple `seq`, done in C: `itemgetter` of
    the indices, or of a slice for none or one (`itemgetter(i)` returns a bare element)."""
    if len(indices) > 1:
        return itemgetter(*indices)
    start = indices[0] if indices else 0
    return itemgetter(slice(start, start + len(indices)))


def share_elements(a: object, b: object) -> bool:
    """Whether two arguments are one array, or NumPy views sharing an element (views the exact
    test gives up on count as sharing)."""
    if a is b:
        return True
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return False
    try:
        return bool(np.shares_memory(a, b, max_work=10_000))
    except np.exceptions.TooHardError:
        return True


def is_mlx(value: object) -> bool:
    return MLX_ARRAY is not None and isinstance(value, MLX_ARRAY)


def mlx_to_numpy(value: Any) -> np.ndarray:
    """A row-major NumPy copy of an MLX array, flattened (bfloat16 as uint16 bits)."""
    import mlx.core as mx

    if value.dtype == mx.bfloat16:
        return np.array(value.view(mx.uint16)).reshape(-1)
    return np.array(value).reshape(-1)


def rebind_mlx(target: Any, flat: np.ndarray, name: str) -> None:
    """`target[...] = result`: the caller's MLX array object now holds the kernel's result."""
    import mlx.core as mx

    result = mx.array(flat.reshape(target.shape))
    if target.dtype == mx.bfloat16:
        result = result.view(mx.bfloat16)
    if result.dtype != target.dtype or result.shape != target.shape:
        raise LaunchError(
            f"argument '{name}': the kernel produced {result.dtype}{list(result.shape)} for an array of "
            f"{target.dtype}{list(target.shape)}"
        )
    target[...] = result


def numpy_buffer(value: object, name: str) -> np.ndarray:
    """The flat NumPy buffer for a NumPy array or a bfloat16 or fp8 reinterpretation of one
    (its 16-bit or 8-bit codes)."""
    if isinstance(value, ReinterpretedArray):
        return flat_view(value.base.view(np.uint8 if value.dtype.is_fp8() else np.uint16), name)
    if isinstance(value, np.ndarray):
        return flat_view(value, name)
    if torch_arrays.is_tensor(value):
        return numpy_buffer(torch_arrays.host_view(value, name), name)
    raise LaunchError(f"argument '{name}' is a {type(value).__name__}, but the kernel takes an array here")


def metal_values(values: tuple[object, ...], names: tuple[str, ...]) -> tuple[object, ...]:
    """The values as the Metal driver takes them: NumPy arrays, torch CPU tensors (and bfloat16
    reinterpretations) as the flat buffers of their memory, NumPy scalars as Python scalars, the rest as given.
    Values that are all MLX arrays and Python scalars (the common launch) come back as they are."""
    if PLAIN_TYPES.issuperset(map(type, values)):  # one pass in C
        return values
    out: list[object] = []
    for value, name in zip(values, names):
        if isinstance(value, (np.ndarray, ReinterpretedArray)) or torch_arrays.is_tensor(value):
            value = numpy_buffer(value, name)
        elif isinstance(value, np.generic):
            value = value.item()
        out.append(value)
    return tuple(out)
