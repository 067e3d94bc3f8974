"""Axis info on kernels compiled by the front end: the facts the layout passes rely on."""

from __future__ import annotations

import triton_metal.language as tl
from tests.frontend.helpers import C, compile_kernel
from triton_metal import ir
from triton_metal.ir.ops import AddPtrOp, HintOp, LoadOp, StoreOp
from triton_metal.passes import AxisInfo, analyze_axis_info
from triton_metal.passes.axis_info import MAX_DIVISIBILITY


def ops_of(module: ir.Module, cls: type) -> list:
    return [op for op in module.walk() if isinstance(op, cls)]


def vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def test_vector_add_specialized() -> None:
    m = compile_kernel(vector_add, "*fp32/16", "*fp32/16", "*fp32/16", "i32/16", C(1024))
    facts = analyze_axis_info(m)
    loads = ops_of(m, LoadOp)
    assert len(loads) == 2
    for load in loads:
        info = facts.get(load.ptr)
        # 1024 consecutive floats whose first address is 16-byte aligned
        assert info.contiguity == (1024,) and info.divisibility == (16,) and info.constancy == (1,)
        assert facts.pointer_alignment(load.ptr) == 4  # 16 bytes of f32
        # offs < n with n a multiple of 16 and offs starting at multiples of 1024: the mask
        # changes at most every 16 elements
        assert facts.mask_alignment(load.mask, 0) == 16
    store = ops_of(m, StoreOp)[0]
    assert facts.get(store.ptr).contiguity == (1024,)
    offs = store.ptr.op.offset
    assert facts.get(offs) == AxisInfo((1024,), (1024,), (1,), None, True)


def test_vector_add_unspecialized() -> None:
    m = compile_kernel(vector_add, "*fp32", "*fp32", "*fp32", "i32", C(256))
    facts = analyze_axis_info(m)
    load = ops_of(m, LoadOp)[0]
    info = facts.get(load.ptr)
    assert info.contiguity == (256,) and info.divisibility == (1,)
    assert facts.pointer_alignment(load.ptr) == 1
    assert facts.mask_alignment(load.mask, 0) == 1


