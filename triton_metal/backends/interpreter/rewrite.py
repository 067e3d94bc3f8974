"""The interpreter runs each `@jit` body as Python, rewritten where Python and the kernel language
differ, so that a program means in the interpreter what it means compiled:

* `x = value`: a Python number bound to a name becomes a `tl` scalar (`acc = 0; acc.to(tl.int64)`,
  `acc.dtype`), as the front end's assignment makes it; `x: tl.constexpr = value` stays a
  compile-time value, and so does what is later assigned to a name declared `x: tl.constexpr`
  without a value (`d0: tl.constexpr` then `d0, d1 = shape`); `x += v` is `x = x + v`, and
  `(x := v)` assigns as `x = v` does.
* `a and b`, `a or b`, `not a`: on tensors, elementwise logical operations (compile-time operands
  short-circuit as in Python), the front end's rule.
* `x.type`: a literal's is its `tl.constexpr_type`, a tuple's its `tl.tuple_type` (`type_of`), as
  in the front end.
* `is`, `is not`, `isinstance`, `getattr` and `hasattr` see through `tl.constexpr` (so
  `getattr(tl, FUNC)` takes a compile-time name), as the front end's do.
* `for i in range(...)`: Python's `range` in a loop header is `tl.range`, as in the front end, so
  a bound known only at run time counts as the compiled loop does (`Semantic.loop_types`).
* comprehensions: what they iterate over and their `if` conditions go through the front end's
  checks (`frontend/comprehensions.py`: a tuple or a compile-time range, compile-time
  conditions), since the compiler unrolls them.
* `assert cond, msg`: a device assert when `cond` is a tensor (as Triton reads it), else a
  compile-time check, as the front end's.
* `return value` in a function whose `return`s sit inside `if`s or loops: once the call has run
  a run-time `if` (a tensor condition), `while` or `tl.range` loop that holds a `return`, its
  values return as tensors, as the front end's return slot makes them (`frontend/returns.py`):
  `if x < 0: return 1` gives an int32 scalar for a run-time `x` and `1` for a constexpr one.
* `f(...)`: a plain Python helper gets its compile-time arguments, positional and keyword, as
  Python values and gives a Python scalar result as a `tl.constexpr` (`call_python_helper`),
  as the front end calls it.

Arguments follow the front end too: a `@jit` helper receives every non-tensor argument as a
`tl.constexpr` (so `DTYPE.value` works), and so does a kernel's compile-time parameter.

    interpretable(fn) -> the rewritten function (cached; `fn` itself when its source is unknown)
    constexpr_args(fn, args, kwargs) -> the arguments as the body must see them
"""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

from triton_metal.language import constexpr, current_semantic, tensor
from triton_metal.language import range as tl_range
from triton_metal.language.aggregate import is_aggregate
from triton_metal.language.core import tuple_like, type_of, warn_logical_on_block
from triton_metal.frontend.calls import call_python_helper, is_python_function
from triton_metal.frontend.returns import has_return, nested_return

_RT = "__triton_metal_rt__"
_CACHE: dict[Any, Callable[..., Any]] = {}


# -- the operations the rewritten body calls --------------------------------------------------


def _unwrap(v: Any) -> Any:
    return v.value if isinstance(v, constexpr) else v


