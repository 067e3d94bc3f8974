"""`triton_metal.op`: launchers as differentiable MLX functions, on the emulator with MLX arrays.

Gradients are checked against MLX's own autodiff of the same math in MLX ops; the bad-input
checks must name the op and the argument and run nothing; a bare launch under `mx.grad` must
raise, naming the kernel, and never give zeros.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from examples import layer_norm
from examples import softmax as softmax_example


@triton.jit
def cube_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * x * x * scale, mask=mask)


@triton.jit
def cube_bwd_kernel(x_ptr, g_ptr, dx_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    g = tl.load(g_ptr + offs, mask=mask)
    tl.store(dx_ptr + offs, 3.0 * x * x * scale * g, mask=mask)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def softmax_bwd_kernel(dx_ptr, dy_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    y = tl.load(y_ptr + row * stride + cols, mask=mask, other=0.0)
    dy = tl.load(dy_ptr + row * stride + cols, mask=mask, other=0.0)
    dot = tl.sum(y * dy, axis=0)
    tl.store(dx_ptr + row * stride + cols, y * (dy - dot), mask=mask)


@triton.op
def cube(x, scale=1.0):
    out = mx.zeros_like(x)
    cube_kernel[(triton.cdiv(x.size, 64),)](x, out, x.size, scale, BLOCK=64)
    return out


@cube.backward
def cube_bwd(primals, cotangents, outputs):
    x, scale = primals
    dx = mx.zeros_like(x)
    cube_bwd_kernel[(triton.cdiv(x.size, 64),)](x, cotangents, dx, x.size, scale, BLOCK=64)
    return (dx,)


@triton.op(shapes={"x": ("M", "N")}, dtypes={"x": ("float32",)})
def softmax(x):
    return softmax_example.softmax(x)  # the example's launcher (tutorial 02's kernel)


@softmax.backward
def softmax_bwd(x, dy, y):  # one argument: MLX passes the arrays themselves, not tuples
    dx = mx.zeros_like(x)
    n_rows, n_cols = x.shape
    softmax_bwd_kernel[(n_rows,)](dx, dy, y, n_cols, n_cols, BLOCK=triton.next_power_of_2(n_cols))
    return dx


@triton.op(shapes={"x": ("M", "N"), "w": ("N",), "b": ("N",)}, dtypes={"w": "x", "b": "x"})
def layer_norm_op(x, w, b, eps=1e-5):
    return layer_norm.layer_norm_forward(x, w, b, eps)  # (y, mean, rstd): saved for the backward


@layer_norm_op.backward
def layer_norm_op_bwd(primals, cotangents, outputs):
    x, w, _, _ = primals
    _, mean, rstd = outputs
    dx, dw, db = layer_norm.layer_norm_backward(cotangents[0], x, w, mean, rstd)
    return dx, dw, db, None


def _rand(*shape: int, seed: int = 0) -> mx.array:
    return mx.array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def test_elementwise_op_value_and_grad_match_mlx():
    x = _rand(100)
    np.testing.assert_allclose(np.array(cube(x, 2.0)), np.array(2.0 * x**3), rtol=1e-6)
    value, grad = mx.value_and_grad(lambda x: (cube(x, scale=0.5) * mx.arange(100)).sum())(x)
    ref_value, ref_grad = mx.value_and_grad(lambda x: (0.5 * x**3 * mx.arange(100)).sum())(x)
    np.testing.assert_allclose(np.array(value), np.array(ref_value), rtol=1e-5)
    np.testing.assert_allclose(np.array(grad), np.array(ref_grad), rtol=1e-5)


def test_softmax_op_grad_matches_mlx_softmax():
    x = _rand(5, 37, seed=1)
    w = _rand(5, 37, seed=2)
    np.testing.assert_allclose(np.array(softmax(x)), np.array(mx.softmax(x, axis=-1)), rtol=1e-5, atol=1e-7)
    grad = mx.grad(lambda x: (softmax(x) * w).sum())(x)
    ref = mx.grad(lambda x: (mx.softmax(x, axis=-1) * w).sum())(x)
    np.testing.assert_allclose(np.array(grad), np.array(ref), rtol=1e-4, atol=1e-6)
    # composed with MLX ops on both sides, and a second op call in the same graph
    grad2 = mx.grad(lambda x: (cube(softmax(x * 2.0)) * w).sum())(x)
    ref2 = mx.grad(lambda x: (mx.softmax(x * 2.0, axis=-1) ** 3 * w).sum())(x)
    np.testing.assert_allclose(np.array(grad2), np.array(ref2), rtol=1e-4, atol=1e-6)


def test_bare_kernel_under_grad_raises_naming_it():
    def loss(x):
        out = mx.zeros_like(x)
        cube_kernel[(2,)](x, out, x.size, 1.0, BLOCK=64)
        return out.sum()

    x = _rand(100)
    # as MLX's own CustomKernel (which has no vjp) does on a Mac, naming the kernel's variant
    with pytest.raises(ValueError, match=r"\[Primitive::vjp\] Not implemented for CustomKernel "
                       r"\(metal_kernel 'cube_kernel_"):
        mx.grad(loss)(x)
    # the gradient through an output's old contents (an in-place launch) is refused too
    def in_place(x):
        y = x * 1.0
        cube_kernel[(2,)](y, y, 50, 1.0, BLOCK=64)  # writes half of y
        return y.sum()

    with pytest.raises(ValueError, match="Not implemented for"):  # never a partial gradient
        mx.grad(in_place)(x)


def test_op_without_backward_raises_naming_op_and_kernel():
    plain = triton.op(lambda x: cube.fn(x), name="plain_cube")
    x = _rand(8)
    np.testing.assert_allclose(np.array(plain(x)), np.array(x**3), rtol=1e-6)
    with pytest.raises(triton.OpError, match="op 'plain_cube' has no backward.*'cube_kernel'"):
        mx.grad(lambda x: plain(x).sum())(x)


def test_bad_arguments_name_the_op_and_argument_and_run_nothing():
    calls = []

    @triton.op(shapes={"x": ("M", "N"), "w": ("N",)}, dtypes={"x": ("float32", "float16"), "w": "x"})
    def scaled(x, w):
        calls.append(1)
        return x * w

    x, w = mx.ones((3, 4)), mx.ones((4,))
    with pytest.raises(triton.OpError,
                       match=r"op 'scaled', argument 'w': expected shape \(N,\) with N = 4 \(from 'x'\)"):
        scaled(x, mx.ones((5,)))
    with pytest.raises(triton.OpError, match=r"op 'scaled', argument 'x': expected shape \(M, N\)"):
        scaled(mx.ones((4,)), w)
    with pytest.raises(triton.OpError,
                       match="op 'scaled', argument 'x': dtype int32; the op takes float32, float16"):
        scaled(mx.ones((3, 4), mx.int32), w)
    with pytest.raises(triton.OpError, match="argument 'w': dtype float16 differs from 'x'"):
        scaled(x, mx.ones((4,), mx.float16))
    with pytest.raises(triton.OpError, match="argument 'x': a NumPy array"):
        scaled(np.ones((3, 4), np.float32), w)
    with pytest.raises(triton.OpError, match="op 'scaled': missing a required argument: 'w'"):
        scaled(x)
    with pytest.raises(triton.OpError, match="shapes names 'y'"):
        triton.op(lambda x: x, shapes={"y": (1,)})
    assert calls == []
    np.testing.assert_array_equal(np.array(scaled(x, w)), np.ones((3, 4)))


@pytest.mark.parametrize("bad, message", [
    (lambda x, g: (g, g, g), r"returned 3 cotangents for 1 array argument \('x'\)"),
    (lambda x, g: (g, g), "returned a cotangent for a static argument"),
    (lambda x, g: (g[:2],), r"cotangent for 'x' has shape \(2,\), but 'x' has shape \(4,\)"),
    (lambda x, g: (g.astype(mx.float16),), "cotangent for 'x' is float16, but 'x' is float32"),
    (lambda x, g: ([1.0],), "returned list as the cotangent of 'x'"),
])
def test_backward_returning_wrong_cotangents_is_caught(bad, message):
    @triton.op(name="twice")
    def twice(x, k=2):
        return x * k

    twice.backward(lambda primals, cot, out: bad(primals[0], cot))
    with pytest.raises(triton.OpError, match="op 'twice': its backward.*" + message):
        mx.grad(lambda x: twice(x).sum())(mx.ones((4,)))


def test_backward_may_return_none_for_static_arguments_and_no_gradient():
    @triton.op
    def mul(x, y, k):
        return x * y * k

    mul.backward(lambda p, cot, out: (cot * p[1] * p[2], None, None))
    gx, gy = mx.grad(lambda x, y: mul(x, y, 3.0).sum(), argnums=(0, 1))(mx.ones((3,)) * 2, mx.ones((3,)) * 5)
    np.testing.assert_array_equal(np.array(gx), np.full(3, 15.0))
    np.testing.assert_array_equal(np.array(gy), np.zeros(3))  # declared: no gradient for y


def test_ops_refuse_var_arguments_and_name_themselves():
    with pytest.raises(triton.OpError, match=r"'args' is \*args"):
        triton.op(lambda *args: args[0])
    assert repr(triton.op(name="sm")(softmax.fn)) == "<triton_metal.op sm>"
    assert softmax.name == "softmax" and softmax.param_names == ("x",)


def test_layer_norm_op_grads_match_mlx_fast_layer_norm():
    x, w, b = _rand(24, 96, seed=3), _rand(96, seed=4), _rand(96, seed=5)
    upstream = _rand(24, 96, seed=6)

    def loss(x, w, b):
        return (layer_norm_op(x, w, b)[0] * upstream).sum()

    def reference(x, w, b):
        return (mx.fast.layer_norm(x, w, b, 1e-5) * upstream).sum()

    got = mx.grad(loss, argnums=(0, 1, 2))(x, w, b)
    want = mx.grad(reference, argnums=(0, 1, 2))(x, w, b)
    for g, r in zip(got, want):
        np.testing.assert_allclose(np.array(g), np.array(r), rtol=2e-4, atol=2e-4)


def test_readme_mlx_example_runs(capsys: pytest.CaptureFixture[str], tmp_path):
    import runpy
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = text.split("## MLX: lazy launches and differentiable ops", 1)[1]
    script = tmp_path / "readme_example.py"  # kernels need a file to read their source from
    script.write_text(section.split("```python\n", 1)[1].split("```", 1)[0])
    namespace = runpy.run_path(str(script))
    assert capsys.readouterr().out.strip() == "True"
    dx, ref = namespace["dx"], namespace["ref"]
    np.testing.assert_allclose(np.array(dx), np.array(ref), rtol=1e-5, atol=1e-6)
