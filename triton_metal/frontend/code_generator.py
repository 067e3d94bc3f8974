"""`CodeGenerator`: the `@jit` function's Python AST -> an `ir.Module` with one `tt.func`.

Values in a kernel's scope are Python objects: `tl.tensor` (an IR value and its `tl` type),
`tl.constexpr` (compile-time values, folded in Python), tuples of those, dtypes, modules and
`@jit` functions. Builtins are called as Triton's code generator calls them: with
`_semantic=self.semantic` (and `_generator=self` where a builtin takes it, to inline combine
functions); `@jit` callees are inlined from their source with their own scope.

`visit` stamps the node's source location on the IR builder (so every op carries its line) and
gives any error raised below it that location, unless a more deeply nested node already did.
Control flow lives in `control_flow.py`, calls and name resolution in `calls.py`; what is refused
comes from `refusals.py`.
"""

from __future__ import annotations

import ast
import linecache
import operator as _op
import os
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from ..errors import CompilationError, Loc
from ..language import core as tlc
from ..language.aggregate import is_aggregate
from ..language.semantic import Semantic
from .calls import CallsMixin, InlineBudget
from .comprehensions import comprehension
from .control_flow import ControlFlowMixin
from .ir_builder import IRBuilder
from .refusals import refusal, refusal_for_node, store_refusal
from .returns import ReturnsMixin, ReturnSlotNeeded, guard
from .values import is_tensor, unwrap


_FRONT_END_DIR = os.path.dirname(os.path.abspath(__file__))


def outside_front_end(tb: TracebackType | None) -> TracebackType | None:
    """`tb` without the front end's frames (and `ast`'s visitor), as Triton's tracebacks leave
    out its code generator: what stays is the called builtin's own code."""
    frames = []
    while tb is not None:
        file = os.path.abspath(tb.tb_frame.f_code.co_filename)
        if os.path.dirname(file) != _FRONT_END_DIR and file != os.path.abspath(ast.__file__):
            frames.append(tb)
        tb = tb.tb_next
    kept: TracebackType | None = None
    for frame in reversed(frames):
        kept = TracebackType(kept, frame.tb_frame, frame.tb_lasti, frame.tb_lineno)
    return kept


def is_call(node: ast.AST) -> bool:
    """A call, or a statement that is a call alone (its result unused)."""
    return isinstance(node, ast.Call) or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call))


class FunctionSource:
    """Where a function's (dedented) source lives, to map AST positions to file positions."""

    def __init__(self, src: str, file: str, first_line: int) -> None:
        self.tree = ast.parse(src)
        self.file = file
        self.first_line = first_line
        # The source was dedented: add the def line's indentation back to columns.
        line = linecache.getline(file, first_line)
        self.col_shift = len(line) - len(line.lstrip()) if line.lstrip().startswith(("def ", "async def ")) else 0

    def loc(self, node: ast.AST) -> Loc:
        return Loc(
            self.file, self.first_line + node.lineno - 1, node.col_offset + self.col_shift,  # type: ignore[attr-defined]
            def_line=self.first_line, def_indent=self.col_shift,
        )

    @property
    def func_def(self) -> ast.FunctionDef:
        node = self.tree.body[0] if self.tree.body else None
        if not isinstance(node, ast.FunctionDef):
            raise CompilationError("the source of a @jit function must start with 'def'")
        return node


