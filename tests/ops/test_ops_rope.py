from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from triton_metal import ops

from .helpers import assert_close, check_grads, randn

CASES = [
    # shape, dims, traditional, dtype
    ((1, 2, 7, 64), 64, False, "float32"),
    ((2, 3, 5, 80), 48, True, "float32"),
    ((1, 1, 100, 16), 16, True, "bfloat16"),
    ((1, 2, 3, 32), 24, False, "float16"),
    # one position of up to 32 sequences per program: 40 sequences, the second block partial
    ((2, 20, 5, 128), 128, False, "float16"),
]


@pytest.mark.parametrize("shape, dims, traditional, dtype", CASES)
def test_rope(shape, dims, traditional, dtype):
    x = randn(shape, dtype)
    kw = dict(traditional=traditional, base=10000.0, scale=0.5, offset=3)
    assert_close(ops.rope(x, dims, **kw), mx.fast.rope(x, dims, **kw), dtype, scale=5)
    # the backward is the forward kernel rotating the other way: no new compile per dtype
    check_grads(lambda a: ops.rope(a, dims, **kw), lambda a: mx.fast.rope(a, dims, **kw), (x,), dtype)


def _rope_f64(x, dims, base, scale, offset):
    """mx.fast.rope's non-traditional rotation in float64 (NumPy), from its definition."""
    x = np.asarray(x, np.float64)
    half = dims // 2
    inv = base ** (-2.0 * np.arange(half) / dims)
    angle = ((offset + np.arange(x.shape[-2])) * scale)[:, None] * inv[None, :]
    x1, x2 = x[..., :half], x[..., half:dims]
    y = x.copy()
    y[..., :half] = x1 * np.cos(angle) - x2 * np.sin(angle)
    y[..., half:dims] = x1 * np.sin(angle) + x2 * np.cos(angle)
    return y


def test_rope_against_float64():
    # 40 sequences of 300 positions (angles up to 306 radians), 96 of 128 features rotated
    x = randn((2, 20, 300, 128))
    y = ops.rope(x, 96, traditional=False, base=10000.0, scale=1.0, offset=7)
    want = _rope_f64(x, 96, 10000.0, 1.0, 7)
    # float32 angles: a 300-radian angle is rounded by up to 300 * 2**-24 (2e-5) before its sin
    # and cos, times |x| up to 5
    np.testing.assert_allclose(np.array(y), want, atol=2e-4, rtol=1e-4)


def test_rope_freqs():
    x = randn((1, 2, 7, 64))
    f = mx.array(np.linspace(1.0, 50.0, 16).astype(np.float32))
    kw = dict(traditional=False, base=None, scale=1.0, offset=0)
    assert_close(ops.rope(x, 32, freqs=f, **kw), mx.fast.rope(x, 32, freqs=f, **kw), "float32", scale=5)
    check_grads(lambda a, ff: ops.rope(a, 32, freqs=ff, **kw), lambda a, ff: mx.fast.rope(a, 32, freqs=ff, **kw),
                (x, f), "float32", (0, 1), scale=10)


def test_rope_non_contiguous():
    x = mx.swapaxes(randn((1, 7, 2, 64)), 1, 2)
    kw = dict(traditional=False, base=10000.0, scale=1.0, offset=5)
    assert_close(ops.rope(x, 64, **kw), mx.fast.rope(x, 64, **kw), "float32", scale=5)


@pytest.mark.parametrize("call, match", [
    (lambda: ops.rope(mx.zeros((7, 64)), 64, traditional=False, base=1e4, scale=1.0, offset=0), "rope: argument 'x'"),
    (lambda: ops.rope(mx.zeros((1, 7, 64)), 65, traditional=False, base=1e4, scale=1.0, offset=0), "rope: argument 'dims'"),
    (lambda: ops.rope(mx.zeros((1, 7, 64)), 64, traditional=False, base=None, scale=1.0, offset=0), "rope: argument 'freqs'"),
    (lambda: ops.rope(mx.zeros((1, 7, 64)), 64, traditional=False, base=1e4, scale=1.0, offset=1.5), "rope: argument 'offset'"),
])
def test_bad_input(call, match):
    with pytest.raises(ops.OpArgumentError, match=match):
        call()
