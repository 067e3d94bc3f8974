from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn
import numpy as np
import pytest

from triton_metal import ops

from .helpers import assert_close, check_grads, randn

xent = nn.losses.cross_entropy


def _targets(shape, n, seed=3):
    return mx.array(np.random.default_rng(seed).integers(0, n, size=shape).astype(np.int32))


def _probs(shape, seed=4):
    return mx.softmax(randn(shape, seed=seed), axis=-1)


def _ref_entropy(x, axis=-1):
    x = x.astype(mx.float32)
    return -(mx.softmax(x, axis=axis) * nn.log_softmax(x, axis=axis)).sum(axis=axis)


# a row under the block, one over it (streamed: two blocks of 4096)
@pytest.mark.parametrize("shape", [(3, 7), (2, 4100)])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_class_targets(shape, reduction):
    x = randn(shape, scale=3.0)
    t = _targets(shape[:-1], shape[-1])
    assert_close(ops.cross_entropy(x, t, reduction=reduction), xent(x, t, reduction=reduction), "float32",
                 scale=10)
    check_grads(lambda a: ops.cross_entropy(a, t, reduction=reduction),
                lambda a: xent(a, t, reduction=reduction), (x,), "float32")


def test_cross_entropy_masked_logits_and_a_rising_maximum():
    # -inf logits (a masked vocabulary): a row whose first block holds nothing but -inf, a row
    # with scattered -inf, and a row whose maximum rises at every element (each element rescales);
    # a NaN first in its row (before any maximum) still makes the row's loss NaN
    x = np.asarray(randn((4, 4100), scale=3.0)).copy()
    x[0, :4096] = -np.inf
    x[1, ::3] = -np.inf
    x[2] = np.linspace(-20.0, 20.0, 4100)
    x[3, 0] = np.nan
    t = mx.array(np.array([4097, 1, 4099, 7], np.int32))
    xa = mx.array(x.astype(np.float32))
    loss = ops.cross_entropy(xa, t)
    assert_close(loss[:3], xent(xa, t)[:3], "float32", scale=10)
    assert np.isnan(np.array(loss[3]))
    assert_close(ops.cross_entropy(xa, t, label_smoothing=0.1)[2:3], xent(xa, t, label_smoothing=0.1)[2:3],
                 "float32", scale=10)
    x_finite = mx.array(np.nan_to_num(x, nan=0.0, neginf=-30.0).astype(np.float32))
    check_grads(lambda a: ops.cross_entropy(a, t), lambda a: xent(a, t), (x_finite,), "float32")


def test_cross_entropy_options():
    x = randn((2, 3, 50), scale=2.0)
    t = _targets((2, 3), 50)
    w = randn((2, 3), seed=9)
    for kw in ({"label_smoothing": 0.1}, {"weights": w, "reduction": "mean"}):
        assert_close(ops.cross_entropy(x, t, **kw), xent(x, t, **kw), "float32", scale=10)
        check_grads(lambda a: ops.cross_entropy(a, t, **kw), lambda a: xent(a, t, **kw), (x,), "float32")
    # probability targets, differentiable in both
    p = _probs((2, 3, 50))
    kw = {"label_smoothing": 0.2}
    assert_close(ops.cross_entropy(x, p, **kw), xent(x, p, **kw), "float32", scale=10)
    check_grads(lambda a, b: ops.cross_entropy(a, b, **kw), lambda a, b: xent(a, b, **kw), (x, p),
                "float32", (0, 1))
    # another axis
    xa = mx.swapaxes(x, 1, 2)
    assert_close(ops.cross_entropy(xa, t.reshape(2, 3), axis=1), xent(xa, t, axis=1), "float32", scale=10)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cross_entropy_half(dtype):
    x = randn((4, 50), dtype, scale=2.0)
    t = _targets((4,), 50)
    # MLX's CPU reduces in the logits' dtype; the kernel in float32: compare with float32
    expected = xent(x.astype(mx.float32), t).astype(x.dtype)
    assert_close(ops.cross_entropy(x, t), expected, dtype, scale=4)
    if dtype == "bfloat16":
        check_grads(lambda a: ops.cross_entropy(a, t), lambda a: xent(a.astype(mx.float32), t).astype(a.dtype),
                    (x,), dtype)


