"""The IR's text form (MLIR-like), deterministic so that print -> parse -> print is the identity.

Generic op form, read back by `ir.lark`:

    %r0, %r1 = dialect.op %a, %b, kw %c, group(%d, %e) {attr = 1, other = "s"} region {...} : t0, t1

Required operands come first, then the op's positional variadic group, then optional operands
(`mask %m`) and keyword groups (`iter_args(%x, %y)`, printed when non-empty); attribute keys are
sorted and None-valued attributes left out; each region prints as its keyword and a block, with
`^bb0(%arg: type, ...):` when the block has arguments. `tt.func` has its own form. SSA names come
from the values' name hints (sanitised, made unique per function with `_1`, `_2` suffixes),
otherwise `%0`, `%1`, ... in order of definition. Locations print as `loc("file":line:col)` on
request.
"""

from __future__ import annotations

import json
import math
import re
from enum import Enum
from typing import Any

from ..errors import Loc
from .core import Block, Module, Op, Region, Value
from .ops.func import FuncOp

_INDENT = "  "


def format_attr(v: Any) -> str:
    """An attribute value's text."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, Enum):
        return str(v.value)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(format_attr(x) for x in v) + "]"
    if isinstance(v, dict):
        return format_attr_dict(v)
    raise TypeError(f"cannot print attribute value {v!r}")


def format_attr_dict(attrs: dict[str, Any]) -> str:
    items = [f"{k} = {format_attr(attrs[k])}" for k in sorted(attrs) if attrs[k] is not None]
    return "{" + ", ".join(items) + "}"


def format_loc(loc: Loc) -> str:
    return f"loc({json.dumps(loc.file)}:{loc.line}:{loc.col + 1})"


class Printer:
    """Prints one module (or op); names are scoped per function."""

    def __init__(self, print_locs: bool = False) -> None:
        self.print_locs = print_locs
        self.lines: list[str] = []
        self._names: dict[Value, str] = {}
        self._used: set[str] = set()
        self._next_id = 0

    # -- names ---------------------------------------------------------------------------------
    def reset_names(self) -> None:
        self._names.clear()
        self._used.clear()
        self._next_id = 0

    def name(self, v: Value) -> str:
        found = self._names.get(v)
        if found is not None:
            return found
        hint = re.sub(r"[^A-Za-z0-9_]", "_", v.name_hint) if v.name_hint else ""
        if not hint or hint.isdigit():
            while str(self._next_id) in self._used:
                self._next_id += 1
            chosen = str(self._next_id)
            self._next_id += 1
        else:
            if hint[0].isdigit():
                hint = "v" + hint
            chosen, k = hint, 1
            while chosen in self._used:
                chosen = f"{hint}_{k}"
                k += 1
        self._used.add(chosen)
        self._names[v] = "%" + chosen
        return "%" + chosen

    # -- printing ------------------------------------------------------------------------------
    def module(self, m: Module) -> str:
        head = "module"
        if m.attributes:
            head += " attributes " + format_attr_dict(m.attributes)
        self.lines.append(head + " {")
        for op in m.body.ops:
            self.reset_names()
            self.op(op, 1)
        self.lines.append("}")
        return "\n".join(self.lines) + "\n"

    def op(self, op: Op, depth: int) -> None:
        if isinstance(op, FuncOp):
            self._func(op, depth)
            return
        pad = _INDENT * depth
        text = ""
        if op.results:
            text = ", ".join(self.name(r) for r in op.results) + " = "
        text += op.name
        specs = op.field_specs()
        items: list[str] = []
        items += [self.name(getattr(op, s.name)) for s in specs if s.kind == "operand"]
        for s in specs:
            if s.kind == "variadic" and s.positional:
                items += [self.name(v) for v in getattr(op, s.name)]
        for s in specs:
            v = getattr(op, s.name)
            if s.kind == "optional" and v is not None:
                items.append(f"{s.text} {self.name(v)}")
            elif s.kind == "variadic" and not s.positional and v:
                items.append(f"{s.text}(" + ", ".join(self.name(x) for x in v) + ")")
        if items:
            text += " " + ", ".join(items)
        attrs = op.attributes
        if attrs:
            text += " " + format_attr_dict(attrs)
        regions = [(s.text, getattr(op, s.name)) for s in specs if s.kind == "region"]
        if not regions:
            self.lines.append(pad + text + self._suffix(op))
            return
        for keyword, r in regions:
            text += f" {keyword} {{"
            self.lines.append(pad + text)
            self._region_body(r, depth + 1)
            text = "}"
        self.lines.append(pad + text + self._suffix(op))

    def _suffix(self, op: Op) -> str:
        text = ""
        if op.results:
            text += " : " + ", ".join(str(r.type) for r in op.results)
        if self.print_locs and op.loc is not None:
            text += " " + format_loc(op.loc)
        return text

    def _region_body(self, r: Region, depth: int) -> None:
        for block in r.blocks:
            self._block(block, depth)

    def _block(self, block: Block, depth: int) -> None:
        if block.args:
            args = ", ".join(f"{self.name(a)}: {a.type}" for a in block.args)
            self.lines.append(_INDENT * (depth - 1) + f"^bb0({args}):")
        for op in block.ops:
            self.op(op, depth)

    def _func(self, f: FuncOp, depth: int) -> None:
        pad = _INDENT * depth
        args = []
        for i, a in enumerate(f.body.block.args):
            text = f"{self.name(a)}: {a.type}"
            attrs = f.arg_attrs[i] if i < len(f.arg_attrs) else {}
            if attrs:
                text += " " + format_attr_dict(attrs)
            args.append(text)
        head = f"{pad}tt.func @{f.sym_name}(" + ", ".join(args) + ")"
        if f.res_types:
            head += " -> (" + ", ".join(map(str, f.res_types)) + ")"
        if self.print_locs and f.loc is not None:
            head += " " + format_loc(f.loc)
        self.lines.append(head + " {")
        for op in f.body.block.ops:
            self.op(op, depth + 1)
        self.lines.append(pad + "}")


def print_module(m: Module, print_locs: bool = False) -> str:
    """The module's text (ends with a newline)."""
    return Printer(print_locs).module(m)


def print_op(op: Op, print_locs: bool = False) -> str:
    """One op (and its regions) as text, for messages and debugging."""
    p = Printer(print_locs)
    p.op(op, 0)
    return "\n".join(p.lines)
