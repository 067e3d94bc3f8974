"""Every example kernel compiled on the emulator against the interpreter and NumPy, same inputs.

Each case calls an example's host function twice on the same arguments: under
`TRITON_METAL_INTERPRET=1` and compiled (the emulator backend), then compares both results with
each other and with the example's NumPy reference. Cases cover masked tails and sizes that are
not powers of two, fp16 and bf16 (MLX arrays), and `num_warps` 1, 2, 4 and 8.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mlx.core as mx
import numpy as np
import pytest

from triton_metal.errors import CompilationError
from examples import cumsum, dropout, flash_attention, histogram, layer_norm, matmul, softmax, vector_add

RNG = np.random.default_rng(2024)


def _numpy(value: Any) -> np.ndarray:
    if isinstance(value, mx.array):
        return np.array(value.astype(mx.float32) if value.dtype == mx.bfloat16 else value)
    return np.asarray(value)


def both(monkeypatch: pytest.MonkeyPatch, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """(compiled result, interpreted result) of `fn(*args, **kwargs)`, as NumPy arrays."""
    monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    try:
        interpreted = fn(*args, **kwargs)
    except CompilationError as refusal:  # one legality: then the compiler refuses it alike
        monkeypatch.delenv("TRITON_METAL_INTERPRET")
        with pytest.raises(CompilationError) as compiled_refusal:
            fn(*args, **kwargs)
        assert compiled_refusal.value.reason == refusal.reason
        raise
    monkeypatch.delenv("TRITON_METAL_INTERPRET")
    compiled = fn(*args, **kwargs)
    convert = (lambda r: tuple(_numpy(x) for x in r)) if isinstance(compiled, tuple) else _numpy
    return convert(compiled), convert(interpreted)


def _as(dtype: str, a: np.ndarray) -> Any:
    if dtype == "bf16":
        return mx.array(a).astype(mx.bfloat16)
    return a.astype(np.float16 if dtype == "fp16" else np.float32)


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
@pytest.mark.parametrize("n", [1, 777, 4096, 10_001])
def test_vector_add(monkeypatch: pytest.MonkeyPatch, n: int, num_warps: int):
    x = RNG.standard_normal(n).astype(np.float32)
    y = RNG.standard_normal(n).astype(np.float32)
    compiled, interpreted = both(monkeypatch, vector_add.add, x, y, BLOCK_SIZE=256, num_warps=num_warps)
    np.testing.assert_array_equal(compiled, interpreted)
    np.testing.assert_array_equal(compiled, x + y)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_vector_add_half_types(monkeypatch: pytest.MonkeyPatch, dtype: str):
    x = _as(dtype, RNG.standard_normal(1000))
    y = _as(dtype, RNG.standard_normal(1000))
    compiled, interpreted = both(monkeypatch, vector_add.add, x, y, BLOCK_SIZE=512)
    np.testing.assert_array_equal(compiled, interpreted)
    # one rounding of the exact float32 sum to the storage type
    want = _numpy(_as(dtype, _numpy(x).astype(np.float32) + _numpy(y).astype(np.float32)))
    np.testing.assert_array_equal(compiled, want)


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
@pytest.mark.parametrize("shape", [(1, 5), (7, 100), (33, 257)])
def test_softmax(monkeypatch: pytest.MonkeyPatch, shape: tuple[int, int], num_warps: int):
    x = RNG.standard_normal(shape).astype(np.float32)
    compiled, interpreted = both(monkeypatch, softmax.softmax, x, num_warps=num_warps)
    np.testing.assert_allclose(compiled, interpreted, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(compiled, softmax.reference(x), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_softmax_half_types(monkeypatch: pytest.MonkeyPatch, dtype: str):
    x = _as(dtype, RNG.standard_normal((9, 70)))
    compiled, interpreted = both(monkeypatch, softmax.softmax, x)
    np.testing.assert_allclose(compiled, interpreted, atol=1e-2)
    np.testing.assert_allclose(compiled, softmax.reference(_numpy(x)), atol=1e-2)


@pytest.mark.parametrize("num_warps", [1, 4])
def test_layer_norm_forward_and_backward(monkeypatch: pytest.MonkeyPatch, num_warps: int):
    x = (RNG.standard_normal((13, 150)) * 2 + 0.5).astype(np.float32)
    w = RNG.random(150).astype(np.float32)
    b = RNG.random(150).astype(np.float32)
    dy = (0.1 * RNG.standard_normal((13, 150))).astype(np.float32)
    (y, mean, rstd), (yi, meani, rstdi) = both(
        monkeypatch, layer_norm.layer_norm_forward, x, w, b, 1e-5, num_warps=num_warps
    )
    for c, i in ((y, yi), (mean, meani), (rstd, rstdi)):
        np.testing.assert_allclose(c, i, rtol=1e-5, atol=1e-6)
    y_ref, mean_ref, rstd_ref = layer_norm.reference_forward(x, w, b, 1e-5)
    np.testing.assert_allclose(y, y_ref, atol=1e-5)
    np.testing.assert_allclose(rstd, rstd_ref, rtol=1e-5)
    grads, grads_i = both(monkeypatch, layer_norm.layer_norm_backward, dy, x, w, mean, rstd, num_warps=num_warps)
    for c, i, r in zip(grads, grads_i, layer_norm.reference_backward(dy, x, w, 1e-5)):
        np.testing.assert_allclose(c, i, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(c, r, atol=1e-4)


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_matmul(monkeypatch: pytest.MonkeyPatch, dtype: str, num_warps: int):
    a = _as(dtype, RNG.standard_normal((70, 48)))
    b = _as(dtype, RNG.standard_normal((48, 40)))
    compiled, interpreted = both(monkeypatch, matmul.matmul, a, b, activation="leaky_relu", num_warps=num_warps)
    tol = 2e-2 if dtype == "fp16" else 1e-4
    np.testing.assert_allclose(compiled.astype(np.float32), interpreted.astype(np.float32), rtol=tol, atol=tol)
    np.testing.assert_allclose(compiled.astype(np.float32), matmul.reference(a, b, "leaky_relu"), rtol=tol, atol=tol)


@pytest.mark.parametrize("num_warps", [1, 4])
def test_cumsum(monkeypatch: pytest.MonkeyPatch, num_warps: int):
    x = RNG.integers(-50, 50, (6, 300)).astype(np.int32)
    compiled, interpreted = both(monkeypatch, cumsum.cumsum, x, num_warps=num_warps)
    np.testing.assert_array_equal(compiled, interpreted)
    np.testing.assert_array_equal(compiled, cumsum.reference(x))


def test_dropout(monkeypatch: pytest.MonkeyPatch):
    x = RNG.standard_normal(3000).astype(np.float32)
    compiled, interpreted = both(monkeypatch, dropout.seeded_dropout, x, 0.3, 123, BLOCK_SIZE=512)
    # the same elements dropped; kept ones are x / (1 - p), Triton's approximate fp32 division
    # (fast::divide, within 2.5 ulp: docs/language.md) compiled, exact in the interpreter
    np.testing.assert_array_equal(compiled == 0, interpreted == 0)
    np.testing.assert_allclose(compiled, interpreted, rtol=3.6e-7, atol=0)
    np.testing.assert_allclose(compiled, dropout.reference(x, 0.3, 123), rtol=1e-6)


@pytest.mark.parametrize("num_warps", [2, 8])
def test_histogram(monkeypatch: pytest.MonkeyPatch, num_warps: int):
    x = RNG.random(5003).astype(np.float32)
    compiled, interpreted = both(monkeypatch, histogram.histogram, x, 32, BLOCK_SIZE=256, num_warps=num_warps)
    np.testing.assert_array_equal(compiled, interpreted)
    np.testing.assert_array_equal(compiled, histogram.reference(x, 32))


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention(monkeypatch: pytest.MonkeyPatch, causal: bool):
    q, k, v = (RNG.standard_normal((1, 2, 64, 32)).astype(np.float16) for _ in range(3))
    (o, m), (oi, mi) = both(monkeypatch, flash_attention.attention, q, k, v, causal, 0.5)
    np.testing.assert_allclose(o.astype(np.float32), oi.astype(np.float32), atol=2e-3)
    np.testing.assert_allclose(m, mi, rtol=1e-3, atol=1e-3)
    o_ref, _ = flash_attention.reference(q, k, v, causal, 0.5)
    np.testing.assert_allclose(o.astype(np.float32), o_ref, atol=2e-3)
