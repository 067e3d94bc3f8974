"""Tensor layouts: how the elements of a tensor are spread over the threads of one program.

A program is a threadgroup of `num_warps` SIMD groups ("warps") of 32 lanes. A layout says, for
each thread `(warp, lane)` and each of its registers `reg`, which element of the tensor it holds.

* `CoalescedLayout` (Triton's `#blocked`): each thread owns `size_per_thread[d]` contiguous
  elements per dim; `threads_per_warp` lanes and `warps_per_cta` warps tile the dims, `order`
  fastest first. The CTA tile `spt * tpw * wpc` wraps around a larger shape (more registers) and
  is replicated over a smaller one (several threads hold the same element).
* `SliceLayout(dim, parent)`: the layout of a tensor that lost dimension `dim` of a `parent`
  tensor (a reduction's result, a `make_range` feeding `expand_dims(dim)`): the threads that held
  the elements of one parent "line" along `dim` all hold the one element of the slice.
* `BlockLayout`: the result of `tt.dot`, 8x8 `simdgroup_matrix` fragments. Lane `l` of a
  fragment (q = l / 4) holds row `(q & 4) + (l / 2) % 4` and columns `c = (q & 2) * 2 + (l % 2) * 2`
  and `c + 1`. The SIMD groups tile the fragments: warp `w` is at `(w / wpc[1], w % wpc[1])` of
  a `(8 * wpc[0]) x (8 * wpc[1])` CTA tile, repeated to cover the shape.
* `DotOperandLayout(op_idx, parent)`: operand A (`op_idx` 0, M x K) or B (1, K x N) of a dot
  whose result has layout `parent`: the same fragments, rows of A (columns of B) split over the
  warps like the result, all of K held by every warp (replicated over the other warp dim).

Text forms (inside tensor types): `#coalesced<spt = [1, 4], tpw = [8, 4], wpc = [4, 1],
order = [1, 0]>`, `#slice<dim = 1, parent = ...>`, `#block<wpc = [2, 2]>`,
`#dot_op<idx = 0, parent = #block<wpc = [2, 2]>>`.

Distribution. Every layout over a power-of-two shape is linear over bits: the element a thread
holds is the sum of one basis vector per set bit of `reg`, `lane` and `warp` (`linear_layout`),
wrapped modulo the shape. A basis vector that wraps to zero makes copies: the threads (or
registers) that differ in that bit hold the same element, and only the one with the bit clear is
its owner (`is_owner`, `LinearLayout.owner_masks`) - a store from a replicated layout must be done
by owners only. Shapes must be powers of two (as `tl.arange` requires).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Union

WARP_SIZE = 32
"""Lanes per SIMD group on Apple GPUs."""

FRAGMENT = 8
"""Side of a `simdgroup_matrix` fragment."""


def _prod(xs: tuple[int, ...]) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _ints(xs: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(x) for x in xs) + "]"


@dataclass(frozen=True)
class CoalescedLayout:
    """Triton's blocked layout; text `#coalesced<spt = [1, 4], tpw = [8, 4], wpc = [4, 1], order = [1, 0]>`."""

    size_per_thread: tuple[int, ...]
    """Elements a thread owns contiguously per dim."""
    threads_per_warp: tuple[int, ...]
    """Lanes along each dim; product 32."""
    warps_per_cta: tuple[int, ...]
    """Warps along each dim; product num_warps."""
    order: tuple[int, ...]
    """Dims, fastest-varying first."""

    def __post_init__(self) -> None:
        for name in ("size_per_thread", "threads_per_warp", "warps_per_cta", "order"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        rank = len(self.size_per_thread)
        if rank == 0 or not (len(self.threads_per_warp) == len(self.warps_per_cta) == len(self.order) == rank):
            raise ValueError(f"coalesced layout fields must have one equal, non-zero rank: {self}")
        if sorted(self.order) != list(range(rank)):
            raise ValueError(f"coalesced layout order {list(self.order)} is not a permutation of 0..{rank - 1}")
        for name, xs in (("spt", self.size_per_thread), ("tpw", self.threads_per_warp), ("wpc", self.warps_per_cta)):
            if not all(isinstance(x, int) and _is_pow2(x) for x in xs):
                raise ValueError(f"coalesced layout {name} must be powers of two, got {list(xs)}")
        if _prod(self.threads_per_warp) != WARP_SIZE:
            raise ValueError(f"coalesced layout tpw must multiply to {WARP_SIZE}, got {list(self.threads_per_warp)}")

    @property
    def rank(self) -> int:
        return len(self.size_per_thread)

    @property
    def num_warps(self) -> int:
        return _prod(self.warps_per_cta)

    @property
    def cta_tile(self) -> tuple[int, ...]:
        """Elements covered once per dim by all threads: spt * tpw * wpc."""
        return tuple(s * t * w for s, t, w in zip(self.size_per_thread, self.threads_per_warp, self.warps_per_cta))

    def __str__(self) -> str:
        return (f"#coalesced<spt = {_ints(self.size_per_thread)}, tpw = {_ints(self.threads_per_warp)}, "
                f"wpc = {_ints(self.warps_per_cta)}, order = {_ints(self.order)}>")


@dataclass(frozen=True)
class SliceLayout:
    """The layout of `parent` with dimension `dim` removed; text `#slice<dim = 1, parent = ...>`."""

    dim: int
    parent: Layout

    def __post_init__(self) -> None:
        if not 0 <= self.dim < layout_rank(self.parent):
            raise ValueError(f"slice dim {self.dim} out of range for a rank-{layout_rank(self.parent)} parent")

    @property
    def rank(self) -> int:
        return layout_rank(self.parent) - 1

    def __str__(self) -> str:
        return f"#slice<dim = {self.dim}, parent = {self.parent}>"


@dataclass(frozen=True)
class BlockLayout:
    """`tl.dot` accumulator/result: 8x8 simdgroup_matrix fragments; text `#block<wpc = [2, 2]>`."""

    warps_per_cta: tuple[int, int]
    """SIMD groups tiling (M, N)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "warps_per_cta", tuple(self.warps_per_cta))
        if len(self.warps_per_cta) != 2 or not all(isinstance(w, int) and _is_pow2(w) for w in self.warps_per_cta):
            raise ValueError(f"block layout wpc must be two powers of two, got {list(self.warps_per_cta)}")

    @property
    def rank(self) -> int:
        return 2

    @property
    def num_warps(self) -> int:
        return self.warps_per_cta[0] * self.warps_per_cta[1]

    def __str__(self) -> str:
        return f"#block<wpc = {_ints(self.warps_per_cta)}>"


@dataclass(frozen=True)
class DotOperandLayout:
    """Operand `op_idx` (0: A, 1: B) of a dot whose result is `parent`; text
    `#dot_op<idx = 0, parent = #block<wpc = [2, 2]>>`."""

    op_idx: int
    parent: BlockLayout

    def __post_init__(self) -> None:
        if self.op_idx not in (0, 1):
            raise ValueError(f"dot operand index must be 0 or 1, got {self.op_idx}")
        if not isinstance(self.parent, BlockLayout):
            raise ValueError(f"a dot operand's parent must be a block layout, got {self.parent}")

    @property
    def rank(self) -> int:
        return 2

    def __str__(self) -> str:
        return f"#dot_op<idx = {self.op_idx}, parent = {self.parent}>"


Layout = Union[CoalescedLayout, SliceLayout, BlockLayout, DotOperandLayout]


def layout_rank(layout: Layout) -> int:
    """The rank of the tensors the layout applies to."""
    return layout.rank


def layout_num_warps(layout: Layout) -> int | None:
    """The warps the layout is made for (None: a dot operand or slice defers to its parent)."""
    if isinstance(layout, (CoalescedLayout, BlockLayout)):
        return layout.num_warps
    return layout_num_warps(layout.parent)


# -- text form ----------------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(#[a-z_]+<|\[|\]|,|=|>|[a-z_]+|\d+)")


class _LayoutReader:
    """Recursive descent over a layout's text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> ValueError:
        return ValueError(f"malformed layout '{self.text}': {what} at offset {self.pos}")

    def peek(self) -> str:
        m = _TOKEN.match(self.text, self.pos)
        return m.group(1) if m else ""

    def take(self, expected: str | None = None) -> str:
        m = _TOKEN.match(self.text, self.pos)
        if m is None:
            raise self.fail("unexpected text")
        tok = m.group(1)
        if expected is not None and tok != expected:
            raise self.fail(f"expected '{expected}', got '{tok}'")
        self.pos = m.end()
        return tok

    def ints(self) -> tuple[int, ...]:
        self.take("[")
        out: list[int] = []
        while self.peek() != "]":
            if out:
                self.take(",")
            tok = self.take()
            if not tok.isdigit():
                raise self.fail(f"expected an integer, got '{tok}'")
            out.append(int(tok))
        self.take("]")
        return tuple(out)

    def fields(self, spec: dict[str, str]) -> dict[str, object]:
        """`key = value, ...` up to the closing `>`; spec maps keys to 'ints' | 'int' | 'layout'."""
        out: dict[str, object] = {}
        while self.peek() != ">":
            if out:
                self.take(",")
            key = self.take()
            if key not in spec or key in out:
                raise self.fail(f"unexpected field '{key}'")
            self.take("=")
            kind = spec[key]
            if kind == "ints":
                out[key] = self.ints()
            elif kind == "int":
                tok = self.take()
                if not tok.isdigit():
                    raise self.fail(f"expected an integer, got '{tok}'")
                out[key] = int(tok)
            else:
                out[key] = self.layout()
        self.take(">")
        missing = set(spec) - set(out)
        if missing:
            raise self.fail(f"missing field(s) {', '.join(sorted(missing))}")
        return out

    def layout(self) -> Layout:
        head = self.take()
        if head == "#coalesced<":
            f = self.fields({"spt": "ints", "tpw": "ints", "wpc": "ints", "order": "ints"})
            return CoalescedLayout(f["spt"], f["tpw"], f["wpc"], f["order"])  # type: ignore[arg-type]
        if head == "#slice<":
            f = self.fields({"dim": "int", "parent": "layout"})
            return SliceLayout(f["dim"], f["parent"])  # type: ignore[arg-type]
        if head == "#block<":
            f = self.fields({"wpc": "ints"})
            return BlockLayout(f["wpc"])  # type: ignore[arg-type]
        if head == "#dot_op<":
            f = self.fields({"idx": "int", "parent": "layout"})
            return DotOperandLayout(f["idx"], f["parent"])  # type: ignore[arg-type]
        raise self.fail(f"unknown layout '{head}'")


def parse_layout(text: str) -> Layout:
    """Read a layout's text form; raises `ValueError` on malformed text."""
    reader = _LayoutReader(text.strip())
    layout = reader.layout()
    if reader.pos != len(reader.text):
        raise reader.fail("trailing text")
    return layout


# -- distribution -------------------------------------------------------------------------------


def _log2(n: int) -> int:
    return n.bit_length() - 1


def _basis(rank: int, dim: int, value: int) -> tuple[int, ...]:
    return tuple(value if d == dim else 0 for d in range(rank))


@dataclass(frozen=True)
class LinearLayout:
    """A layout evaluated on one shape: the element held by `(warp, lane, reg)` is, per dim, the
    XOR of the bases of the set bits of `reg`, `lane` and `warp`, modulo the shape.

    Bases are the *unwrapped* coordinates (a CTA tile larger than the shape wraps); bits whose
    wrapped basis is zero make copies, and the owner of an element is the thread/register with
    all those bits clear (`owner_masks`). The code generator turns this into index arithmetic:
    `coord[d] = const_of(reg)[d] + sum(((lane >> i) & 1) * lane_bases[i][d]) + ...` (the bits of
    one dim are disjoint powers of two, so XOR, OR and + agree).
    """

    shape: tuple[int, ...]
    reg_bases: tuple[tuple[int, ...], ...]
    lane_bases: tuple[tuple[int, ...], ...]
    warp_bases: tuple[tuple[int, ...], ...]

    @property
    def registers(self) -> int:
        return 1 << len(self.reg_bases)

    @property
    def num_warps(self) -> int:
        return 1 << len(self.warp_bases)

    def wrapped(self, basis: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(b % s for b, s in zip(basis, self.shape))

    @cached_property
    def _wrapped_bases(self) -> tuple[tuple[tuple[int, ...], ...], ...]:
        return tuple(tuple(self.wrapped(b) for b in bases) for bases in (self.reg_bases, self.lane_bases, self.warp_bases))

    @staticmethod
    def _apply(bases: tuple[tuple[int, ...], ...], bits: int, acc: list[int]) -> None:
        for i, b in enumerate(bases):
            if bits >> i & 1:
                for d, v in enumerate(b):
                    acc[d] ^= v

    def coords(self, warp: int, lane: int, reg: int) -> tuple[int, ...]:
        """The element `(warp, lane)` holds in register `reg`."""
        if not (0 <= warp < self.num_warps and 0 <= lane < WARP_SIZE and 0 <= reg < self.registers):
            raise ValueError(f"thread (warp {warp}, lane {lane}, reg {reg}) outside {self.num_warps} warps x "
                             f"{WARP_SIZE} lanes x {self.registers} registers")
        acc = [0] * len(self.shape)
        regs, lanes, warps = self._wrapped_bases
        self._apply(regs, reg, acc)
        self._apply(lanes, lane, acc)
        self._apply(warps, warp, acc)
        return tuple(acc)

    @cached_property
    def _owner_masks(self) -> tuple[int, int, int]:
        regs, lanes, warps = (sum(1 << i for i, b in enumerate(bases) if not any(b)) for bases in self._wrapped_bases)
        return regs, lanes, warps

    def owner_masks(self) -> tuple[int, int, int]:
        """(reg_mask, lane_mask, warp_mask): `(warp, lane, reg)` owns its element iff
        `reg & reg_mask == 0 and lane & lane_mask == 0 and warp & warp_mask == 0`."""
        return self._owner_masks

    def is_owner(self, warp: int, lane: int, reg: int) -> bool:
        rm, lm, wm = self.owner_masks()
        return reg & rm == 0 and lane & lm == 0 and warp & wm == 0

    def is_replicated(self) -> bool:
        """Some element is held by more than one (thread, register)."""
        return any(self.owner_masks())

    def slice(self, dim: int) -> LinearLayout:
        """Drop `dim` (whose size is 1): registers along it go, threads along it become copies."""
        def drop(b: tuple[int, ...]) -> tuple[int, ...]:
            return b[:dim] + b[dim + 1:]
        return LinearLayout(
            drop(self.shape),
            tuple(drop(b) for b in self.reg_bases if b[dim] == 0),
            tuple(drop(b) for b in self.lane_bases),
            tuple(drop(b) for b in self.warp_bases),
        )


def _check_shape(layout: Layout, shape: tuple[int, ...]) -> None:
    if len(shape) != layout.rank:
        raise ValueError(f"layout {layout} has rank {layout.rank}, the shape {list(shape)} has {len(shape)}")
    if not all(_is_pow2(s) for s in shape):
        raise ValueError(f"layouts distribute power-of-two shapes only, got {list(shape)}")


def _coalesced(layout: CoalescedLayout, shape: tuple[int, ...]) -> LinearLayout:
    rank = layout.rank
    regs: list[tuple[int, ...]] = []
    lanes: list[tuple[int, ...]] = []
    warps: list[tuple[int, ...]] = []
    tile = layout.cta_tile
    for d in layout.order:
        spt, tpw, wpc = layout.size_per_thread[d], layout.threads_per_warp[d], layout.warps_per_cta[d]
        regs += [_basis(rank, d, 1 << i) for i in range(_log2(spt))]
        regs += [_basis(rank, d, tile[d] << i) for i in range(_log2(max(1, shape[d] // tile[d])))]
        lanes += [_basis(rank, d, spt << i) for i in range(_log2(tpw))]
        warps += [_basis(rank, d, (spt * tpw) << i) for i in range(_log2(wpc))]
    return LinearLayout(tuple(shape), tuple(regs), tuple(lanes), tuple(warps))


# simdgroup_matrix lane layout (bits of the lane id -> row or column within the 8x8 fragment):
# row = l1 + 2 l2 + 4 l4, columns 2 l0 + 4 l3 and the next one (the register's low bit).
_FRAGMENT_LANES = ((0, 2), (1, 0), (2, 0), (0, 4), (4, 0))


def _block_like(wpc: tuple[int, int], shape: tuple[int, ...], op_idx: int | None) -> LinearLayout:
    """Result (op_idx None) or operand A (0) / B (1) fragments of a dot with warps `wpc`."""
    wm, wn = wpc
    m_tile, n_tile = FRAGMENT * wm, FRAGMENT * wn
    regs: list[tuple[int, int]] = [(0, 1)]
    if op_idx is None:
        regs += [(0, n_tile << i) for i in range(_log2(max(1, shape[1] // n_tile)))]
        regs += [(m_tile << i, 0) for i in range(_log2(max(1, shape[0] // m_tile)))]
        warps = [(0, FRAGMENT << i) for i in range(_log2(wn))] + [(FRAGMENT << i, 0) for i in range(_log2(wm))]
    elif op_idx == 0:  # A: M x K, every warp holds all of K
        regs += [(0, FRAGMENT << i) for i in range(_log2(max(1, shape[1] // FRAGMENT)))]
        regs += [(m_tile << i, 0) for i in range(_log2(max(1, shape[0] // m_tile)))]
        warps = [(0, 0)] * _log2(wn) + [(FRAGMENT << i, 0) for i in range(_log2(wm))]
    else:  # B: K x N, every warp holds all of K
        regs += [(0, n_tile << i) for i in range(_log2(max(1, shape[1] // n_tile)))]
        regs += [(FRAGMENT << i, 0) for i in range(_log2(max(1, shape[0] // FRAGMENT)))]
        warps = [(0, FRAGMENT << i) for i in range(_log2(wn))] + [(0, 0)] * _log2(wm)
    return LinearLayout(tuple(shape), tuple(regs), _FRAGMENT_LANES, tuple(warps))


def linear_layout(layout: Layout, shape: tuple[int, ...], num_warps: int) -> LinearLayout:
    """`layout` evaluated on `shape` for a program of `num_warps` warps."""
    _check_shape(layout, shape)
    own = layout_num_warps(layout)
    if own is not None and own != num_warps:
        raise ValueError(f"layout {layout} is made for {own} warps, not {num_warps}")
    if isinstance(layout, CoalescedLayout):
        return _coalesced(layout, shape)
    if isinstance(layout, BlockLayout):
        return _block_like(layout.warps_per_cta, shape, None)
    if isinstance(layout, DotOperandLayout):
        return _block_like(layout.parent.warps_per_cta, shape, layout.op_idx)
    padded = shape[: layout.dim] + (1,) + shape[layout.dim:]
    return linear_layout(layout.parent, padded, num_warps).slice(layout.dim)


def registers_per_thread(layout: Layout, shape: tuple[int, ...], num_warps: int) -> int:
    """How many elements (registers) each thread holds, copies included."""
    return linear_layout(layout, shape, num_warps).registers


def element_coords(layout: Layout, shape: tuple[int, ...], num_warps: int, warp: int, lane: int,
                   reg: int) -> tuple[int, ...]:
    """The coordinates of the element thread `(warp, lane)` holds in register `reg`."""
    return linear_layout(layout, shape, num_warps).coords(warp, lane, reg)


def is_owner(layout: Layout, shape: tuple[int, ...], num_warps: int, warp: int, lane: int, reg: int) -> bool:
    """Whether `(warp, lane, reg)` is the one holder of its element that stores it (copies are not)."""
    return linear_layout(layout, shape, num_warps).is_owner(warp, lane, reg)


def same_distribution(a: Layout, b: Layout, shape: tuple[int, ...], num_warps: int) -> bool:
    """Every thread holds the same elements in the same registers under both layouts, so a
    conversion between them moves no data."""
    la, lb = linear_layout(a, shape, num_warps), linear_layout(b, shape, num_warps)
    if la.registers != lb.registers:
        return False
    wrap = la.wrapped
    return ([wrap(x) for x in la.reg_bases], [wrap(x) for x in la.lane_bases], [wrap(x) for x in la.warp_bases]) == (
        [wrap(x) for x in lb.reg_bases], [wrap(x) for x in lb.lane_bases], [wrap(x) for x in lb.warp_bases])


def is_thread_local(src: Layout, dst: Layout, shape: tuple[int, ...], num_warps: int) -> bool:
    """Every thread already holds, under `src`, each element it holds under `dst` (the lanes and
    warps place elements alike and `dst`'s registers span no more than `src`'s): a conversion
    from `src` to `dst` is a register renaming, with no threadgroup memory."""
    ls, ld = linear_layout(src, shape, num_warps), linear_layout(dst, shape, num_warps)
    s_regs, s_lanes, s_warps = ls._wrapped_bases
    d_regs, d_lanes, d_warps = ld._wrapped_bases
    if s_lanes != d_lanes or s_warps != d_warps:
        return False
    return {b for b in d_regs if any(b)} <= {b for b in s_regs if any(b)}