class CodeGenerator(ReturnsMixin, ControlFlowMixin, CallsMixin, ast.NodeVisitor):
    """Generates IR for one function body (the kernel, or an inlined `@jit` callee)."""

    def __init__(
        self,
        builder: IRBuilder,
        semantic: Semantic,
        source: FunctionSource,
        globals_: Mapping[str, Any],
        kernel_name: str,
        call_stack: tuple[Any, ...],
        debug: bool,
    ) -> None:
        self.builder = builder
        self.semantic = semantic
        self.source = source
        self.globals = globals_
        self.kernel_name = kernel_name
        self.call_stack = call_stack
        """The kernel, then the `calls.InlinedCall` of every `@jit` call being inlined here."""
        self.inline_budget = InlineBudget()
        """Shared by the kernel's generator and every callee's (see `calls.check_recursion`)."""
        self.debug = debug
        self.scope: dict[str, Any] = {}
        self.declared_constexpr: set[str] = set()
        """Names declared `name: tl.constexpr` without a value: what they are later assigned
        stays a compile-time value (`d0: tl.constexpr` then `d0, d1 = shape`)."""
        self.poisoned: dict[str, tuple[str, int]] = {}
        """Names without a value here: (refusal kind, line where they lost it)."""
        self.region_depth = 0
        """How many run-time regions (scf.if/for/while bodies) enclose the current statement."""
        self.returned = False
        """No statement after the current one runs (a `return` was generated on this path)."""
        self.return_value: Any = None
        self.live_true: Any = None
        """The constant true LIVE flag made at entry (see returns.py), or None."""
        self.runtime_return = False
        """A `return` was generated inside a run-time region."""
        self.none_return = False
        """Such a `return` gave no value."""

    # -- visiting -----------------------------------------------------------------------------
    def visit(self, node: ast.AST) -> Any:
        loc = self.source.loc(node) if hasattr(node, "lineno") else None
        saved = self.builder.loc
        if loc is not None:
            self.builder.set_loc(loc)
        try:
            return super().visit(node)
        except CompilationError as e:
            cause = e.__cause__
            if is_call(node) and e.loc is None and cause is not None and cause.__traceback__ is None:
                # a builtin's refusal: its cause (Triton's exception) gets the builtin's frames,
                # as Triton's cause carries the traceback into the language's code
                cause.__traceback__ = outside_front_end(e.__traceback__)
            located = e.with_context(loc, self.kernel_name)
            raise located from located.__cause__
        except ReturnSlotNeeded:
            raise
        except RecursionError:
            raise
        except Exception as e:  # a builtin's TypeError, say: report it at the user's line
            # chained as Triton chains it: a call's error is the cause (it happened in the
            # callee), with the callee's frames; an operator's is not (the message says it all;
            # its frames are ours)
            cause = e.with_traceback(outside_front_end(e.__traceback__)) if is_call(node) else None
            raise CompilationError(f"{type(e).__name__}: {e}", loc, kernel=self.kernel_name) from cause
        finally:
            self.builder.set_loc(saved)

    def generic_visit(self, node: ast.AST) -> Any:
        raise refusal_for_node(node)

    def visit_statements(self, stmts: list[ast.stmt]) -> None:
        for i, stmt in enumerate(stmts):
            if self.returned:
                break
            if self.may_have_returned():
                self.visit(guard(stmts[i:]))  # the rest runs only while the program has not returned
                break
            self.visit(stmt)

    # -- statements ---------------------------------------------------------------------------
    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring or a bare string
        if isinstance(node.value, ast.Call):
            self.visit_unused_call(node.value)
            return
        self.visit(node.value)

    def visit_Pass(self, node: ast.Pass) -> None:
        return None

    def visit_Assign(self, node: ast.Assign) -> None:
        value = self.visit(node.value)
        for target in node.targets:
            self.assign(target, value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        annotation = self._static_annotation(node.annotation)
        is_constexpr = annotation is tlc.constexpr or annotation == "constexpr"
        if node.value is None:
            # a bare annotation declares nothing at run time; `name: tl.constexpr` keeps what
            # the name is assigned later compile-time
            if is_constexpr and isinstance(node.target, ast.Name):
                self.declared_constexpr.add(node.target.id)
            return
        value = self.visit(node.value)
        if is_constexpr:
            if not isinstance(node.target, ast.Name):
                raise store_refusal(node.target)
            self.define(node.target.id, self.compile_time(node.target.id, value))
            return
        self.assign(node.target, value)

    @staticmethod
    def compile_time(name: str, value: Any) -> tlc.constexpr:
        """`value` for a name annotated tl.constexpr: refused when only known at run time."""
        if is_tensor(value):
            raise CompilationError(f"'{name}' is annotated tl.constexpr but its value is only known at run time")
        return tlc.constexpr(unwrap(value))

    def _static_annotation(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        try:
            return unwrap(self.visit(node))
        except CompilationError:
            return None

    def visit_NamedExpr(self, node: ast.NamedExpr) -> Any:
        """`(x := value)`: assigned as `x = value` is (a name declared `x: tl.constexpr` keeps
        a compile-time value), and the name's new value is the expression's."""
        self.assign(node.target, self.visit(node.value))
        return self.lookup(node.target.id)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise store_refusal(node.target)
        lhs = self.lookup(node.target.id)
        rhs = self.visit(node.value)
        self.assign(node.target, self.binary_op(node.op, lhs, rhs))

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            if target.id in self.declared_constexpr:
                self.define(target.id, self.compile_time(target.id, value))
            else:
                self.define(target.id, self.sanitize(value))
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            if any(isinstance(t, ast.Starred) for t in target.elts):
                raise refusal("star_args")  # before counting: `a, *rest = ...` is refused as itself
            items = tlc.to_python(value)
            if is_tensor(items) or not isinstance(items, (tuple, list)):
                raise CompilationError(f"cannot unpack a {type(items).__name__} into {len(target.elts)} names")
            if len(items) > len(target.elts):  # Python's words
                raise CompilationError(f"too many values to unpack (expected {len(target.elts)}, got {len(items)})")
            if len(items) < len(target.elts):
                raise CompilationError(f"not enough values to unpack (expected {len(target.elts)}, got {len(items)})")
            for t, v in zip(target.elts, items):
                self.assign(t, v)
            return
        if isinstance(target, ast.Starred):
            raise refusal("star_args")
        raise store_refusal(target)

    def sanitize(self, value: Any) -> Any:
        """What a plain assignment stores: Python numbers become scalar tensors (as in Triton),
        other compile-time values stay compile-time."""
        raw = unwrap(value)
        if isinstance(raw, (bool, int, float)) and not is_tensor(raw):
            return self.semantic.to_tensor(raw)
        if isinstance(raw, tuple):  # a named tuple keeps its class
            return tlc.tuple_like(raw, [self.sanitize(v) for v in raw])
        return value

    def define(self, name: str, value: Any) -> None:
        if is_tensor(value) and value.handle is not None and getattr(value.handle, "name_hint", "x") is None:
            value.handle.name_hint = name
        self.scope[name] = value
        self.poisoned.pop(name, None)

    def visit_Assert(self, node: ast.Assert) -> None:
        cond = self.visit(node.test)
        msg = unwrap(self.visit(node.msg)) if node.msg is not None else ""
        if not is_tensor(cond):
            if not unwrap(cond):
                raise CompilationError(f"assertion failed: {msg}" if msg else "assertion failed")
            return
        if self.debug:
            self.semantic.device_assert(cond, str(msg))

    # -- expressions --------------------------------------------------------------------------
    def visit_Constant(self, node: ast.Constant) -> Any:
        return tlc.constexpr(node.value)

    def visit_Tuple(self, node: ast.Tuple) -> Any:
        return tuple(self.visit(e) for e in node.elts)

    def visit_List(self, node: ast.List) -> Any:
        return [self.visit(e) for e in node.elts]

    def visit_ListComp(self, node: ast.ListComp) -> Any:
        return comprehension(self, node)

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> Any:
        return comprehension(self, node)

    def visit_Name(self, node: ast.Name) -> Any:
        return self.lookup(node.id)

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        base = self.visit(node.value)
        if isinstance(base, tlc.constexpr) and node.attr == "value":
            return base  # `DTYPE.value` on a constexpr is its value, as in Triton
        if isinstance(base, (tlc.constexpr, tuple)) and node.attr == "type":
            return tlc.type_of(base)  # `tl.constexpr_type(value)`, a tuple's `tl.tuple_type`, as in Triton
        obj = base.value if isinstance(base, tlc.constexpr) else base
        result = getattr(obj, node.attr)
        return tlc.constexpr(result) if isinstance(result, (bool, int, float, str)) else result

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        base = self.visit(node.value)
        index = self.visit(node.slice)
        if is_tensor(base):
            return base.__getitem__(tlc.to_python(index), _semantic=self.semantic)
        if is_aggregate(base):  # its `__getitem__`: a Python method or a @jit one
            return self.call(getattr(base, "__getitem__"), [index], {}, "__getitem__")
        if is_tensor(index):
            raise CompilationError("a tuple or compile-time value cannot be indexed by a run-time tensor")
        result = tlc.to_python(base)[tlc.to_python(index)]
        return result if is_tensor(result) or isinstance(result, tuple) else tlc.constexpr(result)

    def visit_Slice(self, node: ast.Slice) -> Any:
        parts = [unwrap(self.visit(p)) if p is not None else None for p in (node.lower, node.upper, node.step)]
        return slice(*parts)

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        return self.binary_op(node.op, self.visit(node.left), self.visit(node.right))

    def binary_op(self, op: ast.operator, lhs: Any, rhs: Any) -> Any:
        method = _BINARY_METHODS.get(type(op))
        if method is None:
            raise refusal("unsupported_operator", name=type(op).__name__)
        if is_tensor(lhs):
            return getattr(lhs, method)(rhs, _semantic=self.semantic)
        if is_tensor(rhs):
            return getattr(rhs, "__r" + method[2:])(lhs, _semantic=self.semantic)
        return tlc.constexpr(_PY_BINARY[type(op)](unwrap(lhs), unwrap(rhs)))

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        operand = self.visit(node.operand)
        if is_tensor(operand):
            if isinstance(node.op, ast.Not):
                return operand.logical_not(_semantic=self.semantic)
            method = {ast.USub: "__neg__", ast.UAdd: "__pos__", ast.Invert: "__invert__"}[type(node.op)]
            return getattr(operand, method)(_semantic=self.semantic)
        v = unwrap(operand)
        result = {ast.USub: lambda: -v, ast.UAdd: lambda: +v, ast.Invert: lambda: ~v, ast.Not: lambda: not v}[type(node.op)]()
        return tlc.constexpr(result)

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        tensors: list[Any] = []
        last: Any = None
        for sub in node.values:
            value = self.visit(sub)
            if is_tensor(value):
                loc = self.source.loc(sub)
                tlc.warn_logical_on_block(value, (loc.file, loc.line))
                tensors.append(value)
                continue
            # Python's short circuit on compile-time operands: `False and ...` stops here.
            if bool(unwrap(value)) != is_and:
                return value
            last = value
        if not tensors:
            return last
        result = tensors[0]
        for t in tensors[1:]:
            result = (result.logical_and if is_and else result.logical_or)(t, _semantic=self.semantic)
        return result

    def visit_Compare(self, node: ast.Compare) -> Any:
        left = self.visit(node.left)
        result: Any = None
        for op, comparator in zip(node.ops, node.comparators):
            right = self.visit(comparator)
            one = self.compare(op, left, right)
            if result is None:
                result = one
            elif is_tensor(result) or is_tensor(one):
                a = result if is_tensor(result) else self.semantic.to_tensor(unwrap(result))
                result = a.logical_and(one, _semantic=self.semantic)
            elif not unwrap(result):
                return result  # `a < b < c` stops at the first false comparison
            else:
                result = one
            left = right
        return result

    def compare(self, op: ast.cmpop, lhs: Any, rhs: Any) -> Any:
        if isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)):
            # `mask is not None` on a tensor is a compile-time fact (a tensor is never None).
            if isinstance(op, (ast.In, ast.NotIn)) and (is_tensor(lhs) or is_tensor(rhs)):
                raise refusal("unsupported_operator", name=type(op).__name__ + " on tensors")
            a, b = tlc.to_python(lhs), tlc.to_python(rhs)
            return tlc.constexpr({
                ast.Is: lambda: a is b, ast.IsNot: lambda: a is not b,
                ast.In: lambda: a in b, ast.NotIn: lambda: a not in b,
            }[type(op)]())
        method, reflected = _COMPARE_METHODS[type(op)]
        if is_tensor(lhs):
            return getattr(lhs, method)(rhs, _semantic=self.semantic)
        if is_tensor(rhs):
            return getattr(rhs, reflected)(lhs, _semantic=self.semantic)
        return tlc.constexpr(_PY_COMPARE[type(op)](unwrap(lhs), unwrap(rhs)))


