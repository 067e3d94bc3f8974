"""`ttg.convert_layout` lowered on its own: a tile loaded in one layout, converted to another and
back, stored; the round trip must keep every element, through threadgroup scratch when the
layouts differ and as a plain renaming when they agree."""

from __future__ import annotations

import numpy as np
import pytest
from harness import C, compile_kernel, run

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.codegen import CodegenOptions, compile_module
from triton_metal.ir.layouts import CoalescedLayout, SliceLayout
from triton_metal.ir.ops import tt_memory as mem
from triton_metal.ir.ops.ttg import ConvertLayoutOp
from triton_metal.ir.types import TensorType
from triton_metal.passes import default_pipeline

RNG = np.random.default_rng(6)


@triton.jit
def copy_tile(x_ptr, y_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    offs = rows[:, None] * N + cols[None, :]
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2)


def _build(parent: CoalescedLayout, other: CoalescedLayout, m: int, n: int, num_warps: int = 4,
           managed: bool = False):
    module = compile_kernel(copy_tile, "*i32", "*i32", C(m), C(n), num_warps=num_warps)
    default_pipeline({"layout_passes": False}).apply(None, module)
    for op in module.walk():
        for v in op.results:
            t = v.type
            if isinstance(t, TensorType):
                v.type = t.with_layout(parent if t.rank == 2 else SliceLayout(1 if v.name_hint == "rows" else 0, parent))
    # rows and cols: the slices their expand_dims ask for
    for op in module.walk():
        if op.name == "tt.expand_dims":
            op.src.type = op.src.type.with_layout(SliceLayout(op.axis, parent))
    load = next(op for op in module.walk() if isinstance(op, mem.LoadOp))
    block = load.parent
    x = load.result
    size = m * n * 4
    # managed: scratch allocated as the layout passes would (disjoint, so no barrier between)
    attrs = [dict(smem_offset=0, smem_bytes=size), dict(smem_offset=size, smem_bytes=size)] if managed else [{}, {}]
    to_other = ConvertLayoutOp(src=x, result_types=[x.type.with_layout(other)], **attrs[0])
    back = ConvertLayoutOp(src=to_other.result, result_types=[x.type], **attrs[1])
    block.insert_after(load, to_other)
    block.insert_after(to_other, back)
    for op in module.walk():
        if op is not to_other:
            op.replace_operand(x, back.result)
    module.verify()
    return compile_module(module, CodegenOptions(num_warps=num_warps))


@pytest.mark.parametrize("other", [
    CoalescedLayout((1, 1), (8, 4), (1, 4), (0, 1)),
    CoalescedLayout((2, 2), (4, 8), (2, 2), (1, 0)),
    CoalescedLayout((1, 1), (32, 1), (4, 1), (0, 1)),
], ids=str)
@pytest.mark.parametrize("managed", [False, True])
def test_round_trip_through_scratch(other: CoalescedLayout, managed: bool):
    parent = CoalescedLayout((1, 4), (8, 4), (4, 1), (1, 0))
    m, n = 32, 16
    k = _build(parent, other, m, n, managed=managed)
    # own scratch: write, barrier, read, barrier per conversion; scratch the passes manage: the
    # passes place barriers where it is reused, so only the one between write and read
    assert k.source.count("threadgroup_barrier") == (2 if managed else 4)
    assert k.metadata["threadgroup_memory_bytes"] == m * n * 4 * (2 if managed else 1)
    x = RNG.integers(-1000, 1000, (m, n)).astype(np.int32)
    out = run(k, (1,), x_ptr=x, y_ptr=np.zeros_like(x))["y_ptr"]
    np.testing.assert_array_equal(out, x * 2)


def test_same_distribution_is_a_renaming():
    parent = CoalescedLayout((1, 4), (8, 4), (4, 1), (1, 0))
    same = CoalescedLayout((1, 4), (8, 4), (4, 1), (1, 0))
    k = _build(parent, same, 32, 16)
    assert "threadgroup_barrier" not in k.source and "km_smem" not in k.source
    x = RNG.integers(-1000, 1000, (32, 16)).astype(np.int32)
    np.testing.assert_array_equal(run(k, (1,), x_ptr=x, y_ptr=np.zeros_like(x))["y_ptr"], x * 2)
