from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from triton_metal import ops

from .helpers import assert_close, check_grads, randn, transposed

SHAPES = [(3, 7), (2, 5, 100), (2, 16384), (2, 16385)]


CASES = [(s, "float32") for s in SHAPES] + [((2, 5, 100), "float16"), ((2, 5, 100), "bfloat16"),
                                           ((4, 256), "bfloat16")]


@pytest.mark.parametrize("shape, dtype", CASES)
def test_forward(shape, dtype):
    x = randn(shape, dtype, scale=2.0)
    w = randn(shape[-1:], dtype, seed=1)
    b = randn(shape[-1:], dtype, seed=2)
    assert_close(ops.rms_norm(x, w, 1e-5), mx.fast.rms_norm(x, w, 1e-5), dtype, scale=4)
    assert_close(ops.layer_norm(x, w, b, 1e-5), mx.fast.layer_norm(x, w, b, 1e-5), dtype, scale=4)
    assert_close(ops.layer_norm(x, None, None, 1e-5), mx.fast.layer_norm(x, None, None, 1e-5), dtype, scale=4)
    assert_close(ops.rms_norm(x, None, 1e-6), mx.fast.rms_norm(x, None, 1e-6), dtype, scale=4)


@pytest.mark.parametrize("shape", SHAPES)
def test_backward(shape):
    x = randn(shape, scale=2.0)
    w = randn(shape[-1:], seed=1)
    b = randn(shape[-1:], seed=2)
    check_grads(lambda a, ww: ops.rms_norm(a, ww, 1e-5),
                lambda a, ww: mx.fast.rms_norm(a, ww, 1e-5), (x, w), "float32", (0, 1), scale=10)
    check_grads(lambda a, ww, bb: ops.layer_norm(a, ww, bb, 1e-5),
                lambda a, ww, bb: mx.fast.layer_norm(a, ww, bb, 1e-5), (x, w, b), "float32",
                (0, 1, 2), scale=10)
    check_grads(lambda a: ops.layer_norm(a, None, None, 1e-5),
                lambda a: mx.fast.layer_norm(a, None, None, 1e-5), (x,), "float32", scale=10)
    check_grads(lambda a: ops.rms_norm(a, None, 1e-5),
                lambda a: mx.fast.rms_norm(a, None, 1e-5), (x,), "float32", scale=10)


def test_weight_gradients_summed_from_many_partials():
    # 40 rows: 40 persistent programs' partials, summed 32 at a time over four column blocks
    x = randn((40, 100), scale=2.0)
    w, b = randn((100,), seed=1), randn((100,), seed=2)
    check_grads(lambda a, ww, bb: ops.layer_norm(a, ww, bb, 1e-5),
                lambda a, ww, bb: mx.fast.layer_norm(a, ww, bb, 1e-5), (x, w, b), "float32",
                (0, 1, 2), scale=10)
    check_grads(lambda a, bb: ops.layer_norm(a, None, bb, 1e-5),
                lambda a, bb: mx.fast.layer_norm(a, None, bb, 1e-5), (x, b), "float32", (0, 1), scale=10)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_layer_norm_backward_on_rows_of_4096(dtype):
    # float16 rows of 4096 read the next row ahead on 8 warps by default, bfloat16 ones do not
    # (norms._bwd_default); 40 rows over the persistent programs, each program several rows
    x = randn((40, 4096), dtype, scale=2.0)
    w, b = randn((4096,), dtype, seed=1), randn((4096,), dtype, seed=2)
    check_grads(lambda a, ww, bb: ops.layer_norm(a, ww, bb, 1e-5),
                lambda a, ww, bb: mx.fast.layer_norm(a, ww, bb, 1e-5), (x, w, b), dtype, (0, 1, 2), scale=10)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_backward_half(dtype):
    x, w = randn((3, 100), dtype), randn((100,), dtype, seed=1)
    check_grads(lambda a, ww: ops.rms_norm(a, ww, 1e-5),
                lambda a, ww: mx.fast.rms_norm(a, ww, 1e-5), (x, w), dtype, (0, 1), scale=10)


def test_non_contiguous():
    x = transposed(randn((6, 40)))
    w = randn((80,), seed=3)[::2]
    assert_close(ops.rms_norm(x, w, 1e-5), mx.fast.rms_norm(x, w, 1e-5), "float32")