class _Runtime:
    """What a rewritten body reaches through its one extra closure variable."""

    @staticmethod
    def assigned(value: Any) -> Any:
        raw = _unwrap(value)
        if isinstance(raw, (bool, int, float)) and not isinstance(raw, tensor):
            sem = current_semantic()
            return sem.to_tensor(raw) if sem is not None else raw
        if isinstance(raw, tuple):  # a named tuple keeps its class, as in the front end
            return tuple_like(raw, [_Runtime.assigned(v) for v in raw])
        return value

    @staticmethod
    def constexpr_value(value: Any, name: str) -> constexpr:
        if isinstance(value, tensor):
            from triton_metal.errors import CompilationError

            raise CompilationError(f"'{name}' is annotated tl.constexpr but its value is only known at run time")
        return constexpr(_unwrap(value))

    @staticmethod
    def assigned_as(value: Any, declared: Any) -> Any:
        """`assigned`, except for the names of the target declared `tl.constexpr`: `declared`
        mirrors the target, a name's string where it was declared, False where not."""
        if isinstance(declared, str):
            return _Runtime.constexpr_value(value, declared)
        if declared is False:
            return _Runtime.assigned(value)
        items = _unwrap(value)
        if isinstance(items, tensor) or not isinstance(items, (tuple, list)) or len(items) != len(declared):
            return _Runtime.assigned(value)  # Python's unpacking says what is wrong
        return tuple(_Runtime.assigned_as(v, d) for v, d in zip(items, declared))

    class Returns:
        """Per call of a function with nested `return`s: whether it has met a run-time
        construct that holds one (after which its returns are tensors)."""

        def __init__(self) -> None:
            self.run_time = False

    @staticmethod
    def note_test(returns: _Runtime.Returns, test: Any) -> Any:
        """An `if`/`while` test of a construct holding a `return`, passed through."""
        if isinstance(test, tensor):
            returns.run_time = True
        return test

    @staticmethod
    def note_loop(returns: _Runtime.Returns, iterable: Any) -> Any:
        """A `for` loop's iterable, passed through: a `tl.range` is a run-time loop (a
        `tl.static_range` or a tuple is unrolled by the compiler)."""
        if isinstance(iterable, tl_range):
            returns.run_time = True
        return iterable

    @staticmethod
    def returned(returns: _Runtime.Returns, value: Any) -> Any:
        return _Runtime.assigned(value) if returns.run_time else value

    @staticmethod
    def type_of(value: Any) -> Any:
        """`value.type` as the front end's `visit_Attribute` gives it."""
        if isinstance(value, (constexpr, tuple, bool, int, float, str)) or value is None:
            return type_of(value)
        return value.type

    @staticmethod
    def spread(value: Any) -> tuple[Any, ...]:
        from triton_metal.frontend.calls import spread_items

        return spread_items(value)

    @staticmethod
    def comprehension_items(iterable: Any) -> tuple[Any, ...]:
        from triton_metal.frontend.comprehensions import compile_time_items

        return compile_time_items(iterable)

    @staticmethod
    def comprehension_condition(value: Any) -> bool:
        from triton_metal.frontend.comprehensions import compile_time_condition

        return compile_time_condition(value)

    @staticmethod
    def bool_op(is_and: bool, thunks: Sequence[Callable[[], Any]]) -> Any:
        fold = BoolFold(is_and)
        for thunk in thunks:
            fold.add(thunk())
            if not fold.go_on():
                break
        return fold.result()

    @staticmethod
    def bool_fold(is_and: bool) -> BoolFold:
        return BoolFold(is_and)

    @staticmethod
    def bool_result(fold: BoolFold, *_operands: Any) -> Any:
        return fold.result()

    @staticmethod
    def not_(value: Any) -> Any:
        if isinstance(value, tensor):
            return value.logical_not()
        return not _unwrap(value)

    @staticmethod
    def is_(a: Any, b: Any, negate: bool) -> bool:
        return (_unwrap(a) is _unwrap(b)) != negate

    @staticmethod
    def isinstance(obj: Any, classes: Any) -> bool:
        return isinstance(_unwrap(obj), _unwrap(classes))

    @staticmethod
    def getattr(obj: Any, name: Any, *default: Any) -> Any:
        return getattr(_unwrap(obj), _unwrap(name), *default)

    @staticmethod
    def hasattr(obj: Any, name: Any) -> bool:
        return hasattr(_unwrap(obj), _unwrap(name))

    @staticmethod
    def callee(fn: Any) -> Any:
        """What a body's call `fn(...)` calls: for a plain Python helper (not one of Python's
        builtins, whose names the front end maps to its own), a function that passes its
        arguments and gives its result as the front end's call does (`call_python_helper`);
        anything else as it is (no frame of its own, so nested `@jit` calls go as deep as they
        went)."""
        if is_python_function(fn) and getattr(fn, "__module__", None) != "builtins":
            return lambda *args, **kwargs: call_python_helper(fn, args, kwargs)
        return fn

    @staticmethod
    def loop_iterable(make: Any) -> Any:
        """What a loop header's `make(...)` calls: Python's `range` is `tl.range` there."""
        return tl_range if make is builtins.range else make

    @staticmethod
    def assert_(cond: Any, msg: Any) -> None:
        """`assert cond, msg`: a device assert of a tensor condition (Triton's meaning), a
        compile-time check of any other value, as the front end's `visit_Assert`."""
        text = str(_unwrap(msg))
        if isinstance(cond, tensor):
            sem = current_semantic()
            assert sem is not None  # the interpreter runs bodies under its semantic
            sem.device_assert(cond, text)
        elif not _unwrap(cond):
            from triton_metal.errors import CompilationError

            raise CompilationError(f"assertion failed: {text}" if text else "assertion failed")


