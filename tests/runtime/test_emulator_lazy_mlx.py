"""Launches with MLX arrays on the emulator are lazy nodes of MLX's graph (an `EmulatorKernel`
primitive, backends/emulator/lazy_mlx.py), as `metal_kernel` launches are on a Mac: nothing is
evaluated at the launch, `mx.compile` traces them, and the values are bit for bit those of the
eager path (`TRITON_METAL_EMULATOR_LAZY=0`, the kernel run at the call through NumPy buffers).
`mx.vmap` and derivatives are refused naming the kernel; inside `mx.export_function` tracing the
launch is MLX's own `metal_kernel` node (MLX serializes its own primitives only), so the file
written is the one a Mac writes.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mlx.core as mx
import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
import triton_metal.ops as tm_ops
from triton_metal.backends.emulator import lazy_mlx
from triton_metal.backends.emulator.errors import OutOfBoundsAccess

from benchmarks.emulator_lazy_mlx import scaled_add  # the kernel the benchmark times


@triton.jit
def half_writer(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Stores to the first half of `out` only: the rest keeps its old contents."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n // 2
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def _launch(x: mx.array, y: mx.array) -> mx.array:
    out = mx.zeros_like(x)
    scaled_add[(triton.cdiv(x.size, 128),)](x, y, out, x.size, 0.5, BLOCK=128)
    return out


def _in_place(x: mx.array, old: mx.array) -> mx.array:
    out = old * 1.0
    half_writer[(triton.cdiv(x.size, 128),)](x, out, x.size, BLOCK=128)
    return out


def _ops(x: mx.array, w: mx.array) -> mx.array:
    return tm_ops.softmax(tm_ops.rms_norm(x, w, 1e-5) * 3.0, axis=-1)


@pytest.fixture(scope="module", autouse=True)
def _lazy_available() -> None:
    if not lazy_mlx.available():
        pytest.fail("the lazy-launch extension cannot be built here (see the RuntimeWarning)")


def _rand(*shape: int, seed: int) -> mx.array:
    return mx.array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def _eager(monkeypatch: pytest.MonkeyPatch, fn: Callable[..., Any], *args: Any) -> np.ndarray:
    """`fn(*args)` on the eager path (the kernel runs at the launch)."""
    with monkeypatch.context() as m:
        m.setenv("TRITON_METAL_EMULATOR_LAZY", "0")
        return np.array(fn(*args))


def _graph(tmp_path: Path, *outputs: mx.array) -> str:
    path = tmp_path / "graph.dot"
    mx.export_to_dot(str(path), *outputs)
    return path.read_text()


def _same_bits(got: mx.array, want: np.ndarray) -> None:
    got_np = np.array(got)
    assert got_np.dtype == want.dtype and got_np.shape == want.shape
    assert np.array_equal(got_np.view(np.uint32), want.view(np.uint32))


CASES = {
    "kernel": (_launch, lambda: (_rand(1000, seed=1), _rand(1000, seed=2))),
    "kernel_in_place": (_in_place, lambda: (_rand(1000, seed=3), _rand(1000, seed=4))),
    "ops": (_ops, lambda: (_rand(6, 40, seed=5), _rand(40, seed=6))),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_launch_is_a_lazy_node_with_the_eager_values(case: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    fn, make = CASES[case]
    args = make()
    want = _eager(monkeypatch, fn, *args)
    # inputs that are themselves unevaluated: the launch must leave them so
    lazy_args = tuple(a + 0.0 for a in args)
    got = fn(*lazy_args)
    graph = _graph(tmp_path, got)
    assert "EmulatorKernel" in graph
    assert "Add" in graph  # the inputs' own nodes are still in the graph: nothing was evaluated
    _same_bits(got, want)


@pytest.mark.parametrize("case", sorted(CASES))
def test_compile_traces_launches_and_matches_the_eager_path(case: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    fn, make = CASES[case]
    args = make()
    want = _eager(monkeypatch, fn, *args)
    compiled = mx.compile(fn)
    _same_bits(compiled(*args), want)
    _same_bits(compiled(*args), want)  # the cached trace runs the kernel again


def test_views_and_unaligned_inputs_match_the_eager_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # a transpose (copied to row-major order), a view at a 4-byte offset (copied to an aligned
    # buffer) and a broadcast: what metal_kernel hands the kernel on a Mac
    base = _rand(40, 26, seed=7)
    views = (base.T, base.reshape(-1)[1:1001], mx.broadcast_to(base[3, 5], (1000,)))
    for x in views:
        y = _rand(*x.shape, seed=8)
        want = _eager(monkeypatch, _launch, x, y)
        _same_bits(_launch(x, y), want)


def test_vmap_and_grad_are_refused_naming_the_kernel() -> None:
    x, y = _rand(64, 100, seed=9), _rand(64, 100, seed=10)
    with pytest.raises(ValueError, match=r"\[Primitive::vmap\] Not implemented for CustomKernel "
                                         r"\(metal_kernel 'scaled_add_"):
        mx.eval(mx.vmap(_launch)(x, y))
    with pytest.raises(ValueError, match=r"\[Primitive::vjp\] Not implemented for CustomKernel "
                                         r"\(metal_kernel 'scaled_add_"):
        mx.grad(lambda x: _launch(x, y[0]).sum())(x[0])


@pytest.mark.parametrize("case", ["kernel", "kernel_in_place"])
def test_export_function_writes_the_custom_kernel_a_mac_runs(case: str, tmp_path: Path) -> None:
    fn, make = CASES[case]
    path = tmp_path / "f.mlxfn"
    mx.export_function(str(path), fn, *make())
    data = path.read_bytes()
    # MLX's own metal_kernel node, built from the arguments the emulator received; MLX cannot
    # serialize the emulator's primitive (mlx/export.cpp serializes its own primitives only)
    assert data.count(b"CustomKernel") == 1 and b"EmulatorKernel" not in data
    kernel = b"scaled_add" if case == "kernel" else b"half_writer"
    assert b"[[kernel]] void custom_kernel_" + kernel in data  # the MSL travels in the node


def test_export_of_an_op_is_refused_by_mlx(tmp_path: Path) -> None:
    # ops are mx.custom_function's, which MLX's export cannot serialize (on a Mac too)
    with pytest.raises(ValueError, match=re.escape("Unable to serialize primitive CustomTransforms")):
        mx.export_function(str(tmp_path / "f.mlxfn"), _ops, *CASES["ops"][1]())


def test_a_fault_surfaces_at_evaluation_as_the_eager_launch_raises_it() -> None:
    @triton.jit
    def past_the_end(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs + 1000))

    x = _rand(64, seed=13)
    out = mx.zeros_like(x)
    past_the_end[(1,)](x, out, BLOCK=64)  # no error yet: nothing has run
    # the eager launch's exception, in Python terms (kernel and parameter names, the line)
    with pytest.raises(OutOfBoundsAccess, match=r"kernel 'past_the_end': out-of-bounds access to "
                                                r"'x_ptr' at index 1000 \(the buffer has 64 elements\)"):
        mx.eval(out)
    # read again, `out` either faults again (MLX evaluates it anew) or, counted as evaluated,
    # holds all bits set: never what the faulting kernel wrote
    try:
        held = np.array(out)
    except OutOfBoundsAccess:
        return
    assert (held.view(np.uint32) == 0xFFFFFFFF).all()


def test_without_the_extension_launches_run_eagerly_after_one_warning(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable() -> Any:
        raise lazy_mlx.ExtensionUnavailable("nanobind is not installed")

    x, y = _rand(100, seed=14), _rand(100, seed=15)
    want = _eager(monkeypatch, _launch, x, y)
    monkeypatch.setattr(lazy_mlx, "_build_inputs", unavailable)
    lazy_mlx._extension.cache_clear()
    try:
        with pytest.warns(RuntimeWarning, match="run eagerly .* nanobind is not installed"):
            _same_bits(_launch(x, y), want)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # one warning per process, not one per launch
            _same_bits(_launch(x, y), want)
        with pytest.raises(ValueError, match="cannot run inside mx.compile"):
            mx.compile(_launch)(x, y)
    finally:
        lazy_mlx._extension.cache_clear()  # the next test builds (finds) the real one again
