"""Launches on the Metal path are lazy graph nodes: they trace under `mx.compile` and
`mx.export_function`, never evaluate an array, and refuse `mx.vmap` clearly.

Linux has no Metal, so `mx.compile` is checked with a stand-in whose kernels return lazy arrays
(`fake_mlx.LazyMx`: its `eval` fails, and inside a compile trace any `.item()`, `np.array` or
`mx.eval` of a traced array fails in MLX itself), and `mx.export_function` with MLX's real
`mx.fast.metal_kernel`, which builds its `CustomKernel` node inside an export trace even
without Metal; the traced graph is read back through `mx.export_to_dot`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import mlx.core as mx
import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from examples import cumsum, dropout, flash_attention, histogram, layer_norm, matmul, softmax, vector_add
from triton_metal.backends.metal import driver
from triton_metal.runtime import backend

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_mlx import LazyMx  # noqa: E402

_RNG = np.random.default_rng(0)


def _arr(*shape: int) -> mx.array:
    return mx.array(_RNG.standard_normal(shape).astype(np.float32))


def _use(monkeypatch: pytest.MonkeyPatch, stand_in: Any) -> None:
    """Launch on the Metal path through `stand_in`."""
    monkeypatch.setattr(backend, "_metal", True)
    monkeypatch.setattr(driver, "_mlx", lambda: stand_in)


@pytest.fixture
def lazy(monkeypatch: pytest.MonkeyPatch) -> LazyMx:
    stand_in = LazyMx()
    _use(monkeypatch, stand_in)
    return stand_in


def _all_examples(x, y, z, w, b, a, bm, q, ints):
    return (
        vector_add.add(x, y),
        softmax.softmax(z),
        *layer_norm.layer_norm_forward(z, w, b),
        matmul.matmul(a, bm),
        dropout.seeded_dropout(x, 0.5, 7),
        cumsum.cumsum(z),
        histogram.histogram(ints, 64),
        *flash_attention.attention(q, q, q, True, 0.125),
    )


def _example_inputs() -> tuple[mx.array, ...]:
    ints = mx.array(_RNG.integers(0, 64, 3000).astype(np.int32))
    return (_arr(3000), _arr(3000), _arr(37, 300), _arr(300), _arr(300), _arr(64, 32), _arr(32, 64),
            _arr(1, 2, 64, 32), ints)


def test_a_function_of_example_launches_traces_under_compile(lazy: LazyMx):
    inputs = _example_inputs()
    compiled = mx.compile(_all_examples)
    outputs = compiled(*inputs)  # every launch happens inside the trace: an evaluation would fail
    assert len(lazy.fast.launches) == 8  # one kernel run per launch, merged outputs included
    mx.eval(outputs)
    assert [o.shape for o in outputs][:2] == [(3000,), (37, 300)]


def test_a_launch_never_evaluates(lazy: LazyMx):
    x = _arr(3000) + 1.0  # unevaluated arguments stay unevaluated
    out = vector_add.add(x, x)
    y = softmax.softmax(_arr(5, 40) * 2.0)
    assert len(lazy.fast.launches) >= 2  # nothing ran: LazyMx.eval raises, .item() would fail in
    mx.eval(out, y)                      # the compile test; evaluating afterwards is the user's


@triton.jit
def ticket_kernel(count_ptr, out_ptr, BLOCK: tl.constexpr):
    ticket = tl.atomic_add(count_ptr, 1)  # uses the value it returns: needs the array's contents
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.int32) + ticket)


def test_counter_arrays_trace_under_transformations(lazy: LazyMx):
    # the counter's output starts as the array without reading it (kept relative to the array,
    # which the kernel takes as one more input): the launch traces under mx.compile
    def step(count):
        out = mx.zeros((32,), mx.int32)
        ticket_kernel[(1,)](count, out, BLOCK=32)
        return out, count

    mx.eval(mx.compile(step)(mx.array(np.array([41], np.int32))))  # LazyMx runs nothing: the
    (launch,) = lazy.fast.launches                                  # values are checked in
    assert launch["init_value"] == 0.0                              # test_metal_driver.py
    assert lazy.fast.factory_calls[-1]["input_names"][-1] == "count_ptr_old"


@triton.jit
def max_ticket_kernel(m_ptr, out_ptr, BLOCK: tl.constexpr):
    ticket = tl.atomic_max(m_ptr, 1)  # a compare-and-swap loop on the difference from the array
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.int32) + ticket)


def test_atomics_that_use_the_old_values_trace_under_transformations(lazy: LazyMx):
    # kept relative to the array like the counter above: nothing is read, so the launch traces
    def step(m):
        out = mx.zeros((32,), mx.int32)
        max_ticket_kernel[(1,)](m, out, BLOCK=32)
        return out

    mx.eval(mx.compile(step)(mx.zeros((1,), mx.int32)))
    (launch,) = lazy.fast.launches
    assert launch["init_value"] == 0.0
    assert lazy.fast.factory_calls[-1]["input_names"][-1] == "m_ptr_old"


def test_vmap_over_a_launch_raises_naming_the_kernel(lazy: LazyMx, monkeypatch: pytest.MonkeyPatch):
    xs = _arr(2, 1024)
    with pytest.raises(ValueError, match="Not implemented for"):  # MLX's own error, unnamed
        mx.vmap(lambda x: vector_add.add(x, x))(xs)
    monkeypatch.setenv("TRITON_METAL_DEBUG", "1")
    with pytest.raises(triton.LaunchError, match="kernel 'add_kernel' was launched inside mx.vmap"):
        mx.vmap(lambda x: vector_add.add(x, x))(xs)
    with pytest.raises(triton.LaunchError, match="kernel 'add_kernel' was launched inside mx.grad"):
        mx.grad(lambda x: vector_add.add(x, x).sum())(xs[0])


def test_ops_trace_under_compile_with_their_backward(lazy: LazyMx):
    @triton.op
    def double(x):
        return vector_add.add(x, x)

    @double.backward
    def double_bwd(x, cot, out):
        return vector_add.add(cot, cot)

    step = mx.compile(mx.value_and_grad(lambda x: (double(x) * 3.0).sum()))
    value, grad = step(_arr(1024))
    traced = len(lazy.fast.launches)
    assert traced == 2  # forward and backward launches, traced once
    mx.eval(value, grad)
    step(_arr(1024))
    assert len(lazy.fast.launches) == traced
    with pytest.raises(triton.OpError, match="op 'double' cannot be vectorised by mx.vmap.*'add_kernel'"):
        mx.vmap(double)(_arr(2, 1024))


class _CountingFast:
    """MLX's real `mx.fast`, counting `metal_kernel` calls."""

    def __init__(self) -> None:
        self.calls = 0

    def metal_kernel(self, **kwargs: Any) -> Any:
        kernel = mx.fast.metal_kernel(**kwargs)

        def call(**call: Any) -> Any:
            self.calls += 1
            return kernel(**call)

        return call


