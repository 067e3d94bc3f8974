"""The IR's data model: SSA values, blocks, regions, ops and the module.

Contract:
* Values (`BlockArgument`, `OpResult`), blocks, regions and ops compare by identity; types are
  immutable values (`ir.types`).
* Control flow is structured: every region holds exactly one block; ops with regions (`scf.for`,
  `scf.if`, `scf.while`, `tt.reduce`, `tt.scan`, `tt.func`) end their blocks with a terminator.
* An op class declares its operands, attributes and regions as dataclass fields made with
  `operand()`, `opt_operand()`, `var_operand()`, `attr()` and `region()`. The printer, the parser
  and the generic verifier read those declarations, so a new op needs no printing or parsing code.
* Every op has a `loc` (the kernel source position it came from, or None) for error messages.
"""

from __future__ import annotations

import copy
import dataclasses
import linecache
from collections.abc import Callable, Iterator, Sequence
from dataclasses import InitVar, dataclass, field
from enum import Enum
from typing import Any, ClassVar

from ..errors import CompilationError, Loc
from .types import Type


class IRError(CompilationError):
    """An error about IR: `file:line:col: error: reason`, then the source line and a caret."""

    def _render(self) -> str:
        where = f"{self.loc}: " if self.loc is not None else ""
        parts = [f"{where}error: {self.reason}"]
        line = self.source_line
        if line is None and self.loc is not None:
            line = linecache.getline(self.loc.file, self.loc.line).rstrip("\n")
        if line and self.loc is not None:
            parts.append("    " + line)
            parts.append("    " + " " * self.loc.col + "^")
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return "\n".join(parts)


class VerifyError(IRError):
    """The IR breaks an invariant (a type rule, region arity, dominance)."""


class IRParseError(IRError):
    """IR text does not follow the grammar or names an unknown op, value or type."""


# -- values -------------------------------------------------------------------------------------


class Value:
    """An SSA value. `name_hint` (a Python variable name, say) guides the printer's `%name`."""

    __slots__ = ("type", "name_hint")

    def __init__(self, type: Type, name_hint: str | None = None) -> None:
        self.type = type
        self.name_hint = name_hint

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name_hint or '?'}: {self.type}>"


class BlockArgument(Value):
    """An argument of a block (a loop induction variable, a loop-carried value, a function arg)."""

    __slots__ = ("block", "index")

    def __init__(self, type: Type, block: Block, index: int, name_hint: str | None = None) -> None:
        super().__init__(type, name_hint)
        self.block = block
        self.index = index


class OpResult(Value):
    """The `index`-th result of `op`."""

    __slots__ = ("op", "index")

    def __init__(self, type: Type, op: Op, index: int, name_hint: str | None = None) -> None:
        super().__init__(type, name_hint)
        self.op = op
        self.index = index


# -- blocks and regions -------------------------------------------------------------------------


class Block:
    """A list of ops with typed arguments; the last op of a region's block is its terminator."""

    def __init__(self, arg_types: Sequence[Type] = (), arg_hints: Sequence[str | None] = ()) -> None:
        self.args: list[BlockArgument] = []
        self.ops: list[Op] = []
        self.parent: Region | None = None
        hints = list(arg_hints) + [None] * (len(arg_types) - len(arg_hints))
        for ty, hint in zip(arg_types, hints):
            self.add_arg(ty, hint)

    def add_arg(self, ty: Type, name_hint: str | None = None) -> BlockArgument:
        arg = BlockArgument(ty, self, len(self.args), name_hint)
        self.args.append(arg)
        return arg

    def append(self, op: Op) -> Op:
        op.parent = self
        self.ops.append(op)
        return op

    def insert(self, index: int, op: Op) -> Op:
        op.parent = self
        self.ops.insert(index, op)
        return op

    def index_of(self, op: Op) -> int:
        for i, o in enumerate(self.ops):
            if o is op:
                return i
        raise ValueError(f"{op!r} is not in this block")

    def insert_before(self, anchor: Op, op: Op) -> Op:
        return self.insert(self.index_of(anchor), op)

    def insert_after(self, anchor: Op, op: Op) -> Op:
        return self.insert(self.index_of(anchor) + 1, op)

    def remove(self, op: Op) -> None:
        """Detach `op` (identity, not equality, decides which)."""
        for i, o in enumerate(self.ops):
            if o is op:
                del self.ops[i]
                op.parent = None
                return
        raise ValueError(f"{op!r} is not in this block")

    @property
    def terminator(self) -> Op | None:
        return self.ops[-1] if self.ops and self.ops[-1].is_terminator else None

    @property
    def parent_op(self) -> Op | None:
        return self.parent.parent if self.parent is not None else None

    def walk(self) -> Iterator[Op]:
        for op in list(self.ops):
            yield from op.walk()

    def only_user(self, value: Value) -> Op | None:
        """The one op of this block (nested regions included) that uses `value`, once; else None."""
        users = [op for op in self.walk() for v in op.operands if v is value]
        return users[0] if len(users) == 1 else None

    def __repr__(self) -> str:
        return f"<Block args={len(self.args)} ops={len(self.ops)}>"