@pytest.mark.parametrize("call, match", [
    (lambda: ops.rms_norm(mx.zeros((2, 3)), mx.zeros((4,)), 1e-5), "rms_norm: argument 'weight': expected shape \\(3,\\)"),
    (lambda: ops.layer_norm(mx.zeros((2, 3)), None, mx.zeros((3,), mx.float16), 1e-5), "layer_norm: argument 'bias': dtype float16"),
    (lambda: ops.rms_norm(mx.zeros((2, 3)), None, "1e-5"), "rms_norm: argument 'eps'"),
    (lambda: ops.layer_norm(mx.zeros((2, 3), mx.int8), None, None, 1e-5), "layer_norm: argument 'x'"),
])
def test_bad_input(call, match):
    with pytest.raises(ops.OpArgumentError, match=match):
        call()


def _norm_grads_f64(x, w, g, eps, rms):
    """dx, dw, db of sum(norm(x) * g) in float64 (NumPy), from the definitions."""
    x, w, g = (np.asarray(a, np.float64) for a in (x, w, g))
    xc = x if rms else x - x.mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt((xc * xc).mean(-1, keepdims=True) + eps)
    xhat = xc * rstd
    dxhat = g * w
    inner = (dxhat * xhat).mean(-1, keepdims=True)
    centred = dxhat if rms else dxhat - dxhat.mean(-1, keepdims=True)
    return rstd * (centred - xhat * inner), (g * xhat).sum(0), g.sum(0)


@pytest.mark.parametrize("rms", [True, False])
def test_backward_against_float64_rows_per_program(rms):
    # 300 rows over the emulator's 256 persistent programs: some programs take two rows, whose
    # weight and bias gradients they add up before writing their partials
    _check_grads_against_float64((300, 100), rms)


def _check_grads_against_float64(shape, rms):
    """The gradients of sum(norm(x) * g) with a weight (and a bias), against float64."""
    x, w, b = randn(shape, scale=2.0), randn(shape[-1:], seed=1), randn(shape[-1:], seed=2)
    g = randn(shape, seed=5)
    if rms:
        grads = mx.grad(lambda a, ww: (ops.rms_norm(a, ww, 1e-5) * g).sum(), argnums=(0, 1))(x, w)
    else:
        grads = mx.grad(lambda a, ww, bb: (ops.layer_norm(a, ww, bb, 1e-5) * g).sum(),
                        argnums=(0, 1, 2))(x, w, b)
    for got, want in zip(grads, _norm_grads_f64(x, w, g, 1e-5, rms)):
        np.testing.assert_allclose(np.array(got), want, atol=1e-4 * max(1.0, np.abs(want).max()), rtol=1e-4)