# -- the rewrite -------------------------------------------------------------------------------


class BoolFold:
    """`and`/`or` over operands given one by one: block operands combine elementwise (all of
    them evaluated, as in Triton), a compile-time operand short-circuits as in Python."""

    def __init__(self, is_and: bool) -> None:
        self.is_and = is_and
        self.tensors: list[tensor] = []
        self.last: Any = None
        self.decided: Any = None
        self.done = False

    def add(self, value: Any) -> None:
        if isinstance(value, tensor):
            warn_logical_on_block(value)
            self.tensors.append(value)
        elif bool(_unwrap(value)) != self.is_and:
            self.decided, self.done = value, True  # Python's short circuit on a compile-time operand
        else:
            self.last = value

    def go_on(self) -> bool:
        return not self.done

    def result(self) -> Any:
        if self.done:
            return self.decided
        if not self.tensors:
            return self.last
        result = self.tensors[0]
        for t in self.tensors[1:]:
            result = result.logical_and(t) if self.is_and else result.logical_or(t)
        return result


def _rt(name: str) -> ast.expr:
    return ast.Attribute(value=ast.Name(id=_RT, ctx=ast.Load()), attr=name, ctx=ast.Load())


def _call(name: str, args: list[ast.expr], like: ast.AST) -> ast.expr:
    return ast.copy_location(ast.Call(func=_rt(name), args=args, keywords=[]), like)


def _thunk(body: ast.expr) -> ast.expr:
    no_args = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])
    return ast.copy_location(ast.Lambda(args=no_args, body=body), body)


def _is_constexpr_annotation(node: ast.expr) -> bool:
    text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ast.unparse(node)
    return text == "constexpr" or text.endswith(".constexpr")


def _declared_constexpr(fdef: ast.FunctionDef) -> frozenset[str]:
    """The names `fdef` declares `name: tl.constexpr` without a value."""
    return frozenset(
        n.target.id for n in ast.walk(fdef)
        if isinstance(n, ast.AnnAssign) and n.value is None and isinstance(n.target, ast.Name)
        and _is_constexpr_annotation(n.annotation)
    )


def _declared_pattern(target: ast.expr, declared: frozenset[str]) -> Any:
    """What `_Runtime.assigned_as` takes for `target`: its declared names, mirrored."""
    if isinstance(target, ast.Name):
        return target.id if target.id in declared else False
    if isinstance(target, (ast.Tuple, ast.List)):
        return tuple(_declared_pattern(t, declared) for t in target.elts)
    return False


def _mentions(pattern: Any) -> bool:
    return isinstance(pattern, str) or (isinstance(pattern, tuple) and any(map(_mentions, pattern)))


_RETURNS = "__triton_metal_returns__"
"""The local of a function with nested `return`s that holds its `_Runtime.Returns`."""


def _returns_local() -> ast.expr:
    return ast.Name(id=_RETURNS, ctx=ast.Load())


