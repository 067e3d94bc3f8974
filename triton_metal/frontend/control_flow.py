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
from dataclasses import dataclass
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import CompilationError, Loc
from ..ir import Block
from ..language import core as tlc
from ..language.aggregate import (
    aggregate_replace, is_aggregate, runtime_fields, same_compile_time_value, same_constexprs,
)
from ..language.block_pointer import block_pointer
from ..language.descriptor import tensor_descriptor
from ..language.types import int1
from .refusals import refusal
from .signature import descriptor_part_names
from .returns import LIVE, RET, ReturnSlotNeeded, has_return, has_value_return, in_source_order, walrus_names
from .values import is_tensor, unwrap

if TYPE_CHECKING:
    from .code_generator import CodeGenerator

_MISSING = object()


def _mismatch(name: str, then_type: Any, else_type: Any, definition: Loc, if_line: int) -> CompilationError:
    """A variable (or the function's result, `RET`) typed differently by the two branches of a
    run-time `if`, in Triton's words. The result's is located at the function's `definition`, as
    Triton locates it, its hint naming the `if`; a variable's at the `if` (by the caller)."""
    if name == RET:
        return CompilationError(
            f"Return type mismatch: {then_type} is returned on one path and {else_type} on another",
            definition,
            hint=f"return values of one type on every path, e.g. with .to(...) (the branches of the "
                 f"'if' at line {if_line} differ)",
        )
    return CompilationError(
        f"Mismatched type for {name}: '{name}' is {then_type} after the then branch but "
        f"{else_type} after the else branch",
        hint="give it one type in both branches, e.g. with .to(...)",
    )


def assigned_names(stmts: list[ast.stmt]) -> list[str]:
    """Names stored anywhere in `stmts`, in source order, each once."""
    return in_source_order((node.lineno, node.col_offset, node.id) for stmt in stmts for node in ast.walk(stmt)
                           if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store))


def _reassigned_in_loop(name: str) -> CompilationError:
    return CompilationError(
        f"the compile-time value '{name}' cannot be reassigned inside a run-time loop",
        hint="assign it before the loop, or use tl.static_range to unroll the loop",
    )


BLOCK_VIEWS = (tensor_descriptor, block_pointer)
"""Kernel values made of tensors plus compile-time facts (`parts()`, `rebuilt(parts)`,
`same_structure(other)`): they flow through regions as their parts."""


def rebuild(template: Any, leaves: Iterator[Any]) -> Any:
    """`template`'s structure (tuples, tensor descriptors, block pointers) filled with the next
    tensors from `leaves`."""
    raw = unwrap(template)
    if isinstance(raw, tuple):
        return tuple(rebuild(v, leaves) for v in raw)
    if is_aggregate(raw):  # its run-time fields; its constexprs stay
        return aggregate_replace(raw, **{n: rebuild(v, leaves) for n, v in runtime_fields(raw).items()})
    if isinstance(raw, BLOCK_VIEWS):  # e.g. a descriptor's base, shape and strides (`parts()`)
        return raw.rebuilt([next(leaves) for _ in raw.parts()])
    return next(leaves)


def _leaf_names(name: str, template: Any) -> list[str]:
    raw = unwrap(template)
    if isinstance(raw, tuple):
        return [n for i, v in enumerate(raw) for n in _leaf_names(f"{name}_{i}", v)]
    if is_aggregate(raw):
        return [n for f, v in runtime_fields(raw).items() for n in _leaf_names(f"{name}_{f}", v)]
    if isinstance(raw, tensor_descriptor):
        return list(descriptor_part_names(name, len(raw.block_shape)))
    if isinstance(raw, block_pointer):
        return raw.part_names(name)
    return [name]


