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
    # 8 rows of 128 features per program: positions wrap to the next head inside a program
    ((1, 3, 11, 128), 128, False, "float16"),
]


@pytest.mark.parametrize("shape, dims, traditional, dtype", CASES)
def test_rope(shape, dims, traditional, dtype):
    x = randn(shape, dtype)
    kw = dict(traditional=traditional, base=10000.0, scale=0.5, offset=3)
    assert_close(ops.rope(x, dims, **kw), mx.fast.rope(x, dims, **kw), dtype, scale=5)
    # the backward is the forward kernel rotating the other way: no new compile per dtype
    check_grads(lambda a: ops.rope(a, dims, **kw), lambda a: mx.fast.rope(a, dims, **kw), (x,), dtype)


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
