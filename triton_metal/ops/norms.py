"""`rms_norm` and `layer_norm` (as `mx.fast.rms_norm` / `mx.fast.layer_norm`), forward and backward.

Forward: one program per row, statistics in float32, the row held in registers when it fits
(`_rows.row_block`), else streamed twice (statistics, then the normalised row). It also writes
each row's float32 (mean, rstd) (8 bytes a row) for the backward.

Backward: a persistent grid (a few programs per GPU core and at least 16 rows a program where
that leaves one a core, `_common.persistent_programs`) walks
the rows, each program one run of consecutive rows or its rows strided over the programs (an
RMS norm's default, reading ahead; `_bwd_default`); each program reads its rows' saved (mean,
rstd) rather than recomputing them (two block reductions fewer per row, one after the other:
the statistics' reductions were half of a row's reduction chain; the layer norm's two sums of
the gradient share one), writes `dx`, and accumulates the weight and bias gradients of its rows
in registers, written once as a float32 partial per program. `AHEAD` reads each program's next
row while it reduces and stores the current one, where the registers for it leave the
program's occupancy alone. A row that fills its block (n a power of two) takes no masks
(`_rows.row_mask`), and the weight stays in its own dtype across the rows. A second kernel
(`_sum_partials`, tuned over its tile; by default a tile of 4096 whose rows are the largest power
of two of partials that the partials fill, `_prune_sum`) sums the partials in float32 and stores
both gradients in the parameters' dtype: one launch where an MLX `sum` and `astype` per gradient
took four. (Summing them inside the first kernel, by the last
program to finish, needs an arrival counter that starts at zero, and a launch of MLX arrays
cannot keep one between calls: its outputs are fresh buffers, and MLX's `init_value` that would
zero the counter fills `dx` as well. Through the GPU proxy a fill of a 4096 x 4096 half array
took 13.7 us where the partials' sum takes 7.5 us: docs/ops.md, "Fifth round".) Rows too long
for registers take three kernels: `dx` and each row's (mean, rstd) one program per row, then the
weight and bias gradients a program per column block and run of rows, into float32 partials that
`_sum_partials` adds up.

    xhat = (x - mean) * rstd          (rms_norm: mean = 0)
    dxhat = dy * w
    dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))     (rms_norm: no mean(dxhat))
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache, partial
from typing import Any

import numpy as np

import triton_metal as triton
import triton_metal.language as tl

from . import _common as c
from ._rows import (ROW_TUNING, WARPS, default_warps, fills_block, prune_row_configs, row_block, row_configs,
                    row_mask)

@triton.jit
def _row_shift(row_ptr, n_cols, RMS, BLOCK: tl.constexpr):
    """A value near a streamed row's mean, its first block's (0 for RMSNorm), taken from x before
    the sums of x and x*x: E[x*x] - mean*mean in float32 cancels to nothing when the mean is
    large against the spread (a row of 1e4 + N(0, 1) kept no digit of its variance)."""
    offs = tl.arange(0, BLOCK)
    first = tl.load(row_ptr + offs, mask=offs < n_cols, other=0.0).to(tl.float32)
    return tl.where(RMS != 0, 0.0, tl.sum(first, 0) / tl.minimum(n_cols, BLOCK))


INF = tl.constexpr(float("inf"))


@lru_cache(maxsize=256)
def _reciprocal(n: int) -> float:
    """The float32 nearest 1/n (the double 1/n rounded again to float32 can miss it; 1/n is never
    halfway between two float32 values, so the nearest is unique)."""
    near = np.float32(1.0 / n)
    return float(min((np.nextafter(near, np.float32(0)), near, np.nextafter(near, np.float32(1))),
                     key=lambda v: abs(Fraction(float(v)) - Fraction(1, n))))


@triton.jit
def _mean_rn(total, n_cols, inv_n):
    """total / n_cols correctly rounded, without a division: with inv_n the float32 nearest
    1/n_cols (`_reciprocal`), q = total * inv_n is within an ulp of the quotient, the residual
    total - q * n_cols is exact in one fma, and q + residual * inv_n in one more is the quotient
    correctly rounded (Markstein's theorem, for a quotient that neither overflows nor is
    subnormal). An infinite or NaN total gives q, as a division would. Through the GPU proxy a
    correctly rounded division took a thread 5 more registers and the row 8% longer."""
    q = total * inv_n
    mean = tl.fma(tl.fma(-q, n_cols + 0.0, total), inv_n, q)
    return tl.where(tl.abs(q) < INF, mean, q)


@triton.jit
def _row_moments(s1, s2, n_cols, eps, RMS):
    """A row's mean (0 for RMSNorm) and 1/std from its running sums of x and x*x (of x less a
    shift: the mean returned is then the shifted row's)."""
    n = n_cols + 0.0  # a float, also where n_cols is a specialized int
    if RMS:
        mean = 0.0
        var = tl.div_rn(tl.sum(s2, 0), n)
    else:
        mean = tl.div_rn(tl.sum(s1, 0), n)
        var = tl.maximum(tl.div_rn(tl.sum(s2, 0), n) - mean * mean, 0.0)
    return mean, tl.rsqrt(var + eps)


