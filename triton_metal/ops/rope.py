"""`rope` (as `mx.fast.rope`): rotary position embeddings, forward and backward.

`x` has shape `(..., L, D)`: positions along axis -2, features along the last axis. Feature pairs
among the first `dims` rotate by `angle = (offset + l) * scale * inv_freq[i]`, with
`inv_freq[i] = base ** (-2 i / dims)` or `1 / freqs[i]`; pairs are `(x[2i], x[2i+1])` when
`traditional`, else `(x[i], x[i + dims/2])`; features from `dims` on pass through. A program
rotates the rows of one position in several sequences (the leading axes flattened: heads,
batch; `seqs_per_program`, up to 32), a 2-D tile of rows by feature pairs whose angles are one
row: each thread computes the sin and cos of its feature pairs once for all its rows. Angles in
float32; their sin and cos are Metal's fast forms (libdevice's `fast_sinf`/`fast_cosf`), as in
MLX's own rope kernel (`metal::fast::cos`/`sin`): the accurate forms made the kernel bound by
that math rather than by memory.

Backward: the rotation by `-angle` of the cotangent (`SIGN` a run-time argument, so the forward
and the backward of `x` share one compiled variant). With `freqs`, its gradient is
`sum over rows of dL/dangle * position * (-1 / freqs**2)`: the kernel writes each row's
`dL/dangle * position` and MLX sums them.
"""

from __future__ import annotations

import math
from typing import Any

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.language.extra import libdevice

from . import _common as c
from ._common import next_pow2


@triton.jit
def _angles(f_ptr, l, half, dims, offset, scale, log2_base, HAS_FREQS: tl.constexpr,
            HALF_BLOCK: tl.constexpr):
    # l: the program's position (a scalar); the angles (1, HALF_BLOCK) and the scaled position
    i = tl.arange(0, HALF_BLOCK)[None, :]
    mask = i < half
    if HAS_FREQS:
        inv = 1.0 / tl.load(f_ptr + i, mask=mask, other=1.0).to(tl.float32)
    else:
        inv = tl.exp2(-(2.0 * i.to(tl.float32) / dims) * log2_base)
    pos = (offset + l).to(tl.float32) * scale
    return pos * inv, pos


