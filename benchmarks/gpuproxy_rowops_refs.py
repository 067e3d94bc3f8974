"""Float64 references for the row-op captures of `benchmarks/gpuproxy_rowops.py`.

Each function is a `replay.py --check-fn` callable: given a captured launch and its inputs by
parameter name (CUDA tensors of the captured dtype and shape, scalars as numbers), it returns the
expected contents of the outputs it knows, written from the operation's definition, or None for
another kernel's launch. Imported by the replay on the GPU machine (torch only).
"""

from __future__ import annotations

from typing import Any

import torch


def _outputs(launch: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {o["param"]: o for o in launch["outputs"]}


def _by_program(values: torch.Tensor, programs: int, consecutive: bool = False) -> torch.Tensor:
    """Row r's values summed into partial r % programs (a persistent grid's, or a lock group's),
    or, for runs of consecutive rows, into partial r // ceil(rows / programs)."""
    rows = values.shape[0]
    index = torch.arange(rows, device=values.device)
    index = index // -(-rows // programs) if consecutive else index % programs
    out = torch.zeros((programs, values.shape[1]), dtype=values.dtype, device=values.device)
    return out.index_add_(0, index, values)


def _normalized(x: torch.Tensor, eps: float, rms: bool) -> tuple[torch.Tensor, torch.Tensor]:
    xc = x if rms else x - x.mean(-1, keepdim=True)
    rstd = torch.rsqrt((xc * xc).mean(-1, keepdim=True) + eps)
    return xc * rstd, rstd


def _check_norm_backward(launch: dict[str, Any], t: dict[str, Any],
                         rms: bool) -> dict[str, torch.Tensor] | None:
    """`_norm_bwd`: dx, and the per-program float32 partials of the weight and bias gradients."""
    if launch["kernel"] != "_norm_bwd":
        return None
    x, dy = t["x_ptr"].double(), t["dy_ptr"].double()
    if "stats_ptr" in t:  # the forward's saved (mean, rstd) per row
        stats = t["stats_ptr"].double()
        rstd = stats[:, 1:2]
        xhat = (x - stats[:, 0:1]) * rstd
    else:
        xhat, rstd = _normalized(x, float(t["eps"]), rms)
    dxhat = dy * t["w_ptr"].double() if "w_ptr" in t else dy
    inner = (dxhat * xhat).mean(-1, keepdim=True)
    centred = dxhat if rms else dxhat - dxhat.mean(-1, keepdim=True)
    expected = {"dx_ptr": rstd * (centred - xhat * inner)}
    outs = _outputs(launch)
    # the config's order of rows over the programs (`ops/norms.py`): strided, or one run each
    consecutive = "CONSECUTIVE: 1" in str(launch.get("config") or "")
    if "dw_ptr" in outs:
        expected["dw_ptr"] = _by_program(dy * xhat, outs["dw_ptr"]["shape"][0], consecutive)
    if "db_ptr" in outs:
        expected["db_ptr"] = _by_program(dy, outs["db_ptr"]["shape"][0], consecutive)
    return expected


def check_rms_norm_backward(launch: dict[str, Any], t: dict[str, Any]) -> dict[str, torch.Tensor] | None:
    """`_norm_bwd` of an RMS norm (the case names the norm: `RMS` is a constexpr of the kernel,
    absent from its launch's arguments)."""
    return _check_norm_backward(launch, t, True)


def check_layer_norm_backward(launch: dict[str, Any], t: dict[str, Any]) -> dict[str, torch.Tensor] | None:
    """`_norm_bwd` of a layer norm."""
    return _check_norm_backward(launch, t, False)


def check_sum_partials(launch: dict[str, Any], t: dict[str, Any]) -> dict[str, torch.Tensor] | None:
    """`_sum_partials`: the gradients, the partials summed."""
    if launch["kernel"] != "_sum_partials":
        return None
    parts = int(t["n_parts"])
    outs = _outputs(launch)
    expected = {}
    for out, part in (("dw_ptr", "dw_part_ptr"), ("db_ptr", "db_part_ptr")):
        if out in outs:
            expected[out] = t[part].double()[:parts].sum(0)
    return expected


def check_rope(launch: dict[str, Any], t: dict[str, Any]) -> dict[str, torch.Tensor] | None:
    """`_rope_kernel` without frequencies' gradient, non-traditional pairs `(x[i], x[i + dims/2])`."""
    if launch["kernel"] != "_rope_kernel":
        return None
    x = t["x_ptr"]
    D, dims, L = int(t["D"]), int(t["dims"]), int(t["L"])
    rows = x.double().reshape(-1, D)
    half = dims // 2
    i = torch.arange(half, dtype=torch.float64, device=x.device)
    inv = torch.exp2(-(2.0 * i / dims) * float(t["log2_base"]))
    pos = (float(t["offset"]) + torch.arange(rows.shape[0], device=x.device) % L) * float(t["scale"])
    angle = pos.double()[:, None] * inv[None, :]
    cos, sin = torch.cos(angle), torch.sin(angle) * float(t["sign"])
    x1, x2 = rows[:, :half], rows[:, half:dims]
    y = rows.clone()
    y[:, :half] = x1 * cos - x2 * sin
    y[:, half:dims] = x1 * sin + x2 * cos
    return {"y_ptr": y.reshape(x.shape)}


def check_cross_entropy(launch: dict[str, Any], t: dict[str, Any]) -> dict[str, torch.Tensor] | None:
    """`_xent_fwd` / `_xent_bwd`: class targets (`t_ptr` 1-D) or the entropy (no `t_ptr` read)."""
    if launch["kernel"] not in ("_xent_fwd", "_xent_bwd"):
        return None
    x = t["x_ptr"].double()
    n = x.shape[-1]
    p = torch.softmax(x, -1)
    entropy = "t_ptr" not in t
    if not entropy and t["t_ptr"].dim() != 1:
        return None  # probability targets: not among these captures
    ls = 0.0 if entropy else float(t["smoothing"])
    if launch["kernel"] == "_xent_fwd":
        lse = torch.logsumexp(x, -1)
        # the statistics saved for the backward: the log-sum-exp, then sum(p * x) or the maximum
        aux = (p * x).sum(-1) if entropy else x.max(-1).values
        stats = {"stats_ptr": torch.stack((lse, aux), -1)} if "stats_ptr" in _outputs(launch) else {}
        if entropy:
            return {"loss_ptr": lse - (p * x).sum(-1), **stats}
        x_t = x.gather(1, t["t_ptr"].long()[:, None])[:, 0]
        return {"loss_ptr": lse - (1.0 - ls) * x_t - ls * x.mean(-1), **stats}
    g = t["g_ptr"].double()[:, None]
    if entropy:
        return {"dx_ptr": -g * p * (x - (p * x).sum(-1, keepdim=True))}
    onehot = torch.nn.functional.one_hot(t["t_ptr"].long(), n).double()
    return {"dx_ptr": g * (p - (1.0 - ls) * onehot - ls / n)}


def check_layer_norm_example(launch: dict[str, Any], t: dict[str, Any]) -> dict[str, torch.Tensor] | None:
    """`examples/layer_norm.py`: forward, the backward's dx and locked partial sums, their sum."""
    kernel = launch["kernel"]
    if kernel == "_layer_norm_fwd_fused":
        N = int(t["N"])
        x = t["X"].double().reshape(-1, N)
        xhat, rstd = _normalized(x, float(t["eps"]), False)
        return {"Y": xhat * t["W"].double() + t["B"].double(), "Mean": x.mean(-1), "Rstd": rstd[:, 0]}
    if kernel == "_layer_norm_bwd_dx_fused":
        N = int(t["N"])
        x, dy = t["X"].double().reshape(-1, N), t["DY"].double().reshape(-1, N)
        xhat = (x - t["Mean"].double()[:, None]) * t["Rstd"].double()[:, None]
        wdy = t["W"].double() * dy
        c1 = (xhat * wdy).mean(-1, keepdim=True)
        c2 = wdy.mean(-1, keepdim=True)
        groups = _outputs(launch)["DW"]["shape"][0]
        return {"DX": (wdy - (xhat * c1 + c2)) * t["Rstd"].double()[:, None],
                "DW": _by_program(dy * xhat, groups), "DB": _by_program(dy, groups)}
    if kernel == "_layer_norm_bwd_dwdb":
        M = int(t["M"])
        return {"FINAL_DW": t["DW"].double()[:M].sum(0), "FINAL_DB": t["DB"].double()[:M].sum(0)}
    return None


def _saved_stats_input(launch: dict[str, Any], kernel: str,
                       device: str) -> tuple[dict[str, Any], torch.Tensor] | None:
    """A backward launch reading its forward's `stats_ptr`: its inputs by name and random `x_ptr`
    data (seeded) of the captured shape and dtype; None for any other launch."""
    params = {i["param"]: i for i in launch["inputs"]}
    if launch["kernel"] != kernel or "stats_ptr" not in params:
        return None
    spec = params["x_ptr"]
    gen = torch.Generator(device=device).manual_seed(1)
    x = torch.randn(spec["shape"], generator=gen, device=device).to(getattr(torch, spec["dtype"]))
    return params, x


def _inputs_norm_backward(launch: dict[str, Any], device: str,
                          rms: bool) -> dict[str, torch.Tensor] | None:
    """`replay.py --inputs`: `_norm_bwd`'s x and the (mean, rstd) its forward saves for it.

    A capture records the stand-in's zeros for the saved statistics, so the replay gets random x
    and its statistics computed in float64 here (eps 1e-5, the cases'; RMS: mean 0)."""
    found = _saved_stats_input(launch, "_norm_bwd", device)
    if found is None:
        return None
    _, x = found
    xd = x.double()
    mean = torch.zeros_like(xd[:, 0]) if rms else xd.mean(-1)
    _, rstd = _normalized(xd, 1e-5, rms)
    return {"x_ptr": x, "stats_ptr": torch.stack((mean, rstd[:, 0]), -1).float()}


def inputs_rms_norm_backward(launch: dict[str, Any], device: str) -> dict[str, torch.Tensor] | None:
    """`_inputs_norm_backward` of an RMS norm."""
    return _inputs_norm_backward(launch, device, True)


def inputs_layer_norm_backward(launch: dict[str, Any], device: str) -> dict[str, torch.Tensor] | None:
    """`_inputs_norm_backward` of a layer norm."""
    return _inputs_norm_backward(launch, device, False)


def inputs_cross_entropy(launch: dict[str, Any], device: str) -> dict[str, torch.Tensor] | None:
    """`replay.py --inputs`: the backward's logits and the statistics its forward saves for them.

    `_xent_bwd` reads the float32 (log-sum-exp, aux) per row that `_xent_fwd` wrote; a capture
    records the stand-in's zeros there, so the replay gets random logits and their statistics
    computed in float64 here (aux: sum(softmax * x) for the entropy, else the row maximum)."""
    found = _saved_stats_input(launch, "_xent_bwd", device)
    if found is None:
        return None
    params, x = found
    xd = x.double()
    lse = torch.logsumexp(xd, -1)
    aux = (torch.softmax(xd, -1) * xd).sum(-1) if "t_ptr" not in params else xd.max(-1).values
    return {"x_ptr": x, "stats_ptr": torch.stack((lse, aux), -1).float()}
