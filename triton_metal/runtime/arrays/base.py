"""The protocol every kind of array argument implements, and the registry of kinds.

A kind (NumPy arrays, their bfloat16/fp8 reinterpretations, MLX arrays, torch tensors) is one
object implementing `ArrayAdapter`, registered once by its module (`register`). The runtime
asks `adapter_of(value)` and never tests for a library itself, so a new kind of array is one
file that registers an adapter (and one import line in `arrays/__init__.py`).

`adapter_of` is a dictionary lookup on the value's exact type (`BY_TYPE`); a type not yet seen
(a subclass, or `torch.Tensor` before torch was imported) is asked of every kind in turn
(`claims`) and remembered. The hottest launch paths (the generated binder, `specialize_arg`,
the Metal recipe) keep their `type(x) is` tests on the commonest types (the MLX array,
`numpy.ndarray`, `torch.Tensor`), which the adapters export for them.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from ...language import types as tlt
from ..facts import PointerArg


class ArrayAdapter(Protocol):
    """What the runtime needs of one kind of array argument."""

    name: str
    """The kind, as errors and docs name it ("numpy", "mlx", "torch", ...)."""
    written_in_place: bool
    """A kernel's stores land in the caller's own memory (NumPy, torch); when False, the Metal
    driver rebinds the caller's array to the kernel's result (MLX: `backends/metal/driver.py`)."""

    def exact_type(self) -> type | None:
        """The kind's array class for `type(x) is` tests, or None while its library is not
        loaded (torch: never imported by the runtime)."""
        ...

    def claims(self, value: object) -> bool:
        """`value` is an array of this kind (subclasses included)."""
        ...

    def element_extent(self, value: Any) -> int:
        """How many elements a kernel may address from the first element (the span its
        strides reach; 0 for an empty array)."""
        ...

    def element_strides(self, value: Any) -> list[int]:
        """The strides in elements, as a kernel receives them (host tensor descriptors)."""
        ...

    def base_address(self, value: Any) -> int:
        """The address of the first element (0 where the library hides it: MLX)."""
        ...

    def pointer_fact(self, value: Any, name: str, specialize: bool, align: bool) -> PointerArg:
        """The specialization fact of the array given to parameter `name`: its element type,
        its alignment (when `specialize and align`), its device; refuses what no kernel takes."""
        ...

    def element_of_dtype(self, dtype: object) -> tlt.dtype | None:
        """The element type of one of this library's dtypes given in place of an array
        (`kernel.warmup`), or None when `dtype` is not one."""
        ...

    def is_fp64(self, value: Any) -> bool:
        """The array holds float64 elements (refused at launch; type-checked as float32)."""
        ...

    def host_view(self, value: Any, name: str) -> object:
        """What the interpreter reads through the argument: the array itself or a NumPy view of
        the same memory; refuses what the compiled backends refuse."""
        ...

    def host_buffer(self, value: Any, name: str) -> np.ndarray:
        """The flat 1-D NumPy buffer from the first element that the emulator runs on (the same
        memory: stores land in the array)."""
        ...

    def metal_value(self, value: Any, name: str) -> object:
        """The argument as the Metal driver takes it: an MLX array as it is, host memory as its
        flat buffer."""
        ...

    def reinterpret(self, value: Any, ty: tlt.dtype) -> object | None:
        """`value`'s memory seen as elements of `ty` (`triton_metal.reinterpret`), or None when
        this kind has no such view."""
        ...


KINDS: list[ArrayAdapter] = []
"""Every registered kind, in the order `adapter_of` asks them."""
BY_TYPE: dict[type, ArrayAdapter] = {}
"""Exact type -> its kind: the classes of the registered kinds, and the subclasses seen."""


def register(adapter: ArrayAdapter) -> ArrayAdapter:
    KINDS.append(adapter)
    cls = adapter.exact_type()
    if cls is not None:
        BY_TYPE[cls] = adapter
    return adapter


def adapter_of(value: object) -> ArrayAdapter | None:
    """The kind of array `value` is, or None when it is no array (module docstring)."""
    adapter = BY_TYPE.get(type(value))
    if adapter is not None:
        return adapter
    for kind in KINDS:
        if kind.claims(value):
            BY_TYPE[type(value)] = kind
            return kind
    return None
