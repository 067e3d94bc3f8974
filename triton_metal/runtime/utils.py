"""Host-side helpers with Triton's names: `cdiv`, `next_power_of_2`, `reinterpret`."""

from __future__ import annotations

from typing import Any


from ..language import types as tlt
from .arrays import adapter_of, element_of_dtype


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


def _element_type(dtype: object) -> object:
    """`dtype` as a `tl` dtype: a `tl` dtype, its name, or an array library's dtype
    (`torch.float16`, `np.int8`: Triton's `reinterpret` takes torch's too)."""
    if isinstance(dtype, str):
        return tlt.dtype_from_name(dtype)
    if isinstance(dtype, tlt.dtype):
        return dtype
    element = element_of_dtype(dtype)
    return dtype if element is None else element


def reinterpret(array: Any, dtype: Any) -> Any:
    """View `array`'s memory as elements of `dtype` (no copy), as Triton's `reinterpret`.

    A kernel receives the same address with the new element type. NumPy arrays become NumPy
    views (for bfloat16, which NumPy lacks, a wrapper the launcher understands); MLX arrays
    become `mx.view` arrays. Either way the element size may differ only where the library's own
    view allows it (the last axis must be contiguous). fp8 (`tl.float8e4nv`, ...) views a NumPy
    array of 1-byte elements holding the 8-bit codes (a wrapper, as for bfloat16). `dtype` is a
    `tl` dtype, its name, or a NumPy, MLX or torch dtype.
    """
    ty = _element_type(dtype)
    if not isinstance(ty, tlt.dtype) or ty.is_ptr() or ty.is_block() or ty.is_void():
        raise TypeError(f"reinterpret: {dtype!r} is not a scalar element type")
    if ty.is_fp64():
        raise TypeError(f"reinterpret: {tlt.FP64_REFUSAL}")
    adapter = adapter_of(array)  # the kind's own view (`ArrayAdapter.reinterpret`)
    view = adapter.reinterpret(array, ty) if adapter is not None else None
    if view is not None:
        return view
    raise TypeError(
        f"reinterpret: expected a numpy.ndarray or mlx.core.array, not {type(array).__name__}"
    )