class Region:
    """A region of an op: one block (structured control flow)."""

    def __init__(self, blocks: Sequence[Block] | None = None) -> None:
        self.blocks: list[Block] = []
        self.parent: Op | None = None
        for b in blocks if blocks is not None else [Block()]:
            self.add_block(b)

    def add_block(self, block: Block) -> Block:
        block.parent = self
        self.blocks.append(block)
        return block

    @property
    def block(self) -> Block:
        """The region's only block."""
        if len(self.blocks) != 1:
            raise VerifyError(f"expected a region with one block, found {len(self.blocks)}")
        return self.blocks[0]

    def walk(self) -> Iterator[Op]:
        for b in self.blocks:
            yield from b.walk()

    def __repr__(self) -> str:
        return f"<Region blocks={len(self.blocks)}>"


# -- op field declarations ----------------------------------------------------------------------

_KIND = "ir_kind"


def operand() -> Any:
    """A required operand (one SSA value)."""
    return field(metadata={_KIND: "operand"})


def opt_operand() -> Any:
    """An optional operand, printed as `name %v` when present."""
    return field(default=None, metadata={_KIND: "optional"})


def var_operand(positional: bool = False) -> Any:
    """A variadic operand group (a tuple). A positional group prints after the required operands
    (at most one per op); otherwise it prints as `name(%a, %b)` when non-empty."""
    return field(default=(), metadata={_KIND: "variadic", "positional": positional})


def attr(conv: Callable[[Any], Any] | None = None, default: Any = dataclasses.MISSING) -> Any:
    """An attribute. `conv` turns the parsed text value into the field's type (an enum, say)."""
    meta = {_KIND: "attr", "conv": conv}
    if default is dataclasses.MISSING:
        return field(metadata=meta)
    return field(default=default, metadata=meta)


def region(text: str | None = None) -> Any:
    """A region (one block), created empty when not given. `text` is its keyword in the IR text
    when that differs from the field name (`else` is no Python identifier)."""
    return field(default_factory=Region, metadata={_KIND: "region", "text": text})


@dataclass(frozen=True)
class FieldSpec:
    name: str
    kind: str  # "operand" | "optional" | "variadic" | "attr" | "region"
    positional: bool = False
    conv: Callable[[Any], Any] | None = None
    has_default: bool = False
    text: str = ""
    """The keyword in the IR text (the field name unless declared otherwise)."""


OP_REGISTRY: dict[str, type[Op]] = {}
"""Every op class by its `name`, filled as op modules are imported."""


# -- ops ----------------------------------------------------------------------------------------


