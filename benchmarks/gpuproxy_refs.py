"""Triton references timed beside the GPU-proxy cases (benchmarks/gpuproxy_cases.py, and the
norms' backward and the layer-norm example of benchmarks/gpuproxy_rowops.py; the example's own
kernel, compiled by Triton): each function takes a captured launch and its
CUDA tensors by parameter name and returns a callable launching the same operation written in
Triton, or None for launches it does not cover (replay.py --time-ref-fn). Imported on the GPU
machine only (it needs CUDA Triton).

The kernels are the textbook forms (one program per row, or 1024 elements per program; a run of
rows a program and a partials' sum for the norms' backward), written for these timings;
`float32` arithmetic, results stored in the input's dtype. The norms' backward is also timed as
Liger-Kernel implements it, where that package is installed or `LIGER_KERNEL_DIR` names its
folder (a baseline only: nothing of it is part of the project).
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
def _layer_norm(y_ptr, x_ptr, w_ptr, b_ptr, n_cols, eps, BLOCK: tl.constexpr):
    # the whole row in registers: mean, then the centred row's variance, as Triton's tutorial
    # 05 computes them (there over column blocks)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, 0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    rstd = tl.rsqrt(tl.sum(xc * xc, 0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * n_cols + cols, (xc * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


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


def triton_layer_norm(launch: dict[str, Any], t: dict[str, Any]) -> dict[str, Callable[[], Any]] | None:
    """`ops.layer_norm`'s forward, the whole row in registers, on 4, 8 and 16 warps."""
    if launch["kernel"] != "_norm_fwd" or t.get("RMS", 1):
        return None
    x, w, b = t["x_ptr"], t["w_ptr"], t["b_ptr"]
    rows, cols = _rows(x)
    y = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    return {f"triton {n} warps": (lambda n=n: _layer_norm[(rows,)](y, x, w, b, cols, t["eps"], BLOCK=block,
                                                                  num_warps=n))
            for n in (4, 8, 16)}


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


# --- the norms' backward (ops.rms_norm / ops.layer_norm; `_norm_bwd` then `_sum_partials`) ---

