"""Property test: random elementwise and reduction kernels agree compiled and interpreted.

Hypothesis draws an expression over two loaded tensors (float32, float16 or int32: arithmetic,
comparisons with `tl.where`, min/max, bitwise ops for integers, a few math functions for
floats), a kernel shape (1-D elementwise with a masked tail, 1-D reduction per program, or a
2-D tile reduced along one axis), a block size, a size that is usually not a multiple of it and
`num_warps`. The kernel's source is written to a module file (the compiler reads sources), and
`differential.run_both` runs it in the interpreter and compiled on the emulator and compares.
Examples are derandomized so that CI reuses its cache of compiled kernels.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
from differential import run_both
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import triton_metal as triton

# tl.exp and tl.sqrt take fp32 (and fp64) only, as in Triton: a 16-bit operand is cast first
_FLOAT_UNARY = ("tl.abs({})", "tl.exp(({}).to(tl.float32) * 0.25)", "tl.sqrt(tl.abs({}).to(tl.float32))",
                "({} * 0.5 + 1.0)", "(-{})")
_INT_UNARY = ("tl.abs({})", "({} >> 1)", "({} * 3 + 7)", "(-{})", "({} & 255)")
_SHARED_BINARY = ("({} + {})", "({} - {})", "({} * {})", "tl.maximum({}, {})", "tl.minimum({}, {})",
                  "tl.where({0} > {1}, {0}, {1})", "tl.where({0} < {1}, {1} - {0}, {0})")
_INT_BINARY = ("({} & {})", "({} | {})", "({} ^ {})")


def expressions(is_float: bool) -> st.SearchStrategy[str]:
    unary = _FLOAT_UNARY if is_float else _INT_UNARY
    binary = _SHARED_BINARY + (() if is_float else _INT_BINARY)
    leaves = st.sampled_from(["x", "y"])

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(st.sampled_from(unary), inner).map(lambda t: t[0].format(t[1])),
            st.tuples(st.sampled_from(binary), inner, inner).map(lambda t: t[0].format(t[1], t[2])),
        )

    return st.recursive(leaves, extend, max_leaves=6)


_ELEMENTWISE = '''
@triton.jit
def kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1)
    y = tl.load(y_ptr + offs, mask=mask, other=1)
    tl.store(out_ptr + offs, {expr}, mask=mask)
'''

_REDUCE_1D = '''
@triton.jit
def kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1)
    y = tl.load(y_ptr + offs, mask=mask, other=1)
    r = tl.where(mask, {expr}, {neutral})
    tl.store(out_ptr + tl.program_id(0), tl.{reduce}(r, axis=0))
'''

_REDUCE_2D = '''
@triton.jit
def kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    rows = tl.arange(0, ROWS)
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = (cols[None, :] < n) & (rows[:, None] < ROWS)
    offs = rows[:, None] * n + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=1)
    y = tl.load(y_ptr + offs, mask=mask, other=1)
    r = tl.where(mask, {expr}, {neutral})
    red = tl.{reduce}(r, axis={axis})
    {store}
'''

_NEUTRAL = {("sum", True): "0.0", ("sum", False): "0", ("max", True): "-float('inf')",
            ("max", False): "-2147483647", ("min", True): "float('inf')", ("min", False): "2147483647"}

_MODULES: dict[str, Any] = {}


def load_kernel(source: str, tmp_dir: Path) -> triton.JITFunction:
    text = "import triton_metal as triton\nimport triton_metal.language as tl\n\nROWS = tl.constexpr(4)\n" + source
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    module = _MODULES.get(digest)
    if module is None:
        path = tmp_dir / f"random_kernel_{digest}.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(f"random_kernel_{digest}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        _MODULES[digest] = module
    return module.kernel


@st.composite
def kernels(draw: st.DrawFn) -> dict[str, Any]:
    dtype = draw(st.sampled_from(["float32", "float16", "int32"]))
    is_float = dtype != "int32"
    expr = draw(expressions(is_float))
    shape = draw(st.sampled_from(["elementwise", "reduce1d", "reduce2d"]))
    reduce = draw(st.sampled_from(["sum", "max", "min"]))
    block = draw(st.sampled_from([16, 64, 128, 256]))
    n = draw(st.integers(1, 3 * block))
    num_warps = draw(st.sampled_from([1, 2, 4, 8]))
    axis = draw(st.sampled_from([0, 1]))
    return {"dtype": dtype, "is_float": is_float, "expr": expr, "shape": shape, "reduce": reduce, "block": block,
            "n": n, "num_warps": num_warps, "axis": axis, "seed": draw(st.integers(0, 2**16))}


def _source(case: dict[str, Any]) -> str:
    neutral = _NEUTRAL[(case["reduce"], case["is_float"])]
    if case["shape"] == "elementwise":
        return _ELEMENTWISE.format(expr=case["expr"])
    if case["shape"] == "reduce1d":
        return _REDUCE_1D.format(expr=case["expr"], neutral=neutral, reduce=case["reduce"])
    if case["axis"] == 0:  # one value per column
        store = "tl.store(out_ptr + cols, red, mask=cols < n)"
    else:  # one value per row and program
        store = "tl.store(out_ptr + tl.program_id(0) * ROWS + rows, red)"
    return _REDUCE_2D.format(expr=case["expr"], neutral=neutral, reduce=case["reduce"], axis=case["axis"], store=store)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=kernels())
def test_random_kernel_compiled_matches_interpreter(case: dict[str, Any], tmp_path_factory: Any) -> None:
    tmp_dir = tmp_path_factory.getbasetemp() / "random_kernels"
    tmp_dir.mkdir(exist_ok=True)
    kernel = load_kernel(_source(case), tmp_dir)
    rng = np.random.default_rng(case["seed"])
    n, block = case["n"], case["block"]
    rows = 4 if case["shape"] == "reduce2d" else 1
    if case["is_float"]:
        x = rng.uniform(-2, 2, rows * n).astype(case["dtype"])
        y = rng.uniform(-2, 2, rows * n).astype(case["dtype"])
    else:
        x = rng.integers(-1000, 1000, rows * n).astype(np.int32)
        y = rng.integers(-1000, 1000, rows * n).astype(np.int32)
    programs = triton.cdiv(n, block)
    if case["shape"] == "elementwise":
        out_size = n
    elif case["shape"] == "reduce1d" or case["axis"] == 1:
        out_size = programs * rows
    else:
        out_size = n
    out = np.zeros(out_size, x.dtype)
    # float sums may add in another order: a few ulps of the magnitudes summed
    run_both(kernel, (programs,), num_warps=case["num_warps"], rtol=1e-4, atol=1e-4,
             x_ptr=x, y_ptr=y, out_ptr=out, n=n, BLOCK=block)
