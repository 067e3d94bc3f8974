"""The source hash of a `@jit` function: its own source plus everything it compiles in.

A compiled kernel depends on more than its own text: the `@jit` helpers it calls (and theirs),
and the global `tl.constexpr` values it reads. `cache_key(fn)` is the SHA-256 of

* the function's source and the line it starts on (error locations are compiled in);
* for every name the body loads that resolves (through the function's globals, its closure, or
  an attribute of a module it can see) to a `@jit` function: that name and the function's own
  `cache_key`, recursively, each function hashed once;
* for every name that resolves to an aggregate class: that class and every aggregate class it
  brings in (`aggregate_classes`: those it inherits from and, transitively, those their fields
  are annotated with or their Python methods and `__init__` name), each by its qualified name,
  its source (else its Python functions' code objects) and its fields' annotations and defaults
  as values; and the `cache_key` of each of their `@jit` methods;
* for every name that resolves to a `tl.constexpr`: the name and the value's `repr`;
* for every other name that resolves through the closure or the globals to something that is
  not a module (a `tl` function or dtype captured by a kernel factory, ...): the name and a
  stable text of the value (`_stable_text`), so two closures of one source that capture
  different functions or dtypes never share a disk-cache entry; a plain Python function (a
  helper the kernel calls as Python) adds its source, so editing it invalidates the kernel
  (the helpers that helper calls are not followed).

Names the function binds itself (its parameters, and every name it assigns, loops over, or
binds with `with ... as`, `except ... as`, an import or a comprehension) are its locals, as in
Python: a module global of the same name is not read and is not hashed (the README's kernel
assigns `x = tl.load(...)` while its module holds an array named `x`).

This is what the on-disk cache keys on (DESIGN section 6), so an edit to a helper chosen through
a constexpr invalidates the kernels that call it. The walk reads the AST once per function and
the result is memoised on the function by the caller; it is not on the launch path.

`used_globals(fn)` lists the `tl.constexpr` values the kernel and its callees read from their
globals and closures, each with a snapshot of its value. A launch calls `check_globals` on them
(a few dictionary look-ups): a global constexpr rebound or changed after the first compile
raises Triton's `RuntimeError` ("Global variable X has changed since we compiled this kernel,
from constexpr[1] to constexpr[2]") instead of running the stale kernel.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import inspect
import textwrap
import types
from dataclasses import dataclass
from typing import Any

from ..language import JITCallable, constexpr
from ..language.aggregate import field_aggregates, is_aggregate_class, jit_methods, python_methods
from ..language.jit_marker import closure_cells


@dataclass(frozen=True)
class UsedGlobal:
    """A constexpr a kernel read from a globals dict or a closure cell, and its value then."""

    name: str
    holder: Any
    """The function's globals (a dict) or the closure cell the name was read from."""
    snapshot: constexpr

    def current(self) -> Any:
        if isinstance(self.holder, dict):
            return self.holder.get(self.name, _MISSING)
        try:
            return self.holder.cell_contents
        except ValueError:
            return _MISSING


_MISSING = object()


def cache_key(fn: JITCallable) -> str:
    """The hex SHA-256 described in the module docstring."""
    return _hash(fn, {}, {})


def cache_key_and_globals(fn: JITCallable) -> tuple[str, tuple[UsedGlobal, ...]]:
    """`cache_key(fn)` and the constexprs it read (`used_globals`), in one walk."""
    used: dict[tuple[str, int], UsedGlobal] = {}
    key = _hash(fn, {}, used)
    return key, tuple(used.values())


def source_files(fn: JITCallable) -> tuple[str, ...]:
    """The files of `fn` and of the `@jit` functions it calls, transitively. They are not part
    of `cache_key` (a shipped tuning result names a kernel by it wherever the checkout lies), but
    the generated MSL cites them in its `#line` directives, so the disk cache keys on them too."""
    files: set[str] = set()
    pending, seen = [fn], {id(fn)}
    while pending:
        current = pending.pop()
        code = getattr(current.fn, "__code__", None)
        if code is not None:
            files.add(code.co_filename)
        for value, _holder in _referenced(current).values():
            for callee in device_functions(value):
                if id(callee) not in seen:
                    seen.add(id(callee))
                    pending.append(callee)
    return tuple(sorted(files))


