"""Inputs, float64 checks and timing references for replaying `decode_cases.py` captures with
`gpuproxy/replay.py` (`--inputs`, `--check-fn`, `--time-ref-fn` of this file's functions).

Works for the kernels of any version of the ops (the parameter names `x_ptr`, `w_ptr`, ... are
shared; the weights are told apart by dtype): packed weights get random codes (replay would
otherwise make integer inputs zero), the checks dequantize them independently in float64, and
the references are a dense float16 GEMV (`F.linear`, 4x the bytes of 4-bit weights) and
PyTorch's `scaled_dot_product_attention`. Decode attention is checked at both passes: every
split's partial output and log-sum-exp, and the combine's output.
"""

from __future__ import annotations

import math
import re
from typing import Any

import torch
import torch.nn.functional as F

_E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
_SDPA: dict[str, Any] = {}


def _param(launch: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((i for i in launch["inputs"] if i["param"] == name and i["role"] == "array"), None)


def inputs(launch: dict[str, Any], device: str) -> dict[str, Any]:
    w, s = _param(launch, "w_ptr"), _param(launch, "s_ptr")
    if w is None:
        return {}
    shape, got = tuple(w["shape"]), {}
    x = _param(launch, "x_ptr")
    float_scales = s is not None and s["dtype"] == "uint8" and len(s["shape"]) == 2
    per_word = x["shape"][-1] // shape[1] if x is not None else 0
    if w["dtype"] == "uint32" and float_scales and per_word == 4:
        # mxfp8: E4M3 bytes of either sign from 1/4 to 4 (their sums fit a float16 output),
        # never the NaN code
        bytes_ = torch.randint(0x28, 0x48, shape + (4,), dtype=torch.int64, device=device)
        bytes_ |= torch.randint(0, 2, shape + (4,), dtype=torch.int64, device=device) << 7
        got["w_ptr"] = (bytes_ << torch.tensor([0, 8, 16, 24], device=device)).sum(-1).to(torch.uint32)
    elif w["dtype"] == "uint32":
        # packed codes, or int8 / ternary bytes the launch views as words (then every code
        # 0-3 of a ternary byte occurs; kernel and check read code 3 alike, as value 2)
        words = torch.randint(0, 2 ** 31, shape, dtype=torch.int64, device=device)
        got["w_ptr"] = words.to(torch.uint32)
    elif w["dtype"] == "int8":
        got["w_ptr"] = torch.randint(-127, 128, shape, dtype=torch.int8, device=device)
    elif w["dtype"] == "uint8":  # ternary: four codes 0, 1, 2 a byte
        codes = torch.randint(0, 3, shape + (4,), dtype=torch.int32, device=device)
        got["w_ptr"] = (codes << torch.tensor([0, 2, 4, 6], device=device)).sum(-1).to(torch.uint8)
    if float_scales and x is not None and x["shape"][-1] // s["shape"][1] == 16:  # nvfp4: E4M3 from 1/2 to 2
        got["s_ptr"] = torch.randint(0x30, 0x41, tuple(s["shape"]), dtype=torch.int32, device=device).to(torch.uint8)
    elif s is not None and s["dtype"] == "uint8":  # E8M0 scales near 1
        e8m0 = torch.randint(120, 134, tuple(s["shape"]), dtype=torch.int32, device=device)
        got["s_ptr"] = e8m0.to(torch.uint8)
    if x is not None and x["dtype"] == "int8":
        got["x_ptr"] = torch.randint(-127, 128, tuple(x["shape"]), dtype=torch.int8, device=device)
    return got


def _codes(w: torch.Tensor, bits: int) -> torch.Tensor:
    """Little-endian codes of each row of uint32 words (or uint8 bytes), float64."""
    width = 32 if w.dtype == torch.uint32 else 8
    v = w.to(torch.int64) & ((1 << width) - 1)
    shifts = torch.arange(0, width, bits, device=w.device)
    return ((v[..., None] >> shifts) & ((1 << bits) - 1)).reshape(w.shape[0], -1).double()


def _e4m3(codes: torch.Tensor) -> torch.Tensor:
    """E4M3 (bias 7, no infinities, 0x7F and 0xFF NaN) in float64."""
    e, m = (codes >> 3) & 15, (codes & 7).double()
    value = torch.where(e == 0, m / 8 * 2.0 ** -6, (1 + m / 8) * torch.exp2(e.double() - 7))
    value = torch.where((codes & 0x80) != 0, -value, value)
    return torch.where((codes & 0x7F) == 0x7F, math.nan, value)


def _weights(names: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(x in float64, the dequantized (N, K) matrix in float64) for a quantized launch."""
    w, x = names["w_ptr"], names["x_ptr"].double()
    s = names["s_ptr"] if "s_ptr" in names else names["xs_ptr"]  # older ternary kernels: xs_ptr
    K = x.shape[-1]
    # int8 and ternary weights come as int8 / uint8 bytes, or as the uint32 words viewing them
    per_word = K // w.shape[1] if w.dtype == torch.uint32 else 0
    if w.dtype == torch.int8 or (s.dim() == 1 and per_word == 4):  # int8: per-output-channel scale
        b = w.double() if w.dtype == torch.int8 else _codes(w, 8)
        b = torch.where(b >= 128, b - 256, b)
        return x, b * s.double()[:, None]
    if w.dtype == torch.uint8 or (s.dim() == 1 and per_word == 16):
        # ternary: code - 1, per-row activation scale, per-tensor weight scale
        xs = names["xs_ptr"] if "xs_ptr" in names else s
        ws = names["ws_ptr"] if "ws_ptr" in names else names["b_ptr"]
        return x * xs.double()[:, None], (_codes(w, 2) - 1) * ws.double().reshape(())
    if s.dtype == torch.uint8 and per_word == 4:  # mxfp8: E4M3 codes, E8M0 scales a group of 32
        return x, _e4m3(_codes(w, 8).long()) * torch.exp2(s.double() - 127).repeat_interleave(32, 1)
    if s.dtype == torch.uint8:  # mxfp4 (E8M0 scales a group of 32), nvfp4 (E4M3 scales a group of 16)
        c = _codes(w, 4).long()
        mag = torch.tensor(_E2M1, dtype=torch.float64, device=w.device)[c & 7]
        val = torch.where((c & 8) != 0, -mag, mag)
        group = K // s.shape[1]
        scale = _e4m3(s.long()) if group == 16 else torch.exp2(s.double() - 127)
        return x, val * scale.repeat_interleave(group, 1)
    bits = w.shape[1] * 32 // K
    group = K // s.shape[1]
    scale = s.double().repeat_interleave(group, 1)
    return x, _codes(w, bits) * scale + names["b_ptr"].double().repeat_interleave(group, 1)


def _split_partials(launch: dict[str, Any], names: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """Flash-decoding's pass 1 in float64: each split's softmax-weighted values (normalised) and
    log-sum-exp, per kv head and padded group head (padded heads have q = 0), rows
    `(batch x kv head, split, group head)`; a split past the keys is zeros and -inf."""
    q, k, v = (names[p].double() for p in ("q_ptr", "k_ptr", "v_ptr"))
    B, Hq, _, D = q.shape
    Hkv, L = k.shape[1], k.shape[2]
    group = Hq // Hkv
    gp = 1 << (group - 1).bit_length()
    rows, block_d = out["shape"]
    n = rows // (B * Hkv * gp)
    # keys a split: the config's SPLIT where it names one (older kernels), else the launcher's
    # power of two giving n splits
    named = re.search(r"\bSPLIT: (\d+)", launch.get("config") or "")
    split = int(named.group(1)) if named else 1 << (math.ceil(L / n) - 1).bit_length()
    qg = torch.zeros((B, Hkv, gp, D), dtype=torch.float64, device=q.device)
    qg[:, :, :group] = q.reshape(B, Hkv, group, D)
    s = torch.einsum("bhgd,bhld->bhgl", qg, k) * names["scale"]
    po = torch.zeros((B, Hkv, n, gp, block_d), dtype=torch.float64, device=q.device)
    plse = torch.full((B, Hkv, n, gp), -math.inf, dtype=torch.float64, device=q.device)
    for i in range(min(n, math.ceil(L / split))):
        part = s[..., i * split:(i + 1) * split]
        plse[:, :, i] = torch.logsumexp(part, -1)
        po[:, :, i, :, :D] = torch.softmax(part, -1) @ v[:, :, i * split:(i + 1) * split]
    return {"po_ptr": po.reshape(rows, block_d), "plse_ptr": plse.reshape(rows)}


def check(launch: dict[str, Any], names: dict[str, Any]) -> dict[str, Any] | None:
    # `names` holds the launch's inputs; its outputs are listed in `launch`
    if "w_ptr" in names:
        x, wd = _weights(names)
        return {"y_ptr": x @ wd.T}
    if "q_ptr" in names:  # decode attention: the reference of the (batch, head) outputs
        q, k, v = (names[p].double() for p in ("q_ptr", "k_ptr", "v_ptr"))
        rep = q.shape[1] // k.shape[1]
        ref = F.scaled_dot_product_attention(q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1),
                                             scale=names["scale"])
        _SDPA["o"] = ref
        # one-pass kernels write o_ptr; flash-decoding's first pass writes partials
        partials = next((o for o in launch["outputs"] if o["param"] == "po_ptr"), None)
        return {"o_ptr": ref} if partials is None else _split_partials(launch, names, partials)
    if "po_ptr" in names and "o" in _SDPA:  # flash-decoding's combine
        return {"o_ptr": _SDPA["o"]}
    return None


def time_refs(launch: dict[str, Any], names: dict[str, Any]) -> dict[str, Any] | None:
    if "w_ptr" in names:
        x = names["x_ptr"]
        N, K = names["w_ptr"].shape[0], x.shape[-1]
        dense = torch.randn((N, K), dtype=torch.float16, device=x.device)
        x16 = x.to(torch.float16)
        return {"dense fp16 GEMV": lambda: F.linear(x16, dense)}
    if "q_ptr" in names and "k_ptr" in names:
        q, k, v = names["q_ptr"], names["k_ptr"], names["v_ptr"]
        return {"torch sdpa (GQA)": lambda: F.scaled_dot_product_attention(q, k, v, scale=names["scale"],
                                                                           enable_gqa=True)}
    return None