class ControlFlowMixin:
    """Mixed into `CodeGenerator`."""

    # -- helpers --------------------------------------------------------------------------------
    def scalar_condition(self: CodeGenerator, cond: Any) -> Any:
        if cond.type.is_block():
            if cond.type.numel != 1:
                raise refusal("block_condition", shape=list(cond.type.shape))
            cond = self.semantic.item(cond)  # a one-element block is its element, as in Triton
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
        """A tensor, a number, a tensor descriptor, a block pointer, or a tuple of carriable
        values: what can flow through a region."""
        raw = unwrap(value)
        if is_tensor(value) or (isinstance(raw, (bool, int, float)) and not is_tensor(raw)):
            return True
        if isinstance(raw, BLOCK_VIEWS):
            return True
        if is_aggregate(raw):
            return all(self._carriable(v) for v in runtime_fields(raw).values())
        return isinstance(raw, tuple) and all(self._carriable(v) for v in raw)

    def _leaves(self: CodeGenerator, value: Any) -> list[Any]:
        """The tensors of a carriable value in order (numbers become constants here)."""
        raw = unwrap(value)
        if isinstance(raw, tuple):
            return [leaf for v in raw for leaf in self._leaves(v)]
        if is_aggregate(raw):
            return [leaf for v in runtime_fields(raw).values() for leaf in self._leaves(v)]
        if isinstance(raw, BLOCK_VIEWS):
            return [self.materialize(p) for p in raw.parts()]
        return [self.materialize(value)]

    def _same_structure(self: CodeGenerator, a: Any, b: Any) -> bool:
        ra, rb = unwrap(a), unwrap(b)
        if isinstance(ra, tuple) or isinstance(rb, tuple):
            return isinstance(ra, tuple) and isinstance(rb, tuple) and len(ra) == len(rb) and all(
                self._same_structure(x, y) for x, y in zip(ra, rb)
            )
        if is_aggregate(ra) or is_aggregate(rb):  # one class, equal constexprs, alike run-time fields
            return same_constexprs(ra, rb) and all(
                self._same_structure(x, y) for x, y in zip(runtime_fields(ra).values(), runtime_fields(rb).values())
            )
        if isinstance(ra, BLOCK_VIEWS) or isinstance(rb, BLOCK_VIEWS):
            # their compile-time facts (a block shape, ...): both sides must agree on them
            return isinstance(ra, BLOCK_VIEWS) and ra.same_structure(rb)
        return True

    def _define_carried(self: CodeGenerator, name: str, value: Any) -> None:
        """Bind a value rebuilt from region results or block arguments; its tensors are named
        after the variable (`acc`, or `acc_0`, `acc_1` for a tuple's elements)."""
        if not is_tensor(value):
            for leaf_name, leaf in zip(_leaf_names(name, value), self._leaves(value)):
                if leaf.handle.name_hint is None:
                    leaf.handle.name_hint = leaf_name
        self.define(name, value)

    @contextmanager
    def _in_region(self: CodeGenerator, block: Block) -> Iterator[None]:
        """Generate into `block`, a region of a run-time construct (a `return` there becomes data: returns.py)."""
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
        returned: list[bool] = []
        for block, stmts in ((then_block, node.body), (else_block, node.orelse)):
            self.scope = dict(before)
            if block is then_block and getattr(node, "guard_live", False):
                self.scope[LIVE] = self.live_true  # the guard's body runs only while live
            with self._in_region(block):
                self.visit_statements(stmts)
            returned.append(self.returned or (block is else_block and getattr(node, "guard_live", False)))
            self.returned = False
            scopes.append(self.scope)
        self.scope = before
        self._fill_returned_branches(scopes, returned, before, (then_block, else_block))
        then_scope, else_scope = scopes
        self.returned = all(returned)

        changed: list[str] = []
        for name in [*then_scope, *else_scope]:
            if name not in changed and (then_scope.get(name, _MISSING) is not before.get(name, _MISSING)
                                        or else_scope.get(name, _MISSING) is not before.get(name, _MISSING)):
                changed.append(name)
        merged: list[tuple[str, Any]] = []
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
            if not self._carriable(t) or not self._carriable(e) or not self._same_structure(t, e):
                raise CompilationError(
                    f"'{name}' cannot be merged after a run-time 'if': its branches give it values of different kinds",
                    hint="give it tensors (or tuples of tensors) of one structure in both branches",
                )
            with self.builder.insertion_block(then_block):
                t_leaves = self._leaves(t)
            with self.builder.insertion_block(else_block):
                e_leaves = self._leaves(e)
            for tv, ev in zip(t_leaves, e_leaves):
                if tv.type != ev.type:
                    raise _mismatch(name, tv.type, ev.type, self.source.loc(self.source.func_def), self._line(node))
            merged.append((name, t))
            then_values += t_leaves
            else_values += e_leaves
        with self.builder.insertion_block(then_block):
            self.builder.create_yield([v.handle for v in then_values])
        with self.builder.insertion_block(else_block):
            self.builder.create_yield([v.handle for v in else_values])
        if_op = self.builder.create_if(cond.handle, [v.handle.type for v in then_values], then_block, else_block)
        results = iter(tlc.tensor(r, v.type) for r, v in zip(if_op.results, then_values))
        for name, template in merged:
            self._define_carried(name, rebuild(template, results))

    def _fill_returned_branches(
        self: CodeGenerator, scopes: list[dict[str, Any]], returned: list[bool], before: dict[str, Any],
        blocks: tuple[Block, Block],
    ) -> None:
        """A branch that returned leaves the user's variables as they were (their values are
        never read); what it lacks beside the other branch is filled with placeholders there."""
        for i in (0, 1):
            if not returned[i]:
                continue
            mine, other = scopes[i], scopes[1 - i]
            fixed = {n: v for n, v in before.items() if n not in (LIVE, RET)}
            for special in (LIVE, RET):
                if special in mine:
                    fixed[special] = mine[special]
            if returned[1 - i]:
                scopes[i] = fixed
                continue
            with self.builder.insertion_block(blocks[i]):
                for name, value in other.items():
                    if name in fixed or value is before.get(name, _MISSING):
                        continue
                    fixed[name] = self.placeholder(value, before) if self._carriable(value) else value
            scopes[i] = fixed
        for i in (0, 1):
            if RET in scopes[1 - i] and RET not in scopes[i]:
                with self.builder.insertion_block(blocks[i]):
                    scopes[i][RET] = self.placeholder(scopes[1 - i][RET], before)

    def visit_IfExp(self: CodeGenerator, node: ast.IfExp) -> Any:
        cond = self.visit(node.test)
        if not is_tensor(cond):
            return self.visit(node.body if unwrap(cond) else node.orelse)
        cond = self.scalar_condition(cond)
        if walrus_names(node.body) or walrus_names(node.orelse):
            # the branches are regions of their own: a name assigned there has no value outside
            raise CompilationError(
                "an assignment expression (:=) in a branch of a conditional expression with a run-time "
                "condition is not supported",
                hint="assign before the expression, or use an if statement",
            )
        values: list[Any] = []
        blocks = (Block(), Block())
        for block, expr in zip(blocks, (node.body, node.orelse)):
            with self._in_region(block):
                values.append(self.materialize(self.visit(expr)))
        t, e = values
        if unwrap(t) is None and unwrap(e) is None:  # both sides are calls that return nothing
            for block in blocks:
                with self.builder.insertion_block(block):
                    self.builder.create_yield([])
            self.builder.create_if(cond.handle, [], blocks[0], blocks[1])
            return None
        if not is_tensor(t) or not is_tensor(e) or t.type != e.type:
            raise CompilationError(
                "Ternary expression with dynamic condition has inconsistent type: both sides of a "
                "run-time conditional expression must be tensors of one type, got "
                f"{getattr(t, 'type', t)} and {getattr(e, 'type', e)}",
                hint="cast one side with .to(...), or use tl.where",
            )
        for block, v in zip(blocks, values):
            with self.builder.insertion_block(block):
                self.builder.create_yield([v.handle])
        if_op = self.builder.create_if(cond.handle, [t.handle.type], blocks[0], blocks[1])
        return tlc.tensor(if_op.results[0], t.type)

    # -- loops ----------------------------------------------------------------------------------
    def _carry(self: CodeGenerator, body: list[ast.stmt], exclude: str | None, in_test: list[str] | None = None) -> _Carried:
        """The variables a loop carries: assigned in its test (`in_test`) or in `body` and holding
        a carriable value now."""
        assigned = list(dict.fromkeys([*(in_test or []), *assigned_names(body)]))
        # a name declared `tl.constexpr` stays a compile-time value: it is never carried as a
        # tensor (`_finish_loop` refuses the loop if it changes the value)
        names = [n for n in assigned if n != exclude and n not in self.declared_constexpr and n in self.scope
                 and self._carriable(self.scope[n])]
        if has_return(body):
            names += [n for n in (LIVE, RET) if n in self.scope]
        templates = [self.scope[n] for n in names]
        return _Carried(names, templates, [self._leaves(t) for t in templates])

    def _bind_carried(self: CodeGenerator, carried: _Carried, values: list[Any]) -> None:
        """Bind each carried name to its share of `values` (block arguments or loop results)."""
        flat = iter(tlc.tensor(v, leaf.type) for v, leaf in zip(values, carried.flat_inits))
        for name, template in zip(carried.names, carried.templates):
            self._define_carried(name, rebuild(template, flat))

    def _carried_handles(self: CodeGenerator, carried: _Carried, where: str) -> list[Any]:
        """The tensors of the carried variables' current values, each checked to keep the kind
        and types it had before the loop (`where`: the point of the loop that passes them on)."""
        values: list[Any] = []
        for name, template, inits in zip(carried.names, carried.templates, carried.leaves):
            if name not in self.scope:
                raise CompilationError(f"loop-carried variable '{name}' has no value {where}")
            value = self.scope[name]
            if not self._carriable(value) or not self._same_structure(value, template):
                raise CompilationError(
                    f"loop-carried variable '{name}' changes from {_describe(template)} before the loop "
                    f"to {_describe(value)} {where}",
                    hint="keep its kind and type fixed across iterations",
                )
            for leaf, init in zip(self._leaves(value), inits):
                if leaf.type != init.type:
                    raise CompilationError(
                        f"loop-carried variable '{name}' is {init.type} before the loop but {leaf.type} {where}",
                        hint="keep its type fixed, e.g. initialise it with the right dtype (tl.zeros(..., dtype=...)) or cast",
                    )
                values.append(leaf.handle)
        return values

    def _yield_carried(self: CodeGenerator, carried: _Carried) -> None:
        self.builder.create_yield(self._carried_handles(carried, "at the end of its body"))

    def check_condition_value(self: CodeGenerator, name: str, value: Any) -> None:
        """Refuse a value that a `:=` in a run-time loop's condition gives `name` and that cannot
        pass on to the body (a compile-time object)."""
        if not self._carriable(value):
            raise CompilationError(
                f"'{name}' is assigned a {type(unwrap(value)).__name__} in the condition of a run-time loop; "
                "only tensors, numbers, tuples of those and aggregates of tensors can pass from the condition to the body",
                hint="compute compile-time values before the loop",
            )

    def _forwarded(self: CodeGenerator, carried: _Carried, test: ast.expr, before: dict[str, Any]) -> tuple[_Carried, list[Any]]:
        """What a while loop's condition passes to the body and out of the loop (with their
        tensors): the carried variables as the condition leaves them (`while (i := i + 1) < n`
        steps `i` on every test, the last one included) and the variables that only the
        condition defines (`while (x := f(i)) > 0`), which the body and the code after the loop
        read."""
        handles = self._carried_handles(carried, "after the loop condition")
        new = [n for n in walrus_names(test)
               if n not in carried.names and n not in self.declared_constexpr and n in self.scope]
        for name in new:
            if name in before:  # not carried: a compile-time value before the loop
                raise _reassigned_in_loop(name)
            self.check_condition_value(name, self.scope[name])
        templates = [self.scope[n] for n in new]
        leaves = [self._leaves(t) for t in templates]
        handles += [leaf.handle for ls in leaves for leaf in ls]
        out = _Carried(carried.names + new, carried.templates + templates, carried.leaves + leaves)
        return out, handles

    def _finish_loop(
        self: CodeGenerator, node: ast.AST, before: dict[str, Any], after: dict[str, Any],
        carried: _Carried, results: list[Any], target: str | None,
    ) -> None:
        for name, value in before.items():
            if name not in carried.names and name in after and after[name] is not value and not (
                    name in self.declared_constexpr and same_compile_time_value(after[name], value)):
                raise _reassigned_in_loop(name)
        self.scope = dict(before)
        self._bind_carried(carried, results)
        for name in after:
            if name not in before and name not in carried.names:
                self.poisoned[name] = ("loop_local_name", self._line(node))
        if target is not None and target not in carried.names:
            self.scope.pop(target, None)
            self.poisoned[target] = ("loop_local_name", self._line(node))

    def _with_return_slot(self: CodeGenerator, node: ast.For | ast.While, visit: Any) -> None:
        """Generate a loop; if its body returns a value the function had no slot for, discard
        the loop, make a slot of that value's types in front of it and generate it again."""
        block = self.builder.block
        assert block is not None
        mark = len(block.ops)
        scope, poisoned = dict(self.scope), dict(self.poisoned)
        try:
            visit(node)
        except ReturnSlotNeeded as need:
            del block.ops[mark:]
            self.scope, self.poisoned, self.returned = scope, poisoned, False
            self.scope[RET] = self.placeholder(need.value, scope)
            visit(node)

    def _end_loop_body(self: CodeGenerator, carried: _Carried, before: dict[str, Any]) -> None:
        # the body returned a value the loop does not carry (a value returned before the loop,
        # left as it was, needs no slot)
        if RET in self.scope and RET not in carried.names and self.scope[RET] is not before.get(RET):
            raise ReturnSlotNeeded(self.scope[RET])
        self.returned = False  # the body may run no times: what follows the loop is reachable
        self._yield_carried(carried)

    def visit_For(self: CodeGenerator, node: ast.For) -> None:
        if node.orelse:
            raise refusal("loop_else")
        if has_value_return(node.body) and RET not in self.scope:
            self._with_return_slot(node, self._visit_for)
        else:
            self._visit_for(node)

    def visit_While(self: CodeGenerator, node: ast.While) -> None:
        if node.orelse:
            raise refusal("loop_else")
        if has_value_return(node.body) and RET not in self.scope:
            self._with_return_slot(node, self._visit_while)
        else:
            self._visit_while(node)

    def _visit_for(self: CodeGenerator, node: ast.For) -> None:
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
        iv_ty, index_ty = self.semantic.loop_types([b.type.scalar for b in bounds])
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

        carried = self._carry(node.body, target)
        iv_name = None if downward else target
        for_op = self.builder.create_for(lb.handle, ub.handle, step.handle, carried.handles, iv_name)
        body = for_op.body.block
        before = dict(self.scope)
        with self._in_region(body):
            self._bind_carried(carried, list(body.args[1:]))
            index = tlc.tensor(body.args[0], iv_ty)
            if downward:
                index = self.semantic.add(start, self.semantic.mul(index, step_value))
            if index_ty != iv_ty:
                index = self.semantic.cast(index, index_ty)  # an unsigned index: the same bits
            self.define(target, index)
            self.visit_statements(node.body)
            self._end_loop_body(carried, before)
        self._finish_loop(node, before, self.scope, carried, list(for_op.results), target)

    def _visit_while(self: CodeGenerator, node: ast.While) -> None:
        # A `:=` in the test assigns on every test: such names are carried like the body's.
        carried = self._carry(node.body, None, walrus_names(node.test))
        before = dict(self.scope)
        cond_block = Block([h.type for h in carried.handles])
        with self._in_region(cond_block):
            self._bind_carried(carried, list(cond_block.args))
            cond = unwrap(self.loop_condition(node.test))
            if isinstance(cond, tlc.condition):
                cond = unwrap(cond.condition)
            if not is_tensor(cond):
                if cond:
                    raise refusal("infinite_loop")
                cond = self.semantic.to_tensor(False)
            cond = self.scalar_condition(cond)
            forwarded, handles = self._forwarded(carried, node.test, before)
            self.builder.create_condition(cond.handle, handles)
        while_op = self.builder.create_while(carried.handles, [h.type for h in handles], before=cond_block)
        self.scope = dict(before)
        with self._in_region(while_op.after.block):
            self._bind_carried(forwarded, list(while_op.after.block.args))
            if LIVE in carried.names:
                self.scope[LIVE] = self.live_true  # the condition let only live programs in
            self.visit_statements(node.body)
            self._end_loop_body(carried, before)
        self._finish_loop(node, before, self.scope, forwarded, list(while_op.results), None)


@dataclass
class _Carried:
    """The variables a loop carries, their values before it, and those values' tensors."""

    names: list[str]
    templates: list[Any]
    leaves: list[list[Any]]

    @property
    def flat_inits(self) -> list[Any]:
        return [leaf for leaves in self.leaves for leaf in leaves]

    @property
    def handles(self) -> list[Any]:
        return [leaf.handle for leaf in self.flat_inits]


def _describe(value: Any) -> str:
    raw = unwrap(value)
    if is_tensor(value):
        return str(value.type)
    if isinstance(raw, tuple):
        return "(" + ", ".join(_describe(v) for v in raw) + ")"
    if is_aggregate(raw):
        return f"{type(raw).__name__}(" + ", ".join(f"{n}={_describe(v)}" for n, v in vars(raw).items() if n in {
            f.name for f in type(raw)._tm_fields}) + ")"
    return repr(raw)
