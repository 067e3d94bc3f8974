"""`dce`: remove ops whose results nobody uses and that have no effect.

An op is removable when none of its results is used and
* it is pure (no memory effects, no regions), or a `tt.reduce`/`tt.scan`/`tt.map_elementwise`
  (pure scalar regions);
* it is a non-volatile `tt.load` (reading memory changes nothing);
* it is an `scf.for` or `scf.if` whose regions hold only removable ops (besides their
  terminators): a counted loop always ends, so dropping it changes nothing observable.
Stores, atomics, prints, asserts, assumptions, barriers, calls and `scf.while` loops (which may
not end) always stay. A carried value of an `scf.for` whose result is unused and which only
feeds its own next value goes, with its computation (`loop_carried.py`).

The sweep goes backwards through each block (nested regions first), so a chain of dead ops goes
in one pass.
"""

from __future__ import annotations

from collections import Counter
from typing import ClassVar

from ..ir import Block, Module, Op, Value
from ..ir.ops import scf
from ..ir.ops.tt_compute import MapElementwiseOp, ReduceOp, ScanOp
from ..ir.ops.tt_memory import LoadOp
from .loop_carried import remove_dead_carried_values
from .pass_base import ModulePass, PassContext, register_pass


def has_effects(op: Op) -> bool:
    """Whether `op` (with whatever its regions hold) does something besides computing results."""
    if op.is_terminator:
        return False
    if isinstance(op, LoadOp):
        return op.volatile
    if isinstance(op, (ReduceOp, ScanOp, MapElementwiseOp)):
        return any(has_effects(o) for r in op.regions for o in r.walk())
    if isinstance(op, (scf.ForOp, scf.IfOp)):
        return any(has_effects(o) for r in op.regions for o in r.walk())
    if op.regions:
        return True  # scf.while and unknown ops with regions
    return not op.is_pure


def _count_uses(module: Module) -> Counter[Value]:
    uses: Counter[Value] = Counter()
    for op in module.walk():
        for v in op.operands:
            uses[v] += 1
    return uses


class _DeadCode:
    def __init__(self, module: Module) -> None:
        self.module = module
        self.uses = _count_uses(module)

    def sweep(self, block: Block) -> bool:
        changed = False
        for op in reversed(list(block.ops)):
            for r in op.regions:
                for b in r.blocks:
                    changed |= self.sweep(b)
            if any(self.uses[res] for res in op.results) or has_effects(op) or op.is_terminator:
                if isinstance(op, scf.ForOp) and self._drop_carried(block, op):
                    changed = True
                continue
            for nested in op.walk():
                for v in nested.operands:
                    self.uses[v] -= 1
            op.parent = None  # dropped from the block's list below (one scan for all)
            changed = True
        if changed:
            block.ops = [o for o in block.ops if o.parent is block]
        return changed

    def _drop_carried(self, block: Block, op: scf.ForOp) -> bool:
        found = remove_dead_carried_values(op, lambda v: self.uses[v] > 0, has_effects)
        if found is None:
            return False
        new, keep = found  # `new` took over the body
        block.insert_before(op, new)
        block.remove(op)
        for k, i in enumerate(keep):
            if self.uses[op.results[i]]:
                self.module.replace_all_uses(op.results[i], new.results[k])
        self.uses = _count_uses(self.module)  # the body's yield lost operands: count afresh
        self.sweep(new.body.block)
        return True


def eliminate_dead_code(module: Module) -> bool:
    """Remove dead ops; True when something was removed."""
    return _DeadCode(module).sweep(module.body)


@register_pass
class DeadCodeElimination(ModulePass):
    """Remove unused ops without effects."""

    name: ClassVar[str] = "dce"

    def apply(self, ctx: PassContext | None, module: Module) -> None:
        eliminate_dead_code(module)
