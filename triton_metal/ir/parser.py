"""Reads the IR text form (grammar `ir.lark`) back into a `Module`.

Two steps: a `lark.Transformer` turns the parse tree into plain syntax records (bottom-up, names
still text), then `_Resolver` walks them top-down, creating blocks, ops and values and resolving
`%names` against the scopes open at that point (a region sees the names defined before it in
enclosing blocks). Every error is an `IRParseError` with the line, column and source line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from lark import Lark, Token, Transformer, UnexpectedInput, v_args

from ..errors import Loc
from .core import OP_REGISTRY, Block, IRParseError, Module, Op, Region, Value
from .ops.func import FuncOp
from .types import Type, parse_type

# -- syntax records ------------------------------------------------------------------------------


@dataclass
class _Name:
    text: str
    line: int
    col: int


@dataclass
class _Operand:
    keyword: str | None  # None: positional
    values: list[_Name]
    group: bool = False


@dataclass
class _Region:
    keyword: str
    line: int
    col: int
    args: list[tuple[_Name, Type]]
    ops: list[_Op]


@dataclass
class _Op:
    name: str
    line: int
    col: int
    results: list[_Name]
    operands: list[_Operand]
    attrs: dict[str, Any]
    regions: list[_Region]
    types: list[Type]
    loc: Loc | None


@dataclass
class _Func:
    name: str
    line: int
    col: int
    args: list[tuple[_Name, Type, dict[str, Any]]]
    results: list[Type]
    ops: list[_Op]
    loc: Loc | None


@dataclass
class _Module:
    attrs: dict[str, Any] = field(default_factory=dict)
    funcs: list[_Func] = field(default_factory=list)


class _ParseFailure(Exception):
    def __init__(self, message: str, line: int, col: int) -> None:
        super().__init__(message)
        self.message, self.line, self.col = message, line, col


def _name(tok: Token) -> _Name:
    return _Name(str(tok)[1:], tok.line or 0, tok.column or 0)


def _type(tok: Token) -> Type:
    try:
        return parse_type(str(tok))
    except ValueError as e:
        raise _ParseFailure(str(e), tok.line or 0, tok.column or 0) from None


@v_args(inline=True)
class _ToSyntax(Transformer):  # type: ignore[type-arg]
    def start(self, module: _Module) -> _Module:
        return module

    def module(self, *items: Any) -> _Module:
        m = _Module()
        for it in items:
            if isinstance(it, dict):
                m.attrs = it
            elif isinstance(it, _Func):
                m.funcs.append(it)
        return m

    def module_attrs(self, attrs: dict[str, Any]) -> dict[str, Any]:
        return attrs

    def func(self, sym: Token, *rest: Any) -> _Func:
        args = [a for a in rest if isinstance(a, tuple)]
        results: list[Type] = next((r for r in rest if isinstance(r, list)), [])
        loc = next((r for r in rest if isinstance(r, Loc)), None)
        ops = [o for o in rest if isinstance(o, _Op)]
        return _Func(str(sym)[1:], sym.line or 0, sym.column or 0, args, results, ops, loc)

    def func_arg(self, value: Token, ty: Token, attrs: dict[str, Any] | None = None) -> tuple[_Name, Type, dict[str, Any]]:
        return (_name(value), _type(ty), attrs or {})

    def func_results(self, *types: Token | None) -> list[Type]:
        return [_type(t) for t in types if t is not None]

    def op(self, results: list[_Name] | None, opname: Token, *rest: Any) -> _Op:
        operands: list[_Operand] = []
        attrs: dict[str, Any] = {}
        regions: list[_Region] = []
        types: list[Type] = []
        loc: Loc | None = None
        for it in rest:
            if it is None:
                continue
            if isinstance(it, list) and it and isinstance(it[0], _Operand):
                operands = it
            elif isinstance(it, dict):
                attrs = it
            elif isinstance(it, _Region):
                regions.append(it)
            elif isinstance(it, Token) and it.type == "TYPE":
                types.append(_type(it))
            elif isinstance(it, Loc):
                loc = it
        return _Op(str(opname), opname.line or 0, opname.column or 0, results or [], operands, attrs, regions, types, loc)

    def result_names(self, *values: Token) -> list[_Name]:
        return [_name(v) for v in values]

    def operand_list(self, *operands: _Operand) -> list[_Operand]:
        return list(operands)

    def positional(self, value: Token) -> _Operand:
        return _Operand(None, [_name(value)])

    def keyword(self, key: Token, value: Token) -> _Operand:
        return _Operand(str(key), [_name(value)])

    def group(self, key: Token, *values: Token | None) -> _Operand:
        return _Operand(str(key), [_name(v) for v in values if v is not None], group=True)

    def region(self, key: Token, *rest: Any) -> _Region:
        args: list[tuple[_Name, Type]] = []
        ops: list[_Op] = []
        for it in rest:
            if isinstance(it, list):
                args = it
            elif isinstance(it, _Op):
                ops.append(it)
        return _Region(str(key), key.line or 0, key.column or 0, args, ops)

    def block_header(self, _label: Token, *args: tuple[_Name, Type] | None) -> list[tuple[_Name, Type]]:
        return [a for a in args if a is not None]

    def block_arg(self, value: Token, ty: Token) -> tuple[_Name, Type]:
        return (_name(value), _type(ty))

    def attr_dict(self, *entries: tuple[str, Any] | None) -> dict[str, Any]:
        return dict(e for e in entries if e is not None)

    def attr_entry(self, key: Token, value: Any) -> tuple[str, Any]:
        return (str(key), value)

    def number(self, tok: Token) -> int | float:
        text = str(tok)
        if any(c in text for c in ".eEn"):  # a float literal, inf or nan
            return float(text)
        return int(text)

    def true(self) -> bool:
        return True

    def false(self) -> bool:
        return False

    def string(self, tok: Token) -> str:
        return json.loads(str(tok))

    def word(self, tok: Token) -> str:
        return str(tok)

    def list(self, *items: Any) -> list[Any]:
        return [] if items == (None,) else list(items)

    def dict(self, d: dict[str, Any]) -> dict[str, Any]:
        return d

    def loc(self, file: Token, line: Token, col: Token) -> Loc:
        return Loc(json.loads(str(file)), int(line), int(col) - 1)


# -- resolution ----------------------------------------------------------------------------------


class _Resolver:
    """Builds IR from syntax records, resolving names in nested scopes."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.scopes: list[dict[str, Value]] = []

    def define(self, n: _Name, v: Value) -> None:
        for scope in self.scopes:
            if n.text in scope:
                raise _ParseFailure(f"redefinition of %{n.text}", n.line, n.col)
        self.scopes[-1][n.text] = v
        v.name_hint = None if n.text.isdigit() else n.text

    def lookup(self, n: _Name) -> Value:
        for scope in reversed(self.scopes):
            if n.text in scope:
                return scope[n.text]
        raise _ParseFailure(f"use of undefined value %{n.text}", n.line, n.col)

    def module(self, m: _Module) -> Module:
        module = Module(m.attrs)
        for f in m.funcs:
            module.append(self.func(f))
        return module

    def func(self, f: _Func) -> FuncOp:
        block = Block([t for _, t, _ in f.args])
        self.scopes = [{}]
        for (n, _, _), arg in zip(f.args, block.args):
            self.define(n, arg)
        for o in f.ops:
            block.append(self.op(o))
        self.scopes = []
        loc = f.loc if f.loc is not None else Loc(self.filename, f.line, f.col - 1)
        return FuncOp(sym_name=f.name, arg_attrs=[a for _, _, a in f.args], res_types=tuple(f.results),
                      body=Region([block]), loc=loc)

    def region(self, r: _Region) -> Region:
        block = Block([t for _, t in r.args])
        self.scopes.append({})
        for (n, _), arg in zip(r.args, block.args):
            self.define(n, arg)
        for o in r.ops:
            block.append(self.op(o))
        self.scopes.pop()
        return Region([block])

    def op(self, o: _Op) -> Op:
        cls = OP_REGISTRY.get(o.name)
        if cls is None or cls is FuncOp:
            raise _ParseFailure(f"unknown op '{o.name}'", o.line, o.col)

        def fail(msg: str) -> _ParseFailure:
            return _ParseFailure(f"'{o.name}': {msg}", o.line, o.col)

        specs = cls.field_specs()
        kwargs: dict[str, Any] = {}
        positional = [self.lookup(x.values[0]) for x in o.operands if x.keyword is None]
        required = [s for s in specs if s.kind == "operand"]
        if len(positional) < len(required):
            raise fail(f"expects {len(required)} operand(s) before keywords, got {len(positional)}")
        for s, v in zip(required, positional):
            kwargs[s.name] = v
        rest = positional[len(required):]
        pos_group = next((s for s in specs if s.kind == "variadic" and s.positional), None)
        if pos_group is not None:
            kwargs[pos_group.name] = tuple(rest)
        elif rest:
            raise fail(f"expects {len(required)} positional operand(s), got {len(positional)}")
        for x in o.operands:
            if x.keyword is None:
                continue
            s = next((s for s in specs if s.text == x.keyword and s.kind in ("optional", "variadic")), None)
            if s is None or (s.kind == "variadic") != x.group or s.name in kwargs:
                raise fail(f"unexpected operand '{x.keyword}'")
            values = [self.lookup(n) for n in x.values]
            kwargs[s.name] = tuple(values) if x.group else values[0]
        for s in specs:
            if s.kind != "attr":
                continue
            if s.name in o.attrs:
                try:
                    kwargs[s.name] = s.conv(o.attrs[s.name]) if s.conv is not None else o.attrs[s.name]
                except (TypeError, ValueError) as e:
                    raise fail(f"bad attribute '{s.name}': {e}") from None
            elif not s.has_default:
                raise fail(f"missing attribute '{s.name}'")
        unknown = set(o.attrs) - {s.name for s in specs if s.kind == "attr"}
        if unknown:
            raise fail(f"unknown attribute(s) {', '.join(sorted(unknown))}")
        region_specs = [s for s in specs if s.kind == "region"]
        if [r.keyword for r in o.regions] != [s.text for s in region_specs]:
            expected = ", ".join(s.text for s in region_specs) or "none"
            raise fail(f"expects regions ({expected}), got ({', '.join(r.keyword for r in o.regions)})")
        for s, r in zip(region_specs, o.regions):
            kwargs[s.name] = self.region(r)
        if len(o.results) != len(o.types):
            raise fail(f"{len(o.results)} result name(s) but {len(o.types)} result type(s)")
        # Without an explicit loc(...), an op is located in the IR text (for verifier messages).
        loc = o.loc if o.loc is not None else Loc(self.filename, o.line, o.col - 1)
        op = cls(result_types=o.types, loc=loc, **kwargs)
        for n, res in zip(o.results, op.results):
            self.define(n, res)
        return op