class _Rewriter(ast.NodeTransformer):
    def __init__(self, declared: frozenset[str] = frozenset(), track_returns: bool = False) -> None:
        self.declared = declared
        self.track_returns = track_returns
        self.folds = 0
        """`and`/`or` expressions rewritten without lambdas so far (their fold's name)."""

    def _note(self, node: ast.If | ast.While | ast.For) -> None:
        """Mark the call run-time when `node`, holding a `return`, is a run-time construct."""
        if not (self.track_returns and has_return([node])):
            return
        if isinstance(node, ast.For):
            node.iter = _call("note_loop", [_returns_local(), node.iter], node.iter)
        else:
            node.test = _call("note_test", [_returns_local(), node.test], node.test)

    def visit_If(self, node: ast.If) -> ast.AST:
        self.generic_visit(node)
        self._note(node)
        return node

    def visit_While(self, node: ast.While) -> ast.AST:
        self.generic_visit(node)
        self._note(node)
        return node

    def visit_Return(self, node: ast.Return) -> ast.AST:
        self.generic_visit(node)
        if self.track_returns and node.value is not None:
            node.value = _call("returned", [_returns_local(), node.value], node.value)
        return node

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        self.generic_visit(node)
        node.value = self._assigned(node.targets[0] if len(node.targets) == 1 else None, node.value)
        return node

    def _assigned(self, target: ast.expr | None, value: ast.expr) -> ast.expr:
        """`value` as an assignment to `target` stores it (None: several targets)."""
        pattern = _declared_pattern(target, self.declared) if target is not None else False
        if _mentions(pattern):
            return _call("assigned_as", [value, ast.Constant(value=pattern)], value)
        return _call("assigned", [value], value)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> ast.AST:
        # `(x := value)` assigns as `x = value` does, and gives the value assigned
        self.generic_visit(node)
        node.value = self._assigned(node.target, node.value)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        self.generic_visit(node)
        if node.value is not None:
            if _is_constexpr_annotation(node.annotation):
                name = ast.Constant(value=ast.unparse(node.target))
                node.value = _call("constexpr_value", [node.value, name], node.value)
            else:
                node.value = _call("assigned", [node.value], node.value)
        return node

    def visit_Starred(self, node: ast.Starred) -> ast.AST:
        # `f(*values)`: the compiler spreads tuples only (`frontend.calls.spread_items`)
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load):
            node.value = _call("spread", [node.value], node.value)
        return node

    def visit_comprehension(self, node: ast.comprehension) -> ast.AST:
        # the compiler unrolls comprehensions: what it iterates and filters on must be known
        # when the kernel is compiled, and the interpreter checks it with the compiler's checks
        self.generic_visit(node)
        node.iter = _call("comprehension_items", [node.iter], node.iter)
        node.ifs = [_call("comprehension_condition", [test], test) for test in node.ifs]
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.target, ast.Name):
            return node
        current = ast.copy_location(ast.Name(id=node.target.id, ctx=ast.Load()), node.target)
        value = ast.copy_location(ast.BinOp(left=current, op=node.op, right=node.value), node)
        return ast.copy_location(ast.Assign(targets=[node.target], value=_call("assigned", [value], node)), node)

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        is_and = ast.copy_location(ast.Constant(isinstance(node.op, ast.And)), node)
        if not any(isinstance(n, ast.NamedExpr) for v in node.values for n in ast.walk(v)):
            thunks = ast.copy_location(ast.List(elts=[_thunk(v) for v in node.values], ctx=ast.Load()), node)
            return _call("bool_op", [is_and, thunks], node)
        # A `:=` in an operand binds in the function's scope, which a lambda's would hide: the
        # operands are arguments of one call instead, each evaluated while the fold goes on.
        self.folds += 1
        name = f"_tm_bool_{self.folds}"
        fold = ast.NamedExpr(target=ast.Name(id=name, ctx=ast.Store()), value=_call("bool_fold", [is_and], node))
        args: list[ast.expr] = [fold]
        for v in node.values:
            add = ast.Call(func=ast.Attribute(value=ast.Name(id=name, ctx=ast.Load()), attr="add", ctx=ast.Load()),
                           args=[v], keywords=[])
            go_on = ast.Call(func=ast.Attribute(value=ast.Name(id=name, ctx=ast.Load()), attr="go_on", ctx=ast.Load()),
                             args=[], keywords=[])
            args.append(ast.IfExp(test=go_on, body=add, orelse=ast.Constant(None)))
        return ast.fix_missing_locations(ast.copy_location(
            ast.Call(func=_rt("bool_result"), args=args, keywords=[]), node))

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        return _call("not_", [node.operand], node) if isinstance(node.op, ast.Not) else node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            negate = ast.copy_location(ast.Constant(isinstance(node.ops[0], ast.IsNot)), node)
            return _call("is_", [node.left, node.comparators[0], negate], node)
        return node

    def visit_For(self, node: ast.For) -> ast.AST:
        self.generic_visit(node)
        it = node.iter
        if isinstance(it, ast.Call):
            it.func = _call("loop_iterable", [it.func], it.func)
        self._note(node)
        return node

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        self.generic_visit(node)
        msg = node.msg if node.msg is not None else ast.copy_location(ast.Constant(""), node)
        return ast.copy_location(ast.Expr(value=_call("assert_", [node.test, msg], node)), node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if node.attr == "type" and isinstance(node.ctx, ast.Load):
            # `(10).type`, `(5, 6).type`, `t.type` of a tuple: the front end's types
            return _call("type_of", [node.value], node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "getattr", "hasattr"):
            node.func = ast.copy_location(_rt(node.func.id), node.func)
        else:  # `f(a, k=b)` -> `rt.callee(f)(a, k=b)`
            node.func = _call("callee", [node.func], node.func)
        return node


def _source(fn: Callable[..., Any]) -> tuple[str, int, int] | None:
    """The function's dedented source from its `def`, the file line of the `def`, and the
    indentation removed."""
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("def ", "async def ")):
            indent = len(line) - len(line.lstrip())
            return textwrap.dedent("".join(lines[i:])), first + i, indent
    return None


