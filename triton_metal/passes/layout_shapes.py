"""Layouts that keep shape ops (trans, reshape, join, split, cat, gather, histogram) in-thread.

Contract: `natural_layout(op, src_layouts, num_warps)` returns the layouts the op's tensor
operands must have and the layouts its results then have, chosen so that the op moves no data
between threads (the code generator lowers these ops as register renamings and refuses
otherwise). `src_layouts[i]` is operand i's current layout (None: free to choose); an operand
whose current layout does not fit is asked for in one that does (the caller converts it).

* trans: the source layout with its dims permuted (a coalesced source; others go through the
  default layout).
* reshape: the default row-major layouts of both shapes (spt 1): the flat index splits into
  lane, warp and register bits the same way in both.
* join: the operands' layout plus a new fastest dim of 2 elements held in registers; split the
  reverse; cat: the operands' layout when its CTA tile fits in one half along dim 0, else a
  layout whose threads each hold all of dim 0.
* gather: the result takes the index's layout; histogram the default 1-D layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import CompilationError
from ..ir import Op
from ..ir.layouts import CoalescedLayout, Layout
from ..ir.types import shape_of
from .coalesce import default_coalesced


@dataclass(frozen=True)
class Natural:
    operands: tuple[Layout | None, ...]
    """Required layout per operand (None: scalars, or any layout)."""
    results: tuple[Layout, ...]


def _shape(v: object) -> tuple[int, ...]:
    return shape_of(v.type)  # type: ignore[attr-defined]


def _coalesced_or_default(lay: Layout | None, shape: tuple[int, ...], nw: int) -> CoalescedLayout:
    return lay if isinstance(lay, CoalescedLayout) else default_coalesced(shape, nw)


def permute(lay: CoalescedLayout, order: Sequence[int]) -> CoalescedLayout:
    """The layout of `trans(x, order)` when `x` has `lay`: result dim d is source dim order[d]."""
    inverse = [0] * len(order)
    for d, o in enumerate(order):
        inverse[o] = d
    return CoalescedLayout(
        tuple(lay.size_per_thread[o] for o in order), tuple(lay.threads_per_warp[o] for o in order),
        tuple(lay.warps_per_cta[o] for o in order), tuple(inverse[o] for o in lay.order))


def extend_pair(lay: CoalescedLayout) -> CoalescedLayout:
    """`lay` with a new fastest dim of size 2 held by each thread (the layout of a join)."""
    rank = lay.rank
    return CoalescedLayout(lay.size_per_thread + (2,), lay.threads_per_warp + (1,), lay.warps_per_cta + (1,),
                           (rank,) + lay.order)


def natural_layout(op: Op, srcs: Sequence[Layout | None], nw: int) -> Natural:
    name = op.name
    if name == "tt.trans":
        src = _coalesced_or_default(srcs[0], _shape(op.operands[0]), nw)
        return Natural((src,), (permute(src, op.order),))  # type: ignore[attr-defined]
    if name == "tt.reshape":
        src = default_coalesced(_shape(op.operands[0]), nw)
        return Natural((src,), (default_coalesced(_shape(op.results[0]), nw),))
    if name == "tt.join":
        src = _coalesced_or_default(srcs[0], _shape(op.operands[0]), nw)
        return Natural((src, src), (extend_pair(src),))
    if name == "tt.split":
        src = srcs[0]
        if (isinstance(src, CoalescedLayout) and src.size_per_thread[-1] == 2 and src.threads_per_warp[-1] == 1
                and src.warps_per_cta[-1] == 1):
            last = src.rank - 1
            res = CoalescedLayout(src.size_per_thread[:-1], src.threads_per_warp[:-1], src.warps_per_cta[:-1],
                                  tuple(d for d in src.order if d != last))
        else:
            res = default_coalesced(_shape(op.results[0]), nw)
        return Natural((extend_pair(res),), (res, res))
    if name == "tt.cat":
        half = _shape(op.operands[0])
        for cand in (srcs[0], srcs[1], default_coalesced(half, nw)):
            if isinstance(cand, CoalescedLayout) and cand.cta_tile[0] <= half[0]:
                return Natural((cand, cand), (cand,))
        # small blocks: every thread holds all of dim 0 (the other dims spread as usual)
        out_shape = _shape(op.results[0])
        whole = default_coalesced(out_shape, nw, None, (out_shape[0],) + (1,) * (len(out_shape) - 1))
        return Natural((whole, whole), (whole,))
    if name == "tt.gather":
        index = _coalesced_or_default(srcs[1], _shape(op.operands[1]), nw) if srcs[1] is None else srcs[1]
        src = srcs[0] if srcs[0] is not None else default_coalesced(_shape(op.operands[0]), nw)
        return Natural((src, index), (index,))
    if name == "tt.histogram":
        src = srcs[0] if srcs[0] is not None else default_coalesced(_shape(op.operands[0]), nw)
        # the mask, when there is one, is read element by element beside the source
        return Natural((src,) * len(op.operands), (default_coalesced(_shape(op.results[0]), nw),))
    raise CompilationError(f"internal error: no natural layout for '{name}'", op.loc)
