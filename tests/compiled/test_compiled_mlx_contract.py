"""The MLX contract: the kernel text MLX itself builds from the Metal driver's calls runs right.

For several compiled kernels, the driver prepares a launch exactly as on a Mac
(`MetalLauncher.prepare`: inputs, typed scalars, output shapes and dtypes, grid in threads).
The real `mx.fast.metal_kernel` is then called with those arguments under `mx.export_function`
tracing with `verbose=True`, which makes MLX write the full kernel source it would hand to the
Metal compiler without running anything (tests/emulator/mlx_capture.py). That text is compiled
and run on the emulator, and the results are checked against NumPy; the text must also equal
the emulator's own rendering of MLX's rules (`build_kernel_source`).
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import mlx.core as mx
import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.backends.emulator import EmulatorKernel
from triton_metal.backends.emulator.signature import InputSpec, OutputSpec, build_kernel_source
from triton_metal.backends.metal import LaunchPlan, MetalLauncher

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "emulator"))
from mlx_capture import captured_fd_output  # noqa: E402

_TYPES = {mx.float32: "float", mx.float16: "float16_t", mx.int32: "int32_t", mx.bfloat16: "bfloat16_t"}
_NUMPY = {"float": np.float32, "float16_t": np.float16, "int32_t": np.int32, "bfloat16_t": np.uint16}


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def row_softmax(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


@triton.jit
def tile_matmul(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


def _mlx_source(factory: dict[str, Any], call: dict[str, Any]) -> str:
    kernel = mx.fast.metal_kernel(**factory)

    def traced(*inputs: mx.array) -> list[mx.array]:
        return kernel(**{**call, "inputs": list(inputs)}, verbose=True)

    with tempfile.TemporaryDirectory() as tmp:
        with captured_fd_output() as out:
            mx.export_function(os.path.join(tmp, "k.mlxfn"), traced, *call["inputs"])
    prefix = f"Generated source code for `{factory['name']}`:\n```\n"
    assert out.text.startswith(prefix), out.text[:200]
    return out.text[len(prefix):].rsplit("\n```\n", 1)[0]


def _run_contract(kernel: triton.JITFunction, grid: tuple[int, ...], args: list[Any], **options: Any) -> list[np.ndarray]:
    """Compile, prepare the Metal launch, capture MLX's source, run it on the emulator; the
    outputs in the kernel's output order."""
    compiled = kernel.warmup(*args, grid=grid, **options)
    assert compiled is not None
    msl = compiled.msl
    names = kernel.arg_names
    values = list(args) + [options[n] for n in names[len(args):]]
    launcher = MetalLauncher(msl, LaunchPlan.of(msl, names), names, mx=mx)
    grid3 = tuple(grid) + (1,) * (3 - len(grid))
    prepared = launcher.prepare(tuple(values), grid3)  # type: ignore[arg-type]
    factory = launcher.factory_arguments()
    call = prepared.call_arguments()
    source = _mlx_source(factory, call)
    specs = [InputSpec(n, _TYPES[a.dtype], a.ndim, a.size) for n, a in zip(msl.input_names, call["inputs"])]
    outs = [OutputSpec(n, _TYPES[d]) for n, d in zip(msl.output_names, call["output_dtypes"])]
    ours = build_kernel_source(msl.name, specs, outs, msl.source, msl.header, (), msl.atomic_outputs)
    assert source == ours.text
    emulated = EmulatorKernel.build(replace(ours, text=source), msl.source, msl.header)
    host_inputs = [
        np.array(a.view(mx.uint16)) if a.dtype == mx.bfloat16 else np.array(a) for a in call["inputs"]
    ]
    outputs = [np.zeros(s, _NUMPY[_TYPES[d]]) for s, d in zip(call["output_shapes"], call["output_dtypes"])]
    emulated.launch(host_inputs, outputs, call["grid"], call["threadgroup"])
    return outputs


@pytest.mark.parametrize("num_warps", [1, 4])
def test_vector_add_through_mlx_source(num_warps: int):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1000).astype(np.float32)
    y = rng.standard_normal(1000).astype(np.float32)
    (out,) = _run_contract(add_kernel, (4,), [mx.array(x), mx.array(y), mx.zeros((1000,)), 1000],
                           BLOCK=256, num_warps=num_warps)
    np.testing.assert_array_equal(out, x + y)


def test_softmax_rows_through_mlx_source():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 100)).astype(np.float32)
    (out,) = _run_contract(row_softmax, (6,), [mx.zeros((6, 100)), mx.array(x), 100, 100], BLOCK=128)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out.reshape(6, 100), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_fp16_dot_tile_through_mlx_source():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((32, 16)).astype(np.float16)
    b = rng.standard_normal((16, 32)).astype(np.float16)
    (out,) = _run_contract(tile_matmul, (1,), [mx.array(a), mx.array(b), mx.zeros((32, 32), mx.float32)],
                           M=32, N=32, K=16)
    np.testing.assert_allclose(out.reshape(32, 32), a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)


def test_small_inputs_arrive_in_constant_memory_and_still_run():
    # 5 elements: MLX declares the inputs `const constant float*`
    x = np.arange(5, dtype=np.float32)
    (out,) = _run_contract(add_kernel, (1,), [mx.array(x), mx.array(x), mx.zeros((5,)), 5], BLOCK=32, num_warps=1)
    np.testing.assert_array_equal(out, 2 * x)


@triton.jit
def histogram_kernel(x_ptr, hist_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.atomic_add(hist_ptr + tl.load(x_ptr + offs, mask=mask, other=0), 1, mask=mask)


def test_atomic_histogram_through_mlx_source():
    data = np.random.default_rng(3).integers(0, 16, 700).astype(np.int32)
    # the driver starts an atomic-add output at 0 (its init_value) and adds the old counts after
    (hist,) = _run_contract(histogram_kernel, (3,), [mx.array(data), mx.zeros((16,), mx.int32), 700], BLOCK=256)
    np.testing.assert_array_equal(hist, np.bincount(data, minlength=16))
