"""Functions, returns and calls.

`tt.func @name(%arg: type {attrs}, ...) -> (types) {...}` holds one block whose arguments are the
function's parameters; each may carry attributes such as `tt.divisibility = 16` (the value is a
multiple of 16; for a pointer, its address is 16-byte aligned). The printer and parser treat
`tt.func` specially; `tt.return` and `tt.call` use the generic form.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, ClassVar

from ..core import Op, Region, Value, attr, region, var_operand
from ..types import Type
from .common import num_results


class FuncOp(Op):
    name: ClassVar[str] = "tt.func"
    is_pure: ClassVar[bool] = False
    sym_name: str = field(default="")
    arg_attrs: list[dict[str, Any]] = field(default_factory=list)
    """Per argument: its attributes (possibly empty)."""
    res_types: tuple[Type, ...] = ()
    body: Region = region()

    @property
    def args(self) -> list[Value]:
        return list(self.body.block.args)

    @property
    def arg_types(self) -> list[Type]:
        return [a.type for a in self.body.block.args]

    def verify_(self) -> None:
        num_results(self, 0)
        if not self.sym_name:
            raise self.error("needs a name")
        block = self.body.block
        if len(self.arg_attrs) not in (0, len(block.args)):
            raise self.error(f"has {len(self.arg_attrs)} argument attribute sets for {len(block.args)} arguments")
        term = block.ops[-1] if block.ops else None
        if term is None or term.name != "tt.return":
            raise self.error("body must end with 'tt.return'")
        got = [v.type for v in term.operands]
        if got != list(self.res_types):
            raise self.error(
                "must return (" + ", ".join(map(str, self.res_types)) + "), got (" + ", ".join(map(str, got)) + ")"
            )


class ReturnOp(Op):
    name: ClassVar[str] = "tt.return"
    is_terminator: ClassVar[bool] = True
    values: tuple[Value, ...] = var_operand(positional=True)

    def verify_(self) -> None:
        num_results(self, 0)
        parent = self.parent.parent_op if self.parent is not None else None
        if not isinstance(parent, FuncOp):
            raise self.error("must end the body of a 'tt.func'")


class CallOp(Op):
    """Call a function of the same module; the module verifier checks the callee's signature."""

    name: ClassVar[str] = "tt.call"
    is_pure: ClassVar[bool] = False
    args: tuple[Value, ...] = var_operand(positional=True)
    callee: str = attr(str)
