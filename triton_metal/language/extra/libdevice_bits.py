"""libdevice's bit-counting and classification functions, written in the DSL itself.

`popc` / `popcll` (set bits), `clz` / `clzll` (leading zero bits) and `finitef` / `isfinited`
(a float is neither infinite nor NaN) are `@jit` device functions built from integer and
comparison operations both backends have, so they are exact everywhere and the interpreter runs
the same code the compiler inlines. Like libdevice's, they take 32- or 64-bit integers (the
`ll` spellings are the same functions) and return int32.
"""

from __future__ import annotations

from typing import Any

from .. import core as tl
from ..debug_ops import static_assert
from ..elementwise import where
from ..jit_marker import JITCallable
from ..math import abs as _abs
from ..shape_ops import zeros_like
from ..types import int32, uint32, uint64


def jit(fn: Any) -> JITCallable:
    return JITCallable(fn)


@jit
def _unsigned(x):  # noqa: ANN001, ANN202
    """`x`'s bits as an unsigned integer of its width (32 or 64)."""
    static_assert(x.dtype.is_int() and (x.dtype.primitive_bitwidth == 32 or x.dtype.primitive_bitwidth == 64),
                  "libdevice's popc and clz take 32- or 64-bit integers")
    if x.dtype.primitive_bitwidth == 64:
        return x.to(uint64, bitcast=True)
    return x.to(uint32, bitcast=True)


@jit
def popc(x):  # noqa: ANN001, ANN201
    """libdevice `popc` (and `popcll`): the number of set bits of a 32- or 64-bit integer, int32."""
    u = _unsigned(x)
    width: tl.constexpr = x.dtype.primitive_bitwidth
    if width == 64:
        m1: tl.constexpr = 0x5555555555555555
        m2: tl.constexpr = 0x3333333333333333
        m4: tl.constexpr = 0x0F0F0F0F0F0F0F0F
        ones: tl.constexpr = 0x0101010101010101
    else:
        m1: tl.constexpr = 0x55555555
        m2: tl.constexpr = 0x33333333
        m4: tl.constexpr = 0x0F0F0F0F
        ones: tl.constexpr = 0x01010101
    # pairs, nibbles, then bytes hold their own counts; one multiply sums the bytes into the top one
    u = u - ((u >> 1) & m1)
    u = (u & m2) + ((u >> 2) & m2)
    u = (u + (u >> 4)) & m4
    return ((u * ones) >> (width - 8)).to(int32)


@jit
def clz(x):  # noqa: ANN001, ANN201
    """libdevice `clz` (and `clzll`): the number of leading zero bits of a 32- or 64-bit
    integer (its width for 0), int32."""
    u = _unsigned(x)
    width: tl.constexpr = x.dtype.primitive_bitwidth
    n = zeros_like(u).to(int32)
    # binary search: when the top `shift` bits are clear, count them and shift them out
    for k in tl.static_range(6 if width == 64 else 5):
        shift: tl.constexpr = width >> (k + 1)
        clear = (u >> (width - shift)) == 0
        n = where(clear, n + shift, n)
        u = where(clear, u << shift, u)
    return where(x == 0, width, n).to(int32)


@jit
def finitef(x):  # noqa: ANN001, ANN201
    """libdevice `finitef` (and `isfinited`): 1 where `x` is neither infinite nor NaN, else 0
    (int32)."""
    return ((x == x) & (_abs(x) != float("inf"))).to(int32)


popcll = popc
clzll = clz
isfinited = finitef
