"""`cross_entropy` (as `mlx.nn.losses.cross_entropy`) and `entropy`, fused, forward and backward.

One program per row streams the logits once. A block is seen as runs of 16 bytes, one run a
thread: each run keeps a running maximum `m` and sum `s = sum(exp(x - m))` (the online
log-sum-exp), and what the loss needs besides: the row's sum (only with label smoothing, a
compile-time flag), `sum(x * t)` for probability targets, or `sum(exp(x - m) * x)` for the
entropy. A step takes the run's new maximum in the thread first (its elements are the
thread's own), rescales the run's sums once by `exp(m_old - m_new)`, then costs one `exp`, an
add and (entropy) a multiply-add an element. Whole blocks load without a mask; the tail is one
masked block. With `z = x - max(x)` (MLX stops the gradient at the maximum):

    class targets:        loss = lse(z) - (1 - ls) * z[t] - ls * mean(z)
    probability targets:  loss = lse(z) - (1 - ls) * sum(z * t) - ls * mean(z)
    entropy:              H = lse(x) - sum(softmax(x) * x)

The forward also writes two float32 statistics per row: the log-sum-exp `lse(x)`, and
`sum(softmax(x) * x)` for the entropy or the maximum otherwise. The backward (a second kernel,
one pass over the logits per row) takes `softmax(x) = exp(x - lse(x))` from them instead of
streaming the row twice:

    d logits = g * (softmax(x) - (1 - ls) * onehot(t) - ls / n)     (t: the probabilities)
    d targets = -g * (1 - ls) * z                                    (probability targets)
    d logits = -g * softmax(x) * (x - sum(softmax(x) * x))          (entropy)

Per-row losses are written in the logits' dtype; `weights` and the reduction are MLX ops on
them. A class index outside `[0, n)` gives NaN for its row (it cannot be checked without
reading the targets, which a launch never does).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import triton_metal as triton
import triton_metal.language as tl

from . import _common as c
from ._common import next_pow2
from ._rows import ROW_TUNING, prune_row_configs, row_configs

NEG_INF = tl.constexpr(float("-inf"))
MAX_BLOCK = 4096
CLASS, PROBS, ENTROPY = 0, 1, 2


@triton.jit
def _stats_step(x_row, t_row, off, offs, n_cols, m, s, sx, extra, st, MODE: tl.constexpr,
                SMOOTH: tl.constexpr, MASKED: tl.constexpr):
    # one block, seen as (threads' runs, VEC): the new maximum of a run is taken in its thread,
    # then each element costs one exp and an add (and a multiply-add for the mode's sum); the
    # run's sums are rescaled once, by exp(old max - new max)
    if MASKED:
        mask = off + offs < n_cols
        x = tl.load(x_row + off + offs, mask=mask, other=NEG_INF).to(tl.float32)
    else:
        x = tl.load(x_row + off + offs).to(tl.float32)
    m_new = tl.maximum(m, tl.max(x, 1))
    # a run that has seen nothing but -inf shifts by 0, so exp(-inf) = 0 is its term (not the
    # NaN of -inf - -inf); a NaN drops out of the max but not out of the sums
    shift = tl.where(m_new == NEG_INF, 0.0, m_new)
    scale = tl.exp(m - shift)
    e = tl.exp(x - shift[:, None])
    s = s * scale + tl.sum(e, 1)
    if MASKED:
        xz = tl.where(mask, x, 0.0)
    else:
        xz = x
    if SMOOTH:
        sx += tl.sum(xz, 1)
    if MODE == 1:
        if MASKED:
            tv = tl.load(t_row + off + offs, mask=mask, other=0.0).to(tl.float32)
        else:
            tv = tl.load(t_row + off + offs).to(tl.float32)
        extra += tl.sum(xz * tv, 1)
        st += tl.sum(tv, 1)
    if MODE == 2:
        extra = extra * scale + tl.sum(e * xz, 1)
    return m_new, s, sx, extra, st


@triton.jit
def _row_stats(x_row, t_row, n_cols, MODE: tl.constexpr, SMOOTH: tl.constexpr, BLOCK: tl.constexpr,
               VEC: tl.constexpr):
    # per run of VEC consecutive elements a thread holds (the block is (BLOCK // VEC, VEC)): the
    # running max, the sum of exp(x - max), the sum of x (label smoothing only) and the mode's
    # extra sum. Whole blocks load unmasked; the tail, if any, is one masked block.
    RUNS: tl.constexpr = BLOCK // VEC
    offs = (tl.arange(0, RUNS) * VEC)[:, None] + tl.arange(0, VEC)[None, :]
    m = tl.full([RUNS], NEG_INF, tl.float32)
    s = tl.zeros([RUNS], tl.float32)
    sx = tl.zeros([RUNS], tl.float32)
    extra = tl.zeros([RUNS], tl.float32)
    st = tl.zeros([RUNS], tl.float32)
    n_full = n_cols - n_cols % BLOCK
    for off in range(0, n_full, BLOCK):
        m, s, sx, extra, st = _stats_step(x_row, t_row, off, offs, n_cols, m, s, sx, extra, st,
                                          MODE, SMOOTH, False)
    if n_full < n_cols:
        m, s, sx, extra, st = _stats_step(x_row, t_row, n_full, offs, n_cols, m, s, sx, extra, st,
                                          MODE, SMOOTH, True)
    row_max = tl.max(m, 0)
    w = tl.where(m > NEG_INF, tl.exp(m - row_max), 0.0)
    total = tl.sum(s * w, 0)
    if MODE == 2:
        extra_sum = tl.sum(extra * w, 0) / total
    else:
        extra_sum = tl.sum(extra, 0)
    return row_max, total, tl.sum(sx, 0), extra_sum, tl.sum(st, 0)


# the forward's streamed rows (longer than MAX_BLOCK) on 8 warps: through the GPU proxy at 4096
# rows of 32000 bfloat16 logits, 74.0 µs against 78.8 on 16 (the streamed rows' default elsewhere)
# for class targets, 78.8 against 82.4-82.8 with label smoothing, 77.9 against 80.9 for the
# entropy; the backward is fastest on 16 (docs/ops.md, "Tenth round")
_FWD_TUNING = {"early_config_prune": partial(prune_row_configs, streamed_warps=8)}


@triton.autotune(configs=row_configs(), key=["n_cols"], prune_configs_by=_FWD_TUNING)
@triton.jit
def _xent_fwd(x_ptr, t_ptr, loss_ptr, stats_ptr, n_cols, smoothing, MODE: tl.constexpr,
              SMOOTH: tl.constexpr, BLOCK: tl.constexpr, VEC: tl.constexpr, ONE_PASS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * n_cols
    row_max, total, sum_x, extra, sum_t = _row_stats(x_row, t_ptr + row * n_cols, n_cols, MODE,
                                                      SMOOTH, BLOCK, VEC)
    lse_z = tl.log(total)
    if MODE == 0:
        t = tl.load(t_ptr + row)
        valid = (t >= 0) & (t < n_cols)
        x_t = tl.load(x_row + tl.where(valid, t, 0)).to(tl.float32)
        score = tl.where(valid, x_t - row_max, float("nan"))
        loss = lse_z - (1.0 - smoothing) * score
        if SMOOTH:
            loss -= smoothing * (sum_x / n_cols - row_max)
    elif MODE == 1:
        # sum(z * t) = sum(x * t) - max * sum(t)
        loss = lse_z - (1.0 - smoothing) * (extra - row_max * sum_t)
        if SMOOTH:
            loss -= smoothing * (sum_x / n_cols - row_max)
    else:
        loss = lse_z + row_max - extra
    tl.store(loss_ptr + row, loss)
    # what the backward needs, in float32: the log-sum-exp, and sum(softmax(x) * x) for the
    # entropy or the maximum (the probability targets' gradient is -(1 - ls) * (x - max))
    pair = tl.arange(0, 2)
    aux = extra if MODE == 2 else row_max
    tl.store(stats_ptr + row * 2 + pair, tl.where(pair == 0, row_max + lse_z, aux))


@triton.autotune(configs=row_configs(), key=["n_cols"], prune_configs_by=ROW_TUNING)
@triton.jit
def _xent_bwd(x_ptr, t_ptr, g_ptr, stats_ptr, dx_ptr, dt_ptr, n_cols, smoothing, MODE: tl.constexpr,
              BLOCK: tl.constexpr, ONE_PASS: tl.constexpr):
    # one pass over the logits: softmax(x) = exp(x - lse) from the forward's saved statistics
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * n_cols
    t_row = t_ptr + row * n_cols
    lse = tl.load(stats_ptr + row * 2)
    aux = tl.load(stats_ptr + row * 2 + 1)
    g = tl.load(g_ptr + row).to(tl.float32)
    if MODE == 0:
        t = tl.load(t_ptr + row)
    offs = tl.arange(0, BLOCK)
    # each step loads the next block before working on this one (no reduction in the loop, so
    # a thread keeps two blocks' loads in flight)
    x_next = tl.load(x_row + offs, mask=offs < n_cols, other=0.0)
    for off in range(0, n_cols, BLOCK):
        cols = off + offs
        mask = cols < n_cols
        x = x_next.to(tl.float32)
        x_next = tl.load(x_row + BLOCK + cols, mask=BLOCK + cols < n_cols, other=0.0)
        p = tl.exp(x - lse)
        if MODE == 0:
            dx = p - (1.0 - smoothing) * tl.where(cols == t, 1.0, 0.0) - smoothing / n_cols
        elif MODE == 1:
            tv = tl.load(t_row + cols, mask=mask, other=0.0).to(tl.float32)
            dx = p - (1.0 - smoothing) * tv - smoothing / n_cols
            tl.store(dt_ptr + row * n_cols + cols, -g * (1.0 - smoothing) * (x - aux), mask=mask)
        else:
            dx = -p * (x - aux)
        tl.store(dx_ptr + row * n_cols + cols, g * dx, mask=mask)


def _block(n: int) -> int:
    return min(MAX_BLOCK, max(16, next_pow2(n)))


def _vec(x: Any, block: int) -> int:
    """Elements of a thread's run: 16 bytes (one vector access), at most the block."""
    return min(block, 16 // x.dtype.size)


def _forward(x: Any, t: Any, smoothing: float, mode: int) -> tuple[Any, Any]:
    n = x.shape[-1]
    rows = c.rows_of(x.shape)
    loss = c.zeros(x.shape[:-1], x.dtype)
    stats = c.zeros((rows, 2), c.mx().float32)
    tp = x if t is None else t
    if x.size:
        block = _block(n)
        _xent_fwd[(rows,)](x, tp, loss, stats, n, smoothing, MODE=mode, SMOOTH=smoothing != 0.0,
                           BLOCK=block, VEC=_vec(x, block), ONE_PASS=n <= block)
    return loss, stats


def _backward(x: Any, t: Any, g: Any, stats: Any, smoothing: float, mode: int) -> tuple[Any, Any]:
    n = x.shape[-1]
    rows = c.rows_of(x.shape)
    dx = c.zeros(x.shape, x.dtype)
    dt = c.zeros(x.shape, t.dtype) if mode == PROBS else None
    if x.size:
        block = _block(n)
        _xent_bwd[(rows,)](x, x if t is None else t, g.astype(x.dtype), stats, dx,
                           dx if dt is None else dt, n, smoothing, MODE=mode, BLOCK=block,
                           ONE_PASS=n <= block)
    return dx, dt


@triton.op(name="cross_entropy")
def _xent_op(logits: Any, targets: Any, smoothing: float, mode: int) -> Any:
    # (per-row losses, float32 statistics for the backward); the caller keeps the losses
    return _forward(logits, targets, smoothing, mode)


@_xent_op.backward
def _xent_vjp(primals: Any, cotangents: Any, outputs: Any) -> Any:
    x, t, smoothing, mode = primals
    dx, dt = _backward(x, t, c.first(cotangents), outputs[1], smoothing, mode)
    if mode == CLASS:
        return (dx, None)  # integer targets have no gradient
    return (dx, dt)


@triton.op(name="entropy")
def _entropy_op(logits: Any) -> Any:
    return _forward(logits, None, 0.0, ENTROPY)


@_entropy_op.backward
def _entropy_vjp(primals: Any, cotangents: Any, outputs: Any) -> Any:
    x = c.first(primals)  # a one-parameter op's primals is the array itself
    return (_backward(x, None, c.first(cotangents), outputs[1], 0.0, ENTROPY)[0],)


def _reduce(op_name: str, loss: Any, reduction: Any) -> Any:
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise c.fail(op_name, "reduction", f"expected 'none', 'mean' or 'sum', got {reduction!r}")


def cross_entropy(logits: Any, targets: Any, weights: Any = None, axis: int = -1,
                  label_smoothing: float = 0.0, reduction: str = "none") -> Any:
    """Fused cross-entropy, as `mlx.nn.losses.cross_entropy` (same arguments and results).

    `logits`: float32/float16/bfloat16; `targets`: integer class indices of `logits`' shape
    without `axis`, or probabilities of `logits`' shape and dtype (differentiable then);
    `weights`: per-loss weights or None; `reduction`: "none", "mean" or "sum". The per-row loss
    and its gradient with respect to `logits` are kernels; weights and the reduction are MLX
    ops on the losses."""
    name = "cross_entropy"
    m = c.mx()
    c.check_array(name, "logits", logits)
    ax = c.normalize_axis(name, axis, logits.ndim)
    if reduction not in ("none", "mean", "sum"):
        raise c.fail(name, "reduction", f"expected 'none', 'mean' or 'sum', got {reduction!r}")
    smoothing = c.check_float(name, "label_smoothing", label_smoothing)
    if not 0.0 <= smoothing < 1.0:
        raise c.fail(name, "label_smoothing", f"must be in [0, 1), got {smoothing}")
    if not isinstance(targets, m.array):
        raise c.fail(name, "targets", f"expected an mlx.core.array, got {type(targets).__name__}")
    probs = targets.ndim == logits.ndim
    reduced = tuple(s for i, s in enumerate(logits.shape) if i != ax)
    if probs:
        if tuple(targets.shape) != tuple(logits.shape):
            raise c.fail(name, "targets", f"probabilities of shape {tuple(targets.shape)} do not "
                         f"match logits {tuple(logits.shape)}")
        c.check_same_dtype(name, "targets", targets, "logits", logits)
    else:
        if tuple(targets.shape) != reduced:
            raise c.fail(name, "targets", f"class indices of shape {tuple(targets.shape)} do not "
                         f"match logits {tuple(logits.shape)} without axis {ax} {reduced}")
        if not m.issubdtype(targets.dtype, m.integer):
            raise c.fail(name, "targets", f"class indices must be integers, got {c.dtype_name(targets)}")
    if weights is not None:
        c.check_array(name, "weights", weights, min_ndim=0)
        if tuple(weights.shape) != reduced:
            raise c.fail(name, "weights", f"shape {tuple(weights.shape)} is not the loss's {reduced}")
    x = logits if ax == logits.ndim - 1 else m.moveaxis(logits, ax, -1)
    if probs:
        t = targets if ax == logits.ndim - 1 else m.moveaxis(targets, ax, -1)
        loss = _xent_op(x, t, smoothing, PROBS)[0]
    else:
        loss = _xent_op(x, targets.astype(m.int32), smoothing, CLASS)[0]
    if weights is not None:
        loss = loss * weights
    return _reduce(name, loss, reduction)


def entropy(logits: Any, axis: int = -1) -> Any:
    """The entropy of `softmax(logits)` along `axis`, `-sum(p * log(p))`, fused in one pass.

    `logits`: float32/float16/bfloat16; the result drops `axis` and keeps the dtype.
    Differentiable."""
    c.check_array("entropy", "logits", logits)
    ax = c.normalize_axis("entropy", axis, logits.ndim)
    x = logits if ax == logits.ndim - 1 else c.mx().moveaxis(logits, ax, -1)
    return _entropy_op(x)[0]
