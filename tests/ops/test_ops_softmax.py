from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn
import pytest

from triton_metal import ops

from .helpers import assert_close, check_grads, randn, transposed

# rows not a multiple of anything, a row under one warp, a row just over a power of two, and a
# row longer than the one-pass limit (streamed in blocks)
SHAPES = [(3, 7), (5, 100), (2, 1000), (2, 16384), (2, 16385)]


# every dtype on one shape, every shape in float32: each (dtype, block) pair is a compile
CASES = [(s, "float32") for s in SHAPES] + [((5, 100), "float16"), ((5, 100), "bfloat16")]


@pytest.mark.parametrize("shape, dtype", CASES)
def test_softmax_forward(shape, dtype):
    x = randn(shape, dtype, scale=3.0)
    # MLX in precise mode: these kernels compute in float32 whatever the dtype
    assert_close(ops.softmax(x), mx.softmax(x, axis=-1, precise=True), dtype)
    assert_close(ops.log_softmax(x), nn.log_softmax(x), dtype, scale=4.0)


@pytest.mark.parametrize("shape", SHAPES)
def test_softmax_backward(shape):
    x = randn(shape, scale=2.0)
    check_grads(ops.softmax, lambda a: mx.softmax(a, axis=-1), (x,), "float32")
    check_grads(ops.log_softmax, nn.log_softmax, (x,), "float32")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_softmax_backward_half(dtype):
    x = randn((5, 100), dtype)
    check_grads(ops.softmax, lambda a: mx.softmax(a, axis=-1), (x,), dtype)


def test_axes_and_non_contiguous():
    x = randn((3, 5, 7))
    for axis in (0, 1, -1):
        assert_close(ops.softmax(x, axis=axis), mx.softmax(x, axis=axis), "float32")
    assert_close(ops.softmax(x, axis=None), mx.softmax(x), "float32")
    xt = mx.swapaxes(randn((7, 5)), 0, 1)
    assert_close(ops.log_softmax(xt), nn.log_softmax(xt), "float32")
    assert_close(ops.softmax(transposed(x)), mx.softmax(x, axis=-1), "float32")
    check_grads(lambda a: ops.softmax(a, axis=1), lambda a: mx.softmax(a, axis=1), (x,), "float32")


def test_infinities_and_precise():
    x = mx.array([[0.0, float("-inf"), 1.0], [float("-inf"), 2.0, 2.0]])
    assert_close(ops.softmax(x, precise=True), mx.softmax(x, axis=-1, precise=True), "float32")


@pytest.mark.parametrize("call, match", [
    (lambda: ops.softmax([1.0, 2.0]), "softmax: argument 'x': expected an mlx.core.array"),
    (lambda: ops.softmax(mx.zeros((2, 3), mx.int32)), "softmax: argument 'x': dtype int32"),
    (lambda: ops.log_softmax(mx.zeros((2, 3)), axis=2), "log_softmax: argument 'axis': axis 2"),
    (lambda: ops.softmax(mx.zeros((2, 3)), precise=1), "softmax: argument 'precise'"),
])
def test_bad_input(call, match):
    with pytest.raises(ops.OpArgumentError, match=match):
        call()
