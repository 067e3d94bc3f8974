"""Layouts: text form, and the distribution functions against independent formulas.

The references below compute who holds what straight from each layout's definition (Triton's
blocked layout; Metal's simdgroup_matrix lane layout), not from the linear bases the module uses.
"""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from triton_metal.ir import layouts as L
from triton_metal.ir.types import TensorType, f32, parse_type

# -- text form ----------------------------------------------------------------------------------

TEXTS = [
    "#coalesced<spt = [4], tpw = [32], wpc = [4], order = [0]>",
    "#coalesced<spt = [1, 4], tpw = [8, 4], wpc = [4, 1], order = [1, 0]>",
    "#slice<dim = 1, parent = #coalesced<spt = [1, 4], tpw = [8, 4], wpc = [4, 1], order = [1, 0]>>",
    "#slice<dim = 0, parent = #slice<dim = 2, parent = #coalesced<spt = [1, 1, 2], tpw = [2, 4, 4], wpc = [1, 2, 1], order = [2, 1, 0]>>>",
    "#block<wpc = [2, 2]>",
    "#dot_op<idx = 1, parent = #block<wpc = [4, 1]>>",
    "#slice<dim = 0, parent = #block<wpc = [1, 2]>>",
]


@pytest.mark.parametrize("text", TEXTS)
def test_layout_text_round_trips(text: str) -> None:
    layout = L.parse_layout(text)
    assert str(layout) == text
    assert L.parse_layout(str(layout)) == layout


def test_tensor_type_with_layout_round_trips() -> None:
    text = "tensor<64x!tt.ptr<f32>, #slice<dim = 1, parent = #block<wpc = [2, 2]>>>"
    ty = parse_type(text)
    assert isinstance(ty, TensorType) and ty.shape == (64,) and ty.layout == L.SliceLayout(1, L.BlockLayout((2, 2)))
    assert str(ty) == text
    assert ty != ty.with_layout(None)
    assert ty.with_element(f32).layout == ty.layout


@pytest.mark.parametrize("text, message", [
    ("#coalesced<spt = [4], tpw = [16], wpc = [4], order = [0]>", "multiply to 32"),
    ("#coalesced<spt = [3], tpw = [32], wpc = [1], order = [0]>", "powers of two"),
    ("#coalesced<spt = [1, 1], tpw = [8, 4], wpc = [1, 1], order = [0, 0]>", "permutation"),
    ("#coalesced<spt = [1], tpw = [32], wpc = [1]>", "missing field"),
    ("#slice<dim = 1, parent = #block<wpc = [1]>>", "two powers of two"),
    ("#slice<dim = 2, parent = #block<wpc = [1, 1]>>", "out of range"),
    ("#dot_op<idx = 2, parent = #block<wpc = [1, 1]>>", "0 or 1"),
    ("#wavy<x = [1]>", "unknown layout"),
    ("#block<wpc = [1, 1]> extra", "trailing"),
])
def test_malformed_layouts_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        L.parse_layout(text)


def test_layout_rank_must_match_tensor_rank() -> None:
    with pytest.raises(ValueError, match="rank"):
        TensorType((4, 4), f32, L.CoalescedLayout((1,), (32,), (1,), (0,)))


# -- references ---------------------------------------------------------------------------------


def _split(index: int, extents: tuple[int, ...], order: tuple[int, ...]) -> list[int]:
    """Per-dim digits of `index` in the mixed radix `extents`, dims in `order` fastest first."""
    out = [0] * len(extents)
    for d in order:
        out[d] = index % extents[d]
        index //= extents[d]
    return out


