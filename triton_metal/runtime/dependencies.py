"""The source hash of a `@jit` function: its own source plus everything it compiles in.

A compiled kernel depends on more than its own text: the `@jit` helpers it calls (and theirs),
and the global `tl.constexpr` values it reads. `cache_key(fn)` is the SHA-256 of

* the function's source and the line it starts on (error locations are compiled in);
* for every name the body loads that resolves (through the function's globals, its closure, or
  an attribute of a module it can see) to a `@jit` function: that name and the function's own
  `cache_key`, recursively, each function hashed once;
* for every name that resolves to a `tl.constexpr`: the name and the value's `repr`;
* for every other name that resolves through the closure or the globals to something that is
  not a module (a `tl` function or dtype captured by a kernel factory, ...): the name and a
  stable text of the value (`_stable_text`), so two closures of one source that capture
  different functions or dtypes never share a disk-cache entry; a plain Python function (a
  helper the kernel calls as Python) adds its source, so editing it invalidates the kernel
  (the helpers that helper calls are not followed).

This is what the on-disk cache keys on (DESIGN section 6), so an edit to a helper chosen through
a constexpr invalidates the kernels that call it. The walk reads the AST once per function and
the result is memoised on the function by the caller; it is not on the launch path.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import textwrap
import types
from typing import Any

from ..language import JITCallable, constexpr


def cache_key(fn: JITCallable) -> str:
    """The hex SHA-256 described in the module docstring."""
    return _hash(fn, {})


def _hash(fn: JITCallable, seen: dict[int, str]) -> str:
    known = seen.get(id(fn))
    if known is not None:
        return known
    seen[id(fn)] = "recursive:" + fn.__qualname__  # a placeholder breaks reference cycles
    digest = hashlib.sha256()
    digest.update(f"{fn.__module__}.{fn.__qualname__}:{fn.starting_line}\n".encode())
    digest.update(fn.src.encode())
    for name, value in sorted(_referenced(fn).items()):
        if isinstance(value, JITCallable):
            digest.update(f"\njit {name} {_hash(value, seen)}".encode())
        elif isinstance(value, constexpr):
            digest.update(f"\nconstexpr {name} {value.value!r}".encode())
        else:
            digest.update(f"\nvalue {name} {_stable_text(value)}".encode())
    key = digest.hexdigest()
    seen[id(fn)] = key
    return key


def _referenced(fn: JITCallable) -> dict[str, Any]:
    """Names the body loads that resolve (through the closure, the globals or module attributes)
    to something other than a module, with their values."""
    if not fn.src:
        return {}
    tree = ast.parse(textwrap.dedent(fn.src))
    scope = dict(fn.__globals__)
    code = getattr(fn.fn, "__code__", None)
    closure = getattr(fn.fn, "__closure__", None)
    if code is not None and closure:
        for name, cell in zip(code.co_freevars, closure):
            try:
                scope[name] = cell.cell_contents
            except ValueError:  # an empty cell: the name is not bound yet
                continue
    found: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            value = scope.get(node.id)
            dotted = node.id
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            dotted, value = _resolve_attribute(node, scope)
        else:
            continue
        if value is not None and not isinstance(value, types.ModuleType):
            found[dotted] = value
    return found


def _stable_text(value: object) -> str:
    """What a value the kernel names compiles into: functions by their qualified name, other
    objects by `repr` (tl dtypes print their names); an object whose repr is its address gets
    the address, which only costs disk-cache hits across processes, never a wrong kernel."""
    qualname = getattr(value, "__qualname__", None)
    module = getattr(value, "__module__", None)
    if _is_python_helper(value):
        try:
            source = inspect.getsource(value)
        except (OSError, TypeError):  # no source file: the code object stands for it
            code = value.__code__
            source = f"{code.co_code.hex()} {code.co_consts!r} {code.co_names!r}"
        return f"function {module}.{qualname}\n{source}"
    if callable(value) and isinstance(qualname, str):
        return f"{type(value).__name__} {module}.{qualname}"
    return f"{type(value).__qualname__} {value!r}"


def _is_python_helper(value: object) -> bool:
    """A plain Python function a kernel may call as Python (not one of the package's own)."""
    return (
        isinstance(value, types.FunctionType)
        and not getattr(value, "__triton_builtin__", False)
        and not (value.__module__ or "").startswith("triton_metal.")
    )


def _resolve_attribute(node: ast.Attribute, scope: dict[str, Any]) -> tuple[str, Any]:
    """`a.b.c` through modules only (never calling a property of an arbitrary object)."""
    parts: list[str] = []
    current: ast.expr = node
    while isinstance(current, ast.Attribute):
        parts.append(current.attr)
        current = current.value
    if not isinstance(current, ast.Name):
        return "", None
    value = scope.get(current.id)
    dotted = current.id
    for attr in reversed(parts):
        if not isinstance(value, types.ModuleType):
            return "", None
        value = getattr(value, attr, None)
        dotted += "." + attr
    return dotted, value
