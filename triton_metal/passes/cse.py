"""`cse`: common subexpression elimination of pure ops.

Two ops are equivalent when they are of one class, take the same operands (by identity), carry
equal attributes (floats compared bit for bit, so 0.0 and -0.0 stay apart) and produce the same
result types. Only pure ops without regions take part: loads, stores, atomics and everything
with a region do not. A later op equivalent to one that dominates it (earlier in its block, or
in an enclosing block) is replaced by it. Scopes follow the regions: an op inside a loop body
or an `if` branch may reuse one from outside, never the other way round, and ops in sibling
regions never see each other.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, ClassVar

from ..ir import Block, Module, Op
from .pass_base import ModulePass, PassContext, register_pass

Key = tuple[Hashable, ...]


def _attr_key(v: Any) -> Hashable:
    if isinstance(v, float):
        return ("f", v.hex())
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, (tuple, list)):
        return ("t", tuple(_attr_key(x) for x in v))
    if isinstance(v, dict):
        return ("d", tuple(sorted((k, _attr_key(x)) for k, x in v.items())))
    return (type(v).__name__, v)


def op_key(op: Op) -> Key | None:
    """A hashable identity of what `op` computes, or None when it must not be merged."""
    if not op.is_pure or op.regions or op.is_terminator or not op.results:
        return None
    attrs = tuple(sorted((k, _attr_key(v)) for k, v in op.attributes.items()))
    operands = tuple(id(v) for v in op.operands)
    return (type(op), operands, attrs, tuple(r.type for r in op.results))


class _CSE:
    def __init__(self) -> None:
        self.replaced = 0
        self.mapping: dict[Any, Any] = {}

    def block(self, block: Block, scope: dict[Key, Op]) -> None:
        local = dict(scope)  # copy: what this block adds is invisible outside it
        for op in list(block.ops):
            for v in op.operands:  # operands merged away earlier
                new = self.mapping.get(v)
                if new is not None:
                    op.replace_operand(v, new)
            key = op_key(op)
            if key is not None:
                found = local.get(key)
                if found is not None:
                    for old, new in zip(op.results, found.results):
                        self.mapping[old] = new
                        if new.name_hint is None:
                            new.name_hint = old.name_hint
                    op.parent = None  # dropped from the block's list below
                    self.replaced += 1
                    continue
                local[key] = op
            for r in op.regions:
                for b in r.blocks:
                    self.block(b, local)
        block.ops = [o for o in block.ops if o.parent is block]


def eliminate_common_subexpressions(module: Module) -> int:
    """Merge equivalent pure ops; returns how many were removed."""
    cse = _CSE()
    cse.block(module.body, {})
    return cse.replaced


@register_pass
class CommonSubexpressionElimination(ModulePass):
    """Merge equivalent pure ops within dominance scope."""

    name: ClassVar[str] = "cse"

    def apply(self, ctx: PassContext | None, module: Module) -> None:
        eliminate_common_subexpressions(module)
