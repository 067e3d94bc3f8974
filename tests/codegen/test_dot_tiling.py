"""`dot_tiling`: the fragments a dot's plan uses are the ones every thread really holds.

For every warp and lane, the plan's register pairs must hold, under each layout's distribution,
exactly the elements Metal's lane layout puts in that lane of the fragment at the plan's origin
plus the warp's offset: then `simdgroup_multiply_accumulate` on fragments built from those
registers computes the right block of `A @ B` in every SIMD group. Checked exhaustively over
lanes and warps for many shapes and warp splits, in pure Python (no MSL).
"""

from __future__ import annotations

import itertools

import pytest

from triton_metal.codegen.distribution import distribution
from triton_metal.codegen.dot_tiling import FRAG, fragment_slots, plan_dot
from triton_metal.ir.layouts import BlockLayout, CoalescedLayout, DotOperandLayout


def lane_coords(lane: int) -> tuple[int, int]:
    """Metal's simdgroup_matrix lane layout (metal.md 5.7), written out independently."""
    q = lane // 4
    return (q & 4) + (lane // 2) % 4, (q & 2) * 2 + (lane % 2) * 2


def warp_offset(bases: tuple[int, ...], warp: int) -> int:
    return sum(v for bit, v in enumerate(bases) if warp >> bit & 1)


def check_fragment(dist, regs, origin, warp):
    for lane in range(32):
        r, c = lane_coords(lane)
        for e, reg in enumerate(regs):
            assert dist.coords(reg, lane, warp) == (origin[0] + r, origin[1] + c + e), (origin, warp, lane, e)


SPLITS = [(1, 1), (1, 2), (2, 1), (2, 2), (4, 1), (1, 4), (2, 4), (4, 2), (8, 1), (1, 8)]
SIZES = [16, 32, 128]


@pytest.mark.parametrize("wpc", SPLITS, ids=str)
def test_plans_cover_every_output_fragment_once(wpc):
    nw = wpc[0] * wpc[1]
    for m, n, k in itertools.product(SIZES, SIZES, (16, 32)):
        if m % (FRAG * wpc[0]) or n % (FRAG * wpc[1]):
            continue  # such splits replicate; covered below
        block = BlockLayout(wpc)
        acc = distribution(block, (m, n), nw)
        a = distribution(DotOperandLayout(0, block), (m, k), nw)
        b = distribution(DotOperandLayout(1, block), (k, n), nw)
        plan = plan_dot(acc, a, b)
        assert plan is not None and plan.a is not None and plan.b is not None
        covered = set()
        for warp in range(nw):
            rows, cols = warp_offset(plan.warp_rows, warp), warp_offset(plan.warp_cols, warp)
            for slot in plan.acc:
                origin = (slot.row + rows, slot.col + cols)
                check_fragment(acc, slot.regs, origin, warp)
                covered.add(origin)
                for kk in range(0, k, FRAG):
                    check_fragment(a, plan.a[(slot.row, kk)].regs, (origin[0], kk), warp)
                    check_fragment(b, plan.b[(kk, slot.col)].regs, (kk, origin[1]), warp)
        # every 8x8 block of the output is some warp's fragment, and no two warps share one
        assert covered == {(i, j) for i in range(0, m, FRAG) for j in range(0, n, FRAG)}
        assert len(plan.acc) * nw == len(covered)


@pytest.mark.parametrize("wpc,shape", [((4, 2), (16, 16)), ((8, 1), (16, 32)), ((1, 8), (32, 16))])
def test_replicated_splits_still_hold_whole_fragments(wpc, shape):
    nw = wpc[0] * wpc[1]
    block = BlockLayout(wpc)
    acc = distribution(block, shape, nw)
    a = distribution(DotOperandLayout(0, block), (shape[0], 16), nw)
    b = distribution(DotOperandLayout(1, block), (16, shape[1]), nw)
    plan = plan_dot(acc, a, b)
    assert plan is not None and plan.a is not None and plan.b is not None
    for warp in range(nw):
        rows, cols = warp_offset(plan.warp_rows, warp), warp_offset(plan.warp_cols, warp)
        for slot in plan.acc:
            check_fragment(acc, slot.regs, (slot.row + rows, slot.col + cols), warp)


def test_other_layouts_are_staged():
    block = BlockLayout((2, 2))
    acc = distribution(block, (32, 32), 4)
    coalesced = distribution(CoalescedLayout((1, 4), (8, 4), (4, 1), (1, 0)), (32, 32), 4)
    b = distribution(DotOperandLayout(1, block), (32, 32), 4)
    plan = plan_dot(acc, coalesced, b)
    assert plan is not None and plan.a is None and plan.b is not None
    assert fragment_slots(coalesced) is None
    # an operand laid out for another split of the warps is not usable either
    other = distribution(DotOperandLayout(0, BlockLayout((4, 1))), (32, 32), 4)
    assert plan_dot(acc, other, b).a is None  # type: ignore[union-attr]
    # an accumulator that is not in fragments has no plan
    assert plan_dot(coalesced, other, b) is None
