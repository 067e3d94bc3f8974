"""NumPy arrays, and NumPy arrays seen as bfloat16 or fp8 (`ReinterpretedArray`), as kernel
arguments.

A compiled kernel reaches an array through integer offsets from its first element, using the
strides the caller passes (Triton's pointer semantics). So the emulator and the Metal driver
receive a 1-D view of the same memory (`flat_view`), from the first element to the last element
the strides can reach; nothing is copied, so stores land in the caller's array. A view with
negative strides or strides that are not a whole number of elements is refused (its first
element is not its lowest address, which a Metal buffer cannot express).

The pointer fact reads the first element's address (`arr.ctypes.data`): a view with an offset is
specialized by its own address, and an address that is not a multiple of the element size is
refused (Metal reads elements only at aligned addresses).

`reinterpret(numpy_array, tl.bfloat16)` (and the fp8 types, which NumPy lacks too) is a
`ReinterpretedArray`: the base array's 16-bit (8-bit) codes, with the `tl` element type beside.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import LaunchError
from ...language import types as tlt
from ..facts import POINTER_FACTS, ArgumentError, PointerArg, bad_dtype
from .base import register

NUMPY_DTYPES: dict[np.dtype[Any], tlt.dtype] = {
    np.dtype(np.bool_): tlt.int1,
    np.dtype(np.int8): tlt.int8,
    np.dtype(np.int16): tlt.int16,
    np.dtype(np.int32): tlt.int32,
    np.dtype(np.int64): tlt.int64,
    np.dtype(np.uint8): tlt.uint8,
    np.dtype(np.uint16): tlt.uint16,
    np.dtype(np.uint32): tlt.uint32,
    np.dtype(np.uint64): tlt.uint64,
    np.dtype(np.float16): tlt.float16,
    np.dtype(np.float32): tlt.float32,
}
_NUMPY_OF: dict[tlt.dtype, np.dtype[Any]] = {ty: dt for dt, ty in NUMPY_DTYPES.items()}

_POINTERS: dict[np.dtype[Any], tuple[PointerArg, PointerArg]] = {
    dt: (POINTER_FACTS[(ty, False)], POINTER_FACTS[(ty, True)]) for dt, ty in NUMPY_DTYPES.items()
}
"""NumPy dtype -> the (unaligned, aligned) facts: NumPy dtypes hash in C, tl dtypes do not."""


def tl_dtype_of_numpy(dt: np.dtype[Any], name: str) -> tlt.dtype:
    """The `tl` element type of a NumPy dtype, or an error naming parameter `name`."""
    ty = NUMPY_DTYPES.get(dt)
    if ty is not None:
        return ty
    raise bad_dtype(str(dt), name)


class ReinterpretedArray:
    """An array seen through another element type (`triton_metal.reinterpret`).

    Used only where the array library cannot express the view itself (bfloat16 over a NumPy
    array); everywhere else `reinterpret` returns a real view."""

    __slots__ = ("base", "dtype")

    def __init__(self, base: np.ndarray[Any, Any], dtype: tlt.dtype) -> None:
        self.base = base
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"reinterpret({self.base!r}, {self.dtype!r})"


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


def element_extent(value: np.ndarray) -> int:
    """How many elements a kernel may address from the array's first element."""
    if value.flags.c_contiguous:
        return int(value.size)
    if value.size == 0:
        return 0
    item = value.itemsize
    return 1 + sum((n - 1) * abs(s) // item for n, s in zip(value.shape, value.strides))


_ALIGNED: dict[int, tuple[Any, tuple[int, ...], int]] = {}
"""id(array) -> (weak reference, shape, first element's address mod 16). Reading an address
(`arr.ctypes.data`) costs about a microsecond; an array's address is fixed for its lifetime
unless `ndarray.resize` reallocates it, which also changes its shape (checked). Entries leave
with their arrays (the weak reference's callback)."""


def _forget(key: int) -> Callable[[Any], None]:
    return lambda _ref: _ALIGNED.pop(key, None)


def _address_mod16(value: np.ndarray[Any, Any]) -> int:
    key = id(value)
    entry = _ALIGNED.get(key)
    if entry is not None and entry[0]() is value and entry[1] == value.shape:
        return entry[2]
    mod = value.ctypes.data % 16
    try:
        _ALIGNED[key] = (weakref.ref(value, _forget(key)), value.shape, mod)
    except TypeError:  # pragma: no cover - an array type without weak references
        pass
    return mod


def pointer_fact(value: np.ndarray[Any, Any], name: str, specialize: bool, align: bool) -> PointerArg:
    """The pointer fact of a NumPy array (module docstring); `specialize_arg` calls it directly."""
    pair = _POINTERS.get(value.dtype)
    if pair is None:
        raise bad_dtype(str(value.dtype), name)
    mod = _address_mod16(value)
    if mod % value.itemsize:
        # Metal reads elements only at multiples of their size; refused here so that every
        # backend refuses it (the CPU would read the misaligned element, the GPU would not)
        raise ArgumentError(
            f"argument '{name}': its first element is at an address {mod % value.itemsize} byte(s) "
            f"past a multiple of its element size {value.itemsize} ({value.dtype}); kernels read "
            "elements only at aligned addresses: pass an aligned copy (np.ascontiguousarray of a "
            "fresh array)"
        )
    return pair[specialize and align and mod == 0]


def reinterpret(array: np.ndarray, ty: tlt.dtype) -> object:
    """A NumPy array seen as `ty`: a NumPy view, or a `ReinterpretedArray` for the types NumPy
    lacks (the element sizes must then match)."""
    if ty.is_bf16() or ty.is_fp8():
        if array.dtype.itemsize != ty.itemsize:
            raise ValueError(
                f"reinterpret: a NumPy array seen as {ty!r} must have {ty.itemsize}-byte elements, "
                f"not {array.dtype}"
            )
        return ReinterpretedArray(array, ty)
    return array.view(_NUMPY_OF[ty])


class NumpyAdapter:
    """`numpy.ndarray` and its subclasses (module docstring)."""

    name = "numpy"
    written_in_place = True

    def exact_type(self) -> type:
        return np.ndarray

    def claims(self, value: object) -> bool:
        return isinstance(value, np.ndarray)

    element_extent = staticmethod(element_extent)
    pointer_fact = staticmethod(pointer_fact)
    reinterpret = staticmethod(reinterpret)

    def element_strides(self, value: np.ndarray) -> list[int]:
        return [s // value.itemsize for s in value.strides]

    def base_address(self, value: np.ndarray) -> int:
        return int(value.ctypes.data)

    def element_of_dtype(self, dtype: object) -> tlt.dtype | None:
        if isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
            return tl_dtype_of_numpy(np.dtype(dtype), "warmup")
        return None

    def is_fp64(self, value: np.ndarray) -> bool:
        return value.dtype == np.float64

    def host_view(self, value: np.ndarray, name: str) -> object:
        flat_view(value, name)  # refused as the compiled backends refuse it (strides)
        return value

    def host_buffer(self, value: np.ndarray, name: str) -> np.ndarray:
        return flat_view(value, name)

    metal_value = host_buffer


class ReinterpretedAdapter:
    """`ReinterpretedArray`: a NumPy array's 16-bit or 8-bit codes with a `tl` element type."""

    name = "reinterpreted"
    written_in_place = True

    def exact_type(self) -> type:
        return ReinterpretedArray

    def claims(self, value: object) -> bool:
        return isinstance(value, ReinterpretedArray)

    def element_extent(self, value: ReinterpretedArray) -> int:
        return element_extent(value.base)

    def element_strides(self, value: ReinterpretedArray) -> list[int]:
        return [s // value.base.itemsize for s in value.base.strides]

    def base_address(self, value: ReinterpretedArray) -> int:
        return int(value.base.ctypes.data)

    def pointer_fact(self, value: ReinterpretedArray, name: str, specialize: bool, align: bool) -> PointerArg:
        aligned = specialize and align and value.base.ctypes.data % 16 == 0
        return POINTER_FACTS[(value.dtype, aligned)]

    def element_of_dtype(self, dtype: object) -> tlt.dtype | None:
        return None  # a `tl` dtype given to `warmup` is a constexpr, as in Triton

    def is_fp64(self, value: ReinterpretedArray) -> bool:
        return False  # `reinterpret` refuses float64

    def host_view(self, value: ReinterpretedArray, name: str) -> object:
        self.host_buffer(value, name)  # refused as the compiled backends refuse it (strides)
        return value

    def host_buffer(self, value: ReinterpretedArray, name: str) -> np.ndarray:
        return flat_view(value.base.view(np.uint8 if value.dtype.is_fp8() else np.uint16), name)

    metal_value = host_buffer

    def reinterpret(self, value: ReinterpretedArray, ty: tlt.dtype) -> object:
        return reinterpret(value.base, ty)


NUMPY = register(NumpyAdapter())
REINTERPRETED = register(ReinterpretedAdapter())
