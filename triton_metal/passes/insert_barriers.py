"""Barrier insertion (`insert-barriers`): order reuses of threadgroup scratch between ops.

Contract: each op with `smem_offset`/`smem_bytes` (from `allocate-threadgroup-memory`) writes its
buffer, waits for the threadgroup, and reads it, inside its own lowering; what that lowering
leaves unordered is its reads against the *next* write of overlapping bytes by a later op (a
write-after-read race between threads). Its own barrier also completes every access made before
it, so after such an op only its reads are pending. This pass inserts a `ttg.barrier` right
before an op whose buffer overlaps a buffer still pending on some path: in straight-line code,
across both branches of an `scf.if`, around loop back edges (the first scratch op of an
iteration against the last of the previous one) and after a loop that may run zero times. Reads
pending before a loop that only the loop's entry makes wait (its own iterations would not) get
one barrier before the loop rather than one in its body, which every iteration would run. A
`tt.barrier`/`ttg.barrier` already there counts. Kernels without scratch get none.
A conversion whose one user is a `tt.dot` (an operand on its way to a dot-operand layout) may have
no barrier of its own: where the target has tensor ops the code generator can bypass it (the dot
stages the source itself: `lower_tensor_dot.bypassed_conversions`). Reads pending before such a
conversion stay pending after it, tagged with it; when a later write overlaps one, the
conversion gets `barrier_if_bypassed` (the code generator then emits a barrier in its place),
rather than a barrier before the write, which every target would pay.
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
from ..ir import Block, Module, Op, OpResult, Value
from ..ir.ops.ttg import BarrierOp
from ..ir.types import TensorType
from .pass_base import ModulePass, PassContext, register_pass
from .region_flow import pending_after

Ranges = frozenset[tuple[int, int]]
Pending = frozenset[tuple[int, int, "Op | None", "Op | None"]]
"""Byte ranges whose reads may still be in flight: (start, end, via, owner). `via`: the last
dot-operand conversion they stayed pending across (None: none), whose barrier, kept where a
tensor-op dot bypasses it, would complete them; `owner`: the op whose reads they are."""


def _range(op: Op) -> tuple[int, int] | None:
    off, size = getattr(op, "smem_offset", None), getattr(op, "smem_bytes", None)
    if off is None or not size:
        return None
    return (int(off), int(off) + int(size))


def _own(ranges: Ranges, owner: Op) -> Pending:
    return frozenset((lo, hi, None, owner) for lo, hi in ranges)


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


def operand_conversion(dot: Op, value: Value) -> Op | None:
    """The `ttg.convert_layout` that makes `value` when `dot` is its one user in the dot's block:
    a conversion that a tensor-op target's code generator may bypass (the dot then stages the
    conversion's source itself)."""
    if (isinstance(value, OpResult) and value.op.name == "ttg.convert_layout" and dot.parent is not None
            and dot.parent.only_user(value) is dot):
        return value.op
    return None


def dot_operand_conversions(func: Op) -> dict[Op, Op | None]:
    """Every conversion of `func` that a tensor-op dot may bypass, with the one of the dot's other
    operand (None if that one may not be). The code generator bypasses the two together."""
    found: dict[Op, Op | None] = {}
    for op in func.walk():
        if op.name == "tt.dot":
            a, b = (operand_conversion(op, v) for v in op.operands[:2])
            for conv, partner in ((a, b), (b, a)):
                if conv is not None:
                    found[conv] = partner
    return found