def strided(x_ptr, out_ptr, stride, BLOCK: tl.constexpr, STEP: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(x_ptr + offs * stride)
    b = tl.load(x_ptr + offs * STEP)
    tl.store(out_ptr + offs, a + b)


def test_strided_loads() -> None:
    m = compile_kernel(strided, "*fp32/16", "*fp32/16", "i32/16", C(128), C(2))
    facts = analyze_axis_info(m)
    by_runtime_stride, by_constant_step = (facts.get(op.ptr) for op in ops_of(m, LoadOp))
    # offs * stride: no two neighbours are adjacent; each address is 16-byte aligned
    assert by_runtime_stride.contiguity == (1,) and by_runtime_stride.divisibility == (16,)
    # offs * 2: every other float: 8-byte aligned addresses, not contiguous
    assert by_constant_step.contiguity == (1,) and by_constant_step.divisibility == (8,)
    assert facts.pointer_alignment(ops_of(m, LoadOp)[1].ptr) == 1


def tile_2d(x_ptr, out_ptr, stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    ptrs = x_ptr + rows[:, None] * stride + cols[None, :]
    tl.store(out_ptr + rows[:, None] * stride + cols[None, :], tl.load(ptrs))


def test_2d_tile_with_divisible_stride() -> None:
    m = compile_kernel(tile_2d, "*fp16/16", "*fp16/16", "i32/16", C(32), C(64))
    facts = analyze_axis_info(m)
    load = ops_of(m, LoadOp)[0]
    info = facts.get(load.ptr)
    # rows of 64 consecutive halves; each row starts on a 16-byte boundary (stride % 16 == 0);
    # down a column only the element size is guaranteed
    assert info.contiguity == (1, 64)
    assert info.divisibility == (2, 16)
    assert info.constancy == (1, 1)
    assert facts.order(load.ptr) == (1, 0)
    assert facts.pointer_alignment(load.ptr) == 8  # 16 bytes of f16
    store = ops_of(m, StoreOp)[0]
    assert facts.get(store.ptr).contiguity == (1, 64)


def test_2d_tile_with_unknown_stride() -> None:
    m = compile_kernel(tile_2d, "*fp16/16", "*fp16/16", "i32", C(32), C(64))
    facts = analyze_axis_info(m)
    info = facts.get(ops_of(m, LoadOp)[0].ptr)
    assert info.contiguity == (1, 64)
    assert info.divisibility == (2, 2)


def hinted(x_ptr, idx_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.load(idx_ptr + tl.arange(0, BLOCK))
    offs = tl.max_contiguous(tl.multiple_of(offs, 8), 8)
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + offs))


def test_hints_reach_the_ir_and_the_analysis() -> None:
    m = compile_kernel(hinted, "*fp32/16", "*i32/16", "*fp32/16", C(64))
    hints = ops_of(m, HintOp)
    assert [h.kind.value for h in hints] == ["multiple_of", "max_contiguous"]
    assert [h.values for h in hints] == [(8,), (8,)]
    facts = analyze_axis_info(m)
    assert facts.get(hints[0].result) == AxisInfo((1,), (8,), (1,))
    assert facts.get(hints[1].result) == AxisInfo((8,), (8,), (1,))
    gather = ops_of(m, LoadOp)[1]
    info = facts.get(gather.ptr)
    assert info.contiguity == (8,) and info.divisibility == (16,)
    assert facts.pointer_alignment(gather.ptr) == 4


def loop_carried(x_ptr, out_ptr, n, BLOCK: tl.constexpr, STEP: tl.constexpr):
    ptrs = x_ptr + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for _ in range(0, n):
        acc += tl.load(ptrs)
        ptrs += STEP
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


def test_loop_carried_pointer_keeps_facts_when_the_step_keeps_them() -> None:
    m = compile_kernel(loop_carried, "*fp32/16", "*fp32/16", "i32", C(64), C(64))
    facts = analyze_axis_info(m)
    load = ops_of(m, LoadOp)[0]
    assert isinstance(load.ptr, ir.BlockArgument)  # the loop-carried pointer
    assert facts.get(load.ptr).contiguity == (64,)
    assert facts.get(load.ptr).divisibility == (16,)


def test_loop_carried_pointer_meets_entry_and_step() -> None:
    m = compile_kernel(loop_carried, "*fp32/16", "*fp32/16", "i32", C(64), C(3))
    facts = analyze_axis_info(m)
    load = ops_of(m, LoadOp)[0]
    # after k trips the pointer is x + 3k floats: only 4-byte alignment survives
    assert facts.get(load.ptr).contiguity == (64,)
    assert facts.get(load.ptr).divisibility == (4,)


def test_analysis_does_not_mutate() -> None:
    m = compile_kernel(tile_2d, "*fp16/16", "*fp16/16", "i32/16", C(32), C(64))
    before = ir.print_module(m)
    analyze_axis_info(m)
    assert ir.print_module(m) == before


def test_constants_and_ranges() -> None:
    m = compile_kernel(vector_add, "*fp32/16", "*fp32/16", "*fp32/16", "i32/16", C(1024))
    facts = analyze_axis_info(m)
    rng = next(op for op in m.walk() if op.name == "tt.make_range")
    assert facts.get(rng.result) == AxisInfo((1024,), (MAX_DIVISIBILITY,), (1,), None, True)
    const = next(op for op in m.walk() if op.name == "arith.constant")
    assert facts.get(const.result) == AxisInfo((1,), (1024,), (1,), 1024, True)
    addptrs = ops_of(m, AddPtrOp)
    assert all(facts.get(a.result).contiguity == (1024,) for a in addptrs)


def masked_with_other(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, x * scale + 1.0, mask=offs < n)


def test_floats_carry_constancy_only() -> None:
    m = compile_kernel(masked_with_other, "*fp32/16", "*fp32/16", "i32/16", "fp32", C(128))
    facts = analyze_axis_info(m)
    load = ops_of(m, LoadOp)[0]
    assert facts.get(load.other) == AxisInfo((1,), (1,), (128,))  # the splatted 0.0
    assert facts.get(load.result) == AxisInfo((1,), (1,), (1,))  # loaded data: nothing known
    mul = next(op for op in m.walk() if op.name == "arith.mulf")
    scale = mul.rhs if mul.lhs is load.result else mul.lhs
    assert facts.get(scale).constancy == (128,)  # the splatted scalar argument
    assert facts.get(mul.result).constancy == (1,)


def hinted_2d(x_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    rows = tl.arange(0, BLOCK)
    offs = rows[:, None] * stride + rows[None, :]
    offs = tl.multiple_of(offs, [1, 16])
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


def test_2d_hint_per_dimension() -> None:
    m = compile_kernel(hinted_2d, "*fp32/16", "*fp32/16", "i32", C(32))
    (hint,) = ops_of(m, HintOp)
    assert hint.values == (1, 16)
    facts = analyze_axis_info(m)
    # the stride is unknown, so only the hint makes each row start a multiple of 16 elements
    assert facts.get(hint.result).divisibility == (1, 16)
    load = ops_of(m, LoadOp)[0]
    assert facts.get(load.ptr).contiguity == (1, 32)
    assert facts.get(load.ptr).divisibility == (4, 16)
    assert facts.pointer_alignment(load.ptr) == 4
