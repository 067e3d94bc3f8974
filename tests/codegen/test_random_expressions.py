"""Random elementwise expressions compiled to MSL against the interpreter: integer arithmetic
with its edge cases (division by zero, wide shifts, wrap-around), float arithmetic and math,
comparisons, selects and conversions. Each seed writes a kernel module, compiles it and runs it
both ways on the same inputs."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import numpy as np
import pytest
from harness import C, compile_1d, run

from triton_metal.backends.interpreter import launch
from triton_metal.language import JITCallable

INT_BINARY = ["({a} + {b})", "({a} - {b})", "({a} * {b})", "({a} // {b})", "({a} % {b})", "({a} & {b})",
              "({a} | {b})", "({a} ^ {b})", "({a} << {b})", "({a} >> {b})", "tl.minimum({a}, {b})",
              "tl.maximum({a}, {b})", "tl.where({a} < {b}, {a}, {b})"]
INT_UNARY = ["(-{a})", "(~{a})", "tl.abs({a})", "({a}.to(tl.int8).to(tl.int32))", "({a}.to(tl.uint32) >> 3).to(tl.int32)"]
FLOAT_BINARY = ["({a} + {b})", "({a} - {b})", "({a} * {b})", "({a} / ({b} * {b} + 1.0))", "tl.maximum({a}, {b})",
                "tl.minimum({a}, {b})", "tl.where({a} > {b}, {a} * 0.5, {b})", "tl.fma({a}, {b}, {a})"]
FLOAT_UNARY = ["tl.exp({a} * 0.1)", "tl.sin({a})", "tl.sqrt(tl.abs({a}))", "tl.floor({a})", "tl.abs({a})",
               "tl.erf({a})", "({a}.to(tl.float16).to(tl.float32))", "({a}.to(tl.bfloat16).to(tl.float32))",
               "tl.log(tl.abs({a}) + 1.0)"]


def _expr(rng: random.Random, leaves: list[str], binary: list[str], unary: list[str], depth: int) -> str:
    if depth == 0:
        return rng.choice(leaves)
    if rng.random() < 0.3:
        return rng.choice(unary).format(a=_expr(rng, leaves, binary, unary, depth - 1))
    return rng.choice(binary).format(a=_expr(rng, leaves, binary, unary, depth - 1),
                                     b=_expr(rng, leaves, binary, unary, depth - 1))


def _kernel_source(seed: int) -> str:
    rng = random.Random(seed)
    ie = _expr(rng, ["a", "b", "c"], INT_BINARY, INT_UNARY, 3)
    fe = _expr(rng, ["x", "y", "a.to(tl.float32)"], FLOAT_BINARY, FLOAT_UNARY, 3)
    return f'''
import triton_metal.language as tl


def kernel(a_ptr, b_ptr, x_ptr, y_ptr, i_out, f_out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m, other=0)
    b = tl.load(b_ptr + offs, mask=m, other=0)
    c = offs
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    y = tl.load(y_ptr + offs, mask=m, other=0.0)
    tl.store(i_out + offs, {ie}, mask=m)
    tl.store(f_out + offs, {fe}, mask=m)
'''


def _load(tmp_path: Path, seed: int):
    path = tmp_path / f"random_kernel_{seed}.py"
    path.write_text(_kernel_source(seed))
    spec = importlib.util.spec_from_file_location(f"random_kernel_{seed}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kernel


@pytest.mark.parametrize("seed", range(24))
def test_random_expression(seed: int, tmp_path: Path):
    fn = _load(tmp_path, seed)
    rng = np.random.default_rng(seed)
    n, block = 300, 128
    a = rng.integers(-2000, 2000, n).astype(np.int32)
    b = rng.integers(-40, 40, n).astype(np.int32)
    b[::9] = 0
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    y = (rng.standard_normal(n) * 3).astype(np.float32)
    args = dict(a_ptr=a, b_ptr=b, x_ptr=x, y_ptr=y, i_out=np.zeros(n, np.int32), f_out=np.zeros(n, np.float32), n=n)
    want = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    launch(JITCallable(fn), (3, 1, 1), dict(want, BLOCK=block))
    k = compile_1d(JITCallable(fn), "*i32", "*i32", "*fp32", "*fp32", "*i32", "*fp32", "i32", C(block))
    got = run(k, (3,), **args)
    np.testing.assert_array_equal(got["i_out"], want["i_out"], err_msg=_kernel_source(seed))
    np.testing.assert_allclose(got["f_out"], want["f_out"], rtol=2e-5, atol=2e-5, err_msg=_kernel_source(seed))