def _rewrite(fn: Callable[..., Any]) -> Callable[..., Any]:
    found = _source(fn)
    if found is None:
        return fn
    src, def_line, indent = found
    tree = ast.parse(src)
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        return fn
    fdef.decorator_list = []
    track_returns = nested_return(fdef.body)  # the front end's rule
    _Rewriter(_declared_constexpr(fdef), track_returns).visit(fdef)
    if track_returns:  # the call's own record, made first
        start = ast.Assign(targets=[ast.Name(id=_RETURNS, ctx=ast.Store())], value=_call("Returns", [], fdef))
        fdef.body.insert(0, ast.copy_location(start, fdef.body[0]))
    for node in ast.walk(tree):
        if hasattr(node, "lineno"):
            node.lineno += def_line - 1  # type: ignore[attr-defined]
            if getattr(node, "end_lineno", None) is not None:
                node.end_lineno += def_line - 1  # type: ignore[attr-defined]
            node.col_offset += indent  # type: ignore[attr-defined]
            if getattr(node, "end_col_offset", None) is not None:
                node.end_col_offset += indent  # type: ignore[attr-defined]
    # The body's free variables and the runtime are closure variables of a maker function, so
    # the rewritten body keeps the original's globals and closure.
    free = list(fn.__code__.co_freevars)
    maker = ast.FunctionDef(
        name="__make__",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=_RT), *(ast.arg(arg=n) for n in free)],
                           kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[fdef, ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load()))],
        decorator_list=[], returns=None,
    )
    if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
        maker.type_params = []  # type: ignore[attr-defined]
    module = ast.Module(body=[maker], type_ignores=[])
    ast.fix_missing_locations(module)
    filename = fn.__code__.co_filename
    code = compile(module, filename, "exec")
    namespace: dict[str, Any] = {}
    exec(code, fn.__globals__, namespace)  # noqa: S102 - the user's own kernel source
    cells = []
    for name, cell in zip(free, fn.__closure__ or ()):
        try:
            cells.append(cell.cell_contents)
        except ValueError:
            cells.append(None)
    out = namespace["__make__"](_Runtime, *cells)
    out.__defaults__ = fn.__defaults__
    out.__kwdefaults__ = fn.__kwdefaults__
    out.__wrapped__ = fn  # type: ignore[attr-defined]
    if filename not in linecache.cache:
        linecache.checkcache(filename)
    return out


def interpretable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` rewritten for the interpreter (module docstring), built once per function."""
    out = _CACHE.get(fn)
    if out is None:
        out = _CACHE[fn] = _rewrite(fn)
    return out


def constexpr_args(fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """The arguments as the front end binds a helper's: tensors, tuples and aggregates as they
    are, anything else as a `tl.constexpr`."""

    def wrap(v: Any) -> Any:
        if isinstance(v, (tensor, constexpr, tuple, list)) or is_aggregate(v):
            return v
        return constexpr(v)

    return [wrap(a) for a in args], {k: wrap(v) for k, v in kwargs.items()}


def call_function(fn: Any, args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> Any:
    """Call a `@jit` function (or a plain Python function given as a combine function) as the
    interpreter runs device code."""
    target = getattr(fn, "fn", fn)
    wrapped_args, wrapped_kwargs = constexpr_args(target, args, dict(kwargs or {}))
    return interpretable(target)(*wrapped_args, **wrapped_kwargs)
