"""`MSLPrinter`: the one place that turns the per-thread program into MSL text.

Dispatch is on the node class (`functools.singledispatchmethod`); a node without a rule is a bug
of the code generator and raises naming it. Operators are a table of format strings
(`OPERATORS`), so what an operation looks like in MSL is decided here and nowhere else. The math
mode picks the namespace of float math functions (`MathCall`).
"""

from __future__ import annotations

from functools import singledispatchmethod

from triton_metal.errors import internal_error

from .program import (
    Apply,
    Assign,
    Barrier,
    Break,
    Call,
    Comment,
    Convert,
    Declare,
    ExprStmt,
    ForRange,
    Guarded,
    If,
    Index,
    LineMark,
    Lit,
    Loop,
    MathCall,
    Member,
    PtrCast,
    Reinterpret,
    Scope,
    Staged,
    Stmt,
    Var,
)

OPERATORS: dict[str, str] = {
    # arithmetic (integer division, remainder and shifts go through header helpers that define
    # the cases C leaves undefined: see templates/helpers.metal)
    "add": "({0} + {1})",
    "sub": "({0} - {1})",
    "mul": "({0} * {1})",
    "fdiv": "({0} / {1})",
    "fdiv_fast": "km_div_fast({0}, {1})",
    "idiv": "km_idiv({0}, {1})",
    "irem": "km_irem({0}, {1})",
    "frem": "fmod({0}, {1})",
    "and": "({0} & {1})",
    "or": "({0} | {1})",
    "xor": "({0} ^ {1})",
    "land": "({0} && {1})",
    "lor": "({0} || {1})",
    "lxor": "({0} != {1})",
    "shl": "km_shl({0}, {1})",
    "shr": "km_shr({0}, {1})",
    "min": "min({0}, {1})",
    "max": "max({0}, {1})",
    # tl.minimum/maximum as Triton's min.f32/max.f32: a NaN operand gives the other one
    "fminnum": "fmin({0}, {1})",
    "fmaxnum": "fmax({0}, {1})",
    "fminimum": "km_fminimum({0}, {1})",
    "fmaximum": "km_fmaximum({0}, {1})",
    "mulhi": "mulhi({0}, {1})",
    "fma": "fma({0}, {1}, {2})",
    "neg": "(-{0})",
    "not": "(~{0})",
    "lnot": "(!{0})",
    "iabs": "abs({0})",
    "erf": "km_erf({0})",
    # comparisons
    "eq": "({0} == {1})",
    "ne": "({0} != {1})",
    "lt": "({0} < {1})",
    "le": "({0} <= {1})",
    "gt": "({0} > {1})",
    "ge": "({0} >= {1})",
    "select": "({0} ? {1} : {2})",
    # index arithmetic on thread ids, views
    "shr_raw": "({0} >> {1})",
    "shl_raw": "({0} << {1})",
    "cast_int": "int({0})",
    "idiv_raw": "({0} / {1})",
    "irem_raw": "({0} % {1})",
    "atomic_ptr": "((device atomic<{0}>*)&{1})",
    # the element's own address first, then its word: the emulator's bounds checks see the
    # element index (the buffer holds whole words, so the word's other half is always there)
    "atomic_word": "((device atomic_uint*)(&{0}[{1}] - (({1}) & 1)))",
    "half_word_shift": "((uint)(({0}) & 1) * 16u)",
    # a buffer seen as another element type (templates/helpers/pointer_view.metal)
    "view": "km_as<{0}>({1})",
}

MATH_NAMESPACES = {"safe": "precise::", "relaxed": "", "fast": "fast::"}


