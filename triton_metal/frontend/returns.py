"""`return` anywhere: early returns from inside run-time `if`s and loops, by structured control flow.

The IR has no branches out of a region, so a `return` inside a run-time construct becomes data:
two hidden variables of the function's scope, threaded through every `scf.if` and loop like any
user variable:

- `LIVE` (an i1 scalar): false once the program has returned. It exists from the function's entry
  (a constant true) when its body has a `return` inside an `if`, `for` or `while`.
- `RET`: the value returned so far, for a `@jit` callee that returns one.

A statement after a construct that may have returned runs under `if LIVE:` (the rest of the block
is wrapped once), so nothing after a `return` has an effect; a loop whose body may return keeps
counting but does nothing more (`for`), or stops (`while`, whose condition becomes
`LIVE and cond`). A branch that returned leaves its variables as they were before the `if`
(their values there are never read), and missing values are filled with zeros of the type the
other branch gives them. Everything here is invisible to programs that do not return early:
without a nested `return`, neither variable exists.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..errors import CompilationError
from ..ir import Block
from ..ir.pointers import pointer_root
from ..ir.types import TensorType, element_type
from ..language import core as tlc
from ..language.aggregate import aggregate_replace, is_aggregate, runtime_fields
from ..language.block_pointer import block_pointer
from ..language.descriptor import tensor_descriptor
from .refusals import refusal
from .values import is_tensor, unwrap

if TYPE_CHECKING:
    from .code_generator import CodeGenerator

LIVE = "$live"
"""The scope name of the 'has not returned yet' flag."""
RET = "$ret"
"""The scope name of the value returned so far."""

_COMPOUND = (ast.If, ast.For, ast.While)


class ReturnSlotNeeded(Exception):
    """A loop body returns a value the function had no slot for before the loop: the loop is
    generated again after a slot of that value's structure is made in front of it."""

    def __init__(self, value: Any) -> None:
        super().__init__("internal: a return slot is needed")
        self.value = value


def nested_return(stmts: list[ast.stmt]) -> bool:
    """Whether a `return` sits inside an `if`, `for` or `while` among `stmts`."""
    return any(isinstance(n, ast.Return) for s in stmts if isinstance(s, _COMPOUND) for n in ast.walk(s))


def has_return(stmts: list[ast.stmt]) -> bool:
    return any(isinstance(n, ast.Return) for s in stmts for n in ast.walk(s))


def has_value_return(stmts: list[ast.stmt]) -> bool:
    return any(isinstance(n, ast.Return) and n.value is not None for s in stmts for n in ast.walk(s))


def guard(rest: list[ast.stmt]) -> ast.If:
    """`if LIVE: rest` (marked so that its missing else counts as a branch that returned)."""
    test = ast.copy_location(ast.Name(id=LIVE, ctx=ast.Load()), rest[0])
    node = ast.copy_location(ast.If(test=test, body=rest, orelse=[]), rest[0])
    node.guard_live = True  # type: ignore[attr-defined]
    return node


def in_source_order(found: Iterable[tuple[int, int, str]]) -> list[str]:
    """The names of (line, column, name) triples, in source order, each once."""
    return list(dict.fromkeys(name for _, _, name in sorted(found)))


def walrus_names(test: ast.expr) -> list[str]:
    """The names a condition's `:=`s assign, in source order, each once (a comprehension's own
    variables are its own; its `:=`s assign in the enclosing scope, as in Python)."""
    return in_source_order((n.lineno, n.col_offset, n.target.id) for n in ast.walk(test)
                           if isinstance(n, ast.NamedExpr))