def _blocked_reference(lay: L.CoalescedLayout, shape: tuple[int, ...], warp: int, lane: int, reg: int) -> tuple[tuple[int, ...], bool]:
    """Triton's blocked layout by its definition: (coordinates, owner)."""
    tile = lay.cta_tile
    per_dim = tuple(s * max(1, n // t) for s, n, t in zip(lay.size_per_thread, shape, tile))
    lanes = _split(lane, lay.threads_per_warp, lay.order)
    warps = _split(warp, lay.warps_per_cta, lay.order)
    regs = _split(reg, per_dim, lay.order)
    unwrapped = [
        (r // s) * t + (w * tp + ln) * s + r % s
        for r, s, t, w, tp, ln in zip(regs, lay.size_per_thread, tile, warps, lay.threads_per_warp, lanes)
    ]
    return tuple(u % n for u, n in zip(unwrapped, shape)), all(u < n for u, n in zip(unwrapped, shape))


def _coalesced_layouts(rank: int, num_warps: int) -> list[L.CoalescedLayout]:
    pows = [1, 2, 4]
    out = []
    for order in itertools.permutations(range(rank)):
        for tpw in itertools.product([1, 2, 4, 8, 16, 32], repeat=rank):
            if L._prod(tpw) != 32:
                continue
            for wpc in itertools.product([1, 2, 4], repeat=rank):
                if L._prod(wpc) != num_warps:
                    continue
                for spt in itertools.product(pows, repeat=rank):
                    out.append(L.CoalescedLayout(spt, tpw, wpc, order))
    return out


def _check_cover(ll: L.LinearLayout, shape: tuple[int, ...]) -> Counter[tuple[int, ...]]:
    """Owners hold every element exactly once; returns how many holders each element has."""
    owned: Counter[tuple[int, ...]] = Counter()
    held: Counter[tuple[int, ...]] = Counter()
    for w in range(ll.num_warps):
        for ln in range(L.WARP_SIZE):
            for r in range(ll.registers):
                c = ll.coords(w, ln, r)
                held[c] += 1
                if ll.is_owner(w, ln, r):
                    owned[c] += 1
    every = set(itertools.product(*(range(n) for n in shape)))
    assert set(owned) == every and all(v == 1 for v in owned.values())
    assert set(held) == every
    return held


# -- coalesced ----------------------------------------------------------------------------------


@pytest.mark.parametrize("num_warps", [1, 2, 4])
@pytest.mark.parametrize("shape", [(4,), (32,), (256,), (1024,)])
def test_coalesced_1d_matches_definition(shape: tuple[int, ...], num_warps: int) -> None:
    for lay in _coalesced_layouts(1, num_warps):
        ll = L.linear_layout(lay, shape, num_warps)
        for w, ln in itertools.product(range(num_warps), range(32)):
            for r in range(ll.registers):
                assert (ll.coords(w, ln, r), ll.is_owner(w, ln, r)) == _blocked_reference(lay, shape, w, ln, r)
        _check_cover(ll, shape)


@pytest.mark.parametrize("num_warps", [1, 4])
@pytest.mark.parametrize("shape", [(2, 8), (16, 16), (64, 4), (4, 64)])
def test_coalesced_2d_matches_definition(shape: tuple[int, ...], num_warps: int) -> None:
    for lay in _coalesced_layouts(2, num_warps)[::3]:
        ll = L.linear_layout(lay, shape, num_warps)
        assert ll.registers == L.registers_per_thread(lay, shape, num_warps)
        for w, ln in itertools.product(range(num_warps), range(32)):
            for r in range(ll.registers):
                assert (ll.coords(w, ln, r), ll.is_owner(w, ln, r)) == _blocked_reference(lay, shape, w, ln, r)
        held = _check_cover(ll, shape)
        fits = all(t <= n for t, n in zip(lay.cta_tile, shape))
        # a CTA tile that fits the shape holds each element once; a larger one replicates
        assert (set(held.values()) == {1}) == fits
        assert ll.is_replicated() == (not fits)


def test_coalesced_3d_covers() -> None:
    shape = (4, 8, 16)
    for lay in _coalesced_layouts(3, 2)[::97]:
        _check_cover(L.linear_layout(lay, shape, 2), shape)


def test_triton_1d_example() -> None:
    """spt 4 x 32 lanes x 4 warps over 1024 elements: lane l of warp w holds 4 contiguous
    elements at 4 * (32 w + l), then again 512 further."""
    lay = L.parse_layout("#coalesced<spt = [4], tpw = [32], wpc = [4], order = [0]>")
    assert L.registers_per_thread(lay, (1024,), 4) == 8
    assert [L.element_coords(lay, (1024,), 4, 2, 3, r)[0] for r in range(8)] == [
        268, 269, 270, 271, 780, 781, 782, 783]


def test_row_major_2d_example() -> None:
    """tpw [8, 4] order [1, 0]: consecutive lanes walk along a row first."""
    lay = L.CoalescedLayout((1, 4), (8, 4), (4, 1), (1, 0))
    assert [L.element_coords(lay, (32, 16), 4, 0, ln, 0) for ln in range(6)] == [
        (0, 0), (0, 4), (0, 8), (0, 12), (1, 0), (1, 4)]
    assert L.element_coords(lay, (32, 16), 4, 1, 0, 3) == (8, 3)


def test_wrong_warp_count_or_shape_is_refused() -> None:
    lay = L.CoalescedLayout((4,), (32,), (4,), (0,))
    with pytest.raises(ValueError, match="4 warps"):
        L.registers_per_thread(lay, (128,), 2)
    with pytest.raises(ValueError, match="power-of-two"):
        L.registers_per_thread(lay, (96,), 4)


# -- slice --------------------------------------------------------------------------------------


def _thread_sets(layout: L.Layout, shape: tuple[int, ...], num_warps: int) -> dict[tuple[int, int], set[tuple[int, ...]]]:
    ll = L.linear_layout(layout, shape, num_warps)
    return {(w, ln): {ll.coords(w, ln, r) for r in range(ll.registers)}
            for w in range(num_warps) for ln in range(L.WARP_SIZE)}


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("parent_shape", [(16, 32), (4, 64), (64, 8)])
def test_slice_holds_what_the_parent_reduced(parent_shape: tuple[int, int], dim: int) -> None:
    """After a reduction along `dim`, each thread holds the results of exactly the lines it held
    (the projection of its parent elements)."""
    for parent in _coalesced_layouts(2, 4)[::13]:
        sliced = parent_shape[:dim] + parent_shape[dim + 1:]
        lay = L.SliceLayout(dim, parent)
        parent_sets = _thread_sets(parent, parent_shape, 4)
        slice_sets = _thread_sets(lay, sliced, 4)
        for t, elems in parent_sets.items():
            assert slice_sets[t] == {c[:dim] + c[dim + 1:] for c in elems}
        _check_cover(L.linear_layout(lay, sliced, 4), sliced)


def test_slice_of_slice_and_of_block() -> None:
    parent = L.CoalescedLayout((1, 2, 2), (2, 4, 4), (2, 1, 2), (2, 1, 0))
    inner = L.SliceLayout(2, parent)
    outer = L.SliceLayout(0, inner)
    p = _thread_sets(parent, (4, 8, 16), 4)
    o = _thread_sets(outer, (8,), 4)
    for t, elems in p.items():
        assert o[t] == {(c[1],) for c in elems}
    _check_cover(L.linear_layout(outer, (8,), 4), (8,))
    blk = L.BlockLayout((2, 2))
    rows = _thread_sets(L.SliceLayout(1, blk), (32,), 4)
    for t, elems in _thread_sets(blk, (32, 16), 4).items():
        assert rows[t] == {(c[0],) for c in elems}


# -- block and dot operands ---------------------------------------------------------------------


def _fragment_lane(lane: int) -> tuple[int, int]:
    """Metal's simdgroup_matrix lane layout: (row, first column) of lane `lane`."""
    q = lane // 4
    return (q & 4) + (lane // 2) % 4, (q & 2) * 2 + (lane % 2) * 2


def test_fragment_lanes_cover_8x8() -> None:
    cells = Counter()
    for ln in range(32):
        r, c = _fragment_lane(ln)
        cells[(r, c)] += 1
        cells[(r, c + 1)] += 1
    assert set(cells) == set(itertools.product(range(8), range(8))) and set(cells.values()) == {1}


@pytest.mark.parametrize("wpc", [(1, 1), (2, 2), (4, 1), (1, 4), (2, 1)])
@pytest.mark.parametrize("shape", [(8, 8), (16, 32), (64, 16)])
def test_block_layout_matches_simdgroup_fragments(wpc: tuple[int, int], shape: tuple[int, int]) -> None:
    nw = wpc[0] * wpc[1]
    lay = L.BlockLayout(wpc)
    ll = L.linear_layout(lay, shape, nw)
    tile_m, tile_n = 8 * wpc[0], 8 * wpc[1]
    for w, ln in itertools.product(range(nw), range(32)):
        wm, wn = w // wpc[1], w % wpc[1]
        row, col = _fragment_lane(ln)
        expected = set()
        for fm in range(max(1, shape[0] // tile_m)):
            for fn in range(max(1, shape[1] // tile_n)):
                for k in (0, 1):
                    expected.add(((fm * tile_m + wm * 8 + row) % shape[0], (fn * tile_n + wn * 8 + col + k) % shape[1]))
        got = [ll.coords(w, ln, r) for r in range(ll.registers)]
        assert set(got) == expected
        # registers come in column pairs (c, c + 1) of one fragment row
        for r in range(0, ll.registers, 2):
            assert got[r + 1] == (got[r][0], got[r][1] + 1)
    _check_cover(ll, shape)


@pytest.mark.parametrize("wpc", [(2, 2), (4, 1), (1, 2)])
def test_dot_operands_hold_their_rows_and_all_of_k(wpc: tuple[int, int]) -> None:
    nw = wpc[0] * wpc[1]
    m, n, k = 32, 32, 16
    parent = L.BlockLayout(wpc)
    res = _thread_sets(parent, (m, n), nw)
    a = _thread_sets(L.DotOperandLayout(0, parent), (m, k), nw)
    b = _thread_sets(L.DotOperandLayout(1, parent), (k, n), nw)
    for w in range(nw):
        rows = {c[0] for ln in range(32) for c in res[(w, ln)]}
        cols = {c[1] for ln in range(32) for c in res[(w, ln)]}
        assert {c for ln in range(32) for c in a[(w, ln)]} == set(itertools.product(sorted(rows), range(k)))
        assert {c for ln in range(32) for c in b[(w, ln)]} == set(itertools.product(range(k), sorted(cols)))
    _check_cover(L.linear_layout(L.DotOperandLayout(0, parent), (m, k), nw), (m, k))
    _check_cover(L.linear_layout(L.DotOperandLayout(1, parent), (k, n), nw), (k, n))


def test_same_distribution() -> None:
    a = L.CoalescedLayout((1, 4), (8, 4), (4, 1), (1, 0))
    b = L.CoalescedLayout((1, 4), (8, 4), (2, 2), (1, 0))
    assert L.same_distribution(a, a, (32, 16), 4)
    assert not L.same_distribution(a, b, (32, 16), 4)
    # on a single row, warps along dim 0 all replicate: two layouts differing there coincide
    c = L.CoalescedLayout((1, 1), (1, 32), (4, 1), (1, 0))
    d = L.CoalescedLayout((1, 1), (1, 32), (4, 1), (0, 1))
    assert L.same_distribution(c, d, (1, 32), 4)


def test_thread_local_conversions() -> None:
    shape = (4, 256)
    a = L.CoalescedLayout((2, 2), (1, 32), (1, 4), (1, 0))
    # the same placement with the registers walked in another order
    b = L.CoalescedLayout((2, 2), (1, 32), (1, 4), (0, 1))
    assert not L.same_distribution(a, b, shape, 4) and L.is_thread_local(a, b, shape, 4)
    assert [L.element_coords(a, shape, 4, 0, 0, r) for r in range(4)] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert [L.element_coords(b, shape, 4, 0, 0, r) for r in range(4)] == [(0, 0), (1, 0), (2, 0), (3, 0)]
    assert not L.is_thread_local(a, L.CoalescedLayout((1, 4), (1, 32), (1, 4), (1, 0)), shape, 4)
    # the row split of a dot result is that of the next dot's A operand, not of its B operand
    blk = L.BlockLayout((4, 1))
    assert L.is_thread_local(blk, L.DotOperandLayout(0, blk), (32, 32), 4)
    assert not L.is_thread_local(blk, L.DotOperandLayout(1, blk), (32, 32), 4)
