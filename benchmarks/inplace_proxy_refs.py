"""Float64 checks for replaying `inplace_proxy_cases.py` captures with `gpuproxy/replay.py`
(`--inputs benchmarks/inplace_proxy_refs.py:inputs --check-fn
benchmarks/inplace_proxy_refs.py:check`): Triton's in-place result of each launch,
computed from the array's contents before it (`old_<param>` in the replay's names)."""

from __future__ import annotations

from typing import Any

import torch


def inputs(launch: dict[str, Any], device: str) -> dict[str, Any]:
    """Random bins for the scatter-adds (replay would otherwise make every index 0)."""
    if launch["kernel"] != "scatter_add":
        return {}
    idx = next(i for i in launch["inputs"] if i["param"] == "idx_ptr")
    bins = next(o for o in launch["outputs"] if o.get("param") == "out_ptr")["shape"][0]
    gen = torch.Generator(device=device).manual_seed(bins)
    return {"idx_ptr": torch.randint(0, bins, tuple(idx["shape"]), generator=gen, device=device,
                                     dtype=torch.int32)}


def check(launch: dict[str, Any], names: dict[str, Any]) -> dict[str, Any] | None:
    if launch["kernel"] == "scatter_add":
        old = names.get("old_out_ptr")
        if old is None:
            return None
        n = names["n"]
        out = old.double().clone()
        out.index_add_(0, names["idx_ptr"][:n].long(), names["x_ptr"][:n].double())
        return {"out_ptr": out}
    if launch["kernel"] == "rounds":
        old = names.get("old_x_ptr", names["x_ptr"])
        return {"x_ptr": old.double() + 3}
    return None