class ReturnsMixin:
    """Mixed into `CodeGenerator`."""

    def begin_body(self: CodeGenerator, stmts: list[ast.stmt]) -> None:
        """Make the LIVE flag if the body returns from inside a construct."""
        self.live_true = None
        if nested_return(stmts):
            self.live_true = self.semantic.to_tensor(True)
            self.scope[LIVE] = self.live_true

    def may_have_returned(self: CodeGenerator) -> bool:
        """Whether the program may have returned at run time before the current statement."""
        live = self.scope.get(LIVE)
        return live is not None and live is not self.live_true

    def visit_Return(self: CodeGenerator, node: ast.Return) -> None:
        value = self.visit(node.value) if node.value is not None else None
        if len(self.call_stack) == 1 and unwrap(value) is not None:
            raise refusal("kernel_return_value")
        if self.region_depth == 0:
            self.return_value = value
            self.returned = True
            return
        self.runtime_return = True
        if unwrap(value) is None:
            self.none_return = True
        else:
            if not self._carriable(value):
                raise CompilationError(
                    "a value returned from inside a run-time 'if' or loop must be a tensor, a number or a "
                    f"tuple of those, got {type(unwrap(value)).__name__}",
                    hint="return compile-time values from compile-time branches only",
                )
            self.scope[RET] = self.sanitize(value)
        self.scope[LIVE] = self.semantic.to_tensor(False)
        self.returned = True

    def finish_body(self: CodeGenerator) -> Any:
        """The function's result once its body is generated."""
        if not self.runtime_return:
            return self.return_value
        value = self.scope.get(RET)
        falls_through = not self.returned
        if value is not None and (self.none_return or falls_through):
            raise CompilationError(
                "this function returns a value on some paths and nothing on others",
                hint="return a value of one type on every path",
            )
        return value

    def placeholder(self: CodeGenerator, like: Any, available: dict[str, Any]) -> Any:
        """Zeros of `like`'s structure and types: the value of a variable on a path that has
        returned (never read). A pointer has no zero on Apple GPUs (no integer-to-pointer
        conversion): it takes a pointer of its type from `available`, the values defined
        before the construct (a kernel's pointer argument, say)."""
        raw = unwrap(like)
        if isinstance(raw, tuple):
            return tuple(self.placeholder(v, available) for v in raw)
        if is_aggregate(raw):
            return aggregate_replace(raw, **{n: self.placeholder(v, available) for n, v in runtime_fields(raw).items()})
        if isinstance(raw, (tensor_descriptor, block_pointer)):
            return raw.rebuilt([self.placeholder(p, available) for p in raw.parts()])
        if not is_tensor(like):
            return like
        ty = like.type
        shape = list(ty.shape) if ty.is_block() else []
        if ty.scalar.is_ptr():
            return self._pointer_placeholder(like, shape, available)
        return self.semantic.full(shape, 0, ty.scalar)

    def _pointer_placeholder(self: CodeGenerator, like: Any, shape: list[int], available: dict[str, Any]) -> Any:
        """A pointer into the array `like` points into (the code generator merges only pointers
        into one array: `k = k_ptr + off` after an early return must not meet `q_ptr` on the
        returned path), else the first pointer of its type defined before the construct."""
        ty = like.type
        root = pointer_root(like.handle)
        if root is not None and element_type(root.type) == element_type(like.handle.type):
            if root.type == like.handle.type:
                return tlc.tensor(root, ty)
            if not isinstance(root.type, TensorType):
                pointer = tlc.tensor(root, ty.scalar)
                return self.semantic.splat(pointer, shape) if shape else pointer
        for value in available.values():
            if not is_tensor(value) or value.type.scalar != ty.scalar:
                continue
            if not value.type.is_block():
                return self.semantic.splat(value, shape) if shape else value
            if list(value.type.shape) == shape:
                return value
        raise CompilationError(
            "a pointer that is assigned or returned on only some paths of an early 'return' has no "
            "value on the others (no pointer of its type is defined before the 'return')",
            hint="assign the pointer before the 'if' or loop that returns",
        )

    def loop_condition(self: CodeGenerator, test: ast.expr) -> Any:
        """A loop's condition; once the loop body may have returned, `LIVE and cond` (the
        condition itself evaluated only while live; what its `:=`s assign leaves the `if` too,
        as zeros where the program has returned, never read)."""
        if not self.may_have_returned():
            return self.visit(test)
        from .control_flow import rebuild  # control_flow imports this module

        live = self.scope[LIVE]
        then_block, else_block = Block(), Block()
        before = dict(self.scope)
        names = walrus_names(test)
        with self._in_region(then_block):
            self.scope[LIVE] = self.live_true
            cond = unwrap(self.visit(test))
            if isinstance(cond, tlc.condition):
                cond = unwrap(cond.condition)
            cond = self.scalar_condition(self.semantic.to_tensor(cond))
            assigned = {n: self.scope[n] for n in names if n in self.scope}
            for name, value in assigned.items():
                self.check_condition_value(name, value)
            leaves = [leaf for v in assigned.values() for leaf in self._leaves(v)]
            self.builder.create_yield([cond.handle] + [leaf.handle for leaf in leaves])
        self.scope = before
        with self._in_region(else_block):
            fill = [leaf for v in assigned.values() for leaf in self._leaves(self.placeholder(v, before))]
            self.builder.create_yield([self.semantic.to_tensor(False).handle] + [leaf.handle for leaf in fill])
        if_op = self.builder.create_if(
            live.handle, [cond.handle.type] + [leaf.handle.type for leaf in leaves], then_block, else_block
        )
        results = iter(tlc.tensor(r, leaf.type) for r, leaf in zip(if_op.results[1:], leaves))
        for name, value in assigned.items():
            self._define_carried(name, rebuild(value, results))
        return tlc.tensor(if_op.results[0], cond.type)
