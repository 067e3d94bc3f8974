"""The per-thread program: what lowering produces and the one `MSLPrinter` turns into text.

Every tensor has already been split into per-thread registers, so the program is plain scalar
code: declarations of register arrays and scalars, assignments of expression trees, structured
control flow, barriers and calls of MSL builtins or header helpers. Nodes are frozen dataclasses
and hold no MSL text except names (variables, builtin or helper functions, MSL types): operators
are keys of the printer's table (`printer.OPERATORS`), so the spelling of MSL lives in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

# -- expressions ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Var:
    """A named variable, kernel parameter or attribute."""

    name: str


@dataclass(frozen=True)
class Lit:
    """A literal, already spelled for MSL by `msl_types.literal` (numbers only)."""

    text: str


@dataclass(frozen=True)
class Index:
    """`base[index]` (register arrays, buffers, threadgroup arrays)."""

    base: Expr
    index: Expr


@dataclass(frozen=True)
class Apply:
    """An operator from the printer's table applied to arguments (`add`, `lt`, `select`, ...)."""

    op: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Call:
    """A call of an MSL builtin or header helper function by name."""

    fn: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class MathCall:
    """A float math function whose namespace follows the math mode (`precise::`, `fast::`)."""

    fn: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Convert:
    """A value conversion `T(x)` (explicit: MSL refuses implicit bfloat and vector conversions)."""

    ctype: str
    arg: Expr


@dataclass(frozen=True)
class Reinterpret:
    """`as_type<T>(x)`: the same bits as another type of one size."""

    ctype: str
    arg: Expr


@dataclass(frozen=True)
class Member:
    """`base.field` (vector components)."""

    base: Expr
    field: str


@dataclass(frozen=True)
class PtrCast:
    """`(space T*)(base + offset)`: a typed view of a buffer or of the threadgroup scratch."""

    space: str
    ctype: str
    base: Expr
    byte_offset: int = 0


Expr = Union[Var, Lit, Index, Apply, Call, MathCall, Convert, Reinterpret, Member, PtrCast]

# -- statements ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Declare:
    """`[space] ctype name[count] [= init];` (count None: a scalar)."""

    name: str
    ctype: str
    count: int | None = None
    init: Expr | None = None
    space: str = ""
    const: bool = False


@dataclass(frozen=True)
class Assign:
    target: Expr
    value: Expr


@dataclass(frozen=True)
class ExprStmt:
    expr: Expr


@dataclass(frozen=True)
class If:
    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class ForRange:
    """`for (ctype var = lower; <var before upper>; var += step) { body }` (a kernel loop, not
    unrolled), counting as Python's `range` does: up while `var < upper` for a positive step, down
    while `var > upper` for a negative one; a step of zero runs no iteration."""

    var: str
    ctype: str
    lower: Expr
    upper: Expr
    step: Expr
    body: tuple[Stmt, ...]
    step_sign: int = 0
    """+1 or -1 when the step is a known constant of that sign; 0 when only the run time knows."""


@dataclass(frozen=True)
class Loop:
    """`while (true) { body }`, left by `Break`."""

    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class Break:
    pass


@dataclass(frozen=True)
class Barrier:
    """`threadgroup_barrier(mem_flags::...)`; `device` adds device-memory ordering."""

    device: bool = False


@dataclass(frozen=True)
class Scope:
    """`{ body }`: a C scope (keeps temporaries of one op local)."""

    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class LineMark:
    """`#line N "file"`: map what follows to a kernel source line."""

    line: int
    file: str


@dataclass(frozen=True)
class Comment:
    text: str


@dataclass(frozen=True)
class Staged:
    """No code: the threadgroup writes `nbytes` into threadgroup memory here (a layout
    conversion or a dot's operand staging), counted by the dot report (`dot_report`)."""

    nbytes: int


@dataclass(frozen=True)
class Guarded:
    """`#ifdef macro` ... `#endif`: code that exists only where `macro` is defined (the emulator's
    device printing: Metal never sees it)."""

    macro: str
    body: tuple[Stmt, ...]


Stmt = Union[Declare, Assign, ExprStmt, If, ForRange, Loop, Break, Barrier, Scope, LineMark, Comment, Staged, Guarded]


@dataclass
class Body:
    """A list of statements being built (one per nested region while lowering)."""

    stmts: list[Stmt] = field(default_factory=list)

    def add(self, stmt: Stmt) -> None:
        self.stmts.append(stmt)

    def freeze(self) -> tuple[Stmt, ...]:
        return tuple(self.stmts)