@triton.jit
def _rope_kernel(x_ptr, f_ptr, y_ptr, dx_ptr, df_ptr, n_seqs, L, D, dims, offset, scale, log2_base,
                 sign, TRAD: tl.constexpr, HAS_FREQS: tl.constexpr, FREQ_GRAD: tl.constexpr,
                 SEQS: tl.constexpr, HALF_BLOCK: tl.constexpr, REST_BLOCK: tl.constexpr):
    # y = R(sign * angle) x for the rows of one position l in SEQS sequences (heads); with
    # FREQ_GRAD, x is the cotangent, y_ptr the forward input, the result goes to dx_ptr and each
    # row's dL/dangle * position to df_ptr
    pid = tl.program_id(0)
    l = pid % L
    seqs = (pid // L) * SEQS + tl.arange(0, SEQS)
    row_mask = (seqs < n_seqs)[:, None]
    rows = (seqs.to(tl.int64) * L + l)[:, None]
    half = dims // 2
    i = tl.arange(0, HALF_BLOCK)[None, :]
    mask = row_mask & (i < half)
    # one position: the angles are a (1, HALF_BLOCK) row, their sin and cos computed once for
    # all the program's sequences
    angle, pos = _angles(f_ptr, l, half, dims, offset, scale, log2_base, HAS_FREQS, HALF_BLOCK)
    cos = libdevice.fast_cosf(angle)
    sin = libdevice.fast_sinf(angle) * sign
    if TRAD:
        i1 = 2 * i
        i2 = 2 * i + 1
    else:
        i1 = i
        i2 = i + half
    base = rows * D
    x1 = tl.load(x_ptr + base + i1, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptr + base + i2, mask=mask, other=0.0).to(tl.float32)
    out = dx_ptr if FREQ_GRAD else y_ptr
    tl.store(out + base + i1, x1 * cos - x2 * sin, mask=mask)
    tl.store(out + base + i2, x1 * sin + x2 * cos, mask=mask)
    if FREQ_GRAD:
        # x1, x2: the cotangent; a1, a2: the forward input; sin here is sin(-angle)
        a1 = tl.load(y_ptr + base + i1, mask=mask, other=0.0).to(tl.float32)
        a2 = tl.load(y_ptr + base + i2, mask=mask, other=0.0).to(tl.float32)
        d_angle = x1 * (-a1 * (-sin) - a2 * cos) + x2 * (a1 * cos - a2 * (-sin))
        tl.store(df_ptr + rows * half + i, d_angle * pos, mask=mask)
    r = tl.arange(0, REST_BLOCK)[None, :]
    for off in range(dims, D, REST_BLOCK):
        rmask = row_mask & (off + r < D)
        tl.store(out + base + off + r, tl.load(x_ptr + base + off + r, mask=rmask), mask=rmask)


SEQS_PER_PROGRAM = 32
"""Sequences (heads) per program: the rows of one position in up to 32 sequences share its
angles, so each thread computes a sin and a cos per feature pair it owns once for several rows
(rotation is cheap, the transcendental functions are not)."""


PAIRS_PER_THREAD = 16
"""Feature pairs a thread rotates (the warps are sized from it, 1 to 4): several rows of a
thread's columns, each column's sin and cos computed once."""


def seqs_per_program(n_seqs: int) -> int:
    """Sequences per program for `n_seqs` sequences (a power of two, at most
    `SEQS_PER_PROGRAM`)."""
    return max(1, min(SEQS_PER_PROGRAM, next_pow2(n_seqs)))


def _launch(x: Any, dims: int, traditional: bool, base: float | None, scale: float, offset: int,
            freqs: Any, sign: float, primal: Any = None) -> tuple[Any, Any]:
    D = x.shape[-1]
    L = x.shape[-2]
    rows = c.rows_of(x.shape)
    half = dims // 2
    out = c.zeros(x.shape, x.dtype)
    freq_grad = primal is not None and freqs is not None
    df = c.zeros((rows, half), c.mx().float32) if freq_grad else None
    if x.size:
        log2_base = math.log2(base) if base is not None else 0.0
        half_block = max(16, next_pow2(half))
        n_seqs = rows // L
        per_program = seqs_per_program(n_seqs)
        _rope_kernel[(L * triton.cdiv(n_seqs, per_program),)](
            x, x if freqs is None else freqs, primal if freq_grad else out,
            out if freq_grad else x, df if freq_grad else x,
            n_seqs, L, D, dims, offset, scale, log2_base, sign,
            TRAD=traditional, HAS_FREQS=freqs is not None, FREQ_GRAD=freq_grad, SEQS=per_program,
            HALF_BLOCK=half_block, REST_BLOCK=max(16, min(2048 // per_program, next_pow2(D - dims))),
            num_warps=max(1, min(4, per_program * half_block // (32 * PAIRS_PER_THREAD))))
    return out, df


@triton.op(name="rope")
def _rope_op(x: Any, freqs: Any, dims: int, traditional: bool, base: float | None, scale: float,
             offset: int) -> Any:
    return _launch(x, dims, traditional, base, scale, offset, freqs, 1.0)[0]


@_rope_op.backward
def _rope_vjp(primals: Any, cotangents: Any, outputs: Any) -> Any:
    x, freqs, dims, traditional, base, scale, offset = primals
    dy = c.first(cotangents).astype(x.dtype)
    dx, df = _launch(dy, dims, traditional, base, scale, offset, freqs, -1.0, primal=x)
    if freqs is None:
        return (dx,)
    f = freqs.astype(c.mx().float32)
    return (dx, (df.sum(axis=0) * (-1.0 / (f * f))).astype(freqs.dtype))


def rope(x: Any, dims: int, *, traditional: bool, base: float | None, scale: float, offset: int,
         freqs: Any = None) -> Any:
    """Rotary position embedding, as `mx.fast.rope(x, dims, traditional=..., base=...,
    scale=..., offset=..., freqs=...)`.

    `x`: float32/float16/bfloat16 of shape `(..., L, D)` with at least 3 dimensions (as MLX);
    `dims`: an even number of leading features to rotate (<= D); `base` or `freqs` (shape
    `(dims // 2,)`, exactly one of them); `offset`: an int (the first position). Differentiable
    in `x` and `freqs`."""
    name = "rope"
    c.check_array(name, "x", x, min_ndim=3)
    D = x.shape[-1]
    dims = c.check_int(name, "dims", dims, low=2)
    if dims % 2 or dims > D:
        raise c.fail(name, "dims", f"must be even and at most the last axis ({D}), got {dims}")
    if not isinstance(traditional, bool):
        raise c.fail(name, "traditional", f"expected a bool, got {type(traditional).__name__}")
    scale = c.check_float(name, "scale", scale)
    offset = c.check_int(name, "offset", offset)
    if (base is None) == (freqs is None):
        raise c.fail(name, "freqs", "exactly one of base and freqs must be given")
    if base is not None:
        base = c.check_float(name, "base", base)
        if base <= 0:
            raise c.fail(name, "base", f"must be positive, got {base}")
    if freqs is not None:
        c.check_array(name, "freqs", freqs, dtypes=("float32",))
        if tuple(freqs.shape) != (dims // 2,):
            raise c.fail(name, "freqs", f"expected shape ({dims // 2},), got {tuple(freqs.shape)}")
    return _rope_op(x, freqs, dims, traditional, base, scale, offset)
