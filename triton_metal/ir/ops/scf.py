"""Structured control flow: counted loops, conditionals and while loops with yielded values.

* `scf.for %lb, %ub, %step iter_args(%init...) body {^bb0(%iv, %carried...): ... scf.yield ...}`:
  the body runs for iv = lb, lb + step, ... as Python's `range` counts: while iv < ub for a
  positive step, while iv > ub for a negative one, never for a zero step; the results are the
  values carried out of the last iteration (the inits when it runs zero times).
* `scf.if %cond then {...} else {...}`: each region yields the op's results.
* `scf.while %inits before {^bb0(args): ... scf.condition %c, %forwarded...}
  after {^bb0(args): ... scf.yield %next...}`: `before` computes the condition; when it holds,
  the forwarded values enter `after`, whose yield feeds `before` again; otherwise they are the
  results.
"""

from __future__ import annotations

from typing import ClassVar

from ..core import Op, Region, Value, operand, region, var_operand
from ..types import ScalarType, Type, i1
from .common import num_results


def _types(values: tuple[Value, ...] | list[Value]) -> list[Type]:
    return [v.type for v in values]


def _fmt(types: list[Type]) -> str:
    return "(" + ", ".join(map(str, types)) + ")"


def _terminator(op: Op, r: Region, name: str, what: str) -> Op:
    block = r.block
    term = block.ops[-1] if block.ops else None
    if term is None or term.name != name:
        raise op.error(f"{what} must end with '{name}'")
    return term


class ForOp(Op):
    name: ClassVar[str] = "scf.for"
    is_pure: ClassVar[bool] = False  # its regions may store; a pass must look inside
    lower: Value = operand()
    upper: Value = operand()
    step: Value = operand()
    iter_args: tuple[Value, ...] = var_operand()
    body: Region = region()

    @property
    def induction_var(self) -> Value:
        return self.body.block.args[0]

    def verify_(self) -> None:
        ty = self.lower.type
        if not (isinstance(ty, ScalarType) and ty.is_int() and not ty.is_bool()):
            raise self.error(f"bounds must be integer scalars, got {ty}")
        if self.upper.type != ty or self.step.type != ty:
            raise self.error(f"bounds and step must share one type, got {ty}, {self.upper.type}, {self.step.type}")
        inits = _types(self.iter_args)
        if _types(self.results) != inits:
            raise self.error(f"results {_fmt(_types(self.results))} must match iter_args {_fmt(inits)}")
        block = self.body.block
        if _types(block.args) != [ty, *inits]:
            raise self.error(f"body must take {_fmt([ty, *inits])}, got {_fmt(_types(block.args))}")
        term = _terminator(self, self.body, "scf.yield", "body")
        if _types(term.operands) != inits:
            raise self.error(f"body must yield {_fmt(inits)}, got {_fmt(_types(term.operands))}")


class IfOp(Op):
    name: ClassVar[str] = "scf.if"
    is_pure: ClassVar[bool] = False  # its regions may store; a pass must look inside
    condition: Value = operand()
    then_region: Region = region(text="then")
    else_region: Region = region(text="else")

    def verify_(self) -> None:
        if self.condition.type != i1:
            raise self.error(f"condition must be an i1 scalar, got {self.condition.type}")
        want = _types(self.results)
        for what, r in (("then", self.then_region), ("else", self.else_region)):
            block = r.block
            if block.args:
                raise self.error(f"{what} region takes no arguments")
            if not want and not block.ops:
                continue
            term = _terminator(self, r, "scf.yield", f"{what} region")
            if _types(term.operands) != want:
                raise self.error(f"{what} region must yield {_fmt(want)}, got {_fmt(_types(term.operands))}")


class WhileOp(Op):
    name: ClassVar[str] = "scf.while"
    is_pure: ClassVar[bool] = False  # its regions may store; a pass must look inside
    inits: tuple[Value, ...] = var_operand(positional=True)
    before: Region = region()
    after: Region = region()

    def verify_(self) -> None:
        inits = _types(self.inits)
        results = _types(self.results)
        before, after = self.before.block, self.after.block
        if _types(before.args) != inits:
            raise self.error(f"before region must take {_fmt(inits)}, got {_fmt(_types(before.args))}")
        cond = _terminator(self, self.before, "scf.condition", "before region")
        forwarded = _types(cond.operands[1:])
        if forwarded != results:
            raise self.error(f"scf.condition must forward {_fmt(results)}, got {_fmt(forwarded)}")
        if _types(after.args) != results:
            raise self.error(f"after region must take {_fmt(results)}, got {_fmt(_types(after.args))}")
        term = _terminator(self, self.after, "scf.yield", "after region")
        if _types(term.operands) != inits:
            raise self.error(f"after region must yield {_fmt(inits)}, got {_fmt(_types(term.operands))}")


class YieldOp(Op):
    name: ClassVar[str] = "scf.yield"
    is_terminator: ClassVar[bool] = True
    values: tuple[Value, ...] = var_operand(positional=True)

    def verify_(self) -> None:
        num_results(self, 0)
        parent = self.parent.parent_op if self.parent is not None else None
        if not isinstance(parent, (ForOp, IfOp, WhileOp)):
            raise self.error("must end a region of 'scf.for', 'scf.if' or 'scf.while'")


class ConditionOp(Op):
    name: ClassVar[str] = "scf.condition"
    is_terminator: ClassVar[bool] = True
    condition: Value = operand()
    args: tuple[Value, ...] = var_operand(positional=True)

    def verify_(self) -> None:
        num_results(self, 0)
        if self.condition.type != i1:
            raise self.error(f"condition must be an i1 scalar, got {self.condition.type}")
        parent = self.parent.parent_op if self.parent is not None else None
        if not isinstance(parent, WhileOp) or parent.before.blocks[0] is not self.parent:
            raise self.error("must end the before region of 'scf.while'")
