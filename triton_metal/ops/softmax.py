"""`softmax` and `log_softmax` (as `mx.softmax` and `mlx.nn.log_softmax`), forward and backward.

One program per row of the reduced axis (moved last when it is not). A one-pass row lives in
registers: max, exponentials, sum and the normalised row without re-reading memory. A longer
row keeps a running maximum and sum per lane (the online softmax) in one read, then a second
read writes the result. Arithmetic is float32 whatever the input dtype (so `precise` changes
nothing: MLX's precise mode is what these kernels always do); results are stored in the input
dtype.

The softmax multiplies by the reciprocal of the row's sum (as MLX's kernel does: one division a
row). In the forward `LOG` is a compile-time flag: as a run-time one, a one-pass row kept both
`x - max` (log_softmax) and its exponentials (softmax) live across the sum's reduction, which
cost registers and so resident programs.

Backward: softmax `dx = y * (dy - sum(dy * y))`; log_softmax `dx = dy - exp(y) * sum(dy)`, from
the saved output `y`, one program per row. There `LOG` is a run-time argument (one compiled
variant serves both ops; the branch is uniform across the grid).
"""

from __future__ import annotations

from typing import Any

import triton_metal as triton
import triton_metal.language as tl

from . import _common as c
from ._rows import ROW_TUNING, row_block, row_configs

NEG_INF = tl.constexpr(float("-inf"))


