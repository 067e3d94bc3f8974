"""The syntax check the interpreter shares with the front end, so both refuse the same programs.

The front end refuses constructs as its code generator meets them (`refusals.py`); the NumPy
interpreter runs the kernel's Python body and would accept them. `check_kernel(kernel)` walks the
source of the kernel and of every `@jit` function it names (transitively, as `dependencies.py`
finds them; an aggregate's `@jit` method is checked when a call runs it, `check_called`, as the
compiler meets it only where a call inlines it, so a method no call runs is accepted on both
backends) and raises the front end's own `UnsupportedLanguageConstruct`, located at the node,
for the constructs the compiler refuses wherever they appear: `try`, `raise` (but for one under
`if`s on constexpr parameters alone, which the compiler meets only where such a branch is taken
for the specialization, and refuses there), `with`, `lambda`,
set and dict comprehensions, `async for` clauses, nested `def` and `class`,
`global`/`nonlocal`, `del`, `yield`, `async`, `match`, starred assignment targets and
`**kwargs`, assignments to attributes and subscripts, `break`/`continue`, a kernel that returns a value, and calls of callables
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
from .refusals import _NODE_KINDS, refusal, store_refusal

# Left to the interpreter, whose kernels are Python for debugging: f-strings and print, `import
# pdb`, and dict and set literals (scratch values while inspecting a kernel).
_SKIPPED = (ast.JoinedStr, ast.Import, ast.ImportFrom, ast.Dict, ast.Set)
_CHECKED = "_tm_static_check"


def check_kernel(kernel: JITCallable) -> None:
    """Raise the front end's refusal for the first construct it would refuse (module docstring)."""
    _check_reachable(kernel, kernel.__name__)


def check_called(fn: JITCallable) -> None:
    """Check a `@jit` function the interpreter is about to run (once per function): an
    aggregate's method is reached through an instance, not a name, so it is checked when a call
    runs it, as the compiler checks it when a call inlines it, and a method no call runs is
    accepted on both backends. The launch names the kernel in the error."""
    if getattr(fn, _CHECKED, None) is not True:
        _check_reachable(fn, None)


def _check_reachable(start: JITCallable, kernel_name: str | None) -> None:
    """Check `start` and the device functions it names, transitively (the first is the kernel
    when `kernel_name` is given)."""
    pending: list[tuple[JITCallable, bool]] = [(start, kernel_name is not None)]
    seen: set[int] = set()
    while pending:
        fn, is_kernel = pending.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        if getattr(fn, _CHECKED, None) is not True:
            _check_function(fn, is_kernel, kernel_name)
            try:
                setattr(fn, _CHECKED, True)
            except AttributeError:
                pass
        pending.extend((callee, False) for callee in _callees(fn))


def _callees(fn: JITCallable) -> list[JITCallable]:
    """The `@jit` functions `fn` names (an aggregate's methods are checked when called:
    `check_called`); a `constexpr_function` is Python run at compile time, so it is not checked."""
    from ..runtime.dependencies import _referenced

    return [value for value, _ in _referenced(fn).values()
            if isinstance(value, JITCallable) and not isinstance(value, ConstexprFunction)]


def _check_function(fn: JITCallable, is_kernel: bool, kernel_name: str | None) -> None:
    if not fn.src:
        return
    tree = ast.parse(textwrap.dedent(fn.src))
    func = tree.body[0] if tree.body else None
    if not isinstance(func, ast.FunctionDef):
        return
    file = getattr(getattr(fn.fn, "__code__", None), "co_filename", "<unknown>")
    spread = {id(a) for n in ast.walk(func) if isinstance(n, ast.Call) for a in n.args if isinstance(a, ast.Starred)}
    parents = {id(child): n for n in ast.walk(func) for child in ast.iter_child_nodes(n)}
    for node in ast.walk(func):
        if node is func or id(node) in spread:  # `f(*values)`: the compiler spreads a tuple
            continue
        if isinstance(node, ast.Raise) and _under_compile_time_branch(node, parents, _constexpr_parameters(func)):
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
    if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store):
        return store_refusal(node)
    if is_kernel and isinstance(node, ast.Return) and node.value is not None:
        if not (isinstance(node.value, ast.Constant) and node.value.value is None):
            return refusal("kernel_return_value")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        value: Any = fn.__globals__.get(node.func.id, None)
        if (value is not None and callable(value) and not is_allowed_global(value)
                and not is_python_function(value) and not _local(fn, node.func.id)):
            return refusal("python_call", name=node.func.id)
    return None


def _constexpr_parameters(func: ast.FunctionDef) -> set[str]:
    """The parameters annotated `tl.constexpr` (or `constexpr`)."""
    args = func.args.posonlyargs + func.args.args + func.args.kwonlyargs
    return {a.arg for a in args if a.annotation is not None and
            (ast.unparse(a.annotation).rsplit(".", 1)[-1] == "constexpr")}


def _compile_time(test: ast.expr, constexprs: set[str]) -> bool:
    """`test` is made of literals and constexpr parameters alone (comparisons, `and`/`or`/`not`)."""
    if isinstance(test, ast.Constant):
        return True
    if isinstance(test, ast.Name):
        return test.id in constexprs
    if isinstance(test, ast.Compare):
        return all(_compile_time(e, constexprs) for e in (test.left, *test.comparators))
    if isinstance(test, ast.BoolOp):
        return all(_compile_time(e, constexprs) for e in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _compile_time(test.operand, constexprs)
    return False


def _under_compile_time_branch(node: ast.AST, parents: dict[int, ast.AST], constexprs: set[str]) -> bool:
    """A `raise` inside `if`s that all test compile-time values, and no loop: the compiler meets
    it only when those branches are taken for the specialization (and refuses it there); Python
    (the interpreter) raises it there. Elsewhere it is refused wherever it appears."""
    ifs = 0
    parent = parents.get(id(node))
    while parent is not None and not isinstance(parent, ast.FunctionDef):
        if isinstance(parent, ast.If):
            if not _compile_time(parent.test, constexprs):
                return False
            ifs += 1
        elif not isinstance(parent, ast.stmt) or isinstance(parent, (ast.For, ast.While, ast.With, ast.Try)):
            return False
        parent = parents.get(id(parent))
    return ifs > 0


def _local(fn: JITCallable, name: str) -> bool:
    code = getattr(fn.fn, "__code__", None)
    return code is not None and (name in code.co_varnames or name in code.co_freevars)