@triton.jit
def _norm_bwd_rows(x_ptr, w_ptr, dy_ptr, stats_ptr, dx_ptr, dw_ptr, db_ptr, n_cols,
                   RMS: tl.constexpr, HAS_B: tl.constexpr, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    # the textbook design: a program takes ROWS consecutive rows, whole rows in registers, and
    # writes its float32 partial of the weight (and bias) gradient; the forward's (mean, rstd)
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    dw = tl.zeros([BLOCK], tl.float32)
    db = tl.zeros([BLOCK], tl.float32)
    for i in range(ROWS):
        row = pid.to(tl.int64) * ROWS + i
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.load(stats_ptr + row * 2)
        rstd = tl.load(stats_ptr + row * 2 + 1)
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        g = dy * w
        c1 = tl.sum(g * xhat, 0) / n_cols
        if RMS:
            dx = (g - xhat * c1) * rstd
        else:
            dx = (g - xhat * c1 - tl.sum(g, 0) / n_cols) * rstd
        tl.store(dx_ptr + row * n_cols + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        dw += dy * xhat
        db += dy
    tl.store(dw_ptr + pid * n_cols + cols, dw, mask=mask)
    if HAS_B:
        tl.store(db_ptr + pid * n_cols + cols, db, mask=mask)


@triton.jit
def _sum_parts(dw_part_ptr, db_part_ptr, dw_ptr, db_ptr, n_parts, n_cols, HAS_B: tl.constexpr,
               PARTS: tl.constexpr, COLS: tl.constexpr):
    # the partials summed down their rows, COLS columns a program, stored in the weight's dtype
    cols = tl.program_id(0) * COLS + tl.arange(0, COLS)
    col_mask = cols < n_cols
    parts = tl.arange(0, PARTS)
    dw = tl.zeros([PARTS, COLS], tl.float32)
    db = tl.zeros([PARTS, COLS], tl.float32)
    for first in range(0, n_parts, PARTS):
        rows = first + parts
        mask = (rows[:, None] < n_parts) & col_mask[None, :]
        offs = rows[:, None] * n_cols + cols[None, :]
        dw += tl.load(dw_part_ptr + offs, mask=mask, other=0.0)
        if HAS_B:
            db += tl.load(db_part_ptr + offs, mask=mask, other=0.0)
    tl.store(dw_ptr + cols, tl.sum(dw, 0).to(dw_ptr.dtype.element_ty), mask=col_mask)
    if HAS_B:
        tl.store(db_ptr + cols, tl.sum(db, 0).to(db_ptr.dtype.element_ty), mask=col_mask)


NORM_BWD_CONFIGS = ((16, 4), (16, 8), (16, 16), (16, 32), (8, 8), (8, 16), (32, 8), (32, 16))
"""(rows a program, warps) of the textbook norm backward timed: Triton's best is the best of them."""
SUM_TILE = (32, 16, 4)
"""(partials, columns, warps) of a program of the textbook kernel's partial sum."""
SUM_ALONE_ROWS = 16
"""The rows a program whose partials' sum is also timed alone (once a case: the sum's time depends
only on how many partials there are, not on the kernel's warps)."""


def _norm_bwd_case(launch: dict[str, Any]) -> bool | None:
    """Whether the first captured config of `_norm_bwd` writes a bias gradient (the references are
    timed once a case, beside it); None for any other launch."""
    if launch["kernel"] != "_norm_bwd" or not str(launch.get("config") or "0/").startswith("0/"):
        return None
    outputs = {o["param"]: o for o in launch["outputs"]}
    return outputs.get("db_ptr", {}).get("action", "unused") != "unused"


def _error(got: torch.Tensor, ref: torch.Tensor) -> float:
    """replay.py's measure: max|got - ref| / max(1, max|ref|), in float64."""
    got = got.double()
    return float((got - ref).abs().max() / max(1.0, float(ref.abs().max())))


def _norm_grads64(t: dict[str, Any], rms: bool) -> dict[str, torch.Tensor]:
    """dx, dw and db of the norm in float64, from the launch's x, dy, weight and saved statistics."""
    x, dy, w = t["x_ptr"].double(), t["dy_ptr"].double(), t["w_ptr"].double()
    stats = t["stats_ptr"].double()
    rstd = stats[:, 1:2]
    xhat = (x - stats[:, 0:1]) * rstd
    g = dy * w
    dx = g - xhat * (g * xhat).mean(-1, keepdim=True)
    if not rms:
        dx = dx - g.mean(-1, keepdim=True)
    return {"dx": dx * rstd, "dw": (dy * xhat).sum(0), "db": dy.sum(0)}


def _report(label: str, fn: Callable[[], Any], got: Callable[[], dict[str, torch.Tensor]],
            ref: dict[str, torch.Tensor]) -> None:
    fn()
    torch.cuda.synchronize()
    errors = ", ".join(f"{k} {_error(v, ref[k]):.1e}" for k, v in got().items())
    print(f"    check {label} against float64: {errors}", flush=True)


def _triton_norm_backward(launch: dict[str, Any], t: dict[str, Any],
                          rms: bool) -> dict[str, Callable[[], Any]] | None:
    """The textbook Triton norm backward on `_norm_bwd`'s inputs, every `NORM_BWD_CONFIGS` entry:
    the kernel alone ("kernel") and with its partials' sum ("whole"). Each is checked against
    float64 once, here (the errors are printed)."""
    has_b = _norm_bwd_case(launch)
    if has_b is None:
        return None
    x, w, dy, stats = t["x_ptr"], t["w_ptr"], t["dy_ptr"], t["stats_ptr"]
    rows, cols = _rows(x)
    block = triton.next_power_of_2(cols)
    dx = torch.empty_like(x)
    dw, db = torch.empty_like(w), torch.empty_like(w)
    ref = _norm_grads64(t, rms)
    parts_tile, cols_tile, sum_warps = SUM_TILE
    fns: dict[str, Callable[[], Any]] = {}
    for n_rows_prog, warps in NORM_BWD_CONFIGS:
        if rows % n_rows_prog:
            continue
        programs = rows // n_rows_prog
        dw_part = torch.empty((programs, cols), device=x.device, dtype=torch.float32)
        db_part = torch.empty_like(dw_part)

        def kernel(n_rows_prog: int = n_rows_prog, warps: int = warps, programs: int = programs,
                   dw_part: torch.Tensor = dw_part, db_part: torch.Tensor = db_part) -> None:
            _norm_bwd_rows[(programs,)](x, w, dy, stats, dx, dw_part, db_part, cols, RMS=rms,
                                        HAS_B=has_b, ROWS=n_rows_prog, BLOCK=block, num_warps=warps)

        def summed(programs: int = programs, dw_part: torch.Tensor = dw_part,
                   db_part: torch.Tensor = db_part) -> None:
            _sum_parts[(triton.cdiv(cols, cols_tile),)](dw_part, db_part, dw, db, programs, cols,
                                                         HAS_B=has_b, PARTS=parts_tile,
                                                         COLS=cols_tile, num_warps=sum_warps)

        def whole(kernel: Callable[[], None] = kernel, summed: Callable[[], None] = summed) -> None:
            kernel()
            summed()

        label = f"triton textbook {n_rows_prog} rows {warps} warps"
        _report(label, whole, lambda: {"dx": dx, "dw": dw, **({"db": db} if has_b else {})}, ref)
        fns[label + " kernel"] = kernel
        fns[label + " whole"] = whole
        if n_rows_prog == SUM_ALONE_ROWS:
            # its partials' sum timed alone, as the capture's `_sum_partials` is: the L2 flushed
            # before it, where "whole" finds the partials the kernel just wrote in the L2
            fns[f"triton textbook sum of {programs} partials"] = summed
    return fns


def _liger_module(name: str) -> Any:
    """`liger_kernel.ops.<name>` (Liger-Kernel, the most used Triton implementation of these ops,
    a baseline only). Found where Python finds it or in the folder `$LIGER_KERNEL_DIR` holds it in;
    its package `__init__`s (which import every op and backend) are not run, only the op's
    module and the helpers it imports."""
    import importlib
    import os
    import sys
    import types

    if "liger_kernel" not in sys.modules:
        base = os.environ.get("LIGER_KERNEL_DIR")
        if base:
            if base not in sys.path:
                sys.path.append(base)  # after the machine's own packages
            for pkg in ("liger_kernel", "liger_kernel.ops"):
                module = types.ModuleType(pkg)
                module.__path__ = [os.path.join(base, *pkg.split("."))]
                sys.modules[pkg] = module
    return importlib.import_module(f"liger_kernel.ops.{name}")


def _liger_norm_backward(launch: dict[str, Any], t: dict[str, Any],
                         rms: bool) -> dict[str, Callable[[], Any]] | None:
    """Liger-Kernel's norm backward on `_norm_bwd`'s inputs (its defaults: a grid of one program
    per SM, rows in contiguous runs, `calculate_settings`' warps; RMS in its default "llama"
    casting mode, `dx` written over `dy` as its default `in_place`): its backward function
    ("whole": kernel, float32 partials and their `sum(0)`) and its kernel alone ("kernel")."""
    has_b = _norm_bwd_case(launch)
    if has_b is None:
        return None
    x, w, dy, stats = t["x_ptr"], t["w_ptr"], t["dy_ptr"], t["stats_ptr"]
    mean, rstd = stats[:, 0].contiguous(), stats[:, 1].contiguous()
    rows, cols = _rows(x)
    ref = _norm_grads64(t, rms)
    sm_count = torch.cuda.get_device_properties(x.device).multi_processor_count
    per_program = triton.cdiv(rows, sm_count)
    scratch = dy.clone()  # in place: each call overwrites its dy with dx
    dx = torch.empty_like(x)
    dw_part = torch.empty((sm_count, cols), device=x.device, dtype=torch.float32)
    db_part = torch.empty_like(dw_part)
    if rms:
        mod = _liger_module("rms_norm")
        block, warps = mod.calculate_settings(cols)
        mode = mod._str_to_casting_mode["llama"]
        out: dict[str, Any] = {}

        def whole_rms(dy_in: torch.Tensor = scratch) -> None:
            out["dx"], out["dw"] = mod.rms_norm_backward(dy_in, x, w, rstd, 0.0, mode, block, warps,
                                                         True, None)

        def kernel_rms() -> None:
            mod._rms_norm_backward_kernel[(sm_count,)](
                dy, dy.stride(0), dx, dx.stride(0), x, x.stride(0), mod.torch_to_triton_dtype[x.dtype],
                w, w.stride(0), rstd, rstd.stride(0), dw_part, dw_part.stride(0), rows, cols, 0.0,
                per_program, mode, elementwise_affine=True, BLOCK_SIZE=block, COMPUTE_DW=True,
                num_warps=warps)

        check = dy.clone()
        _report("liger rms_norm_backward", lambda: whole_rms(check), lambda: dict(out), ref)
        _report("liger rms kernel (dx)", kernel_rms, lambda: {"dx": dx}, ref)
        return {f"liger {warps} warps whole": whole_rms, f"liger {warps} warps kernel": kernel_rms}
    mod = _liger_module("layer_norm")
    block, warps = mod.calculate_settings(cols)
    got: dict[str, Any] = {}

    def whole_layer() -> None:
        got["dx"], got["dw"], got["db"] = mod.layer_norm_backward(dy, x, w, w, mean, rstd)

    def kernel_layer() -> None:
        mod._layer_norm_backward_kernel[(sm_count,)](
            x, x.stride(0), w, mean, mean.stride(0), rstd, rstd.stride(0), dx, dx.stride(0),
            dw_part, dw_part.stride(0), db_part, db_part.stride(0), dy, dy.stride(0), rows, cols,
            rows_per_program=per_program, BLOCK_SIZE=block, COMPUTE_DW=True, COMPUTE_DB=has_b,
            num_warps=warps)

    _report("liger layer_norm_backward", whole_layer, lambda: dict(got), ref)
    _report("liger layer kernel (dx)", kernel_layer, lambda: {"dx": dx}, ref)
    return {f"liger {warps} warps whole": whole_layer, f"liger {warps} warps kernel": kernel_layer}


# one function per norm for `--time-ref-fn` (the case names the norm: `RMS` is a constexpr of
# `_norm_bwd`, absent from its launch's arguments)
def triton_rms_norm_backward(launch: dict[str, Any], t: dict[str, Any]) -> dict[str, Callable[[], Any]] | None:
    """`_triton_norm_backward` of an RMS norm."""
    return _triton_norm_backward(launch, t, True)


def triton_layer_norm_backward(launch: dict[str, Any], t: dict[str, Any]) -> dict[str, Callable[[], Any]] | None:
    """`_triton_norm_backward` of a layer norm."""
    return _triton_norm_backward(launch, t, False)


def liger_rms_norm_backward(launch: dict[str, Any], t: dict[str, Any]) -> dict[str, Callable[[], Any]] | None:
    """`_liger_norm_backward` of an RMS norm."""
    return _liger_norm_backward(launch, t, True)


def liger_layer_norm_backward(launch: dict[str, Any], t: dict[str, Any]) -> dict[str, Callable[[], Any]] | None:
    """`_liger_norm_backward` of a layer norm."""
    return _liger_norm_backward(launch, t, False)


def _example_module(name: str) -> Any:
    """`examples/<name>.py` with its imports swapped back to Triton (the port in reverse: the
    kernels as the project runs them, compiled by Triton for this GPU)."""
    import types
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / f"{name}.py"
    source = path.read_text().replace("import triton_metal.language as tl", "import triton.language as tl")
    source = source.replace("import triton_metal as triton", "import triton")
    # the host helpers are the project's (MLX, NumPy); the kernels need none of them
    source = source.replace("from ._common import empty, report, strides, to_numpy",
                            "empty = report = strides = to_numpy = None")
    module = types.ModuleType(f"triton_example_{name}")
    module.__file__ = str(path)
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module


def triton_layer_norm_example(launch: dict[str, Any], t: dict[str, Any]) -> dict[str, Callable[[], Any]] | None:
    """examples/layer_norm.py's `dx` kernel (locks) compiled by Triton, on the launch's inputs;
    the locks are zeroed before each run, as the example's host code allocates them."""
    if launch["kernel"] != "_layer_norm_bwd_dx_fused":
        return None
    kernel = _example_module("layer_norm")._layer_norm_bwd_dx_fused
    # the outputs (dx, the partial buffers, the locks) are the launch's, made here
    out = {o["param"]: torch.empty(o["shape"], dtype=getattr(torch, o["dtype"]),
                                   device=t["X"].device) for o in launch["outputs"]}
    dx, dw, db, lock = out["DX"], out["DW"], out["DB"], out["Lock"]
    rows = t["X"].numel() // int(t["N"])
    group, block = _launch_group(launch), triton.next_power_of_2(int(t["N"]))
    warps = min(max(block // 256, 1), 8)

    def run() -> None:
        lock.zero_()
        kernel[(rows,)](dx, t["DY"], dw, db, t["X"], t["W"], t["Mean"], t["Rstd"], lock, int(t["stride"]),
                        int(t["N"]), GROUP_SIZE_M=group, BLOCK_SIZE_N=block, num_warps=warps)
    return {"triton (the example's kernel)": run, "torch lock zeroing alone": lock.zero_}


def _launch_group(launch: dict[str, Any]) -> int:
    """`GROUP_SIZE_M` of a captured `_layer_norm_bwd_dx_fused` launch: its partial buffers' rows."""
    return next(o["shape"][0] for o in launch["outputs"] if o["param"] == "DW")