@dataclass(eq=False, kw_only=True)
class Op:
    """Base of all ops. Subclasses set `name` and declare fields (each subclass becomes a
    keyword-only dataclass); results come from `result_types`."""

    name: ClassVar[str] = ""
    is_terminator: ClassVar[bool] = False
    is_pure: ClassVar[bool] = True
    """No side effects: dead-code elimination may remove it when its results are unused."""

    result_types: InitVar[Sequence[Type]] = ()
    loc: Loc | None = field(default=None, compare=False)
    results: list[OpResult] = field(init=False, repr=False)
    parent: Block | None = field(init=False, default=None, repr=False)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Every op class is a keyword-only dataclass compared by identity; applying the decorator
        # here keeps the op families free of boilerplate.
        dataclass(eq=False, kw_only=True)(cls)
        if "name" in cls.__dict__ and cls.name:
            if cls.name in OP_REGISTRY:
                raise AssertionError(f"op '{cls.name}' registered twice")
            OP_REGISTRY[cls.name] = cls

    def __post_init__(self, result_types: Sequence[Type]) -> None:
        self.results = [OpResult(t, self, i) for i, t in enumerate(result_types)]
        for spec in self.field_specs():
            if spec.kind == "region":
                getattr(self, spec.name).parent = self
            elif spec.kind == "variadic":
                setattr(self, spec.name, tuple(getattr(self, spec.name)))

    # -- declarations --------------------------------------------------------------------------
    @classmethod
    def field_specs(cls) -> tuple[FieldSpec, ...]:
        cached = cls.__dict__.get("_field_specs")
        if cached is None:
            specs = []
            for f in dataclasses.fields(cls):
                kind = f.metadata.get(_KIND)
                if kind is None:
                    continue
                has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
                specs.append(FieldSpec(
                    f.name, kind, bool(f.metadata.get("positional")), f.metadata.get("conv"), has_default,
                    f.metadata.get("text") or f.name,
                ))
            cached = tuple(specs)
            cls._field_specs = cached  # type: ignore[attr-defined]
        return cached

    # -- structure -----------------------------------------------------------------------------
    @property
    def result(self) -> OpResult:
        """The only result."""
        if len(self.results) != 1:
            raise VerifyError(f"'{self.name}' has {len(self.results)} results, not one", self.loc)
        return self.results[0]

    @property
    def operands(self) -> list[Value]:
        out: list[Value] = []
        for spec in self.field_specs():
            v = getattr(self, spec.name)
            if spec.kind in ("operand", "optional") and v is not None:
                out.append(v)
            elif spec.kind == "variadic":
                out.extend(v)
        return out

    @property
    def regions(self) -> list[Region]:
        return [getattr(self, s.name) for s in self.field_specs() if s.kind == "region"]

    @property
    def attributes(self) -> dict[str, Any]:
        """Attribute fields whose value is not None, by name."""
        out: dict[str, Any] = {}
        for s in self.field_specs():
            if s.kind == "attr" and getattr(self, s.name) is not None:
                out[s.name] = getattr(self, s.name)
        return out

    def replace_operand(self, old: Value, new: Value) -> int:
        """Replace every use of `old` among this op's operands by `new`; returns how many."""
        n = 0
        for spec in self.field_specs():
            v = getattr(self, spec.name)
            if spec.kind in ("operand", "optional") and v is old:
                setattr(self, spec.name, new)
                n += 1
            elif spec.kind == "variadic" and any(x is old for x in v):
                setattr(self, spec.name, tuple(new if x is old else x for x in v))
                n += sum(1 for x in v if x is old)
        return n

    def clone(self, mapping: dict[Value, Value] | None = None) -> Op:
        """A detached copy of this op and its regions. Operands found in `mapping` are replaced;
        the copy's results and block arguments are added to `mapping` (old -> new)."""
        mapping = {} if mapping is None else mapping
        kwargs: dict[str, Any] = {}
        for spec in self.field_specs():
            v = getattr(self, spec.name)
            if spec.kind in ("operand", "optional"):
                kwargs[spec.name] = mapping.get(v, v) if v is not None else None
            elif spec.kind == "variadic":
                kwargs[spec.name] = tuple(mapping.get(x, x) for x in v)
            elif spec.kind == "region":
                kwargs[spec.name] = _clone_region(v, mapping)
            else:
                kwargs[spec.name] = v
        for f in dataclasses.fields(self):
            if f.init and f.name not in kwargs and f.name != "loc":
                kwargs[f.name] = copy.deepcopy(getattr(self, f.name))  # plain fields (a function's name, ...)
        new = type(self)(result_types=[r.type for r in self.results], loc=self.loc, **kwargs)
        for old_r, new_r in zip(self.results, new.results):
            new_r.name_hint = old_r.name_hint
            mapping[old_r] = new_r
        return new

    def walk(self) -> Iterator[Op]:
        """This op, then every op nested in its regions (pre-order)."""
        yield self
        for r in self.regions:
            yield from r.walk()

    # -- verification --------------------------------------------------------------------------
    def error(self, message: str) -> VerifyError:
        return VerifyError(f"'{self.name}' op {message}", self.loc)

    def verify(self) -> None:
        """Check this op alone (not its nested ops): declared fields, then the op's own rules."""
        for spec in self.field_specs():
            v = getattr(self, spec.name)
            if spec.kind == "operand" and not isinstance(v, Value):
                raise self.error(f"operand '{spec.name}' must be a value, got {v!r}")
            if spec.kind == "optional" and v is not None and not isinstance(v, Value):
                raise self.error(f"operand '{spec.name}' must be a value or absent, got {v!r}")
            if spec.kind == "variadic" and not all(isinstance(x, Value) for x in v):
                raise self.error(f"operands '{spec.name}' must all be values")
            if spec.kind == "region":
                if not isinstance(v, Region) or len(v.blocks) != 1:
                    raise self.error(f"region '{spec.name}' must hold exactly one block")
        self.verify_()

    def verify_(self) -> None:
        """Op-specific rules; raise `self.error(...)`."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


def _clone_region(region: Region, mapping: dict[Value, Value]) -> Region:
    blocks = []
    for b in region.blocks:
        nb = Block([a.type for a in b.args], [a.name_hint for a in b.args])
        mapping.update(zip(b.args, nb.args))
        for op in b.ops:
            nb.append(op.clone(mapping))
        blocks.append(nb)
    return Region(blocks)


def enum_conv(enum_cls: type[Enum]) -> Callable[[Any], Any]:
    """An `attr` converter taking an enum member or its value."""

    def conv(v: Any) -> Any:
        return v if isinstance(v, enum_cls) else enum_cls(v)

    return conv


def int_tuple(v: Any) -> tuple[int, ...]:
    return tuple(int(x) for x in v)


def str_tuple(v: Any) -> tuple[str, ...]:
    return tuple(str(x) for x in v)


def bool_tuple(v: Any) -> tuple[bool, ...]:
    return tuple(bool(x) for x in v)


# -- module -------------------------------------------------------------------------------------


class Module:
    """The top-level container: functions (`tt.func` ops) plus module attributes (options)."""

    def __init__(self, attributes: dict[str, Any] | None = None) -> None:
        self.body = Block()
        self.attributes: dict[str, Any] = dict(attributes or {})

    @property
    def ops(self) -> list[Op]:
        return self.body.ops

    @property
    def funcs(self) -> list[Op]:
        """The module's functions (`tt.func` ops), in order."""
        return [op for op in self.body.ops if op.name == "tt.func"]

    def append(self, op: Op) -> Op:
        return self.body.append(op)

    def walk(self) -> Iterator[Op]:
        return self.body.walk()

    def replace_all_uses(self, old: Value, new: Value) -> int:
        """Make every op that uses `old` use `new` instead; returns the number of uses replaced."""
        return sum(op.replace_operand(old, new) for op in self.walk())

    def lookup(self, sym_name: str) -> Op | None:
        """The function named `sym_name`, if any."""
        for op in self.body.ops:
            if getattr(op, "sym_name", None) == sym_name:
                return op
        return None

    def verify(self) -> None:
        from .verifier import verify_module

        verify_module(self)

    def __str__(self) -> str:
        from .printer import print_module

        return print_module(self)