class MSLPrinter:
    """Prints statements and expressions of `codegen.program` as MSL."""

    def __init__(self, math_mode: str = "safe", indent: str = "  ") -> None:
        self.math_ns = MATH_NAMESPACES[math_mode]
        self.indent_unit = indent
        # singledispatchmethod builds a dispatcher on every attribute access: bind them once
        self._stmt = self.stmt
        self._expr = self.expr

    # -- statements ----------------------------------------------------------------------------
    def print_body(self, stmts: tuple[Stmt, ...] | list[Stmt], depth: int = 1) -> str:
        lines: list[str] = []
        for s in stmts:
            self._stmt(s, depth, lines)
        return "\n".join(lines) + ("\n" if lines else "")

    def _pad(self, depth: int) -> str:
        return self.indent_unit * depth

    def _nested(self, body: tuple[Stmt, ...], depth: int, out: list[str]) -> None:
        """The statements of a braced block, one level deeper."""
        for s in body:
            self._stmt(s, depth + 1, out)

    def _block(self, header: str, body: tuple[Stmt, ...], depth: int, out: list[str]) -> None:
        """`header {`, the body one level deeper, `}` (`header` is empty for a bare scope)."""
        pad = self._pad(depth)
        out.append(f"{pad}{header}{{")
        self._nested(body, depth, out)
        out.append(f"{pad}}}")

    @singledispatchmethod
    def stmt(self, node: object, depth: int, out: list[str]) -> None:
        raise internal_error(f"MSLPrinter has no rule for statement {type(node).__name__}: {node!r}")

    @stmt.register
    def _(self, node: Declare, depth: int, out: list[str]) -> None:
        parts = []
        if node.space:
            parts.append(node.space)
        if node.const:
            parts.append("const")
        parts.append(node.ctype)
        decl = " ".join(parts) + " " + node.name
        if node.count is not None:
            decl += f"[{node.count}]"
        if node.init is not None:
            decl += " = " + self._expr(node.init)
        out.append(self._pad(depth) + decl + ";")

    @stmt.register
    def _(self, node: Assign, depth: int, out: list[str]) -> None:
        out.append(f"{self._pad(depth)}{self._expr(node.target)} = {self._expr(node.value)};")

    @stmt.register
    def _(self, node: ExprStmt, depth: int, out: list[str]) -> None:
        out.append(f"{self._pad(depth)}{self._expr(node.expr)};")

    @stmt.register
    def _(self, node: If, depth: int, out: list[str]) -> None:
        pad = self._pad(depth)
        out.append(f"{pad}if ({self._cond(node.cond)}) {{")
        self._nested(node.then, depth, out)
        if node.orelse:
            out.append(f"{pad}}} else {{")
            self._nested(node.orelse, depth, out)
        out.append(f"{pad}}}")

    @stmt.register
    def _(self, node: ForRange, depth: int, out: list[str]) -> None:
        v, upper, step = node.var, self._expr(node.upper), self._expr(node.step)
        if node.step_sign > 0:
            cond = f"{v} < {upper}"
        elif node.step_sign < 0:
            cond = f"{v} > {upper}"
        else:
            cond = f"({step} > 0 ? {v} < {upper} : ({step} < 0 && {v} > {upper}))"
        header = f"for ({node.ctype} {v} = {self._expr(node.lower)}; {cond}; {v} += {step}) "
        self._block(header, node.body, depth, out)

    @stmt.register
    def _(self, node: Loop, depth: int, out: list[str]) -> None:
        self._block("while (true) ", node.body, depth, out)

    @stmt.register
    def _(self, node: Break, depth: int, out: list[str]) -> None:
        out.append(f"{self._pad(depth)}break;")

    @stmt.register
    def _(self, node: Barrier, depth: int, out: list[str]) -> None:
        flags = "mem_flags::mem_threadgroup | mem_flags::mem_device" if node.device else "mem_flags::mem_threadgroup"
        out.append(f"{self._pad(depth)}threadgroup_barrier({flags});")

    @stmt.register
    def _(self, node: Scope, depth: int, out: list[str]) -> None:
        self._block("", node.body, depth, out)

    @stmt.register
    def _(self, node: LineMark, depth: int, out: list[str]) -> None:
        out.append(f'#line {node.line} "{_ascii_path(node.file)}"')

    @stmt.register
    def _(self, node: Guarded, depth: int, out: list[str]) -> None:
        out.append(f"#ifdef {node.macro}")
        for s in node.body:
            self._stmt(s, depth, out)
        out.append("#endif")

    @stmt.register
    def _(self, node: Staged, depth: int, out: list[str]) -> None:
        pass  # a count for the dot report, no code

    @stmt.register
    def _(self, node: Comment, depth: int, out: list[str]) -> None:
        text = _ascii(node.text).replace("*/", "* /")
        out.append(f"{self._pad(depth)}// {text}")

    # -- expressions ---------------------------------------------------------------------------
    def _cond(self, e: object) -> str:
        text = self._expr(e)
        return text[1:-1] if _wrapped(text) else text

    @singledispatchmethod
    def expr(self, node: object) -> str:
        raise internal_error(f"MSLPrinter has no rule for expression {type(node).__name__}: {node!r}")

    @expr.register
    def _(self, node: Var) -> str:
        return node.name

    @expr.register
    def _(self, node: Lit) -> str:
        return node.text

    @expr.register
    def _(self, node: Index) -> str:
        return f"{self._expr(node.base)}[{self._expr(node.index)}]"

    @expr.register
    def _(self, node: Apply) -> str:
        try:
            fmt = OPERATORS[node.op]
        except KeyError:
            raise internal_error(f"MSLPrinter: unknown operator '{node.op}'") from None
        return fmt.format(*(self._expr(a) for a in node.args))

    @expr.register
    def _(self, node: Call) -> str:
        return f"{node.fn}(" + ", ".join(self._expr(a) for a in node.args) + ")"

    @expr.register
    def _(self, node: MathCall) -> str:
        return f"{self.math_ns}{node.fn}(" + ", ".join(self._expr(a) for a in node.args) + ")"

    @expr.register
    def _(self, node: Convert) -> str:
        return f"{node.ctype}({self._cond(node.arg)})"

    @expr.register
    def _(self, node: Reinterpret) -> str:
        return f"as_type<{node.ctype}>({self._cond(node.arg)})"

    @expr.register
    def _(self, node: Member) -> str:
        return f"{self._expr(node.base)}.{node.field}"

    @expr.register
    def _(self, node: PtrCast) -> str:
        base = self._expr(node.base)
        if node.byte_offset:
            return f"(({node.space} {node.ctype}*)((({node.space} uchar*){base}) + {node.byte_offset}))"
        return f"(({node.space} {node.ctype}*){base})"


def _wrapped(text: str) -> bool:
    """Whether the outer parentheses of `text` enclose all of it."""
    if not (text.startswith("(") and text.endswith(")")):
        return False
    depth = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0 and i != len(text) - 1:
                return False
    return True


def _ascii(text: str) -> str:
    return text.encode("ascii", "backslashreplace").decode("ascii").replace("\n", " ")


def _ascii_path(path: str) -> str:
    return _ascii(path).replace("\\", "/").replace('"', "'")