def device_functions(value: Any) -> list[JITCallable]:
    """The device code a name a function reads brings in: a `@jit` function itself, or the
    `@jit` methods of an aggregate class and of the aggregates it brings in (`aggregate_classes`)."""
    if isinstance(value, JITCallable):
        return [value]
    return _jit_methods_of(_classes_read(value)) if is_aggregate_class(value) else []


def aggregate_classes(cls: type) -> list[type]:
    """`cls` and every aggregate class building or using a `cls` may run the code or read the
    defaults of: the aggregates it inherits from and, transitively, those their fields are
    annotated with and those their Python methods (`__init__` among them) name."""
    return list(_classes_read(cls))


def _classes_read(cls: type) -> dict[type, list[Any]]:
    """`aggregate_classes(cls)`, each mapped to what its Python methods read (`_names_read`)."""
    found: dict[type, list[Any]] = {}
    pending = [cls]
    while pending:
        klass = pending.pop(0)
        if klass in found:
            continue
        found[klass] = reads = [v for fn in python_methods(klass) for v in _names_read(fn)]
        pending += [k for k in klass.__mro__ if is_aggregate_class(k)] + field_aggregates(klass)
        pending += [v for v in reads if is_aggregate_class(v)]
    return found


def _jit_methods_of(classes: dict[type, list[Any]]) -> list[JITCallable]:
    found: list[JITCallable] = []
    for klass in classes:
        found += [m for m in jit_methods(klass) if m not in found]
    return found


def _keyed_apart(value: Any) -> bool:
    """Read by an aggregate's Python method and keyed on its own: modules (their attributes the
    code names are read), `@jit` functions and aggregate classes (hashed as such)."""
    return isinstance(value, (types.ModuleType, JITCallable)) or is_aggregate_class(value)


def _names_read(fn: types.FunctionType) -> list[Any]:
    """The values of the global and closure names a Python function (and the functions and
    comprehensions it defines) reads, and of the attributes it names of the modules it reads."""
    values = [value for value, _ in closure_cells(fn).values()]
    codes = [fn.__code__]
    names: set[str] = set()
    while codes:
        code = codes.pop()
        values += [fn.__globals__[n] for n in code.co_names if n in fn.__globals__]
        names.update(code.co_names)
        codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    # `module.Name`: the attributes the code names of the modules it reads (a superset)
    modules = [v for v in values if isinstance(v, types.ModuleType)]
    values += [vars(m)[n] for m in modules for n in sorted(names) if n in vars(m)]
    return values


def _unchanged(current: Any, snapshot: constexpr) -> bool:
    if not isinstance(current, constexpr):
        return False
    try:
        return type(current.value) is type(snapshot.value) and bool(current.value == snapshot.value)
    except Exception:  # noqa: BLE001 - a value whose == does not give one truth value
        return current.value is snapshot.value


def check_globals(used: tuple[UsedGlobal, ...]) -> None:
    """Raise Triton's RuntimeError when a constexpr read at compile time has changed since."""
    for g in used:
        current = g.holder.get(g.name, _MISSING) if type(g.holder) is dict else g.current()
        if type(current) is constexpr and current.value is g.snapshot.value:
            continue  # the very value compiled in (the common case, checked on every launch)
        if not _unchanged(current, g.snapshot):
            shown = "<deleted>" if current is _MISSING else current
            raise RuntimeError(
                f"Global variable {g.name} has changed since we compiled this kernel, "
                f"from {g.snapshot} to {shown}"
            )


def _hash(fn: JITCallable, seen: dict[int, str], used: dict[tuple[str, int], UsedGlobal]) -> str:
    known = seen.get(id(fn))
    if known is not None:
        return known
    seen[id(fn)] = "recursive:" + fn.__qualname__  # a placeholder breaks reference cycles
    digest = hashlib.sha256()
    digest.update(f"{fn.__module__}.{fn.__qualname__}:{fn.starting_line}\n".encode())
    digest.update(fn.src.encode())
    for name, (value, holder) in sorted(_referenced(fn).items()):
        if isinstance(value, JITCallable):
            digest.update(f"\njit {name} {_hash(value, seen, used)}".encode())
        elif is_aggregate_class(value):  # the classes it brings in (fields, __init__) and their @jit methods
            classes = _classes_read(value)
            for klass, reads in classes.items():
                digest.update(f"\naggregate {name} {klass.__module__}.{klass.__qualname__}\n{_class_text(klass)}".encode())
                # what its Python methods read, as a kernel's own helpers and values are keyed
                # (the helpers' callees are not followed)
                for read in reads:
                    if not _keyed_apart(read):
                        digest.update(f"\nread {_stable_text(read)}".encode())
            for method in _jit_methods_of(classes):
                digest.update(f"\njit {name}.{method.__qualname__} {_hash(method, seen, used)}".encode())
        elif isinstance(value, constexpr):
            digest.update(f"\nconstexpr {name} {value.value!r}".encode())
            if holder is not None and "." not in name:
                used.setdefault((name, id(holder)), UsedGlobal(name, holder, copy.copy(value)))
        else:
            digest.update(f"\nvalue {name} {_stable_text(value)}".encode())
    key = digest.hexdigest()
    seen[id(fn)] = key
    return key


