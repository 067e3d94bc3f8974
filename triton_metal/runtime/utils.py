"""Host-side helpers with Triton's names: `cdiv`, `next_power_of_2`, `reinterpret`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..language import types as tlt
from .specialization import MLX_ARRAY, MLX_DTYPES, ReinterpretedArray

_NUMPY_OF: dict[tlt.dtype, type] = {
    tlt.int1: np.bool_,
    tlt.int8: np.int8,
    tlt.int16: np.int16,
    tlt.int32: np.int32,
    tlt.int64: np.int64,
    tlt.uint8: np.uint8,
    tlt.uint16: np.uint16,
    tlt.uint32: np.uint32,
    tlt.uint64: np.uint64,
    tlt.float16: np.float16,
    tlt.float32: np.float32,
}


def cdiv(x: int, y: int) -> int:
    """Ceiling division of integers: the number of blocks of size `y` covering `x`."""
    return (x + y - 1) // y


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= `n` (`0` for `0`, as in Triton)."""
    if n < 0:
        raise ValueError(f"next_power_of_2({n}): n must be non-negative")
    if n == 0:
        return 0
    return 1 << (n - 1).bit_length()


def reinterpret(array: Any, dtype: tlt.dtype | str) -> Any:
    """View `array`'s memory as elements of `dtype` (no copy), as Triton's `reinterpret`.

    A kernel receives the same address with the new element type. NumPy arrays become NumPy
    views (for bfloat16, which NumPy lacks, a wrapper the launcher understands); MLX arrays
    become `mx.view` arrays. Either way the element size may differ only where the library's own
    view allows it (the last axis must be contiguous). fp8 (`tl.float8e4nv`, ...) views a NumPy
    array of 1-byte elements holding the 8-bit codes (a wrapper, as for bfloat16).
    """
    ty = tlt.dtype_from_name(dtype) if isinstance(dtype, str) else dtype
    if not isinstance(ty, tlt.dtype) or ty.is_ptr() or ty.is_block() or ty.is_void():
        raise TypeError(f"reinterpret: {dtype!r} is not a scalar element type")
    if ty.is_fp64():
        raise TypeError(f"reinterpret: {tlt.FP64_REFUSAL}")
    if isinstance(array, ReinterpretedArray):
        array = array.base
    if isinstance(array, np.ndarray):
        if ty.is_bf16() or ty.is_fp8():
            if array.dtype.itemsize != ty.itemsize:
                raise ValueError(
                    f"reinterpret: a NumPy array seen as {ty!r} must have {ty.itemsize}-byte elements, "
                    f"not {array.dtype}"
                )
            return ReinterpretedArray(array, ty)
        return array.view(_NUMPY_OF[ty])
    if MLX_ARRAY is not None and isinstance(array, MLX_ARRAY):
        import mlx.core as mx

        if ty.is_fp8():
            raise TypeError(f"reinterpret: MLX has no fp8 arrays to view as {ty!r}; pass the uint8 "
                            "codes (mx.to_fp8) and bitcast them in the kernel: "
                            "tl.load(ptr + offs).to(tl.float8e4nv, bitcast=True)")
        mlx_of = {v: k for k, v in MLX_DTYPES.items()}
        return mx.view(array, mlx_of[ty])
    raise TypeError(
        f"reinterpret: expected a numpy.ndarray or mlx.core.array, not {type(array).__name__}"
    )
