"""A forward "still pending" analysis through structured control flow, shared by the barrier
passes (`insert-barriers`, `order-device-accesses`): what is pending after an `scf.if` is what
either branch leaves; after a loop, what is pending on entry or after any number of iterations
(the body runs again with what the previous iteration left, around the back edge)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ..ir import Block, Op

T = TypeVar("T")


def pending_after(op: Op, pending: frozenset[T], walk: Callable[[Block, frozenset[T]], frozenset[T]]) -> frozenset[T]:
    """The set pending after `op` (`scf.if`, `scf.for` or `scf.while`) given `pending` before
    it; `walk(block, pending)` runs the pass over one region's block and returns its exit set."""
    if op.name == "scf.if":
        return frozenset().union(*(walk(reg.block, pending) for reg in op.regions))
    entry = pending
    for _ in range(3):  # the pending set only grows; two rounds reach the fixed point
        out = entry
        for reg in op.regions:
            out = walk(reg.block, out)
        if out <= entry:
            break
        entry = entry | out
    return entry