_TERMINAL_TEXT = {
    "LBRACE": "'{'", "RBRACE": "'}'", "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'",
    "COMMA": "','", "COLON": "':'", "EQUAL": "'='", "_NL": "end of line", "$END": "end of input",
    "VALUE": "a %value", "TYPE": "a type", "OP_NAME": "an op name", "NAME": "a keyword",
    "ATTR_NAME": "an attribute name", "NUMBER": "a number", "ESCAPED_STRING": "a string",
    "SYMBOL": "an @name", "BLOCK_LABEL": "a block label", "_LOC": "loc(",
}
"""How syntax errors name the grammar's terminals."""


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = resources.files("triton_metal.ir").joinpath("ir.lark").read_text()
    return Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=False)


def parse_module(text: str, filename: str = "<ir>") -> Module:
    """Parse IR text; raises `IRParseError` naming the line and column."""
    lines = text.splitlines()

    def error(message: str, line: int, col: int) -> IRParseError:
        src = lines[line - 1] if 0 < line <= len(lines) else None
        return IRParseError(message, Loc(filename, line, max(col - 1, 0)), source_line=src)

    try:
        tree = _parser().parse(text)
        syntax = _ToSyntax().transform(tree)
        return _Resolver(filename).module(syntax)
    except UnexpectedInput as u:
        expected = getattr(u, "expected", None) or getattr(u, "allowed", None) or ()
        shown = sorted({_TERMINAL_TEXT.get(t, t) for t in expected})
        found = getattr(u, "token", None)
        if found is None:
            what = "unexpected text"
        elif found.type in ("_NL", "$END"):
            what = f"unexpected {_TERMINAL_TEXT[found.type]}"
        else:
            what = f"unexpected '{found}'"
        detail = f"; expected {' or '.join(shown)}" if shown else ""
        raise error(f"syntax error: {what}{detail}", u.line, u.column) from None
    except _ParseFailure as f:
        raise error(f.message, f.line, f.col) from None
    except Exception as e:  # lark wraps errors raised inside transformer callbacks
        inner = getattr(e, "orig_exc", None)
        if isinstance(inner, _ParseFailure):
            raise error(inner.message, inner.line, inner.col) from None
        raise
