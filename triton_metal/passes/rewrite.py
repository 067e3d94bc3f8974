"""Rewrite patterns matched on the op type, a rewriter that keeps use lists, and the greedy
driver that applies patterns until nothing changes.

A pattern is a function `(rewriter, op) -> bool` registered for one or more op classes with
`@pattern(OpClass, ...)` in a `PatternSet`; it returns True when it changed the IR. The driver
walks the module in program order (nested regions included), tries the patterns registered for
each op's class (and its base classes), and repeats until a sweep changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..errors import internal_error
from ..ir import Block, Module, Op, Value
from ..ir.ops import arith as A
from ..ir.types import Type

Pattern = Callable[["Rewriter", Any], bool]

MAX_SWEEPS = 32
"""Sweeps of the greedy driver before it gives up (each sweep must change something)."""


class PatternSet:
    """Patterns by the op class they match."""

    def __init__(self) -> None:
        self._by_class: dict[type[Op], list[Pattern]] = {}

    def pattern(self, *classes: type[Op]) -> Callable[[Pattern], Pattern]:
        def deco(fn: Pattern) -> Pattern:
            for c in classes:
                self._by_class.setdefault(c, []).append(fn)
            return fn

        return deco

    def for_op(self, op: Op) -> Iterator[Pattern]:
        for cls in type(op).__mro__:
            yield from self._by_class.get(cls, ())  # type: ignore[arg-type]


class Rewriter:
    """Edits a module while tracking which ops use each value."""

    def __init__(self, module: Module, options: dict[str, Any] | None = None) -> None:
        self.module = module
        self.options: dict[str, Any] = dict(options or {})
        """The running pass's options, for patterns that depend on them."""
        self.uses: dict[Value, list[Op]] = {}
        self._dirty: dict[int, Block] = {}
        """Blocks whose op lists are out of date (see `compact`): erased ops linger in them and
        inserted ops wait in `_pending`. Editing a list op by op costs a scan each time."""
        self._pending: dict[tuple[int, int], list[Op]] = {}
        """By (block id, anchor id): ops to insert in that block before that op, in order (the
        block is the anchor's when they were placed; the anchor may move or go later)."""
        for op in module.walk():
            self._add_uses(op)

    def _add_uses(self, op: Op) -> None:
        for v in op.operands:
            self.uses.setdefault(v, []).append(op)

    def _drop_uses(self, op: Op) -> None:
        for v in op.operands:
            users = self.uses.get(v)
            if users is not None:
                for i, u in enumerate(users):
                    if u is op:
                        del users[i]
                        break

    def has_uses(self, v: Value) -> bool:
        return bool(self.uses.get(v))

    def users(self, v: Value) -> list[Op]:
        return list(self.uses.get(v, ()))

    # -- edits ---------------------------------------------------------------------------------
    def replace_all_uses(self, old: Value, new: Value) -> None:
        if old is new:
            return
        if old.type != new.type:
            raise internal_error(f"replacing a value of type {old.type} by one of type {new.type}")
        for user in self.uses.pop(old, []):
            user.replace_operand(old, new)
            self.uses.setdefault(new, []).append(user)

    def insert_before(self, anchor: Op, op: Op) -> Op:
        self._place(anchor, op)
        for nested in op.walk():
            self._add_uses(nested)
        return op

    def _place(self, anchor: Op, op: Op) -> None:
        block = anchor.parent
        assert block is not None, anchor
        op.parent = block
        self._pending.setdefault((id(block), id(anchor)), []).append(op)
        self._dirty[id(block)] = block

    def erase(self, op: Op) -> None:
        """Detach `op` (and its regions); its results must be unused by then. The op leaves its
        block's list at the next `compact` (removing ops one by one costs a scan each)."""
        for nested in _walk_current(op):
            self._drop_uses(nested)
        block = op.parent
        if block is not None:
            self._dirty[id(block)] = block
            op.parent = None

    def compact(self) -> None:
        """Bring the op lists of edited blocks up to date (erased ops out, inserted ops in)."""
        for block in list(self._dirty.values()):
            self._compact(block)
        self._dirty.clear()
        self._pending.clear()

    def _compact(self, block: Block) -> None:
        out: list[Op] = []

        def emit(op: Op) -> None:
            for new in self._pending.pop((id(block), id(op)), ()):
                emit(new)  # ops inserted before an inserted op come first
            if op.parent is block:
                out.append(op)

        for op in block.ops:
            emit(op)
        block.ops = out

    def replace_op(self, op: Op, values: list[Value]) -> None:
        """Replace the results of `op` by `values`, then erase it."""
        if len(values) != len(op.results):
            raise internal_error(f"replacing {len(op.results)} results of '{op.name}' by {len(values)} values")
        for r, v in zip(op.results, values):
            self.replace_all_uses(r, v)
        self.erase(op)

    def move_before(self, anchor: Op, op: Op) -> None:
        """Move `op` (with its regions, uses unchanged) just before `anchor`."""
        assert op.parent is not None and anchor.parent is not None
        if op.parent is anchor.parent:
            self._compact(op.parent)
            op.parent.remove(op)
        else:
            self._dirty[id(op.parent)] = op.parent
            op.parent = None  # leaves the old block's list at the next compact
        self._place(anchor, op)

    def inline_block_before(self, block: Block, anchor: Op) -> list[Value]:
        """Move every op of `block` but its terminator before `anchor`; returns the terminator's
        operands (the values the block produced). The block must take no arguments."""
        assert not block.args
        self._compact(block)  # its list must be complete: ops inserted into it are moved too
        ops = list(block.ops)
        term = ops[-1] if ops and ops[-1].is_terminator else None
        for op in ops:
            if op is not term:
                self.move_before(anchor, op)
        block.ops = [term] if term is not None else []
        return list(term.operands) if term is not None else []

    def constant(self, anchor: Op, value: bool | int | float, ty: Type) -> Value:
        """A new `arith.constant` of type `ty` placed before `anchor`."""
        op = A.ConstantOp(value=value, result_types=[ty], loc=anchor.loc)
        self.insert_before(anchor, op)
        return op.result


def _walk_current(op: Op) -> Iterator[Op]:
    """`op` and the ops nested in it that still belong to their blocks (lists may hold ops
    erased or moved away until the next compaction)."""
    yield op
    for r in op.regions:
        for b in r.blocks:
            for o in list(b.ops):
                if o.parent is b:
                    yield from _walk_current(o)


def apply_patterns_greedily(module: Module, patterns: PatternSet, options: dict[str, Any] | None = None) -> bool:
    """Apply `patterns` until a sweep changes nothing; True when the IR changed. `options`
    reach the patterns as `rewriter.options`."""
    rewriter = Rewriter(module, options)
    changed_any = False
    for _ in range(MAX_SWEEPS):
        changed = False
        for op in list(module.walk()):
            if op.parent is None or not _attached(op, module):
                continue  # erased (or inside an erased op) earlier in this sweep
            for fn in patterns.for_op(op):
                if fn(rewriter, op):
                    changed = True
                    break
        rewriter.compact()
        changed_any |= changed
        if not changed:
            return changed_any
    return changed_any


def _attached(op: Op, module: Module) -> bool:
    block = op.parent
    while block is not None:
        if block is module.body:
            return True
        owner = block.parent_op
        if owner is None or owner.parent is None:
            return False
        block = owner.parent
    return False