@triton.autotune(configs=row_configs(), key=["n_cols", "ONE_PASS", "LOG"], prune_configs_by=ROW_TUNING)
@triton.jit
def _softmax_fwd(x_ptr, y_ptr, n_cols, LOG: tl.constexpr, BLOCK: tl.constexpr,
                 ONE_PASS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * n_cols
    y_row = y_ptr + row * n_cols
    offs = tl.arange(0, BLOCK)
    if ONE_PASS:
        mask = offs < n_cols
        x = tl.load(x_row + offs, mask=mask, other=NEG_INF).to(tl.float32)
        z = x - tl.max(x, 0)
        e = tl.exp(z)
        total = tl.sum(e, 0)
        if LOG:
            y = z - tl.log(total)
        else:
            y = e * (1.0 / total)
        tl.store(y_row + offs, y, mask=mask)
    else:
        # per-lane running maximum and sum, rescaled when the maximum grows; a lane that has
        # seen only -inf keeps a zero sum (exp(-inf - -inf) would be NaN)
        m = tl.full([BLOCK], NEG_INF, tl.float32)
        s = tl.zeros([BLOCK], tl.float32)
        for off in range(0, n_cols, BLOCK):
            mask = off + offs < n_cols
            x = tl.load(x_row + off + offs, mask=mask, other=NEG_INF).to(tl.float32)
            m_new = tl.maximum(m, x)
            alive = m_new > NEG_INF
            s = tl.where(alive, s * tl.exp(m - m_new) + tl.exp(x - m_new), 0.0)
            m = m_new
        row_max = tl.max(m, 0)
        total = tl.sum(tl.where(m > NEG_INF, s * tl.exp(m - row_max), 0.0), 0)
        log_total = tl.log(total)
        inv_total = 1.0 / total
        for off in range(0, n_cols, BLOCK):
            mask = off + offs < n_cols
            x = tl.load(x_row + off + offs, mask=mask, other=NEG_INF).to(tl.float32)
            if LOG:
                y = x - row_max - log_total
            else:
                y = tl.exp(x - row_max) * inv_total
            tl.store(y_row + off + offs, y, mask=mask)


@triton.autotune(configs=row_configs(), key=["n_cols", "ONE_PASS"], prune_configs_by=ROW_TUNING)
@triton.jit
def _softmax_bwd(y_ptr, dy_ptr, dx_ptr, n_cols, LOG, BLOCK: tl.constexpr,
                 ONE_PASS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    y_row = y_ptr + row * n_cols
    dy_row = dy_ptr + row * n_cols
    dx_row = dx_ptr + row * n_cols
    offs = tl.arange(0, BLOCK)
    if ONE_PASS:
        mask = offs < n_cols
        y = tl.load(y_row + offs, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_row + offs, mask=mask, other=0.0).to(tl.float32)
        if LOG:
            dx = dy - tl.exp(y) * tl.sum(dy, 0)
        else:
            dx = y * (dy - tl.sum(dy * y, 0))
        tl.store(dx_row + offs, dx, mask=mask)
    else:
        acc = tl.zeros([BLOCK], tl.float32)
        for off in range(0, n_cols, BLOCK):
            mask = off + offs < n_cols
            dy = tl.load(dy_row + off + offs, mask=mask, other=0.0).to(tl.float32)
            if LOG:
                acc += dy
            else:
                acc += dy * tl.load(y_row + off + offs, mask=mask, other=0.0).to(tl.float32)
        total = tl.sum(acc, 0)
        for off in range(0, n_cols, BLOCK):
            mask = off + offs < n_cols
            y = tl.load(y_row + off + offs, mask=mask, other=0.0).to(tl.float32)
            dy = tl.load(dy_row + off + offs, mask=mask, other=0.0).to(tl.float32)
            if LOG:
                dx = dy - tl.exp(y) * total
            else:
                dx = y * (dy - total)
            tl.store(dx_row + off + offs, dx, mask=mask)


def _last_axis(x: Any, axis: int) -> Any:
    return x if axis == x.ndim - 1 else c.mx().moveaxis(x, axis, -1)


def _restore_axis(y: Any, axis: int, ndim: int) -> Any:
    return y if axis == ndim - 1 else c.mx().moveaxis(y, -1, axis)


def _check(op: str, x: Any, axis: Any, precise: Any) -> int | None:
    c.check_array(op, "x", x, min_ndim=0)
    if not isinstance(precise, bool):
        raise c.fail(op, "precise", f"expected a bool, got {type(precise).__name__}")
    if axis is None:
        return None
    if x.ndim == 0:
        raise c.fail(op, "axis", "a 0-d array has no axis; pass axis=None")
    return c.normalize_axis(op, axis, x.ndim)


def _apply(x: Any, axis: int | None, log: bool) -> Any:
    if axis is None:  # over every element, as one row
        return _softmax_op(x.reshape(1, -1), 1, log).reshape(x.shape)
    return _softmax_op(x, axis, log)


def _rows_launch(kernel: Any, ins: tuple[Any, ...], like: Any, log: bool) -> Any:
    n = like.shape[-1]
    out = c.zeros(like.shape, like.dtype)
    rows = c.rows_of(like.shape)
    if like.size:
        block, one_pass = row_block(n)
        kernel[(rows,)](*ins, out, n, int(log), BLOCK=block, ONE_PASS=one_pass)
    return out


def softmax_forward(x: Any, axis: int, log: bool) -> Any:
    ax = axis % x.ndim
    xt = _last_axis(x, ax)
    return _restore_axis(_rows_launch(_softmax_fwd, (xt,), xt, log), ax, x.ndim)


def softmax_backward(y: Any, dy: Any, axis: int, log: bool) -> Any:
    ax = axis % y.ndim
    yt, dyt = _last_axis(y, ax), _last_axis(dy.astype(y.dtype), ax)
    return _restore_axis(_rows_launch(_softmax_bwd, (yt, dyt), yt, log), ax, y.ndim)




@triton.op(name="softmax")
def _softmax_op(x: Any, axis: int, log: bool) -> Any:
    return softmax_forward(x, axis, log)


@_softmax_op.backward
def _softmax_vjp(primals: Any, cotangents: Any, outputs: Any) -> Any:
    _, axis, log = primals
    return (softmax_backward(c.first(outputs), c.first(cotangents), axis, log),)


def softmax(x: Any, axis: int | None = -1, precise: bool = False) -> Any:
    """Softmax along `axis`, as `mx.softmax(x, axis, precise=precise)`.

    `axis=None` normalises over every element (MLX's default; here the default is the last
    axis, the one models use).
    `x`: float32, float16 or bfloat16, any shape; the result has `x`'s shape and dtype. Computed
    in float32 always (MLX's `precise=True`), so `precise` is accepted and changes nothing.
    Differentiable (the backward is a kernel too)."""
    return _apply(x, _check("softmax", x, axis, precise), False)


def log_softmax(x: Any, axis: int | None = -1, precise: bool = False) -> Any:
    """`x - logsumexp(x, axis)`, as `mlx.nn.log_softmax(x, axis)`; fused, computed in float32.

    Same dtypes, shapes and gradient as `softmax`; `precise` as there."""
    return _apply(x, _check("log_softmax", x, axis, precise), True)