class _RealMx:
    def __init__(self) -> None:
        self.fast = _CountingFast()

    def __getattr__(self, name: str) -> Any:
        return getattr(mx, name)


_PROVEN = {"vector_add", "dropout", "cumsum"}


@pytest.mark.parametrize("name", ["vector_add", "softmax", "layer_norm", "matmul", "dropout", "cumsum",
                                  "histogram", "flash_attention"])
def test_exported_graph_holds_the_kernel_nodes_of_each_launch(name: str, monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path):
    real = _RealMx()
    _use(monkeypatch, real)
    launches = {"vector_add": lambda x, z, q: [vector_add.add(x, x)],
                "softmax": lambda x, z, q: [softmax.softmax(z)],
                "layer_norm": lambda x, z, q: list(layer_norm.layer_norm_forward(z, z[0], z[1])),
                "matmul": lambda x, z, q: [matmul.matmul(z[:32, :32], z[:32, :32])],
                "dropout": lambda x, z, q: [dropout.seeded_dropout(x, 0.5, 3)],
                "cumsum": lambda x, z, q: [cumsum.cumsum(z)],
                "histogram": lambda x, z, q: [histogram.histogram((x * 10).astype(mx.int32) % 64, 64)],
                "flash_attention": lambda x, z, q: list(flash_attention.attention(q, q, q, False, 0.1))}[name]
    dot = tmp_path / "graph.dot"

    def traced(x, z, q):
        outputs = launches(x, z, q)
        mx.export_to_dot(str(dot), *outputs)
        return outputs

    mx.export_function(str(tmp_path / "f.mlxfn"), traced, _arr(3000), _arr(40, 300), _arr(1, 2, 64, 32))
    labels = re.findall(r'label ="([A-Za-z]+)', dot.read_text())
    kernels = labels.count("CustomKernel")
    merges = labels.count("Select") + labels.count("NotEqual")
    assert kernels == real.fast.calls == 1  # one kernel run per launch, whatever its outputs
    if name == "histogram":  # atomics combined with the old contents inside the graph
        assert labels.count("Add") >= 1
    if name in _PROVEN:
        assert merges == 0, labels