# a row under the block (a masked tail alone), one over it (a whole block and a tail), and one
# of whole blocks (no masked step)
@pytest.mark.parametrize("shape", [(3, 7), (2, 4100), (2, 8192)])
def test_entropy(shape):
    x = randn(shape, scale=2.0)
    assert_close(ops.entropy(x), _ref_entropy(x), "float32", scale=10)
    check_grads(ops.entropy, _ref_entropy, (x,), "float32")
    xb = x.astype(mx.bfloat16)
    assert_close(ops.entropy(xb), _ref_entropy(xb).astype(mx.bfloat16), "bfloat16", scale=4)
    assert_close(ops.entropy(x.T, axis=0), _ref_entropy(x), "float32", scale=10)


@pytest.mark.parametrize("call, match", [
    (lambda: ops.cross_entropy(mx.zeros((2, 3)), mx.zeros((3,), mx.int32)), "cross_entropy: argument 'targets'"),
    (lambda: ops.cross_entropy(mx.zeros((2, 3)), mx.zeros((2,))), "cross_entropy: argument 'targets': class indices must be integers"),
    (lambda: ops.cross_entropy(mx.zeros((2, 3)), mx.zeros((2,), mx.int32), reduction="avg"), "argument 'reduction'"),
    (lambda: ops.cross_entropy(mx.zeros((2, 3)), mx.zeros((2,), mx.int32), label_smoothing=1.0), "argument 'label_smoothing'"),
    (lambda: ops.cross_entropy(mx.zeros((2, 3)), mx.zeros((2,), mx.int32), weights=mx.ones((3,))), "argument 'weights'"),
    (lambda: ops.entropy(mx.zeros((2, 3)), axis=-3), "entropy: argument 'axis'"),
])
def test_bad_input(call, match):
    with pytest.raises(ops.OpArgumentError, match=match):
        call()


def _softmax_f64(x):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_gradient_against_float64(smoothing):
    # the backward takes softmax(x) = exp(x - lse) from the forward's saved float32 log-sum-exp,
    # one pass over the logits; two blocks of 4096 per row
    x = randn((3, 4100), scale=3.0)
    t = _targets((3,), 4100)
    g = randn((3,), seed=6)
    got = mx.grad(lambda a: (ops.cross_entropy(a, t, label_smoothing=smoothing) * g).sum())(x)
    onehot = np.eye(4100)[np.array(t)]
    g64 = np.asarray(g, np.float64)[:, None]
    want = g64 * (_softmax_f64(x) - (1.0 - smoothing) * onehot - smoothing / 4100)
    np.testing.assert_allclose(np.array(got), want, atol=1e-7, rtol=1e-4)


def test_entropy_gradient_against_float64():
    x = randn((3, 4100), scale=3.0)
    g = randn((3,), seed=6)
    got = mx.grad(lambda a: (ops.entropy(a) * g).sum())(x)
    p = _softmax_f64(x)
    x64 = np.asarray(x, np.float64)
    want = -np.asarray(g, np.float64)[:, None] * p * (x64 - (p * x64).sum(-1, keepdims=True))
    np.testing.assert_allclose(np.array(got), want, atol=1e-7, rtol=1e-4)


def test_forward_saves_row_statistics_against_float64():
    # the op's second output, which the backward reads: the log-sum-exp, and the row maximum
    # (targets) or sum(softmax * x) (entropy)
    from triton_metal.ops import losses

    x = randn((3, 4100), scale=3.0)
    x64 = np.asarray(x, np.float64)
    lse = np.log(np.exp(x64 - x64.max(-1, keepdims=True)).sum(-1)) + x64.max(-1)
    for stats, aux in ((losses._xent_op(x, _targets((3,), 4100), 0.0, losses.CLASS)[1], x64.max(-1)),
                       (losses._entropy_op(x)[1], (_softmax_f64(x) * x64).sum(-1))):
        np.testing.assert_allclose(np.array(stats), np.stack((lse, aux), -1), atol=1e-5, rtol=1e-6)
