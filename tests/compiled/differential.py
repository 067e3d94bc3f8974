"""Differential runs: one kernel launch in the NumPy interpreter and compiled on the emulator.

`run_both(fn, grid, **args)` runs the kernel function `fn` (a plain function or a `@jit`
kernel) in the interpreter, keeps the results, restores the arguments, runs it compiled
through the runtime (front end, passes, code generator, emulator), and asserts that
every array argument ends equal in both (integers and booleans bit for bit, floats to a few
ulps, NaNs in the same places). The caller then checks the arguments against NumPy: the
compiled results are the ones left in the arrays.

Programs run in no fixed order once compiled, so what a kernel's atomics return can differ
from the interpreter's (which runs programs one after another). A kernel names the arguments
that hold such values in its attribute `program_order_dependent` (a tuple of names); those are
compared as multisets (sorted), which still proves that both runs saw the same values.

An error of the interpreter is re-raised as is (tests of refusals expect the interpreter's
error) once the compiled launch has refused the same program with the same words: the two
backends agree on accept/refuse for every kernel run here (per-op kernels, random kernels).

The kernels compared are written in the kernel language (helpers are `@jit` functions, values
they capture are constexprs), so the compiler must accept each of them. Only a kernel past one
of the compiler's stated limits (pointer and integer conversions, 3-D dots) skips the value
comparison, quoting the compiler's error. Such a kernel must then be refused by a user's
interpreted launch too (`TRITON_METAL_INTERPRET=1`, which checks with the compiler), with the
same words. Any other compilation error fails the test.
"""

from __future__ import annotations

import builtins
import linecache
from collections.abc import Callable
from typing import Any

import mlx.core as mx
import numpy as np
import pytest

import triton_metal as triton
from triton_metal.backends.interpreter import launch as interpret_launch
from triton_metal.errors import CompilationError
from triton_metal.runtime.arrays import flat_view
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
    """A copy the kernel sees as it sees `value`: for a NumPy view, the memory its strides reach
    is copied and viewed with the same strides (kernels address through the strides they are
    given); read-only arrays stay read-only."""
    if isinstance(value, np.ndarray):
        if value.flags.c_contiguous or value.size == 0:
            copy = value.copy()
        else:
            memory = flat_view(value, "copy").copy()
            copy = np.lib.stride_tricks.as_strided(memory, value.shape, value.strides)
        if not value.flags.writeable:
            copy.setflags(write=False)
        return copy
    if isinstance(value, mx.array):
        return mx.array(value)
    if type(value) is tuple:  # a tuple argument: its arrays copied the same way
        return tuple(_copy(v) for v in value)
    return value


def _leaves(name: str, value: Any) -> list[tuple[str, Any]]:
    """(name, value) of an argument, or of each element of a tuple argument (`name[i]`)."""
    if type(value) is tuple:
        return [leaf for i, v in enumerate(value) for leaf in _leaves(f"{name}[{i}]", v)]
    return [(name, value)]


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
    with np.errstate(invalid="ignore"):  # a signalling NaN widens to a quiet one, as intended
        c = compiled.astype(np.float64)
        i = interpreted.astype(np.float64)
    if compiled.dtype == np.float16:
        rtol, atol = max(rtol, 2e-3), max(atol, 2e-3)
    np.testing.assert_allclose(c, i, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"argument '{name}'")


def _restore(target: Any, saved: Any) -> None:
    if isinstance(target, np.ndarray):
        if not target.flags.writeable:
            return  # nothing could have changed it
        np.copyto(target, saved)
    elif isinstance(target, mx.array):
        target[...] = saved
    elif type(target) is tuple:
        for t, v in zip(target, saved):
            _restore(t, v)


def run_both(fn: Callable[..., Any], grid: tuple[int, ...] = (1,), *, num_warps: int | None = None,
             rtol: float = 2e-5, atol: float = 1e-6, **args: Any) -> None:
    """Module docstring. `num_warps` goes to the compiled launch only.

    The interpreter runs on the arguments themselves (kernels may compute with their addresses),
    its results are kept, the arguments are restored, and the compiled kernel runs on them."""
    g = tuple(grid) + (1,) * (3 - len(grid))
    saved = {k: _copy(v) for k, v in args.items()}
    plain = fn.fn if isinstance(fn, triton.JITFunction) else fn
    kernel = as_jit(fn)
    options = {} if num_warps is None else {"num_warps": num_warps}
    try:
        interpret_launch(JITCallable(plain), (g[0], g[1], g[2]), dict(args))
    except CompilationError as refusal:
        # One legality: the compiler refuses it too, with the same words.
        for k, v in args.items():
            _restore(v, saved[k])
        with pytest.raises(CompilationError) as compiled_refusal:
            kernel[tuple(grid)](**args, **options)
        assert compiled_refusal.value.reason == refusal.reason, (
            f"the backends refuse differently: {compiled_refusal.value.reason!r}")
        raise
    interpreted = {k: _copy(v) for k, v in args.items()}
    for k, v in args.items():
        _restore(v, saved[k])
    try:
        kernel[tuple(grid)](**args, **options)
    except CompilationError as error:
        if not _interpreter_only(error):
            raise
        _assert_interpreted_launch_refuses(kernel, grid, args, options, error)
        pytest.skip(f"the compiler refuses this kernel (a stated limit): "
                    f"{error.reason}")
    unordered = set(getattr(plain, "program_order_dependent", ()))
    references = dict(leaf for k, v in interpreted.items() for leaf in _leaves(k, v))
    for name, value in (leaf for k, v in args.items() for leaf in _leaves(k, v)):
        compiled = _host(value)
        if compiled is not None:
            reference = _host(references[name])
            assert reference is not None
            if name in unordered:
                compiled, reference = np.sort(compiled, axis=None), np.sort(reference, axis=None)
            assert_same(name, compiled, reference, rtol, atol)


_INTERPRETER_ONLY = (
    # limits of the compiler, refused with a precise error rather than compiled wrongly
    "converting between pointers and integers is not supported",
    "tl.dot of 3-D operands is not supported",
)


def _assert_interpreted_launch_refuses(kernel: Any, grid: tuple[int, ...], args: dict[str, Any],
                                       options: dict[str, Any], error: CompilationError) -> None:
    """The NumPy interpreter can run this kernel, but a user's interpreted launch
    (`TRITON_METAL_INTERPRET=1`) refuses it with the compiler's error: one legality."""
    import os

    before = os.environ.get("TRITON_METAL_INTERPRET")
    os.environ["TRITON_METAL_INTERPRET"] = "1"
    try:
        with pytest.raises(CompilationError) as interpreted:
            kernel[tuple(grid)](**args, **options)
    finally:
        if before is None:
            del os.environ["TRITON_METAL_INTERPRET"]
        else:
            os.environ["TRITON_METAL_INTERPRET"] = before
    assert interpreted.value.reason == error.reason


def _interpreter_only(error: CompilationError) -> bool:
    return any(text in error.reason for text in _INTERPRETER_ONLY)


def register_exec_sources(module: Any) -> None:
    """Let kernels a test module builds with `exec(compile(src, name, "exec"))` be compiled:
    the compiler reads a kernel's source through `linecache`, so record each source there."""

    def compile_with_source(source: Any, filename: str, mode: str, *rest: Any, **kw: Any) -> Any:
        if isinstance(source, str):
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        return builtins.compile(source, filename, mode, *rest, **kw)

    module.compile = compile_with_source
