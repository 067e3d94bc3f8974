from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn
import pytest

from triton_metal import ops

from .helpers import assert_close, check_grads, randn, transposed

UNARY = [(ops.gelu, nn.gelu), (ops.gelu_approx, nn.gelu_approx), (ops.silu, nn.silu)]
GATED = [(ops.swiglu, lambda g, u: nn.silu(g) * u), (ops.geglu, lambda g, u: nn.gelu(g) * u)]


CASES = [((7,), "float32"), ((3, 1000), "float32"), ((5, 3, 67), "float32"),
         ((3, 100), "float16"), ((3, 100), "bfloat16")]


@pytest.mark.parametrize("shape, dtype", CASES)
def test_forward(shape, dtype):
    x, u = randn(shape, dtype, scale=3.0), randn(shape, dtype, seed=1)
    for ours, ref in UNARY:
        assert_close(ours(x), ref(x), dtype, scale=2)
    for ours, ref in GATED:
        assert_close(ours(x, u), ref(x, u), dtype, scale=4)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_backward(dtype):
    x, u = randn((3, 100), dtype, scale=3.0), randn((3, 100), dtype, seed=1)
    for ours, ref in UNARY:
        check_grads(ours, ref, (x,), dtype)
    for ours, ref in GATED:
        check_grads(ours, ref, (x, u), dtype, (0, 1), scale=4)


def test_non_contiguous_and_scalar():
    x = transposed(randn((9, 13)))
    assert_close(ops.silu(x), nn.silu(x), "float32")
    s = mx.array(0.5)
    assert_close(ops.gelu(s), nn.gelu(s), "float32")


@pytest.mark.parametrize("call, match", [
    (lambda: ops.swiglu(mx.zeros((2, 3)), mx.zeros((3, 2))), "swiglu: argument 'up': shape"),
    (lambda: ops.geglu(mx.zeros((2,)), mx.zeros((2,), mx.float16)), "geglu: argument 'up': dtype"),
    (lambda: ops.gelu(mx.zeros((2,), mx.int32)), "gelu: argument 'x'"),
])
def test_bad_input(call, match):
    with pytest.raises(ops.OpArgumentError, match=match):
        call()
