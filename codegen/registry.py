"""The lowering rule table: one rule per IR op class, registered with `@lowers(OpClass, ...)`.

A rule takes the `LoweringContext` and the op, reads its operands' values from the context,
emits per-thread statements and binds its results. Rules live in `lower_*.py` modules, one op
family each; a new family (the dot lowering, say) registers its rules by importing this module,
without touching the others. The driver finds a rule by walking the op class's MRO, so a rule
for a base class covers its subclasses unless they have their own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from triton_metal.ir import Op

if TYPE_CHECKING:
    from .context import LoweringContext

Rule = Callable[["LoweringContext", Any], None]

RULES: dict[type[Op], Rule] = {}


def lowers(*op_classes: type[Op]) -> Callable[[Rule], Rule]:
    """Register the decorated function as the lowering of each of `op_classes`."""

    def register(fn: Rule) -> Rule:
        for cls in op_classes:
            if cls in RULES and RULES[cls] is not fn:
                raise AssertionError(f"a lowering for {cls.name or cls.__name__} is registered twice")
            RULES[cls] = fn
        return fn

    return register


def rule_for(op: Op) -> Rule | None:
    for cls in type(op).__mro__:
        rule = RULES.get(cls)  # type: ignore[arg-type]
        if rule is not None:
            return rule
    return None
