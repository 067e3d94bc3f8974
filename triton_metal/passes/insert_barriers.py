"""Barrier insertion (`insert-barriers`): order reuses of threadgroup scratch between ops.

Contract: each op with `smem_offset`/`smem_bytes` (from `allocate-threadgroup-memory`) writes its
buffer, waits for the threadgroup, and reads it, inside its own lowering; what that lowering
leaves unordered is its reads against the *next* write of overlapping bytes by a later op (a
write-after-read race between threads). Its own barrier also completes every access made before
it, so after such an op only its reads are pending. This pass inserts a `ttg.barrier` right
before an op whose buffer overlaps a buffer still pending on some path: in straight-line code,
across both branches of an `scf.if`, around loop back edges (the first scratch op of an
iteration against the last of the previous one) and after a loop that may run zero times. A
`tt.barrier`/`ttg.barrier` already there counts. Kernels without scratch get none.
Double-buffered dot operands (`stage-dot-operands`) need none against their own reads before
their writes (consecutive executions alternate buffers), only against other ops' reads, which the
allocation keeps off their bytes until their outermost loop ends; their buffers stay pending
after their reads, for the ops after that loop.

Barriers are never placed in divergent control flow: `scf.if` and `scf.while` conditions are
scalars, and scalars are uniform over the program's threads (every thread computes the same
value; a scalar atomic is made by one thread and broadcast), so every thread reaches the same
barriers. A tensor condition would be refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import CompilationError
from ..ir import Block, Module, Op
from ..ir.ops.ttg import BarrierOp
from ..ir.types import TensorType
from .pass_base import ModulePass, PassContext, register_pass
from .region_flow import pending_after

Ranges = frozenset[tuple[int, int]]


def _range(op: Op) -> tuple[int, int] | None:
    off, size = getattr(op, "smem_offset", None), getattr(op, "smem_bytes", None)
    if off is None or not size:
        return None
    return (int(off), int(off) + int(size))


def _overlaps(r: tuple[int, int], pending: Ranges) -> bool:
    return any(lo < r[1] and r[0] < hi for lo, hi in pending)


def _uniform(op: Op) -> None:
    cond = op.operands[0] if op.name == "scf.if" else None
    if cond is not None and isinstance(cond.type, TensorType):
        raise CompilationError("a threadgroup barrier would sit under a tensor condition (divergent control flow)",
                               op.loc, "make the condition a scalar")


def _buffers(op: Op) -> Ranges:
    """Both buffers of a double-buffered conversion."""
    lo, hi = _range(op)  # type: ignore[misc]
    alt = int(op.smem_alt_offset)  # type: ignore[attr-defined]
    return frozenset({(lo, hi), (alt, alt + hi - lo)})


def _block(block: Block, pending: Ranges, doubled: Ranges = frozenset()) -> Ranges:
    """Insert barriers in `block` given the ranges pending on entry; returns those on exit.
    `doubled`: the buffers of every double-buffered conversion of the function."""
    joined: Ranges = frozenset()
    for op in list(block.ops):
        if op.name in ("tt.barrier", "ttg.barrier"):
            pending = frozenset()
            continue
        if getattr(op, "smem_alt_offset", None) is not None and _range(op) is not None:
            # double-buffered dot operands (`stage-dot-operands`): each execution writes the
            # buffers the one before did not read, so their own pending reads need no barrier
            # before the writes; other ops' reads do (the allocation keeps other ops off their
            # bytes until their outermost loop ends, so inside it none is needed). A joined one
            # waits on its partner's barrier, after which both read: their buffers stay pending.
            mine = _buffers(op)
            if any(_overlaps(r, pending - doubled) for r in mine):
                block.insert_before(op, BarrierOp(loc=op.loc))
                pending = frozenset()
            if getattr(op, "joined", None):
                joined |= mine
                pending |= mine
            else:
                pending = mine | joined
                joined = frozenset()
            continue
        r = _range(op)
        if r is not None:
            if _overlaps(r, pending):
                block.insert_before(op, BarrierOp(loc=op.loc))
            # the op's own barrier (between its write and its reads) completes every earlier
            # access: only its reads remain pending
            pending = frozenset({r})
        if op.name in ("tt.reduce", "tt.scan", "tt.map_elementwise") or not op.regions:
            continue
        _uniform(op)
        if op.name in ("scf.if", "scf.for", "scf.while"):
            pending = pending_after(op, pending, lambda b, p: _block(b, p, doubled))
    return pending


@register_pass
@dataclass(frozen=True)
class InsertBarriers(ModulePass):
    """Insert `ttg.barrier` where threadgroup scratch is reused (see the module docstring)."""

    name: ClassVar[str] = "insert-barriers"

    def apply(self, ctx: PassContext | None, module: Module) -> None:
        for func in module.funcs:
            doubled = frozenset().union(*(_buffers(op) for op in func.walk()
                                          if getattr(op, "smem_alt_offset", None) is not None and _range(op)))
            _block(func.regions[0].block, frozenset(), doubled)
