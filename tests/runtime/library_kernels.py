"""Kernels written the way popular Triton libraries write them, imported through `import triton`.

This module is imported only after `triton_metal.install_as_triton()`; nothing in it knows about
triton_metal. Wrappers use torch as those libraries do (`torch.empty_like`, `.stride(0)`,
`triton.next_power_of_2`, a `num_warps` heuristic).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice


def _warps(block: int) -> int:
    return 8 if block >= 2048 else 4 if block >= 512 else 2


@triton.jit
def _rms_norm_fwd(Y, Y_stride, X, X_stride, W, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(X + row * X_stride + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0)
    rstd = 1 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(Y + row * Y_stride + cols, (x * rstd).to(w.dtype) * w, mask=mask)


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    shape = x.shape
    x = x.view(-1, shape[-1])
    y = torch.empty_like(x)
    block = triton.next_power_of_2(shape[-1])
    _rms_norm_fwd[(x.shape[0],)](y, y.stride(0), x, x.stride(0), w, shape[-1], eps,
                                 BLOCK_SIZE=block, num_warps=_warps(block))
    return y.view(*shape)


@triton.jit
def _layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    w = tl.load(W + cols, mask=mask)
    b = tl.load(B + cols, mask=mask)
    tl.store(Y + cols, xc * rstd * w + b, mask=mask)


def layer_norm(x, w, b, eps=1e-5):
    y = torch.empty_like(x)
    x2 = x.reshape(-1, x.shape[-1])
    M, N = x2.shape
    mean = torch.empty((M,), dtype=torch.float32)
    rstd = torch.empty((M,), dtype=torch.float32)
    block = triton.next_power_of_2(N)
    _layer_norm_fwd[(M,)](x2, y, w, b, mean, rstd, x2.stride(0), N, eps, BLOCK_SIZE=block,
                          num_warps=_warps(block))
    return y, mean, rstd


@triton.jit
def _gated_fwd(a_ptr, b_ptr, c_ptr, stride, n_cols, GELU: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    a = tl.load(a_ptr + row * stride + offs, mask=mask, other=0).to(tl.float32)
    b = tl.load(b_ptr + row * stride + offs, mask=mask, other=0)
    if GELU:  # tanh-approximated GELU (GeGLU)
        inner = 0.7978845608028654 * (a + 0.044715 * a * a * a)
        act = 0.5 * a * (1 + libdevice.tanh(inner))
    else:  # SiLU (SwiGLU)
        act = a * tl.sigmoid(a)
    tl.store(c_ptr + row * stride + offs, act.to(b.dtype) * b, mask=mask)


def gated(a, b, gelu: bool):
    c = torch.empty_like(a)
    n_cols = a.shape[-1]
    block = triton.next_power_of_2(n_cols)
    _gated_fwd[(a.numel() // n_cols,)](a, b, c, c.stride(-2), n_cols, GELU=gelu, BLOCK_SIZE=block)
    return c


@triton.jit
def _rope_fwd(q_ptr, q_row_stride, cos_ptr, sin_ptr, cs_row_stride, seq_len,
              n_heads: tl.constexpr, head_dim: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    q_ptr = q_ptr + pid * q_row_stride
    pos = pid % seq_len
    half = tl.arange(0, BLOCK)
    hmask = half < head_dim // 2
    cos = tl.load(cos_ptr + pos * cs_row_stride + half, mask=hmask, other=0)
    sin = tl.load(sin_ptr + pos * cs_row_stride + half, mask=hmask, other=0)
    heads = tl.arange(0, n_heads)[:, None] * head_dim
    m = (tl.arange(0, n_heads)[:, None] < n_heads) & hmask[None, :]
    x1 = tl.load(q_ptr + heads + half[None, :], mask=m, other=0)
    x2 = tl.load(q_ptr + heads + head_dim // 2 + half[None, :], mask=m, other=0)
    tl.store(q_ptr + heads + half[None, :], x1 * cos - x2 * sin, mask=m)
    tl.store(q_ptr + heads + head_dim // 2 + half[None, :], x2 * cos + x1 * sin, mask=m)


def rope_(q, cos, sin):
    """In place on q of shape (batch, seq, heads, head_dim)."""
    batch, seq, heads, dim = q.shape
    q2 = q.view(batch * seq, heads * dim)
    _rope_fwd[(batch * seq,)](q2, q2.stride(0), cos, sin, cos.stride(0), seq, heads, dim,
                              BLOCK=triton.next_power_of_2(dim // 2))
    return q


@triton.jit
def _cross_entropy_fwd(logits_ptr, stride, target_ptr, loss_ptr, n_cols, ignore_index,
                       BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    logits_ptr += row * stride
    target = tl.load(target_ptr + row)
    m = float("-inf")
    d = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(logits_ptr + offs, mask=offs < n_cols, other=float("-inf")).to(tl.float32)
        new_m = tl.maximum(m, tl.max(x, axis=0))
        d = d * tl.exp(m - new_m) + tl.sum(tl.exp(x - new_m), axis=0)
        m = new_m
    lse = m + tl.log(d)
    x_t = tl.load(logits_ptr + target).to(tl.float32)
    loss = tl.where(target == ignore_index, 0.0, lse - x_t)
    tl.store(loss_ptr + row, loss)


def cross_entropy(logits, target, ignore_index=-100):
    n_rows, n_cols = logits.shape
    loss = torch.empty(n_rows, dtype=torch.float32)
    block = min(1024, triton.next_power_of_2(n_cols))
    safe_target = torch.where(target == ignore_index, 0, target)
    _cross_entropy_fwd[(n_rows,)](logits, logits.stride(0), safe_target, loss, n_cols,
                                  ignore_index, BLOCK_SIZE=block, num_warps=4)
    loss = torch.where(target == ignore_index, torch.zeros_like(loss), loss)
    return loss


@triton.jit
def _softmax_fwd(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    x = tl.load(in_ptr + row * in_stride + offs, mask=offs < n_cols, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    tl.store(out_ptr + row * out_stride + offs, num / tl.sum(num, axis=0), mask=offs < n_cols)


def softmax(x):
    y = torch.empty_like(x)
    block = triton.next_power_of_2(x.shape[1])
    _softmax_fwd[(x.shape[0],)](y, x, x.stride(0), y.stride(0), x.shape[1], BLOCK_SIZE=block,
                                num_warps=_warps(block))
    return y


@triton.jit
def _kl_div_fwd(y_pred_ptr, y_pred_stride, y_true_ptr, y_true_stride, loss_ptr, n_cols,
                LOG_TARGET: tl.constexpr, BLOCK_SIZE: tl.constexpr, eps: tl.constexpr = 1e-10):
    row = tl.program_id(0).to(tl.int64)
    total = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        mask = offs < n_cols
        y = tl.load(y_pred_ptr + row * y_pred_stride + offs, mask=mask, other=0.0)
        t = tl.load(y_true_ptr + row * y_true_stride + offs, mask=mask, other=0.0)
        if LOG_TARGET:
            kl = tl.exp(t) * (t - y)
        else:
            kl = t * (tl.log(tl.maximum(t, eps)) - y)
        total += tl.sum(tl.where(mask, kl, 0.0), axis=0)
    tl.store(loss_ptr + row, total)


def kl_div(y_pred, y_true, log_target=False):
    n_rows, n_cols = y_pred.shape
    loss = torch.zeros(n_rows, dtype=torch.float32)
    _kl_div_fwd[(n_rows,)](y_pred, y_pred.stride(0), y_true, y_true.stride(0), loss, n_cols,
                           LOG_TARGET=log_target, BLOCK_SIZE=min(1024, triton.next_power_of_2(n_cols)))
    return loss.sum() / n_rows
