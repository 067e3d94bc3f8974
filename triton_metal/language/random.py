"""Philox 4x32 counter-based random numbers, written in the DSL itself.

These are `@jit` device functions: the compiler inlines them like any user helper and the
interpreter runs them as Python. They reproduce Triton's `tl.rand*` bit for bit: the same Philox
constants and round structure (Random123's philox4x32), the same split of a 64-bit seed into the
two key words (low, high), the same offset -> counter mapping (the offset's low 32 bits are
counter word 0, a 64-bit offset's high 32 bits word 1, the other words 0), the same uint -> float
conversion and the same Box-Muller transform.
"""

from __future__ import annotations

from typing import Any

from . import core as tl
from .core import constexpr
from .debug_ops import static_assert
from .elementwise import maximum, where
from .jit_marker import JITCallable
from .math import cos, log, sin, sqrt, umulhi
from .shape_ops import full, to_tensor
from .types import int32, int64, uint32, uint64

N_ROUNDS_DEFAULT = constexpr(10)
# Philox's key increments (Weyl constants) and round multipliers, for 32- and 64-bit words
PHILOX_KEY_A = constexpr(0x9E3779B9)
PHILOX_KEY_B = constexpr(0xBB67AE85)
PHILOX_ROUND_A = constexpr(0xD2511F53)
PHILOX_ROUND_B = constexpr(0xCD9E8D57)
PHILOX_KEY_A_64 = constexpr(0x9E3779B97F4A7C15)
PHILOX_KEY_B_64 = constexpr(0xBB67AE8584CAA73B)
PHILOX_ROUND_A_64 = constexpr(0xD2E7470EE14C6C93)
PHILOX_ROUND_B_64 = constexpr(0xCA5A826395121157)


def jit(fn: Any) -> JITCallable:
    return JITCallable(fn)


@jit
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):  # noqa: ANN001, ANN201
    """`n_rounds` Philox rounds on the counter (c0..c3) with the key (k0, k1): all uint32
    (philox4x32) or all uint64 (philox4x64, with its own constants)."""
    if c0.dtype == uint32:
        key_a: tl.constexpr = PHILOX_KEY_A
        key_b: tl.constexpr = PHILOX_KEY_B
        round_a: tl.constexpr = PHILOX_ROUND_A
        round_b: tl.constexpr = PHILOX_ROUND_B
    else:
        static_assert(c0.dtype == uint64, "dtype not supported in philox_impl")
        key_a: tl.constexpr = PHILOX_KEY_A_64
        key_b: tl.constexpr = PHILOX_KEY_B_64
        round_a: tl.constexpr = PHILOX_ROUND_A_64
        round_b: tl.constexpr = PHILOX_ROUND_B_64
    for _ in tl.static_range(n_rounds):
        _c0, _c2 = c0, c2
        c0 = umulhi(round_b, _c2) ^ c1 ^ k0
        c2 = umulhi(round_a, _c0) ^ c3 ^ k1
        c1 = round_b * _c2
        c3 = round_a * _c0
        k0 = k0 + key_a
        k1 = k1 + key_b
    return c0, c1, c2, c3


@jit
def philox(seed, c0, c1, c2, c3, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):  # noqa: ANN001, ANN201
    seed = to_tensor(seed)
    static_assert(seed.dtype.is_int())
    seed = seed.to(uint64)
    c0 = to_tensor(c0)
    c1 = to_tensor(c1)
    c2 = to_tensor(c2)
    c3 = to_tensor(c3)
    if tl.constexpr(c0.dtype.primitive_bitwidth) == 32:
        int_dtype = uint32
        seed_hi = ((seed >> 32) & 0xFFFFFFFF).to(uint32)
        seed_lo = (seed & 0xFFFFFFFF).to(uint32)
    else:
        static_assert(tl.constexpr(c0.dtype.primitive_bitwidth) == 64, "bitwidth not supported in philox")
        int_dtype = uint64
        seed_hi = full((1,), 0, dtype=int_dtype)
        seed_lo = seed
    c0 = c0.to(int_dtype, bitcast=True)
    c1 = c1.to(int_dtype, bitcast=True)
    c2 = c2.to(int_dtype, bitcast=True)
    c3 = c3.to(int_dtype, bitcast=True)
    return philox_impl(c0, c1, c2, c3, seed_lo, seed_hi, n_rounds)


@jit
def randint4x(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):  # noqa: ANN001, ANN201
    """Four blocks of random uint32 for each offset: the offset's low 32 bits are the counter's
    first word and, for a 64-bit offset, its high 32 bits the second (Triton's split)."""
    offset_lo = offset.to(uint32)
    _0 = offset_lo * 0
    if tl.constexpr(offset.dtype.primitive_bitwidth) > 32:
        offset_hi = (offset >> 32).to(uint32)
    else:
        offset_hi = _0
    return philox(seed, offset_lo, offset_hi, _0, _0, n_rounds)


@jit
def randint(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):  # noqa: ANN001, ANN201
    """One block of random uint32 for each offset."""
    ret, _, _, _ = randint4x(seed, offset, n_rounds)
    return ret


@jit
def uint_to_uniform_float(x):  # noqa: ANN001, ANN201
    """Random 32/64-bit integers -> float32 uniform in [0, 1)."""
    if tl.constexpr(x.dtype == uint32) or tl.constexpr(x.dtype == int32):
        x = x.to(int32, bitcast=True)
        scale = 4.6566127342e-10
    else:
        static_assert(tl.constexpr(x.dtype == uint64) or tl.constexpr(x.dtype == int64))
        x = x.to(int64, bitcast=True)
        scale = 1.0842020432385337e-19
    x = where(x < 0, -x - 1, x)
    return x * scale


@jit
def rand(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):  # noqa: ANN001, ANN201
    """float32 uniform in [0, 1) for each offset."""
    source = randint(seed, offset, n_rounds)
    return uint_to_uniform_float(source)


@jit
def rand4x(seed, offsets, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):  # noqa: ANN001, ANN201
    i1, i2, i3, i4 = randint4x(seed, offsets, n_rounds)
    u1 = uint_to_uniform_float(i1)
    u2 = uint_to_uniform_float(i2)
    u3 = uint_to_uniform_float(i3)
    u4 = uint_to_uniform_float(i4)
    return u1, u2, u3, u4


@jit
def pair_uniform_to_normal(u1, u2):  # noqa: ANN001, ANN201
    """Box-Muller: two uniform blocks -> two standard normal blocks."""
    u1 = maximum(1.0e-7, u1)
    th = 6.283185307179586 * u2
    r = sqrt(-2.0 * log(u1))
    return r * cos(th), r * sin(th)


@jit
def randn(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):  # noqa: ANN001, ANN201
    """float32 standard normal for each offset."""
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    u1 = uint_to_uniform_float(i1)
    u2 = uint_to_uniform_float(i2)
    n1, _ = pair_uniform_to_normal(u1, u2)
    return n1


@jit
def randn4x(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):  # noqa: ANN001, ANN201
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(u1, u2)
    n3, n4 = pair_uniform_to_normal(u3, u4)
    return n1, n2, n3, n4
