"""Scans compiled to MSL against NumPy: the register path (SIMD shuffles, chunks, SIMD groups)
and the scratch path, sums and a non-commutative two-operand combine, 1-D and 2-D layouts."""

from __future__ import annotations

import numpy as np
import pytest
from harness import C, compile_1d, compile_2d, run

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.codegen.distribution import distribution
from triton_metal.codegen.scan_registers import plan_register_scan
from triton_metal.ir.layouts import BlockLayout, CoalescedLayout

RNG = np.random.default_rng(5)


@triton.jit
def _affine(a1, b1, a2, b2):
    # composition of x -> a1 x + b1 then x -> a2 x + b2: associative, not commutative
    return a1 * a2, b1 * a2 + b2


@triton.jit
def recurrence_kernel(a_ptr, b_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    _, x = tl.associative_scan((a, b), 0, _affine)
    tl.store(out_ptr + offs, x)


@pytest.mark.parametrize("num_warps,spt,block", [(1, 1, 32), (1, 2, 256), (4, 1, 1024), (4, 4, 512), (8, 1, 64)])
def test_linear_recurrence_scan(num_warps: int, spt: int, block: int):
    a = RNG.integers(0, 5, block).astype(np.uint32)
    b = RNG.integers(0, 100, block).astype(np.uint32)
    k = compile_1d(recurrence_kernel, "*u32", "*u32", "*u32", C(block), num_warps=num_warps, spt=spt)
    out = run(k, (1,), a_ptr=a, b_ptr=b, out_ptr=np.zeros(block, np.uint32))["out_ptr"]
    want = np.zeros(block, np.uint64)
    x = 0
    for i in range(block):
        x = (x * int(a[i]) + int(b[i])) % (1 << 32)
        want[i] = x
    np.testing.assert_array_equal(out, want.astype(np.uint32))


def test_register_path_uses_prefix_sums_and_shuffles():
    @triton.jit
    def cs(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), 0))

    k = compile_1d(cs, "*fp32", "*fp32", C(1024), num_warps=4)
    assert "simd_prefix_exclusive_sum(" in k.source
    k2 = compile_1d(recurrence_kernel, "*u32", "*u32", "*u32", C(1024), num_warps=4)
    assert "simd_shuffle_up(" in k2.source


def test_scan_plan_accepts_wrapping_layouts_and_refuses_interleaved_ones():
    lay = CoalescedLayout((1,), (32,), (4,), (0,))
    plan = plan_register_scan(distribution(lay, (1024,), 4), 0)
    assert plan is not None and plan.chunk == 128 and plan.lane_bits == 5 and len(plan.warp_bits) == 2
    # axis 0 of a tile whose lanes run along axis 1 first, then axis 0: lanes on the axis are bits 3, 4
    lay2 = CoalescedLayout((1, 1), (4, 8), (4, 1), (1, 0))
    plan2 = plan_register_scan(distribution(lay2, (16, 8), 4), 0)
    assert plan2 is not None and plan2.lane_shift == 3
    # dot results: the lane bits of a fragment's columns are lane bits 0 and 3, not contiguous
    assert plan_register_scan(distribution(BlockLayout((2, 2)), (16, 16), 4), 1) is None


@triton.jit
def tile_scan_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr, REV: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    y = tl.cumsum(x, AXIS, reverse=REV)
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], y)


LAYOUTS = [
    CoalescedLayout((1, 1), (4, 8), (4, 1), (1, 0)),
    CoalescedLayout((1, 2), (8, 4), (2, 2), (1, 0)),
    CoalescedLayout((1, 1), (8, 4), (1, 4), (0, 1)),
    CoalescedLayout((2, 1), (2, 16), (1, 4), (0, 1)),
]


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
def test_tile_scans(layout: CoalescedLayout, axis: int, reverse: bool):
    m_, n_ = 8, 64
    x = RNG.integers(-50, 50, (m_, n_)).astype(np.int32)
    k = compile_2d(tile_scan_kernel, "*i32", "*i32", C(m_), C(n_), C(axis), C(reverse), parent=layout)
    out = run(k, (1,), x_ptr=x, out_ptr=np.zeros_like(x))["out_ptr"]
    want = np.flip(np.cumsum(np.flip(x, axis), axis), axis) if reverse else np.cumsum(x, axis)
    np.testing.assert_array_equal(out, want.astype(np.int32))


def reverse_recurrence(a_ptr, b_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    _, x = tl.associative_scan((a, b), 0, _affine, reverse=True)
    tl.store(out_ptr + offs, x)


@pytest.mark.parametrize("num_warps,block", [(1, 32), (1, 256), (4, 1024), (4, 64), (8, 512)])
def test_reverse_non_commutative_scan_in_registers_matches_the_interpreter(num_warps: int, block: int):
    from test_compiled_vs_interpreter import interpret

    from triton_metal.language import JITCallable

    a = RNG.integers(0, 5, block).astype(np.uint32)
    b = RNG.integers(0, 100, block).astype(np.uint32)
    want = interpret(reverse_recurrence, (1,), a_ptr=a, b_ptr=b, out_ptr=np.zeros(block, np.uint32), BLOCK=block)
    k = compile_1d(JITCallable(reverse_recurrence), "*u32", "*u32", "*u32", C(block), num_warps=num_warps)
    assert "simd_shuffle_down(" in k.source
    got = run(k, (1,), a_ptr=a, b_ptr=b, out_ptr=np.zeros(block, np.uint32))["out_ptr"]
    np.testing.assert_array_equal(got, want["out_ptr"])
