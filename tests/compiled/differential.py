"""Differential runs: one kernel launch in the NumPy interpreter and compiled on the emulator.

`run_both(fn, grid, **args)` runs the kernel function `fn` (a plain function or a `@jit`
kernel) on copies of the arguments in the interpreter, then compiled through the runtime
(front end, passes, code generator, emulator) on the arguments themselves, and asserts that
every array argument ends equal in both (integers and booleans bit for bit, floats to a few
ulps, NaNs in the same places). The caller then checks the arguments against NumPy: the
compiled results are the ones left in the arrays.

An error of the interpreter is re-raised as is (tests of refusals expect the interpreter's
error); the compiled run is then skipped, since there is nothing to compare.
"""

from __future__ import annotations

import builtins
import linecache
from collections.abc import Callable
from typing import Any

import mlx.core as mx
import numpy as np

import triton_metal as triton
from triton_metal.backends.interpreter import launch as interpret_launch
from triton_metal.language import JITCallable

_JIT: dict[Any, triton.JITFunction] = {}


def as_jit(fn: Callable[..., Any]) -> triton.JITFunction:
    if isinstance(fn, triton.JITFunction):
        return fn
    kernel = _JIT.get(fn)
    if kernel is None:
        kernel = _JIT[fn] = triton.jit(fn)
    return kernel


def _copy(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, mx.array):
        return mx.array(value)
    return value


def _host(value: Any) -> np.ndarray | None:
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, mx.array):
        return np.array(value.astype(mx.float32) if value.dtype == mx.bfloat16 else value)
    return None


def assert_same(name: str, compiled: np.ndarray, interpreted: np.ndarray, rtol: float = 2e-5,
                atol: float = 1e-6) -> None:
    assert compiled.dtype == interpreted.dtype and compiled.shape == interpreted.shape, name
    if compiled.dtype.kind in "biu":
        np.testing.assert_array_equal(compiled, interpreted, err_msg=f"argument '{name}'")
        return
    c = compiled.astype(np.float64)
    i = interpreted.astype(np.float64)
    if compiled.dtype == np.float16:
        rtol, atol = max(rtol, 2e-3), max(atol, 2e-3)
    np.testing.assert_allclose(c, i, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"argument '{name}'")


def run_both(fn: Callable[..., Any], grid: tuple[int, ...] = (1,), *, num_warps: int | None = None,
             rtol: float = 2e-5, atol: float = 1e-6, **args: Any) -> None:
    """Module docstring. `num_warps` goes to the compiled launch only."""
    g = tuple(grid) + (1,) * (3 - len(grid))
    copies = {k: _copy(v) for k, v in args.items()}
    plain = fn.fn if isinstance(fn, triton.JITFunction) else fn
    interpret_launch(JITCallable(plain), (g[0], g[1], g[2]), copies)
    kernel = as_jit(fn)
    options = {} if num_warps is None else {"num_warps": num_warps}
    kernel[tuple(grid)](**args, **options)
    for name, value in args.items():
        compiled = _host(value)
        if compiled is not None:
            interpreted = _host(copies[name])
            assert interpreted is not None
            assert_same(name, compiled, interpreted, rtol, atol)


def register_exec_sources(module: Any) -> None:
    """Let kernels a test module builds with `exec(compile(src, name, "exec"))` be compiled:
    the compiler reads a kernel's source through `linecache`, so record each source there."""

    def compile_with_source(source: Any, filename: str, mode: str, *rest: Any, **kw: Any) -> Any:
        if isinstance(source, str):
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        return builtins.compile(source, filename, mode, *rest, **kw)

    module.compile = compile_with_source
