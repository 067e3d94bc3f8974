"""Compile kernels to MSL and run the MSL on the emulator, for the code generator's tests.

* `compile_source(fn, *params)`: front end -> default pass pipeline -> `compile_module` (with the
  axis info of the laid-out module). Needs the layout passes for tensors of rank > 1.
* `compile_1d(fn, *params, spt=...)`: the same, but 1-D tensors get one coalesced layout chosen
  here (every 1-D kernel is consistent with one layout), so the lowering of 1-D kernels is tested
  apart from the layout passes.
* `compile_ir(text)`: a hand-written module with layouts.
* `run(kernel, grid, **args)`: launch on the emulator through `metal_kernel` as the runtime
  does (scalars as typed 0-d arrays, `threadgroup = 32 * num_warps`, the grid counted in
  threads); outputs are fresh arrays filled with `init_value`, so tests compare what the kernel
  writes.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import mlx.core as mx
import numpy as np

from triton_metal import ir
from triton_metal.backends.emulator import metal_kernel
from triton_metal.codegen import CodegenOptions, MSLKernel, compile_module
from triton_metal.ir.layouts import CoalescedLayout
from triton_metal.ir.types import TensorType
from triton_metal.passes import analyze_axis_info, default_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frontend"))
from helpers import C, compile_kernel  # noqa: E402

__all__ = ["C", "compile_kernel", "compile_source", "compile_1d", "compile_2d", "compile_ir", "run", "MX_TYPES"]

MX_TYPES = {
    "float": mx.float32, "float16_t": mx.float16, "bfloat16_t": mx.bfloat16, "bool": mx.bool_,
    "int8_t": mx.int8, "int16_t": mx.int16, "int32_t": mx.int32, "int64_t": mx.int64,
    "uint8_t": mx.uint8, "uint16_t": mx.uint16, "uint32_t": mx.uint32, "uint64_t": mx.uint64,
}


def _all_values(module: ir.Module):
    for op in module.walk():
        yield from op.results
        for region in op.regions:
            for block in region.blocks:
                yield from block.args


def compile_1d(fn: Any, *params: Any, num_warps: int = 4, spt: int = 1, **opts: Any) -> MSLKernel:
    module = compile_kernel(fn, *params, num_warps=num_warps)
    default_pipeline({"layout_passes": False}).apply(None, module)
    for v in _all_values(module):
        t = v.type
        if isinstance(t, TensorType):
            assert t.rank == 1, f"compile_1d takes 1-D kernels only, got {t}"
            v.type = t.with_layout(CoalescedLayout((spt,), (32,), (num_warps,), (0,)))
    module.verify()
    return compile_module(module, CodegenOptions(num_warps=num_warps, **opts), analyze_axis_info(module))


def compile_source(fn: Any, *params: Any, num_warps: int = 4, **opts: Any) -> MSLKernel:
    """The whole compiler: front end, the default pipeline (and the layout assignment pass itself
    where the pipeline does not list it yet), the code generator."""
    from triton_metal.passes import PASS_REGISTRY

    module = compile_kernel(fn, *params, num_warps=num_warps)
    default_pipeline().apply(None, module)
    if any(isinstance(v.type, TensorType) and v.type.layout is None for v in _all_values(module)):
        PASS_REGISTRY["assign-layouts"]().apply(None, module)
    module.verify()
    return compile_module(module, CodegenOptions(num_warps=num_warps, **opts), analyze_axis_info(module))


def compile_ir(text: str, num_warps: int = 4, **opts: Any) -> MSLKernel:
    module = ir.parse_module(text)
    module.verify()
    return compile_module(module, CodegenOptions(num_warps=num_warps, **opts), analyze_axis_info(module))


def run(kernel: MSLKernel, grid: tuple[int, ...],
        init_value: float = 0.0, launch: tuple[int, int, int] | None = None, **args: Any) -> dict[str, np.ndarray]:
    """Launch `kernel` with `grid` programs; `args` by parameter name (arrays or Python scalars).
    Returns each written parameter's output array (shape and dtype of the argument). `launch`:
    the threadgroups to launch per axis for a kernel compiled with `spread_programs`."""
    inputs: list[Any] = []
    out_shapes: list[tuple[int, ...]] = []
    out_dtypes: list[Any] = []
    out_params: list[str] = []
    for p in kernel.params:
        if p.kind == "constexpr":
            continue
        value = args[p.name]
        if p.kind == "scalar":
            inputs.append(mx.array(value, dtype=MX_TYPES[p.dtype]))
            continue
        arr = value if isinstance(value, mx.array) else mx.array(value)
        if p.msl_inputs:
            inputs.append(arr)
        if p.msl_outputs:
            out_shapes.append(tuple(arr.shape))
            out_dtypes.append(arr.dtype)
            out_params.append(p.name)
    g = tuple(grid) + (1,) * (3 - len(grid))
    if kernel.metadata.get("grid_input"):
        inputs.append(mx.array(list(g), dtype=mx.int32))
        g = launch or g
    fn = metal_kernel(kernel.name, list(kernel.input_names), list(kernel.output_names), kernel.source,
                      header=kernel.header)
    t = kernel.threads_per_program
    results = fn(inputs=inputs, output_shapes=out_shapes, output_dtypes=out_dtypes,
                 grid=(g[0] * t, g[1], g[2]), threadgroup=(t, 1, 1), init_value=init_value)
    out = {}
    for name, r in zip(out_params, results):
        out[name] = np.array(r.astype(mx.float32) if r.dtype == mx.bfloat16 else r)
    return out


def compile_2d(fn: Any, *params: Any, num_warps: int = 4, parent: CoalescedLayout | None = None,
               **opts: Any) -> MSLKernel:
    """Compile a kernel of 2-D tiles and their rows/columns: every 2-D tensor gets `parent`, and
    each connected group of 1-D values (joined by the ops that keep shapes) gets the slice of
    `parent` that its `expand_dims` or `reduce` asks for (a test-side assignment, so the
    lowering of 2-D kernels is tested apart from the layout passes)."""
    from triton_metal.ir.layouts import SliceLayout
    from triton_metal.ir.ops import tt
    from triton_metal.ir.ops.tt_compute import ReduceOp

    if parent is None:
        parent = CoalescedLayout((1, 1), (4, 8), (num_warps, 1), (1, 0))
    module = compile_kernel(fn, *params, num_warps=num_warps)
    default_pipeline({"layout_passes": False}).apply(None, module)
    group: dict[Any, Any] = {}

    def find(v: Any) -> Any:
        while group.get(v, v) is not v:
            v = group[v]
        return v

    def union(a: Any, b: Any) -> None:
        ra, rb = find(a), find(b)
        if ra is not rb:
            group[ra] = rb

    wanted: dict[Any, int] = {}
    for op in module.walk():
        if isinstance(op, tt.ExpandDimsOp) and op.src.type.rank == 1:
            wanted[op.src] = op.axis
        elif isinstance(op, ReduceOp) and op.srcs[0].type.rank == 2:
            for r in op.results:
                wanted[r] = op.axis
        elif not isinstance(op, (tt.ExpandDimsOp, ReduceOp, tt.BroadcastOp)):
            vals = [v for v in (*op.operands, *op.results) if isinstance(v.type, TensorType) and v.type.rank == 1]
            for a, b in zip(vals, vals[1:]):
                union(a, b)
    slices: dict[Any, int] = {}
    for v, axis in wanted.items():
        r = find(v)
        assert slices.get(r, axis) == axis, "a 1-D group is both a row and a column"
        slices[r] = axis
    for v in list(_all_values(module)):
        t = v.type
        if not isinstance(t, TensorType):
            continue
        if t.rank == 2:
            v.type = t.with_layout(parent)
        elif t.rank == 1:
            v.type = t.with_layout(SliceLayout(slices.get(find(v), 0), parent))
        else:
            raise AssertionError(f"compile_2d takes tensors of rank 1 and 2, got {t}")
    module.verify()
    return compile_module(module, CodegenOptions(num_warps=num_warps, **opts), analyze_axis_info(module))
