"""`tl.standard` (`triton.language.standard`): the functions Triton writes in Triton itself.

Real code imports some of them from here (`from triton.language.standard import _log2`, or
`triton.language.standard.sum`); they are the `tl` functions of the same names. `_log2` and
`_is_power_of_two` are Triton's compile-time helpers (`constexpr_function`s, defined in sorting.py).
"""

from __future__ import annotations

from .sorting import _is_power_of_two, _log2  # noqa: F401 - Triton's compile-time helpers, imported from here

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



__all__ = [
    "argmax", "argmin", "cdiv", "cumprod", "cumsum", "flip", "interleave", "max", "min", "ravel",
    "reduce_or", "sigmoid", "softmax", "sort", "sum", "swizzle2d", "topk", "xor_sum", "zeros",
    "zeros_like",
]