def test_forward_saves_row_statistics_against_float64():
    # the op's second output, which the backward reads: each row's float32 (mean, rstd)
    from triton_metal.ops import norms

    x, w, b = randn((300, 100), scale=2.0), randn((100,), seed=1), randn((100,), seed=2)
    x64 = np.asarray(x, np.float64)
    for stats, mean in ((norms._layer_norm_op(x, w, b, 1e-5)[1], x64.mean(-1)),
                        (norms._rms_norm_op(x, w, 1e-5)[1], np.zeros(300))):
        rstd = 1.0 / np.sqrt(((x64 - mean[:, None]) ** 2).mean(-1) + 1e-5)
        np.testing.assert_allclose(np.array(stats), np.stack((mean, rstd), -1), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("interpret", ["", "1"], ids=["emulator", "interpreter"])
@pytest.mark.parametrize("consecutive, ahead, tile, programs",
                         [(0, 0, (64, 32), 128), (0, 1, (32, 16), 128), (0, 0, (256, 8), 128),
                          (1, 0, (32, 16), 128), (1, 1, (256, 16), 43)])
def test_backward_kernel_configs_against_float64(monkeypatch, interpret, consecutive, ahead, tile,
                                                 programs):
    # the tuned configs the untuned backends never run: rows strided over the programs or in
    # runs of consecutive rows, reading the next row ahead or not, and other tiles of the
    # partials' sum (256 partials a step: all of them in one, the rest masked). 300 rows over
    # 128 programs: strided programs take 2 or 3 rows; runs are 3 rows long and the last 28
    # programs get none (their partials are zeros). Over 43 programs: runs of 7 rows, the last
    # one cut to 6. The rows read ahead past a program's last are masked.
    monkeypatch.setenv("TRITON_METAL_INTERPRET", interpret)
    from triton_metal.ops import norms

    x, w, b = randn((300, 100), scale=2.0), randn((100,), seed=1), randn((100,), seed=2)
    g = randn((300, 100), seed=5)
    stats = norms._layer_norm_op(x, w, b, 1e-5)[1]
    dx = mx.zeros(x.shape, mx.float32)
    dw_part, db_part = mx.zeros((programs, 100), mx.float32), mx.zeros((programs, 100), mx.float32)
    norms._norm_bwd.fn[(programs,)](x, w, g, stats, dx, dw_part, db_part, 300, 100, 0, HAS_W=True,
                                    HAS_B=True, BLOCK=128, ONE_PASS=True, EVEN=False, AHEAD=ahead,
                                    CONSECUTIVE=consecutive, num_warps=2)
    dw, db = mx.zeros((100,), mx.float32), mx.zeros((100,), mx.float32)
    parts, cols = tile
    norms._sum_partials.fn[(-(-100 // cols),)](dw_part, db_part, dw, db, programs, 100, HAS_W=True,
                                               HAS_B=True, PARTS=parts, COLS=cols, num_warps=4)
    for got, want in zip((dx, dw, db), _norm_grads_f64(x, w, g, 1e-5, False)):
        np.testing.assert_allclose(np.array(got), want, atol=1e-4 * max(1.0, np.abs(want).max()), rtol=1e-4)


@pytest.mark.parametrize("n", [1000, 16385])  # held in registers, and streamed twice
def test_layer_norm_of_rows_far_from_zero_against_float64(n):
    """Rows of 1e4 + N(0, 1): their variance must not cancel away (E[x*x] - mean*mean in float32
    kept no digit of it on the streamed path), forward and backward."""
    x = 1e4 + randn((2, n))
    dy = randn((2, n), seed=3)
    x64 = np.asarray(x, np.float64)
    xhat = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(np.array(ops.layer_norm(x, None, None, 1e-5)), xhat, atol=2e-2)
    dx = mx.grad(lambda x: (ops.layer_norm(x, None, None, 1e-5) * dy).sum())(x)
    dy64 = np.asarray(dy, np.float64)
    rstd = 1.0 / np.sqrt(x64.var(-1, keepdims=True) + 1e-5)
    want = rstd * (dy64 - dy64.mean(-1, keepdims=True) - xhat * (dy64 * xhat).mean(-1, keepdims=True))
    np.testing.assert_allclose(np.array(dx), want, atol=2e-2)


@pytest.mark.parametrize("n", [1, 5, 16385])
def test_layer_norm_of_constant_rows_is_the_bias(n):
    """x - mean is exactly 0 in a constant row (the mean is correctly rounded), so the output is
    the bias, however large 1 / sqrt(eps) is."""
    x = mx.array(np.tile(np.array([1.5, 3.7, -2.2], np.float32)[:, None], (1, n)))
    b = mx.full((n,), 0.25)
    np.testing.assert_array_equal(np.array(ops.layer_norm(x, None, b, 1e-5)), np.full((3, n), 0.25, np.float32))


@pytest.mark.parametrize("interpret", ["", "1"], ids=["emulator", "interpreter"])
@pytest.mark.parametrize("n", [3, 7, 100, 4095, 8191])
def test_layer_norm_mean_is_the_row_sum_over_n_correctly_rounded(monkeypatch, interpret, n):
    """A row held in registers saves sum / n rounded once, from the float32 nearest 1 / n and two
    fmas. Rows of small integers sum exactly in any order, so the mean is known exactly.
    (A streamed row's mean is its shifted mean plus the shift: two roundings.)"""
    from fractions import Fraction

    monkeypatch.setenv("TRITON_METAL_INTERPRET", interpret)
    from triton_metal.ops import norms

    rows = np.random.default_rng(n).integers(-50, 50, (16, n)).astype(np.float32)
    rows[0] = 1.0  # sums to n: the mean is exactly 1
    stats = np.array(norms._layer_norm_op(mx.array(rows), None, None, 1e-5)[1])
    want = np.array([np.float32(Fraction(int(s), n)) if Fraction(int(s), n).denominator == 1
                     else _nearest_float32(Fraction(int(s), n)) for s in rows.sum(-1, dtype=np.int64)],
                    np.float32)
    np.testing.assert_array_equal(stats[:, 0].view(np.uint32), want.view(np.uint32))


def _nearest_float32(q):
    from fractions import Fraction

    near = np.float32(float(q))
    around = (np.nextafter(near, np.float32(-np.inf)), near, np.nextafter(near, np.float32(np.inf)))
    return min(around, key=lambda v: abs(Fraction(float(v)) - q))


@pytest.mark.parametrize("interpret", ["", "1"], ids=["emulator", "interpreter"])
@pytest.mark.parametrize("rms", [False, True])
def test_streamed_backward_sums_weight_gradients_over_runs_of_rows(monkeypatch, interpret, rms):
    """Rows longer than the registers hold: the weight and bias gradients come from runs of
    rows a column block (40 rows: runs of 8 over 9 column blocks of 2048), then their sum."""
    monkeypatch.setenv("TRITON_METAL_INTERPRET", interpret)
    _check_grads_against_float64((40, 16400), rms)
