"""Layer normalisation, forward and backward (Triton tutorial 05).

Forward: one program per row computes the mean and the reciprocal standard deviation in fp32,
then writes `y = (x - mean) * rstd * w + b`.

Backward: one program per row computes `dx` and its row's share of `dw` and `db`. Rows are
spread over `GROUP_SIZE_M` partial buffers; a program takes its buffer's lock with
`tl.atomic_cas`, adds its share (the first writer, seen through a counter next to the lock,
stores instead of adding), and releases the lock with `tl.atomic_xchg`. A second kernel sums the
partial buffers column-wise into the final `dw` and `db`.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

import triton_metal as triton
import triton_metal.language as tl

from ._common import empty, report, strides, to_numpy


@triton.jit
def _layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    # the row of X and Y this program handles
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    # mean, accumulated BLOCK_SIZE columns at a time
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    # variance
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.0)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    # the backward pass needs both
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    # normalise and apply the affine transform
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


@triton.jit
def _layer_norm_bwd_dx_fused(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N,
                             GROUP_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    # rows share GROUP_SIZE_M partial buffers; each buffer has a lock and a "written" counter
    lock_id = row % GROUP_SIZE_M
    Lock += lock_id
    Count = Lock + GROUP_SIZE_M
    DW = DW + lock_id * N + cols
    DB = DB + lock_id * N + cols
    x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    # dx
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = tl.where(mask, xhat, 0.0)
    wdy = tl.where(mask, wdy, 0.0)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(DX + cols, dx, mask=mask)
    # this row's share of dw and db
    partial_dw = (dy * xhat).to(w.dtype)
    partial_db = dy.to(w.dtype)
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    if count == 0:
        # the first program to reach this buffer stores and marks it written
        tl.atomic_xchg(Count, 1)
    else:
        partial_dw += tl.load(DW, mask=mask)
        partial_db += tl.load(DB, mask=mask)
    tl.store(DW, partial_dw, mask=mask)
    tl.store(DB, partial_db, mask=mask)
    # the stores must land before the lock is released
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


@triton.jit
def _layer_norm_bwd_dwdb(DW, DB, FINAL_DW, FINAL_DB, M, N,
                         BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    # sum the partial buffers' rows for this program's columns
    for i in range(0, M, BLOCK_SIZE_M):
        rows = i + tl.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=mask, other=0.0)
        db += tl.load(DB + offs, mask=mask, other=0.0)
    sum_dw = tl.sum(dw, axis=0)
    sum_db = tl.sum(db, axis=0)
    tl.store(FINAL_DW + cols, sum_dw, mask=cols < N)
    tl.store(FINAL_DB + cols, sum_db, mask=cols < N)


MAX_FUSED_BYTES = 65536


def _block_size(x: Any) -> int:
    """The tutorial's choice: one block covers the row, up to 64 KiB of it."""
    max_block = MAX_FUSED_BYTES // x.itemsize
    block = min(max_block, triton.next_power_of_2(x.shape[-1]))
    return max(block, 16)