# tuned per norm: RMS and layer norm share the kernel (`RMS` is a run-time branch) but not its
# best config (through the GPU proxy at 512 x 16384: 16 warps for RMS, 8 for layer norm)
@triton.autotune(configs=row_configs(), key=["n_cols", "ONE_PASS", "RMS", "HAS_W", "HAS_B"],
                 prune_configs_by=ROW_TUNING)
@triton.jit
def _norm_fwd(x_ptr, w_ptr, b_ptr, y_ptr, stats_ptr, n_cols, inv_n, eps, RMS, HAS_W: tl.constexpr,
              HAS_B: tl.constexpr, BLOCK: tl.constexpr, ONE_PASS: tl.constexpr, EVEN: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * n_cols
    y_row = y_ptr + row * n_cols
    offs = tl.arange(0, BLOCK)
    if ONE_PASS:
        mask = row_mask(offs, n_cols, BLOCK, EVEN)
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        if RMS:
            mean = 0.0
            xc = x
        else:
            # correctly rounded: a mean one ulp off is the whole of x - mean in a constant row,
            # which rstd then multiplies by up to 1 / sqrt(eps)
            mean = _mean_rn(tl.sum(x, 0), n_cols, inv_n)
            xc = tl.where(mask, x - mean, 0.0)
        rstd = tl.rsqrt(tl.sum(xc * xc, 0) / n_cols + eps)
        y = xc * rstd
        if HAS_W:
            y = y * tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        if HAS_B:
            y = y + tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + offs, y, mask=mask)
    else:
        s1 = tl.zeros([BLOCK], tl.float32)
        s2 = tl.zeros([BLOCK], tl.float32)
        shift = _row_shift(x_row, n_cols, RMS, BLOCK)
        for off in range(0, n_cols, BLOCK):
            mask = off + offs < n_cols
            x = tl.load(x_row + off + offs, mask=mask, other=0.0).to(tl.float32)
            xs = tl.where(mask, x - shift, 0.0)
            s1 += xs
            s2 += xs * xs
        mean, rstd = _row_moments(s1, s2, n_cols, eps, RMS)
        mean += shift
        for off in range(0, n_cols, BLOCK):
            mask = off + offs < n_cols
            x = tl.load(x_row + off + offs, mask=mask, other=0.0).to(tl.float32)
            y = (x - mean) * rstd
            if HAS_W:
                y = y * tl.load(w_ptr + off + offs, mask=mask, other=0.0).to(tl.float32)
            if HAS_B:
                y = y + tl.load(b_ptr + off + offs, mask=mask, other=0.0).to(tl.float32)
            tl.store(y_row + off + offs, y, mask=mask)
    # the row's (mean, rstd) for the backward (mean 0 for RMSNorm)
    pair = tl.arange(0, 2)
    tl.store(stats_ptr + row * 2 + pair, tl.where(pair == 0, mean, rstd))


@triton.jit
def _add_pairs(a, b, c, d):
    return a + c, b + d


