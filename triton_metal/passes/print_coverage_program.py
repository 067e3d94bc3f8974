"""`test-print-coverage-program`: print the coverage program of each function as remarks.

For file tests: every pointer parameter counts as an output (named after it); the statements of
`coverage_program` follow, one per line, nested blocks indented, then one line per store left
out with its reason. The module is left unchanged; run it as
`-p test-print-coverage-program 2>&1 >/dev/null | filecheck`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..ir import Module
from ..ir.types import PointerType, element_type
from .coverage_program import coverage_program
from .pass_base import ModulePass, PassContext, register_pass, remark


def describe(st: Any) -> str:
    """One statement (without nested blocks) as text."""
    tag, i = st[0], st[1]
    if tag == "arg":
        return f"%{i} = arg {st[2]}"
    if tag == "const":
        return f"%{i} = const {st[2]}"
    if tag in ("pid", "nprog"):
        return f"%{i} = {tag} {st[2]}"
    if tag == "range":
        return f"%{i} = range [{st[2]}, {st[3]})"
    if tag in ("splat", "bcast"):
        return f"%{i} = {tag} %{st[2]} to {list(st[3])}"
    if tag == "expand":
        return f"%{i} = expand %{st[2]} axis {st[3]}"
    if tag == "bin":
        return f"%{i} = {st[2]} %{st[3]}, %{st[4]} : {'i' if st[6] else 'u'}{st[5]}"
    if tag == "cmp":
        return f"%{i} = cmp {st[2]} %{st[3]}, %{st[4]}"
    if tag == "select":
        return f"%{i} = select %{st[2]}, %{st[3]}, %{st[4]}"
    if tag == "cast":
        return f"%{i} = {st[2]} %{st[3]} : {st[4]} -> {st[5]}"
    if tag == "ptr":
        return f"%{i} = ptr {st[2]}"
    if tag == "addptr":
        return f"%{i} = addptr %{st[2]}, %{st[3]}"
    if tag == "for":
        return f"for %{st[1]} = %{st[2]} to %{st[3]} step %{st[4]}"
    if tag == "if":
        return f"if %{st[1]}"
    mask = f" mask %{st[3]}" if st[3] is not None else ""
    return f"store {st[1]} at %{st[2]}{mask}"


@register_pass
class TestPrintCoverageProgram(ModulePass):
    name: ClassVar[str] = "test-print-coverage-program"

    def apply(self, ctx: PassContext | None, module: Module) -> None:
        for func in module.funcs:
            outputs = {a: (a.name_hint or f"arg{a.index}") for a in func.body.block.args  # type: ignore[attr-defined]
                       if isinstance(element_type(a.type), PointerType)}
            statements, left_out = coverage_program(func, outputs)
            remark(ctx, f"func @{getattr(func, 'sym_name', '?')}:")
            self._print(ctx, statements, 1)
            for output, _where, reason in left_out:
                remark(ctx, f"  left out: a store to {output}: {reason}")

    def _print(self, ctx: PassContext | None, statements: Any, depth: int) -> None:
        pad = "  " * depth
        for st in statements:
            remark(ctx, pad + describe(st))
            if st[0] == "for":
                self._print(ctx, st[6], depth + 1)
            elif st[0] == "if":
                self._print(ctx, st[2], depth + 1)
                remark(ctx, pad + "else")
                self._print(ctx, st[3], depth + 1)
