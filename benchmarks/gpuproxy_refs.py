"""Triton references timed beside the GPU-proxy cases (benchmarks/gpuproxy_cases.py): each
function takes a captured launch and its CUDA tensors by parameter name and returns a callable
launching the same operation written in Triton, or None for launches it does not cover
(replay.py --time-ref-fn). Imported on the GPU machine only (it needs CUDA Triton).

The kernels are the textbook forms (one program per row, or 1024 elements per program),
written for these timings; `float32` arithmetic, results stored in the input's dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl


@triton.jit
def _softmax(y_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, 0))
    tl.store(y_ptr + row * n_cols + cols, (e / tl.sum(e, 0)).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rms_norm(y_ptr, x_ptr, w_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, 0) / n_cols + eps)
    tl.store(y_ptr + row * n_cols + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gelu(y_ptr, x_ptr, up_ptr, n, GATED: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    if GATED:
        y = y * tl.load(up_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _cross_entropy(loss_ptr, x_ptr, t_ptr, n_cols, BLOCK: tl.constexpr):
    # online log-sum-exp over column blocks, the target's logit read once
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for off in range(0, n_cols, BLOCK):
        mask = off + cols < n_cols
        x = tl.load(x_ptr + row * n_cols + off + cols, mask=mask, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        s = tl.where(m_new > -float("inf"), s * tl.exp(m - m_new) + tl.exp(x - m_new), 0.0)
        m = m_new
    row_max = tl.max(m, 0)
    lse = row_max + tl.log(tl.sum(s * tl.exp(m - row_max), 0))
    target = tl.load(x_ptr + row * n_cols + tl.load(t_ptr + row)).to(tl.float32)
    tl.store(loss_ptr + row, lse - target)


@triton.jit
def _entropy(h_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    # online: per lane the running max m, s = sum(exp(x - m)) and u = sum(exp(x - m) * x), both
    # rescaled when m grows; H = lse - u / s
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    u = tl.zeros([BLOCK], tl.float32)
    for off in range(0, n_cols, BLOCK):
        mask = off + cols < n_cols
        x = tl.load(x_ptr + row * n_cols + off + cols, mask=mask, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        alive = m_new > -float("inf")
        r = tl.where(alive, tl.exp(m - m_new), 0.0)
        e = tl.where(alive, tl.exp(x - m_new), 0.0)
        s = s * r + e
        u = u * r + e * tl.where(mask, x, 0.0)
        m = m_new
    row_max = tl.max(m, 0)
    w = tl.where(m > -float("inf"), tl.exp(m - row_max), 0.0)
    total = tl.sum(s * w, 0)
    tl.store(h_ptr + row, row_max + tl.log(total) - tl.sum(u * w, 0) / total)


def _rows(x: torch.Tensor) -> tuple[int, int]:
    return x.numel() // x.shape[-1], x.shape[-1]


def triton_softmax(launch: dict[str, Any], t: dict[str, Any]) -> dict[str, Callable[[], Any]] | None:
    """Softmax over the last axis: `ops.softmax` (`x_ptr`) and examples/softmax.py (`input_ptr`)."""
    x = t.get("x_ptr") if launch["kernel"] == "_softmax_fwd" else t.get("input_ptr")
    if x is None or launch["kernel"] not in ("_softmax_fwd", "softmax_kernel"):
        return None
    rows, cols = _rows(x)
    y = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    # the tutorial's choice (8 warps from 2048 columns, else 4) and its neighbours: Triton's best
    return {f"triton {w} warps": (lambda w=w: _softmax[(rows,)](y, x, cols, BLOCK=block, num_warps=w))
            for w in (4, 8, 16) if 32 * w <= block}


def triton_rms_norm(launch: dict[str, Any], t: dict[str, Any]) -> Callable[[], Any] | None:
    if launch["kernel"] != "_norm_fwd":
        return None
    x, w = t["x_ptr"], t["w_ptr"]
    rows, cols = _rows(x)
    y = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    return lambda: _rms_norm[(rows,)](y, x, w, cols, t["eps"], BLOCK=block, num_warps=8)


def _gelu_launch(t: dict[str, Any], gated: bool) -> Callable[[], Any]:
    x = t["x_ptr"]
    up = t["up_ptr"] if gated else x
    y = torch.empty_like(x)
    n = x.numel()
    return lambda: _gelu[(triton.cdiv(n, 1024),)](y, x, up, n, GATED=gated, BLOCK=1024, num_warps=4)


def triton_gelu(launch: dict[str, Any], t: dict[str, Any]) -> Callable[[], Any] | None:
    return _gelu_launch(t, False) if launch["kernel"] == "_act_fwd" else None


def triton_geglu(launch: dict[str, Any], t: dict[str, Any]) -> Callable[[], Any] | None:
    return _gelu_launch(t, True) if launch["kernel"] == "_act_fwd" else None


def triton_cross_entropy(launch: dict[str, Any], t: dict[str, Any]) -> Callable[[], Any] | None:
    if launch["kernel"] != "_xent_fwd":
        return None
    x, tgt = t["x_ptr"], t["t_ptr"]
    rows, cols = _rows(x)
    loss = torch.empty(rows, device=x.device, dtype=torch.float32)
    return lambda: _cross_entropy[(rows,)](loss, x, tgt, cols, BLOCK=4096, num_warps=16)


def triton_entropy(launch: dict[str, Any], t: dict[str, Any]) -> dict[str, Callable[[], Any]] | None:
    """`ops.entropy`'s forward (`_xent_fwd` without targets): the online entropy above, per row of
    the logits, on 16 and on 8 warps."""
    if launch["kernel"] != "_xent_fwd" or "t_ptr" in t:
        return None
    x = t["x_ptr"]
    rows, cols = _rows(x)
    h = torch.empty(rows, device=x.device, dtype=torch.float32)
    return {f"triton {w} warps": (lambda w=w: _entropy[(rows,)](h, x, cols, BLOCK=4096, num_warps=w))
            for w in (16, 8)}