def layer_norm_forward(x: Any, weight: Any, bias: Any, eps: float = 1e-5,
                       num_warps: int | None = None) -> tuple[Any, Any, Any]:
    """`(y, mean, rstd)` for a 2-D `x` normalised over its last axis."""
    M, N = x.shape
    y = empty(x.shape, x.dtype, like=x)
    mean = empty((M,), np.float32, like=x)
    rstd = empty((M,), np.float32, like=x)
    BLOCK_SIZE = _block_size(x)
    if num_warps is None:
        num_warps = min(max(BLOCK_SIZE // 256, 1), 8)
    _layer_norm_fwd_fused[(M,)](x, y, weight, bias, mean, rstd, strides(x)[0], N, eps,
                                BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)
    return y, mean, rstd


def layer_norm_backward(dy: Any, x: Any, weight: Any, mean: Any, rstd: Any,
                        num_warps: int | None = None) -> tuple[Any, Any, Any]:
    """`(dx, dw, db)` given the upstream gradient `dy` and the forward pass's saved values."""
    M, N = x.shape
    BLOCK_SIZE_N = _block_size(x)
    if N > BLOCK_SIZE_N:
        raise ValueError(f"layer_norm_backward: rows of {N} elements do not fit one block")
    # fewer partial buffers for short rows, as the tutorial picks them
    GROUP_SIZE_M = 64
    if N <= 8192:
        GROUP_SIZE_M = 96
    if N <= 4096:
        GROUP_SIZE_M = 128
    if N <= 1024:
        GROUP_SIZE_M = 256
    if num_warps is None:
        num_warps = min(max(BLOCK_SIZE_N // 256, 1), 8)
    locks = empty((2 * GROUP_SIZE_M,), np.int32, like=x)
    partial_dw = empty((GROUP_SIZE_M, N), weight.dtype, like=x)
    partial_db = empty((GROUP_SIZE_M, N), weight.dtype, like=x)
    dw = empty((N,), weight.dtype, like=x)
    db = empty((N,), weight.dtype, like=x)
    dx = empty(dy.shape, dy.dtype, like=x)
    _layer_norm_bwd_dx_fused[(M,)](dx, dy, partial_dw, partial_db, x, weight, mean, rstd, locks,
                                   strides(x)[0], N, GROUP_SIZE_M=GROUP_SIZE_M,
                                   BLOCK_SIZE_N=BLOCK_SIZE_N, num_warps=num_warps)
    grid = lambda meta: (triton.cdiv(N, meta["BLOCK_SIZE_N"]),)  # noqa: E731
    _layer_norm_bwd_dwdb[grid](partial_dw, partial_db, dw, db, min(GROUP_SIZE_M, M), N,
                               BLOCK_SIZE_M=32, BLOCK_SIZE_N=128, num_warps=num_warps)
    return dx, dw, db


def reference_forward(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float):
    x32 = x.astype(np.float32)
    mean = x32.mean(axis=1)
    var = ((x32 - mean[:, None]) ** 2).mean(axis=1)
    rstd = 1.0 / np.sqrt(var + eps)
    y = (x32 - mean[:, None]) * rstd[:, None] * w.astype(np.float32) + b.astype(np.float32)
    return y, mean, rstd


def reference_backward(dy: np.ndarray, x: np.ndarray, w: np.ndarray, eps: float):
    """The gradients of `y = (x - mean) * rstd * w + b` written out by hand."""
    x32, dy32, w32 = (a.astype(np.float32) for a in (x, dy, w))
    N = x.shape[1]
    mean = x32.mean(axis=1, keepdims=True)
    rstd = 1.0 / np.sqrt(((x32 - mean) ** 2).mean(axis=1, keepdims=True) + eps)
    xhat = (x32 - mean) * rstd
    wdy = w32 * dy32
    c1 = (xhat * wdy).sum(axis=1, keepdims=True) / N
    c2 = wdy.sum(axis=1, keepdims=True) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    dw = (dy32 * xhat).sum(axis=0)
    db = dy32.sum(axis=0)
    return dx, dw, db


def main() -> int:
    rng = np.random.default_rng(0)
    M, N, eps = 151, 300, 1e-5
    x = rng.standard_normal((M, N)).astype(np.float32)
    w = rng.random(N).astype(np.float32)
    b = rng.random(N).astype(np.float32)
    dy = (0.1 * rng.standard_normal((M, N))).astype(np.float32)
    y, mean, rstd = layer_norm_forward(x, w, b, eps)
    dx, dw, db = layer_norm_backward(dy, x, w, mean, rstd)
    y_ref, _, _ = reference_forward(x, w, b, eps)
    dx_ref, dw_ref, db_ref = reference_backward(dy, x, w, eps)
    error = max(
        float(np.max(np.abs(to_numpy(y) - y_ref))),
        float(np.max(np.abs(to_numpy(dx) - dx_ref))),
        float(np.max(np.abs(to_numpy(dw) - dw_ref))),
        float(np.max(np.abs(to_numpy(db) - db_ref))),
    )
    return 0 if report("layer_norm", error, 1e-4) else 1


if __name__ == "__main__":
    sys.exit(main())