def _referenced(fn: JITCallable) -> dict[str, tuple[Any, Any]]:
    """Names the body loads that resolve (through the closure, the globals or module attributes)
    to something other than a module: name -> (value, the globals dict or closure cell it was
    read from; None for a module attribute). The function's own locals are skipped."""
    if not fn.src:
        return {}
    tree = ast.parse(textwrap.dedent(fn.src))
    globals_dict = fn.__globals__
    scope = closure_cells(fn.fn)
    local = _local_names(tree)
    found: dict[str, tuple[Any, Any]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in local:
                continue
            value, holder = _lookup(node.id, scope, globals_dict)
            dotted = node.id
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            dotted, value = _resolve_attribute(node, scope, globals_dict, local)
            holder = None
        else:
            continue
        if value is not None and not isinstance(value, types.ModuleType):
            found[dotted] = (value, holder)
    return found


def _lookup(name: str, scope: dict[str, tuple[Any, Any]], globals_dict: dict[str, Any]) -> tuple[Any, Any]:
    if name in scope:
        return scope[name]
    if name in globals_dict:
        return globals_dict[name], globals_dict
    return None, None


def _local_names(tree: ast.AST) -> set[str]:
    """The names the kernel function binds (Python's rule: bound anywhere in the body means local
    everywhere in it), less those it declares `global` or `nonlocal`."""
    func = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if func is None:
        return set()
    args = func.args
    bound = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    bound |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    declared: set[str] = set()
    # A comprehension's variables live in a scope of their own (they do not shadow globals).
    scoped = {id(n) for c in ast.walk(func) if isinstance(c, ast.comprehension) for n in ast.walk(c.target)}
    for node in ast.walk(func):
        if node is func or id(node) in scoped:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
    return bound - declared


def _class_text(cls: type) -> str:
    """An aggregate class as a kernel compiles it in: its source (else the code of its Python
    functions), and its own fields' annotations and defaults as values (a default read from a
    global changes the key even where the source does not)."""
    try:
        code = inspect.getsource(cls)
    except (OSError, TypeError):  # no source file: its functions' code objects stand for it
        code = "\n".join(f"{fn.__qualname__} {_code_text(fn.__code__)}" for fn in python_methods(cls))
    own = cls.__dict__.get("__annotations__", {})
    fields = [f"field {f.name}: {_stable_text(f.annotation)}" + (f" = {_stable_text(f.default)}" if f.has_default else "")
              for f in cls._tm_fields if f.name in own]
    return "\n".join([code, *fields])


def _code_text(code: types.CodeType) -> str:
    """A code object's bytecode, constants and names, and those of the code objects it holds
    (not their reprs, which hold addresses)."""
    consts = ", ".join(_code_text(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts)
    return f"{code.co_code.hex()} ({consts}) {code.co_names!r}"


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
            source = _code_text(value.__code__)
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


def _resolve_attribute(
    node: ast.Attribute, scope: dict[str, tuple[Any, Any]], globals_dict: dict[str, Any], local: set[str]
) -> tuple[str, Any]:
    """`a.b.c` through modules only (never calling a property of an arbitrary object)."""
    parts: list[str] = []
    current: ast.expr = node
    while isinstance(current, ast.Attribute):
        parts.append(current.attr)
        current = current.value
    if not isinstance(current, ast.Name) or current.id in local:
        return "", None
    value, _holder = _lookup(current.id, scope, globals_dict)
    dotted = current.id
    for attr in reversed(parts):
        if not isinstance(value, types.ModuleType):
            return "", None
        try:
            value = getattr(value, attr, None)
        except Exception:  # noqa: BLE001 - a module's __getattr__ refusing the name (libdevice's
            # functions MSL lacks): no dependency; the front end refuses it if it is compiled
            return "", None
        dotted += "." + attr
    return dotted, value
