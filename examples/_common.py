"""Helpers the examples share: array allocation for NumPy or MLX inputs, and the result line."""

from __future__ import annotations

from typing import Any

import numpy as np

import triton_metal

try:
    import mlx.core as mx
except ImportError:  # pragma: no cover - MLX is a dependency; keep NumPy-only use possible
    mx = None


def is_mlx(a: object) -> bool:
    return mx is not None and isinstance(a, mx.array)


def to_numpy(a: Any) -> np.ndarray:
    """A NumPy copy of a NumPy or MLX array (bfloat16 widened to float32)."""
    if is_mlx(a):
        if a.dtype == mx.bfloat16:
            a = a.astype(mx.float32)
        return np.array(a)
    return np.asarray(a)


def empty(shape: tuple[int, ...], dtype: Any, like: Any) -> Any:
    """A new array of `shape` of the same library as `like` (zero-filled, so runs repeat).

    `dtype` is a NumPy or an MLX dtype; NumPy dtypes are translated for MLX arrays."""
    if is_mlx(like):
        if not isinstance(dtype, mx.Dtype):
            dtype = getattr(mx, np.dtype(dtype).name)
        return mx.zeros(shape, dtype=dtype)
    return np.zeros(shape, dtype=dtype)


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
    """Element strides of a NumPy array; MLX arrays seen by kernels are row-contiguous."""
    if is_mlx(a):
        out: list[int] = []
        step = 1
        for extent in reversed(a.shape):
            out.append(step)
            step *= extent
        return tuple(reversed(out))
    return tuple(s // a.itemsize for s in a.strides)
