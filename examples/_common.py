"""Helpers the examples share: array allocation for NumPy, MLX or torch inputs, and the result line.

torch is never imported here: a torch tensor is recognised only when torch is already imported."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

import triton_metal

try:
    import mlx.core as mx
except ImportError:  # pragma: no cover - MLX is a dependency; keep NumPy-only use possible
    mx = None


def is_mlx(a: object) -> bool:
    return mx is not None and isinstance(a, mx.array)


def is_torch(a: object) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(a, torch.Tensor)


def to_numpy(a: Any) -> np.ndarray:
    """A NumPy copy of a NumPy, MLX or torch array (bfloat16 widened to float32)."""
    if is_torch(a):
        return a.detach().float().numpy() if a.dtype == sys.modules["torch"].bfloat16 else a.detach().numpy()
    if is_mlx(a):
        if a.dtype == mx.bfloat16:
            a = a.astype(mx.float32)
        return np.array(a)
    return np.asarray(a)


def empty(shape: tuple[int, ...], dtype: Any, like: Any) -> Any:
    """A new array of `shape` of the same library as `like` (zero-filled, so runs repeat).

    `dtype` is a NumPy, MLX or torch dtype; NumPy dtypes are translated for MLX and torch."""
    if is_torch(like):
        torch = sys.modules["torch"]
        if not isinstance(dtype, torch.dtype):
            dtype = getattr(torch, np.dtype(dtype).name)
        return torch.zeros(shape, dtype=dtype)
    if is_mlx(like):
        if not isinstance(dtype, mx.Dtype):
            dtype = getattr(mx, np.dtype(dtype).name)
        return mx.zeros(shape, dtype=dtype)
    return np.zeros(shape, dtype=dtype)


def numel(a: Any) -> int:
    """The element count of a NumPy, MLX or torch array."""
    return int(a.numel()) if is_torch(a) else int(a.size)


def dtype_of(a: Any) -> Any:
    return a.dtype


def report(name: str, error: float, tolerance: float) -> bool:
    """Print the standard result line and say whether the error is within tolerance."""
    ok = bool(error <= tolerance)
    backend = triton_metal.active_backend_name()
    verdict = "OK" if ok else f"FAILED (tolerance {tolerance:g})"
    print(f"{name}: max abs error vs NumPy: {error:.3g} {verdict} (backend: {backend})")
    return ok


def strides(a: Any) -> tuple[int, ...]:
    """Element strides of a NumPy array or torch tensor; MLX arrays seen by kernels are
    row-contiguous."""
    if is_torch(a):
        return tuple(a.stride())
    if is_mlx(a):
        out: list[int] = []
        step = 1
        for extent in reversed(a.shape):
            out.append(step)
            step *= extent
        return tuple(reversed(out))
    return tuple(s // a.itemsize for s in a.strides)
