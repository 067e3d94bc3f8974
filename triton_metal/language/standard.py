"""`tl.standard` (`triton.language.standard`): the functions Triton writes in Triton itself.

Real code imports some of them from here (`from triton.language.standard import _log2`, or
`triton.language.standard.sum`); they are the `tl` functions of the same names. `_log2` and
`_is_power_of_two` are Triton's compile-time helpers (`constexpr_function`s).
"""

from __future__ import annotations

from .jit_marker import constexpr_function

from . import (
    argmax,
    argmin,
    cdiv,
    cumprod,
    cumsum,
    flip,
    interleave,
    max,
    min,
    ravel,
    reduce_or,
    sigmoid,
    softmax,
    sort,
    sum,
    swizzle2d,
    topk,
    xor_sum,
    zeros,
    zeros_like,
)



@constexpr_function
def _log2(i: int) -> int:
    """floor(log2(i)) for i >= 1 (0 for smaller i), at compile time."""
    return (int(i) if i > 1 else 1).bit_length() - 1  # (this module's `max` is tl.max)


@constexpr_function
def _is_power_of_two(i: int) -> bool:
    return i != 0 and (i & (i - 1)) == 0


__all__ = [
    "argmax", "argmin", "cdiv", "cumprod", "cumsum", "flip", "interleave", "max", "min", "ravel",
    "reduce_or", "sigmoid", "softmax", "sort", "sum", "swizzle2d", "topk", "xor_sum", "zeros",
    "zeros_like",
]
