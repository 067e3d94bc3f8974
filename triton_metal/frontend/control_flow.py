"""`if`, conditional expressions, `for` and `while` for the code generator.

Compile-time conditions fold: only the taken branch is generated. Run-time conditions (scalar
tensors) become `scf.if` whose regions yield every variable a branch (re)assigns; a variable
assigned in only one branch and new there has no value after the `if`. Loops become `scf.for`
(`range`, `tl.range`) or `scf.while`; variables that exist before the loop and are assigned in it
are loop-carried (their type must not change); variables first assigned inside have no value
after it. `tl.static_range` loops unroll.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import CompilationError
from ..ir import Block
from ..language import core as tlc
from ..language.types import dtype, int1, int32, int64
from .refusals import refusal
from .values import is_tensor, unwrap

if TYPE_CHECKING:
    from .code_generator import CodeGenerator

_MISSING = object()


def assigned_names(stmts: list[ast.stmt]) -> list[str]:
    """Names stored anywhere in `stmts`, in source order, each once."""
    found: list[tuple[int, int, str]] = []
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                found.append((node.lineno, node.col_offset, node.id))
    seen: dict[str, None] = {}
    for _, _, name in sorted(found):
        seen.setdefault(name, None)
    return list(seen)


class ControlFlowMixin:
    """Mixed into `CodeGenerator`."""

    # -- helpers --------------------------------------------------------------------------------
    def scalar_condition(self: CodeGenerator, cond: Any) -> Any:
        if cond.type.is_block():
            raise refusal("block_condition", shape=list(cond.type.shape))
        if not cond.type.is_bool():
            cond = self.semantic.cast(cond, int1)
        return cond

    def materialize(self: CodeGenerator, value: Any) -> Any:
        """A tensor for a value that must flow through a region (numbers become constants)."""
        raw = unwrap(value)
        if isinstance(raw, (bool, int, float)) and not is_tensor(raw):
            return self.semantic.to_tensor(raw)
        return value

    def _line(self: CodeGenerator, node: ast.AST) -> int:
        return self.source.loc(node).line

    def _carriable(self: CodeGenerator, value: Any) -> bool:
        raw = unwrap(value)
        return is_tensor(value) or (isinstance(raw, (bool, int, float)) and not is_tensor(raw))

    @contextmanager
    def _in_region(self: CodeGenerator, block: Block) -> Iterator[None]:
        """Generate into `block`, a region of a run-time construct (where `return` is refused)."""
        self.region_depth += 1
        try:
            with self.builder.insertion_block(block):
                yield
        finally:
            self.region_depth -= 1

    # -- if -------------------------------------------------------------------------------------
    def visit_If(self: CodeGenerator, node: ast.If) -> None:
        cond = self.visit(node.test)
        if not is_tensor(cond):
            self.visit_statements(node.body if unwrap(cond) else node.orelse)
            return
        cond = self.scalar_condition(cond)
        before = dict(self.scope)
        then_block, else_block = Block(), Block()
        scopes: list[dict[str, Any]] = []
        for block, stmts in ((then_block, node.body), (else_block, node.orelse)):
            self.scope = dict(before)
            with self._in_region(block):
                self.visit_statements(stmts)
            scopes.append(self.scope)
        self.scope = before
        then_scope, else_scope = scopes

        changed: list[str] = []
        for name in [*then_scope, *else_scope]:
            if name not in changed and (then_scope.get(name, _MISSING) is not before.get(name, _MISSING)
                                        or else_scope.get(name, _MISSING) is not before.get(name, _MISSING)):
                changed.append(name)
        merged: list[tuple[str, dtype]] = []
        then_values: list[Any] = []
        else_values: list[Any] = []
        for name in changed:
            t, e = then_scope.get(name, _MISSING), else_scope.get(name, _MISSING)
            if t is _MISSING or e is _MISSING:
                self.scope.pop(name, None)
                self.poisoned[name] = ("branch_only_name", self._line(node))
                continue
            if not self._carriable(t) and not self._carriable(e):
                if type(unwrap(t)) is type(unwrap(e)) and unwrap(t) == unwrap(e):
                    self.scope[name] = t
                    continue
                raise CompilationError(
                    f"'{name}' gets different compile-time values in the branches of a run-time 'if'",
                    hint="make it a tensor, or choose it with a tl.constexpr condition",
                )
            with self.builder.insertion_block(then_block):
                t = self.materialize(t)
            with self.builder.insertion_block(else_block):
                e = self.materialize(e)
            if not is_tensor(t) or not is_tensor(e):
                raise CompilationError(f"'{name}' cannot be merged after a run-time 'if': it is not a tensor in both branches")
            if t.type != e.type:
                raise CompilationError(
                    f"'{name}' is {t.type} after the then branch but {e.type} after the else branch",
                    hint="give it one type in both branches, e.g. with .to(...)",
                )
            merged.append((name, t.type))
            then_values.append(t.handle)
            else_values.append(e.handle)
        with self.builder.insertion_block(then_block):
            self.builder.create_yield(then_values)
        with self.builder.insertion_block(else_block):
            self.builder.create_yield(else_values)
        if_op = self.builder.create_if(cond.handle, [v.type for v in then_values], then_block, else_block)
        for (name, ty), result in zip(merged, if_op.results):
            self.define(name, tlc.tensor(result, ty))

    def visit_IfExp(self: CodeGenerator, node: ast.IfExp) -> Any:
        cond = self.visit(node.test)
        if not is_tensor(cond):
            return self.visit(node.body if unwrap(cond) else node.orelse)
        cond = self.scalar_condition(cond)
        values: list[Any] = []
        blocks = (Block(), Block())
        for block, expr in zip(blocks, (node.body, node.orelse)):
            with self._in_region(block):
                values.append(self.materialize(self.visit(expr)))
        t, e = values
        if not is_tensor(t) or not is_tensor(e) or t.type != e.type:
            raise CompilationError(
                "both sides of a run-time conditional expression must be tensors of one type, got "
                f"{getattr(t, 'type', t)} and {getattr(e, 'type', e)}",
                hint="cast one side with .to(...), or use tl.where",
            )
        for block, v in zip(blocks, values):
            with self.builder.insertion_block(block):
                self.builder.create_yield([v.handle])
        if_op = self.builder.create_if(cond.handle, [t.handle.type], blocks[0], blocks[1])
        return tlc.tensor(if_op.results[0], t.type)

    # -- loops ----------------------------------------------------------------------------------
    def _loop_carried(self: CodeGenerator, body: list[ast.stmt], exclude: str | None) -> list[str]:
        return [n for n in assigned_names(body) if n != exclude and n in self.scope and self._carriable(self.scope[n])]

    def _check_constants_unchanged(self: CodeGenerator, before: dict[str, Any], after: dict[str, Any], carried: list[str]) -> None:
        for name, value in before.items():
            if name not in carried and name in after and after[name] is not value:
                raise CompilationError(
                    f"the compile-time value '{name}' cannot be reassigned inside a run-time loop",
                    hint="assign it before the loop, or use tl.static_range to unroll the loop",
                )

    def _finish_loop(
        self: CodeGenerator, node: ast.AST, before: dict[str, Any], after: dict[str, Any],
        carried: list[str], types: list[dtype], results: list[Any], target: str | None,
    ) -> None:
        self._check_constants_unchanged(before, after, carried)
        self.scope = dict(before)
        for name, ty, res in zip(carried, types, results):
            self.define(name, tlc.tensor(res, ty))
        for name in after:
            if name not in before:
                self.poisoned[name] = ("loop_local_name", self._line(node))
        if target is not None and target not in carried:
            self.scope.pop(target, None)
            self.poisoned[target] = ("loop_local_name", self._line(node))

    def _yield_carried(self: CodeGenerator, carried: list[str], types: list[dtype]) -> None:
        values = []
        for name, ty in zip(carried, types):
            if name not in self.scope:
                raise CompilationError(f"loop-carried variable '{name}' has no value at the end of the loop body")
            v = self.materialize(self.scope[name])
            if not is_tensor(v) or v.type != ty:
                got = v.type if is_tensor(v) else repr(unwrap(v))
                raise CompilationError(
                    f"loop-carried variable '{name}' is {ty} before the loop but {got} at the end of its body",
                    hint="keep its type fixed, e.g. initialise it with the right dtype (tl.zeros(..., dtype=...)) or cast",
                )
            values.append(v.handle)
        self.builder.create_yield(values)

    def visit_For(self: CodeGenerator, node: ast.For) -> None:
        if node.orelse:
            raise refusal("loop_else")
        it = unwrap(self.visit(node.iter))
        if not isinstance(node.target, ast.Name):
            raise refusal("for_target")
        target = node.target.id
        if isinstance(it, tlc.static_range):
            for i in it:
                self.define(target, tlc.constexpr(i))
                self.visit_statements(node.body)
                if self.returned:
                    break
            return
        if not isinstance(it, tlc.range):
            raise refusal("for_iterable")
        step_value = unwrap(it.step)
        if not is_tensor(step_value) and isinstance(step_value, int) and step_value == 0:
            raise refusal("zero_step")
        bounds = [self.materialize(b) for b in (it.start, it.end, it.step)]
        for b in bounds:
            if not is_tensor(b) or b.type.is_block() or not b.type.is_int() or b.type.is_bool():
                raise CompilationError(f"loop bounds must be integer scalars, got {getattr(b, 'type', b)}")
        iv_ty = int64 if any(b.type.int_bitwidth == 64 for b in bounds) else int32
        lb, ub, step = [self.semantic.cast(b, iv_ty) for b in bounds]
        downward = not is_tensor(step_value) and isinstance(step_value, int) and step_value < 0
        start = lb
        if downward:
            # scf.for counts upward: run i = 0, 1, ... for ceil((lb - ub) / -step) trips (at
            # least 0) and recompute the user's index as lb + i * step at the top of the body.
            sem = self.semantic
            neg = -step_value
            trips = sem.floordiv(sem.add(sem.sub(lb, ub), neg - 1), neg)  # lb - ub + neg - 1 >= 0 when any trip
            ub = sem.maximum(trips, sem.cast(sem.to_tensor(0), iv_ty))
            lb, step = sem.cast(sem.to_tensor(0), iv_ty), sem.cast(sem.to_tensor(1), iv_ty)

        carried = self._loop_carried(node.body, target)
        inits = [self.materialize(self.scope[n]) for n in carried]
        types = [t.type for t in inits]
        iv_name = None if downward else target
        for_op = self.builder.create_for(lb.handle, ub.handle, step.handle, [t.handle for t in inits], iv_name)
        body = for_op.body.block
        before = dict(self.scope)
        with self._in_region(body):
            for name, ty, arg in zip(carried, types, body.args[1:]):
                arg.name_hint = name
                self.scope[name] = tlc.tensor(arg, ty)
            index = tlc.tensor(body.args[0], iv_ty)
            if downward:
                index = self.semantic.add(start, self.semantic.mul(index, step_value))
            self.define(target, index)
            self.visit_statements(node.body)
            self._yield_carried(carried, types)
        self._finish_loop(node, before, self.scope, carried, types, list(for_op.results), target)

    def visit_While(self: CodeGenerator, node: ast.While) -> None:
        if node.orelse:
            raise refusal("loop_else")
        carried = self._loop_carried(node.body, None)
        inits = [self.materialize(self.scope[n]) for n in carried]
        types = [t.type for t in inits]
        while_op = self.builder.create_while([t.handle for t in inits], [t.handle.type for t in inits])
        before = dict(self.scope)
        cond_block, body = while_op.before.block, while_op.after.block
        with self._in_region(cond_block):
            for name, ty, arg in zip(carried, types, cond_block.args):
                arg.name_hint = name
                self.scope[name] = tlc.tensor(arg, ty)
            cond = unwrap(self.visit(node.test))
            if isinstance(cond, tlc.condition):
                cond = unwrap(cond.condition)
            if not is_tensor(cond):
                if cond:
                    raise refusal("infinite_loop")
                cond = self.semantic.to_tensor(False)
            cond = self.scalar_condition(cond)
            self.builder.create_condition(cond.handle, [self.scope[n].handle for n in carried])
        self.scope = dict(before)
        with self._in_region(body):
            for name, ty, arg in zip(carried, types, body.args):
                arg.name_hint = name
                self.scope[name] = tlc.tensor(arg, ty)
            self.visit_statements(node.body)
            self._yield_carried(carried, types)
        self._finish_loop(node, before, self.scope, carried, types, list(while_op.results), None)
