"""List comprehensions and generator expressions in kernels, unrolled at compile time.

`tl.tuple([v + 1 for v in values])` builds one value per element of a tuple known when the
kernel is compiled, as Triton's code generator does: the comprehension is evaluated here, its
element expression generated once per item, and the result is a tuple (a kernel's tuples are
Python tuples). What may be iterated is what has a length at compile time: a tuple or list (of
tensors or compile-time values), or `range` / `tl.static_range` with compile-time bounds; `if`
clauses must be compile-time conditions. Several `for` clauses nest as in Python. The names a
comprehension binds are its own: the enclosing scope sees them as they were before.

The interpreter runs comprehensions as Python, through the same two checks (`compile_time_items`,
`compile_time_condition`, called by its rewritten body), so both refuse the same programs.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import CompilationError
from ..language import core as tlc
from .refusals import refusal
from .values import is_tensor, unwrap

if TYPE_CHECKING:
    from .code_generator import CodeGenerator

ITERABLE_HINT = "iterate over a tuple, or over tl.static_range(...) with tl.constexpr bounds"


def comprehension(gen: CodeGenerator, node: ast.ListComp | ast.GeneratorExp) -> tuple[Any, ...]:
    """The tuple a list comprehension or generator expression denotes (module docstring)."""
    if any(c.is_async for c in node.generators):
        raise refusal("async")
    bound = {n.id for c in node.generators for n in ast.walk(c.target) if isinstance(n, ast.Name)}
    saved = {name: gen.scope[name] for name in bound if name in gen.scope}
    try:
        return tuple(_elements(gen, node.elt, node.generators))
    finally:
        for name in bound:
            gen.scope.pop(name, None)
        gen.scope.update(saved)


def _elements(gen: CodeGenerator, elt: ast.expr, clauses: list[ast.comprehension]) -> Iterator[Any]:
    if not clauses:
        yield gen.visit(elt)
        return
    clause, rest = clauses[0], clauses[1:]
    for item in compile_time_items(gen.visit(clause.iter)):
        _bind(gen, clause.target, item)
        if all(compile_time_condition(gen.visit(test)) for test in clause.ifs):
            yield from _elements(gen, elt, rest)


def compile_time_items(iterable: Any) -> tuple[Any, ...]:
    """The items of a comprehension's iterable, or a refusal when their number is not known
    when the kernel is compiled."""
    if is_tensor(iterable):
        raise CompilationError("a comprehension in a kernel cannot iterate over a tensor", hint=ITERABLE_HINT)
    value = unwrap(iterable)
    if isinstance(value, tlc.range):
        value = tlc.static_range(value.start, value.end, value.step)  # refuses run-time bounds
    if isinstance(value, (tuple, list, range, tlc.static_range)):
        return tuple(value)
    raise CompilationError(
        f"a comprehension in a kernel cannot iterate over a {type(value).__name__}", hint=ITERABLE_HINT
    )


def compile_time_condition(value: Any) -> bool:
    """A comprehension's `if`: its truth, or a refusal for a condition known only at run time."""
    if is_tensor(value):
        raise CompilationError(
            "a comprehension's 'if' must be a compile-time condition, got a tensor",
            hint="filter with tl.constexpr values, or select with tl.where",
        )
    return bool(unwrap(value))


def _bind(gen: CodeGenerator, target: ast.expr, item: Any) -> None:
    """Bind a comprehension's target as Python does, without turning numbers into tensors (an
    assignment would): the items keep what they are, compile-time values included."""
    if isinstance(target, ast.Name):
        gen.scope[target.id] = tlc.constexpr(item) if isinstance(item, (bool, int, float)) else item
        return
    if isinstance(target, (ast.Tuple, ast.List)):
        parts = unwrap(item)
        if is_tensor(parts) or not isinstance(parts, (tuple, list)) or len(parts) != len(target.elts):
            raise CompilationError(f"cannot unpack {type(parts).__name__} into {len(target.elts)} names")
        for t, v in zip(target.elts, parts):
            _bind(gen, t, v)
        return
    raise CompilationError("a comprehension's target must be a name or a tuple of names")