def _bwd_default(block: int, rms: bool, ahead: bool = True, dtype: str = "") -> tuple[int, int, int]:
    """The backward's default (CONSECUTIVE, AHEAD, num_warps), from the GPU proxy (docs/ops.md,
    "Ninth round", "The layer-norm backward's default at 4096"): an RMS norm reads the next row
    ahead, its rows strided over the programs, on a warp per 256 elements (8 a thread;
    1.17-1.24x faster than without reading ahead at 8192 x 2048, 4096 x 4096 and 2048 x 8192).
    A layer norm, which holds twice the accumulators, reads ahead from rows of 8192 (1.14x
    there), and at 4096 in float16 on 8 warps, its rows strided (1.2x; bfloat16, whose reads
    ahead were 1.07x slower there, and other dtypes do not); else a run of consecutive rows a
    program on 16 warps from rows of 4096 (the fastest or within 1% at 4096 x 4096), the row ops'
    width below: the form where reading ahead does not fit (`ahead`). `dtype`: of `dy`."""
    if ahead and rms:
        return 0, 1, max(1, min(16, block // 256))
    if ahead and block >= 8192:
        return 1, 1, 16
    if ahead and block == 4096 and dtype == "float16":
        return 0, 1, 8
    return 1, 0, 16 if block >= 4096 else default_warps(block)


def _prune_bwd(configs: list[Any], named_args: dict[str, Any], **kwargs: Any) -> list[Any]:
    # a thread holds BLOCK / threads elements of each of x and dy (twice that reading ahead):
    # at most 32 (else registers spill), and no more threads than a row's elements
    block = int(kwargs.get("BLOCK", named_args.get("BLOCK", 1024)))

    def fits(cf: Any) -> bool:
        threads = 32 * cf.num_warps
        return threads <= max(32, block) and (1 + cf.kwargs["AHEAD"]) * block // threads <= 32

    fitting = [cf for cf in configs if fits(cf)] or [min(configs, key=lambda cf: cf.num_warps)]
    rms = bool(int(named_args.get("RMS", kwargs.get("RMS", 0))))
    dy = named_args.get("dy_ptr")
    default = _bwd_default(block, rms, dtype=c.dtype_name(dy) if dy is not None else "")
    if default not in map(_bwd_shape, fitting):
        default = _bwd_default(block, rms, ahead=False)
    fitting.sort(key=lambda cf: _bwd_shape(cf) != default)
    return c.first_or_all(fitting)


def _bwd_shape(cf: Any) -> tuple[int, int, int]:
    return cf.kwargs["CONSECUTIVE"], cf.kwargs["AHEAD"], cf.num_warps


_BWD_CONFIGS = [triton.Config({"CONSECUTIVE": r, "AHEAD": a}, num_warps=w)
                for r in (0, 1) for a in (0, 1) for w in WARPS]


# the key names the norm, the weight and the bias: RMS and layer norms of one row length differ
# in registers (one reduction or two, one gradient accumulator or two), which decides whether
# reading ahead pays. RMS is a constexpr, as in Triton's textbook backward: a layer norm's
# kernel holds no RMS branch (an argument equal to 1 is specialized, 0 was not)
@triton.autotune(configs=_BWD_CONFIGS, key=["n_cols", "ONE_PASS", "RMS", "HAS_W", "HAS_B"],
                 prune_configs_by={"early_config_prune": _prune_bwd})
@triton.jit
def _norm_bwd(x_ptr, w_ptr, dy_ptr, stats_ptr, dx_ptr, dw_ptr, db_ptr, n_rows, n_cols,
              RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, BLOCK: tl.constexpr,
              ONE_PASS: tl.constexpr, EVEN: tl.constexpr, AHEAD: tl.constexpr,
              CONSECUTIVE: tl.constexpr):
    pid = tl.program_id(0)
    if CONSECUTIVE:
        # one run of consecutive rows a program (ceil(rows / programs) of them), as Triton's
        # textbook backward takes its rows: a program's loads walk one contiguous stretch
        per = tl.cdiv(n_rows, tl.num_programs(0))
        first = pid * per
        end = tl.minimum(first + per, n_rows)
        step = 1
    else:
        # every programs-th row, from the program's id
        first = pid
        end = n_rows
        step = tl.num_programs(0)
    offs = tl.arange(0, BLOCK)
    mask = row_mask(offs, n_cols, BLOCK, EVEN)
    if HAS_W:
        # kept in its own dtype across the rows, widened where used: 16-bit weights take half
        # the registers of float32 ones, which rows of 16384 held in registers need
        w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    dw_acc = tl.zeros([BLOCK], tl.float32)
    db_acc = tl.zeros([BLOCK], tl.float32)
    if AHEAD:
        # the first row's x and dy, in their own dtype (half the registers of float32)
        start = tl.cast(first, tl.int64) * n_cols
        x_next = tl.load(x_ptr + start + offs, mask=mask & (first < end), other=0.0)
        dy_next = tl.load(dy_ptr + start + offs, mask=mask & (first < end), other=0.0)
    for row in tl.range(first, end, step):
        base = tl.cast(row, tl.int64) * n_cols  # a loop variable: an int when interpreted
        if AHEAD:
            # the next row's loads go out before this row's reductions and stores, so they are
            # in flight while the program waits on its barriers
            x = x_next.to(tl.float32)
            dy = dy_next.to(tl.float32)
            ahead = mask & (row + step < end)
            x_next = tl.load(x_ptr + base + step * n_cols + offs, mask=ahead, other=0.0)
            dy_next = tl.load(dy_ptr + base + step * n_cols + offs, mask=ahead, other=0.0)
        else:
            x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
            dy = tl.load(dy_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        # the forward's statistics: no reduction before the two of the gradient
        mean = tl.load(stats_ptr + row * 2)
        rstd = tl.load(stats_ptr + row * 2 + 1)
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        if HAS_W:
            dxhat = dy * w.to(tl.float32)
            dw_acc += dy * xhat
        else:
            dxhat = dy
        if HAS_B:
            db_acc += dy
        if RMS:
            dx = rstd * (dxhat - xhat * (tl.sum(dxhat * xhat, 0) / n_cols))
        else:
            # both of the row's sums in one reduction: one exchange through threadgroup memory
            # a row (two barriers) where two `tl.sum`s took three
            s_gx, s_g = tl.reduce((dxhat * xhat, dxhat), 0, _add_pairs)
            dx = rstd * (dxhat - s_g / n_cols - xhat * (s_gx / n_cols))
        tl.store(dx_ptr + base + offs, dx, mask=mask)
    if HAS_W:
        tl.store(dw_ptr + pid * n_cols + offs, dw_acc, mask=mask)
    if HAS_B:
        tl.store(db_ptr + pid * n_cols + offs, db_acc, mask=mask)


# the streamed backward's dx (rows always streamed) on 8 warps: 1.0-1.07x faster through the GPU
# proxy than on 16 (the streamed rows' default elsewhere) at 1024 rows of 16384 and 32768 in both
# norms (docs/ops.md, "Ninth round")
_prune_bwd_long = partial(prune_row_configs, streamed_warps=8, ONE_PASS=False)


@triton.autotune(configs=row_configs(), key=["n_cols"],
                 prune_configs_by={"early_config_prune": _prune_bwd_long})
@triton.jit
def _norm_bwd_long(x_ptr, w_ptr, dy_ptr, dx_ptr, stats_ptr, n_cols, eps, RMS,
                   HAS_W: tl.constexpr, BLOCK: tl.constexpr, ONE_PASS: tl.constexpr):
    # rows too long for registers: dx and the row's (mean, rstd), one program per row
    row = tl.program_id(0).to(tl.int64)
    base = row * n_cols
    offs = tl.arange(0, BLOCK)
    s1 = tl.zeros([BLOCK], tl.float32)
    s2 = tl.zeros([BLOCK], tl.float32)
    sg = tl.zeros([BLOCK], tl.float32)
    sgx = tl.zeros([BLOCK], tl.float32)
    shift = _row_shift(x_ptr + base, n_cols, RMS, BLOCK)
    for off in range(0, n_cols, BLOCK):
        mask = off + offs < n_cols
        x = tl.load(x_ptr + base + off + offs, mask=mask, other=0.0).to(tl.float32)
        g = tl.load(dy_ptr + base + off + offs, mask=mask, other=0.0).to(tl.float32)
        if HAS_W:
            g = g * tl.load(w_ptr + off + offs, mask=mask, other=0.0).to(tl.float32)
        xs = tl.where(mask, x - shift, 0.0)
        s1 += xs
        s2 += xs * xs
        sg += g
        sgx += g * xs
    mean, rstd = _row_moments(s1, s2, n_cols, eps, RMS)
    mean_g = tl.sum(sg, 0) / n_cols
    # mean(dxhat * xhat) = rstd * (mean(dxhat * xs) - mean(xs) * mean(dxhat)), xs = x - shift
    inner = rstd * (tl.sum(sgx, 0) / n_cols - mean * mean_g)
    mean += shift
    for off in range(0, n_cols, BLOCK):
        mask = off + offs < n_cols
        x = tl.load(x_ptr + base + off + offs, mask=mask, other=0.0).to(tl.float32)
        dxhat = tl.load(dy_ptr + base + off + offs, mask=mask, other=0.0).to(tl.float32)
        if HAS_W:
            dxhat = dxhat * tl.load(w_ptr + off + offs, mask=mask, other=0.0).to(tl.float32)
        xhat = (x - mean) * rstd
        if RMS:
            dx = rstd * (dxhat - xhat * inner)
        else:
            dx = rstd * (dxhat - mean_g - xhat * inner)
        tl.store(dx_ptr + base + off + offs, dx, mask=mask)
    pair = tl.arange(0, 2)
    tl.store(stats_ptr + row * 2 + pair, tl.where(pair == 0, mean, rstd))


@triton.jit
def _norm_dw_long(x_ptr, dy_ptr, stats_ptr, dw_ptr, db_ptr, n_rows, n_cols, HAS_W: tl.constexpr,
                  HAS_B: tl.constexpr, BLOCK: tl.constexpr):
    # weight and bias gradients of long rows: program (column block, run of rows) sums its run
    # down its columns into float32 partials, one row of partials a run, which `_sum_partials`
    # adds up. (A program a column block down every row gave a GPU 8 programs for rows of
    # 16384: 1 ms for 1024 rows through the GPU proxy, docs/ops.md, "Ninth round")
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_cols
    per = tl.cdiv(n_rows, tl.num_programs(1))
    first = tl.program_id(1) * per
    dw = tl.zeros([BLOCK], tl.float32)
    db = tl.zeros([BLOCK], tl.float32)
    for row in range(first, tl.minimum(first + per, n_rows)):
        base = tl.cast(row, tl.int64) * n_cols  # a loop variable: an int when interpreted
        mean = tl.load(stats_ptr + row * 2)
        rstd = tl.load(stats_ptr + row * 2 + 1)
        x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
        dw += dy * (x - mean) * rstd
        db += dy
    part = tl.program_id(1).to(tl.int64) * n_cols + offs
    if HAS_W:
        tl.store(dw_ptr + part, dw, mask=mask)
    if HAS_B:
        tl.store(db_ptr + part, db, mask=mask)


# tiles of 4096 partials by columns take a persistent grid's partials in one or a few steps,
# every load of a column block issued at once
_SUM_CONFIGS = [triton.Config({"PARTS": p, "COLS": k}, num_warps=w) for p, k, w in (
    (256, 16, 8), (512, 8, 8), (128, 32, 8), (64, 64, 8), (256, 8, 4), (128, 16, 4), (32, 16, 4),
    (64, 32, 8), (64, 16, 4), (32, 32, 4), (64, 8, 2), (32, 64, 8), (32, 128, 8))]


def _prune_sum(configs: list[Any], named_args: dict[str, Any], **kwargs: Any) -> list[Any]:
    # the default first: a tile of 4096 on 8 warps whose rows are the largest power of two of
    # partials that they do not outnumber (32 to 512), so no step but the last is masked: the
    # fastest measured through the GPU proxy for 132, 256 and 512 partials (docs/ops.md,
    # "Eleventh round")
    parts = max(32, min(512, 1 << (max(1, int(named_args.get("n_parts", 256))).bit_length() - 1)))
    ordered = sorted(configs, key=lambda cf: (cf.kwargs["PARTS"], cf.kwargs["COLS"], cf.num_warps)
                     != (parts, 4096 // parts, 8))
    return c.first_or_all(ordered)


@triton.autotune(configs=_SUM_CONFIGS, key=["n_parts", "n_cols"],
                 prune_configs_by={"early_config_prune": _prune_sum})
@triton.jit
def _sum_partials(dw_part_ptr, db_part_ptr, dw_ptr, db_ptr, n_parts, n_cols, HAS_W: tl.constexpr,
                  HAS_B: tl.constexpr, PARTS: tl.constexpr, COLS: tl.constexpr):
    # the weight and bias gradients from the persistent programs' float32 partials: one program
    # per column block sums it down every partial, in float32, and stores the parameter's dtype
    cols = tl.program_id(0) * COLS + tl.arange(0, COLS)
    col_mask = cols < n_cols
    parts = tl.arange(0, PARTS)
    dw = tl.zeros([PARTS, COLS], tl.float32)
    db = tl.zeros([PARTS, COLS], tl.float32)
    for first in range(0, n_parts, PARTS):
        rows = first + parts
        mask = (rows[:, None] < n_parts) & col_mask[None, :]
        offs = rows[:, None] * n_cols + cols[None, :]
        if HAS_W:
            dw += tl.load(dw_part_ptr + offs, mask=mask, other=0.0)
        if HAS_B:
            db += tl.load(db_part_ptr + offs, mask=mask, other=0.0)
    if HAS_W:
        tl.store(dw_ptr + cols, tl.sum(dw, 0).to(dw_ptr.dtype.element_ty), mask=col_mask)
    if HAS_B:
        tl.store(db_ptr + cols, tl.sum(db, 0).to(db_ptr.dtype.element_ty), mask=col_mask)


def _forward(x: Any, w: Any, b: Any, eps: float, rms: bool) -> tuple[Any, Any]:
    n = x.shape[-1]
    rows = c.rows_of(x.shape)
    y = c.zeros(x.shape, x.dtype)
    stats = c.zeros((rows, 2), c.mx().float32)
    if x.size:
        block, one_pass = row_block(n)
        _norm_fwd[(rows,)](
            x, x if w is None else w, x if b is None else b, y, stats, n, _reciprocal(n), eps,
            int(rms), HAS_W=w is not None, HAS_B=b is not None, BLOCK=block, ONE_PASS=one_pass,
            EVEN=fills_block(n))
    return y, stats


def _partials(parts: int, n: int) -> tuple[Any, Any]:
    """The weight's and the bias's float32 partial gradients, `parts` rows of `n`."""
    f32 = c.mx().float32
    return c.zeros((parts, n), f32), c.zeros((parts, n), f32)


def _backward(x: Any, w: Any, b: Any, dy: Any, stats: Any, eps: float,
              rms: bool) -> tuple[Any, Any, Any]:
    m = c.mx()
    n = x.shape[-1]
    rows = c.rows_of(x.shape)
    dx = c.zeros(x.shape, x.dtype)
    block, one_pass = row_block(n)
    programs = c.persistent_programs(rows)
    dy = dy.astype(x.dtype)
    wp = x if w is None else w
    has_w, has_b = w is not None, b is not None
    dw_out = c.zeros((n,), w.dtype) if has_w else None
    db_out = c.zeros((n,), b.dtype) if has_b else None
    if one_pass:
        parts = programs
        dw, db = _partials(parts, n)
        if x.size:
            _norm_bwd[(programs,)](x, wp, dy, stats, dx, dw, db, rows, n, int(rms),
                                   HAS_W=has_w, HAS_B=has_b, BLOCK=block, ONE_PASS=True,
                                   EVEN=fills_block(n))
    else:
        # recomputed with the sums the gradient needs, in the same pass over the row
        long_stats = c.zeros((rows, 2), m.float32)
        _norm_bwd_long[(rows,)](x, wp, dy, dx, long_stats, n, eps, int(rms), HAS_W=has_w,
                                BLOCK=block, ONE_PASS=False)
        # runs of rows a column block, so that the grid has about a persistent grid's programs
        col_blocks = triton.cdiv(n, block)
        parts = max(1, min(rows, triton.cdiv(programs, col_blocks)))
        dw, db = _partials(parts, n)
        if (has_w or has_b) and x.size:
            _norm_dw_long[(col_blocks, parts)](x, dy, long_stats, dw, db, rows, n, HAS_W=has_w,
                                               HAS_B=has_b, BLOCK=block, num_warps=4)
    if (has_w or has_b) and n:
        _sum_partials[lambda meta: (triton.cdiv(n, meta["COLS"]),)](
            dw, db, dx if dw_out is None else dw_out, dx if db_out is None else db_out,
            parts if x.size else 0, n, HAS_W=has_w, HAS_B=has_b)
    return dx, dw_out, db_out


@triton.op(name="rms_norm")
def _rms_norm_op(x: Any, weight: Any, eps: float) -> Any:
    # (y, float32 (mean, rstd) per row for the backward); the caller keeps y
    return _forward(x, weight, None, eps, True)


@_rms_norm_op.backward
def _rms_norm_vjp(primals: Any, cotangents: Any, outputs: Any) -> Any:
    x, w, eps = primals
    dx, dw, _ = _backward(x, w, None, c.first(cotangents), outputs[1], eps, True)
    return (dx,) if w is None else (dx, dw)


@triton.op(name="layer_norm")
def _layer_norm_op(x: Any, weight: Any, bias: Any, eps: float) -> Any:
    return _forward(x, weight, bias, eps, False)


@_layer_norm_op.backward
def _layer_norm_vjp(primals: Any, cotangents: Any, outputs: Any) -> Any:
    x, w, b, eps = primals
    dx, dw, db = _backward(x, w, b, c.first(cotangents), outputs[1], eps, False)
    return (dx,) + tuple(g for g in (dw, db) if g is not None)


def _check_affine(op_name: str, arg: str, a: Any, x: Any) -> None:
    if a is None:
        return
    c.check_array(op_name, arg, a)
    if tuple(a.shape) != (x.shape[-1],):
        raise c.fail(op_name, arg, f"expected shape ({x.shape[-1]},) to match the last axis of x "
                     f"{tuple(x.shape)}, got {tuple(a.shape)}")
    c.check_same_dtype(op_name, arg, a, "x", x)


def rms_norm(x: Any, weight: Any, eps: float) -> Any:
    """`x / sqrt(mean(x**2, -1) + eps) * weight`, as `mx.fast.rms_norm(x, weight, eps)`.

    `x`: float32, float16 or bfloat16, at least 1-D; `weight`: shape `(x.shape[-1],)` and `x`'s
    dtype, or None. Statistics in float32; differentiable in `x` and `weight`."""
    c.check_array("rms_norm", "x", x)
    _check_affine("rms_norm", "weight", weight, x)
    return _rms_norm_op(x, weight, c.check_float("rms_norm", "eps", eps))[0]


def layer_norm(x: Any, weight: Any, bias: Any, eps: float) -> Any:
    """`(x - mean) / sqrt(var + eps) * weight + bias` over the last axis, as
    `mx.fast.layer_norm(x, weight, bias, eps)`; `weight` and `bias` may be None.

    Dtypes and gradients as `rms_norm` (differentiable in `x`, `weight` and `bias`)."""
    c.check_array("layer_norm", "x", x)
    _check_affine("layer_norm", "weight", weight, x)
    _check_affine("layer_norm", "bias", bias, x)
    return _layer_norm_op(x, weight, bias, c.check_float("layer_norm", "eps", eps))[0]
