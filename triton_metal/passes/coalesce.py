"""Coalesced layouts for memory ops: the vector-width rule and Triton's thread distribution.

Contract (pure functions; `layout_assignment` applies them):
* `default_coalesced(shape, num_warps, order, spt)` distributes the 32 lanes and the warps along
  `order`, fastest dim first, each dim taking at most what its extent `shape[d] / spt[d]` can
  use; lanes and warps left over go to the slowest dim (where they replicate). With `spt` all 1
  and a row-major `order` the flat row-major index of an element splits into lane bits, then warp
  bits, then register bits (so row-major reshapes keep data in its thread).
* `memory_access(op, info, num_warps)`: for a load, store or atomic with a tensor pointer, the
  order (dims by decreasing pointer contiguity) and the elements a thread should own along the
  fastest dim: `min(divisibility_bytes / elem_bytes, contiguity, 16 bytes / elem_bytes)`.
* `coalesced_for(shape, accesses, num_warps)`: one layout for tensors of `shape` accessed by
  `accesses`: the order of the first load (else the first access), the widest vector among the
  accesses of that shape and order (stores alone: the narrowest, a store being capped at its own
  width), capped so that every thread has work. A store in a class with wider loads keeps the
  class layout; the code generator narrows its accesses to the width it proves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..ir import Op
from ..ir.layouts import WARP_SIZE, CoalescedLayout
from ..ir.types import PointerType, ScalarType, element_type, shape_of
from .axis_info import AxisInfoResult

MAX_VECTOR_BYTES = 16
"""The widest access a thread makes (float4, half8)."""


def _prod(xs: Sequence[int]) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def default_coalesced(shape: tuple[int, ...], num_warps: int, order: tuple[int, ...] | None = None,
                      spt: tuple[int, ...] | None = None) -> CoalescedLayout:
    """Triton's blocked layout for `shape`: `spt` elements per thread (1s by default), lanes and
    warps along `order` (row-major by default), leftovers on the slowest dim."""
    rank = len(shape)
    order = tuple(range(rank - 1, -1, -1)) if order is None else tuple(order)
    per = [min(s, n) for s, n in zip(spt or (1,) * rank, shape)]
    tpw = [1] * rank
    left = WARP_SIZE
    for d in order:
        tpw[d] = min(left, max(1, shape[d] // per[d]))
        left //= tpw[d]
    tpw[order[-1]] *= left
    wpc = [1] * rank
    left = num_warps
    for d in order:
        wpc[d] = min(left, max(1, shape[d] // (per[d] * tpw[d])))
        left //= wpc[d]
    wpc[order[-1]] *= left
    return CoalescedLayout(tuple(per), tuple(tpw), tuple(wpc), order)


@dataclass(frozen=True)
class MemoryAccess:
    """What one memory op asks of its tensors' layout."""

    shape: tuple[int, ...]
    order: tuple[int, ...]
    """Dims by decreasing pointer contiguity."""
    per_thread: int
    """Elements a thread should own contiguously along `order[0]`."""
    is_load: bool


def _elem_bytes(op: Op) -> int:
    pt = element_type(op.operands[0].type)
    assert isinstance(pt, PointerType)
    pointee = pt.pointee
    if isinstance(pointee, ScalarType):
        return max(1, pointee.bitwidth // 8)
    return 8  # a pointer to pointers


def memory_access(op: Op, info: AxisInfoResult | None) -> MemoryAccess | None:
    """The vector-width rule for a load/store/atomic whose pointer (operand 0) is a tensor."""
    ptr = op.operands[0]
    shape = shape_of(ptr.type)
    if not shape:
        return None
    rank = len(shape)
    if info is None:
        contig, div = (1,) * rank, (1,) * rank
    else:
        ai = info.get(ptr)
        contig, div = ai.contiguity, ai.divisibility
    default_rank = list(range(rank - 1, -1, -1))
    # most contiguous first; ties keep row-major order (Triton's getOrderFromContiguity)
    order = tuple(sorted(range(rank), key=lambda d: (-contig[d], default_rank.index(d))))
    fast = order[0]
    eb = _elem_bytes(op)
    per = min(max(div[fast] // eb, 1), min(contig[fast], shape[fast]), max(1, MAX_VECTOR_BYTES // eb))
    return MemoryAccess(tuple(shape), order, max(1, per), op.name == "tt.load")


def coalesced_for(shape: tuple[int, ...], accesses: Sequence[MemoryAccess], num_warps: int) -> CoalescedLayout:
    """One layout for tensors of `shape` touched by `accesses` (loads before stores)."""
    if not accesses:
        return default_coalesced(shape, num_warps)
    first = next((a for a in accesses if a.is_load), accesses[0])
    same = [a for a in accesses if a.order == first.order and a.shape == first.shape]
    if first.is_load:
        per = max(a.per_thread for a in same)
    else:  # stores only: each capped at its own width, so the narrowest
        per = min(a.per_thread for a in same)
    per = min(per, max(1, _prod(shape) // (WARP_SIZE * num_warps)), shape[first.order[0]])
    spt = tuple(per if d == first.order[0] else 1 for d in range(len(shape)))
    return default_coalesced(shape, num_warps, first.order, spt)