_BINARY_METHODS: dict[type[ast.operator], str] = {
    ast.Add: "__add__", ast.Sub: "__sub__", ast.Mult: "__mul__", ast.Div: "__truediv__",
    ast.FloorDiv: "__floordiv__", ast.Mod: "__mod__", ast.Pow: "__pow__", ast.LShift: "__lshift__",
    ast.RShift: "__rshift__", ast.BitAnd: "__and__", ast.BitOr: "__or__", ast.BitXor: "__xor__",
}
_PY_BINARY: dict[type[ast.operator], Any] = {
    ast.Add: _op.add, ast.Sub: _op.sub, ast.Mult: _op.mul, ast.Div: _op.truediv,
    ast.FloorDiv: _op.floordiv, ast.Mod: _op.mod, ast.Pow: _op.pow, ast.LShift: _op.lshift,
    ast.RShift: _op.rshift, ast.BitAnd: _op.and_, ast.BitOr: _op.or_, ast.BitXor: _op.xor,
}
_COMPARE_METHODS: dict[type[ast.cmpop], tuple[str, str]] = {
    ast.Lt: ("__lt__", "__gt__"), ast.LtE: ("__le__", "__ge__"), ast.Gt: ("__gt__", "__lt__"),
    ast.GtE: ("__ge__", "__le__"), ast.Eq: ("__eq__", "__eq__"), ast.NotEq: ("__ne__", "__ne__"),
}
_PY_COMPARE: dict[type[ast.cmpop], Any] = {
    ast.Lt: _op.lt, ast.LtE: _op.le, ast.Gt: _op.gt, ast.GtE: _op.ge, ast.Eq: _op.eq, ast.NotEq: _op.ne,
}
