"""Shared by the op tests: inputs, MLX references and the documented tolerances (docs/ops.md)."""

from __future__ import annotations

from typing import Any, Callable

import mlx.core as mx
import numpy as np

DTYPES = {"float32": mx.float32, "float16": mx.float16, "bfloat16": mx.bfloat16}

# (atol, rtol) per dtype: outputs are compared with MLX's CPU result of the same call
TOLERANCE = {"float32": (2e-5, 2e-5), "float16": (4e-3, 1e-2), "bfloat16": (3e-2, 3e-2)}
# gradients go through one more rounding of the cotangent and the saved output
GRAD_TOLERANCE = {"float32": (1e-4, 1e-4), "float16": (1e-2, 2e-2), "bfloat16": (6e-2, 6e-2)}


def randn(shape: tuple[int, ...], dtype: str = "float32", seed: int = 0, scale: float = 1.0) -> mx.array:
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * scale
    return mx.array(a).astype(DTYPES[dtype])


def f32(a: mx.array) -> np.ndarray:
    return np.array(a.astype(mx.float32))


def assert_close(actual: mx.array, expected: mx.array, dtype: str, grad: bool = False,
                 scale: float = 1.0) -> None:
    """`actual` matches `expected` within the dtype's tolerance (atol scaled by `scale`)."""
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    atol, rtol = (GRAD_TOLERANCE if grad else TOLERANCE)[dtype]
    np.testing.assert_allclose(f32(actual), f32(expected), atol=atol * scale, rtol=rtol)


def grads(fn: Callable[..., mx.array], args: tuple[mx.array, ...], weight: mx.array,
          argnums: tuple[int, ...]) -> tuple[mx.array, ...]:
    """Gradients of `sum(fn(*args) * weight)` (a fixed, non-uniform cotangent)."""
    def loss(*a: mx.array) -> mx.array:
        return (fn(*a).astype(mx.float32) * weight).sum()

    g = mx.grad(loss, argnums=list(argnums))(*args)
    return (g,) if isinstance(g, mx.array) else tuple(g)


def check_grads(ours: Callable[..., mx.array], ref: Callable[..., mx.array], args: tuple[mx.array, ...],
                dtype: str, argnums: tuple[int, ...] = (0,), scale: float = 1.0) -> None:
    out = ref(*args)
    weight = mx.array(np.random.default_rng(7).standard_normal(out.shape).astype(np.float32))
    for a, b in zip(grads(ours, args, weight, argnums), grads(ref, args, weight, argnums)):
        assert_close(a, b, dtype, grad=True, scale=scale)


def transposed(a: mx.array) -> mx.array:
    """A non-contiguous view with `a`'s shape (the last two axes swapped twice over a copy)."""
    return mx.swapaxes(mx.swapaxes(a, -1, -2) * 1, -1, -2) if a.ndim >= 2 else a[::1]
