"""The syntax check the interpreter shares with the front end, so both refuse the same programs.

The front end refuses constructs as its code generator meets them (`refusals.py`); the NumPy
interpreter runs the kernel's Python body and would accept them. `check_kernel(kernel)` walks the
source of the kernel and of every `@jit` function it calls (transitively, as `dependencies.py`
finds them) and raises the front end's own `UnsupportedLanguageConstruct`, located at the node,
for the constructs the compiler refuses wherever they appear: `try`, `raise`, `with`, `lambda`,
set and dict comprehensions, `async for` clauses, nested `def` and `class`,
`global`/`nonlocal`, `del`, `yield`, `async`, `match`, starred assignment targets and
`**kwargs`, `:=`, `break`/`continue`, a kernel that returns a value, and calls of callables
from the kernel's globals that are neither allowed globals nor plain Python functions (those run
as Python at compile time, as the interpreter runs them: `calls.is_python_function`). Left to the interpreter, for debugging, as documented:
`print`, f-strings, `import pdb`, dict and set literals. `constexpr_function`s are Python run at
compile time and are not checked. A function is checked once
(memoised on it); the check is not on the compiled launch path.
"""

from __future__ import annotations

import ast
import textwrap
from typing import Any

from ..errors import CompilationError, Loc
from ..language import JITCallable
from ..language.jit_marker import ConstexprFunction
from .calls import is_allowed_global, is_python_function
from .refusals import _NODE_KINDS, refusal

# Left to the interpreter, whose kernels are Python for debugging: f-strings and print, `import
# pdb`, and dict and set literals (scratch values while inspecting a kernel).
_SKIPPED = (ast.JoinedStr, ast.Import, ast.ImportFrom, ast.Dict, ast.Set)
_CHECKED = "_tm_static_check"


def check_kernel(kernel: JITCallable) -> None:
    """Raise the front end's refusal for the first construct it would refuse (module docstring)."""
    pending: list[tuple[JITCallable, bool]] = [(kernel, True)]
    seen: set[int] = set()
    while pending:
        fn, is_kernel = pending.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        if getattr(fn, _CHECKED, None) is not True:
            _check_function(fn, is_kernel, kernel.__name__)
            try:
                setattr(fn, _CHECKED, True)
            except AttributeError:
                pass
        pending.extend((callee, False) for callee in _callees(fn))


def _callees(fn: JITCallable) -> list[JITCallable]:
    """The device functions `fn` calls; a `constexpr_function` is Python run at compile time,
    so it is not checked."""
    from ..runtime.dependencies import _referenced

    return [value for value, _ in _referenced(fn).values()
            if isinstance(value, JITCallable) and not isinstance(value, ConstexprFunction)]


def _check_function(fn: JITCallable, is_kernel: bool, kernel_name: str) -> None:
    if not fn.src:
        return
    tree = ast.parse(textwrap.dedent(fn.src))
    func = tree.body[0] if tree.body else None
    if not isinstance(func, ast.FunctionDef):
        return
    file = getattr(getattr(fn.fn, "__code__", None), "co_filename", "<unknown>")
    spread = {id(a) for n in ast.walk(func) if isinstance(n, ast.Call) for a in n.args if isinstance(a, ast.Starred)}
    for node in ast.walk(func):
        if node is func or id(node) in spread:  # `f(*values)`: the compiler spreads a tuple
            continue
        error = _refusal(node, fn, is_kernel)
        if error is not None:
            loc = Loc(file, fn.starting_line + getattr(node, "lineno", 1) - 1, getattr(node, "col_offset", 0))
            raise error.with_context(loc, kernel_name)


def _refusal(node: ast.AST, fn: JITCallable, is_kernel: bool) -> CompilationError | None:
    if isinstance(node, _SKIPPED):
        return None
    kind = _NODE_KINDS.get(type(node))
    if kind is not None:
        return refusal(kind)
    if isinstance(node, ast.comprehension) and node.is_async:
        return refusal("async")
    if isinstance(node, ast.keyword) and node.arg is None:
        return refusal("star_args")
    if is_kernel and isinstance(node, ast.Return) and node.value is not None:
        if not (isinstance(node.value, ast.Constant) and node.value.value is None):
            return refusal("kernel_return_value")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        value: Any = fn.__globals__.get(node.func.id, None)
        if (value is not None and callable(value) and not is_allowed_global(value)
                and not is_python_function(value) and not _local(fn, node.func.id)):
            return refusal("python_call", name=node.func.id)
    return None


def _local(fn: JITCallable, name: str) -> bool:
    code = getattr(fn.fn, "__code__", None)
    return code is not None and (name in code.co_varnames or name in code.co_freevars)