def _wait(block: Block, op: Op, ranges: Ranges, pending: Pending, exempt: Ranges = frozenset(),
          dry: set[Op] | None = None) -> Pending:
    """Order `op`'s writes to `ranges` after the pending reads they overlap (those of `exempt`
    aside); returns what is pending once they are ordered. Reads pending across a dot-operand
    conversion only need that conversion's barrier kept where it is bypassed
    (`barrier_if_bypassed`); any others need a `ttg.barrier` before `op`. `dry`: change nothing,
    collect the ops that would get a barrier."""
    hits = [p for p in pending if (p[0], p[1]) not in exempt and any(p[0] < hi and lo < p[1] for lo, hi in ranges)]
    if any(via is None for _, _, via, _ in hits):
        if dry is None:
            block.insert_before(op, BarrierOp(loc=op.loc))
        else:
            dry.add(op)
        return frozenset()
    vias = {via for _, _, via, _ in hits}
    for via in vias if dry is None else ():
        via.barrier_if_bypassed = 1  # type: ignore[union-attr]
    return frozenset(p for p in pending if p[2] not in vias)


def _carried(op: Op, pending: Pending, bypassable: dict[Op, Op | None]) -> Pending:
    """What stays pending across `op`'s own barrier: nothing, unless `op` is a conversion a
    tensor-op dot may bypass (it then has none unless a later write asks for it). The reads of
    its partner are not carried: bypassed together, neither reads; kept, `op`'s barrier orders."""
    if op not in bypassable:
        return frozenset()
    partner = bypassable[op]
    return frozenset((lo, hi, op, owner) for lo, hi, _, owner in pending if owner is not partner or partner is None)


def _barriers_inside(loop: Op, entry: Pending, doubled: Ranges, bypassable: dict[Op, Op | None]) -> set[Op]:
    """The ops of `loop` that would get a barrier before them, given `entry` pending before it."""
    found: set[Op] = set()
    pending_after(loop, entry, lambda b, p: _block(b, p, doubled, bypassable, found))
    return found


def _hoisted(block: Block, loop: Op, pending: Pending, doubled: Ranges, bypassable: dict[Op, Op | None]) -> Pending:
    """Reads pending before `loop` that its body overwrites where its own iterations would not
    need a barrier: one barrier before the loop orders them, where the one found inside would
    run every iteration. Returns what is pending on entry to the loop."""
    if pending and _barriers_inside(loop, frozenset(), doubled, bypassable) < _barriers_inside(
            loop, pending, doubled, bypassable):
        block.insert_before(loop, BarrierOp(loc=loop.loc))
        return frozenset()
    return pending


def _block(block: Block, pending: Pending, doubled: Ranges = frozenset(),
           bypassable: dict[Op, Op | None] | None = None, dry: set[Op] | None = None) -> Pending:
    """Insert barriers in `block` given the ranges pending on entry; returns those on exit.
    `doubled`: the buffers of every double-buffered conversion of the function; `bypassable`:
    its dot-operand conversions (`dot_operand_conversions`); `dry`: insert nothing, collect
    the ops that would get a barrier (`_wait`)."""
    bypassable = bypassable or {}
    joined: Ranges = frozenset()
    joined_owner: Op | None = None
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
            pending = _wait(block, op, mine, pending, exempt=doubled, dry=dry)
            if getattr(op, "joined", None):
                joined, joined_owner = joined | mine, op
                pending |= _own(mine, op)
            else:
                carried = _carried(op, pending, bypassable)
                pending = _own(mine, op) | (_own(joined, joined_owner) if joined_owner else frozenset()) | carried
                joined, joined_owner = frozenset(), None
            continue
        r = _range(op)
        if r is not None:
            pending = _wait(block, op, frozenset({r}), pending, dry=dry)
            # the op's own barrier (between its write and its reads) completes every earlier
            # access: only its reads remain pending
            pending = _own(frozenset({r}), op) | _carried(op, pending, bypassable)
        if op.name in ("tt.reduce", "tt.scan", "tt.map_elementwise") or not op.regions:
            continue
        _uniform(op)
        if op.name in ("scf.for", "scf.while") and dry is None:
            pending = _hoisted(block, op, pending, doubled, bypassable)
        if op.name in ("scf.if", "scf.for", "scf.while"):
            pending = pending_after(op, pending, lambda b, p: _block(b, p, doubled, bypassable, dry))
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
            _block(func.regions[0].block, frozenset(), doubled, dot_operand_conversions(func))
