"""Name resolution and calls for the code generator.

* Names: local scope, then the variables the function closes over and its globals (only
  constexprs, modules, `@jit` functions and `tl` objects, as Triton allows for globals), then a small builtin namespace (`range` is `tl.range`, `print`
  is `tl.device_print`, `min`/`max` fold on constexprs and become `tl.minimum`/`tl.maximum` on
  tensors, and `len`, `isinstance`, `int`, `float`, `bool`, `abs`, `getattr`, `hasattr`, `tuple`
  run in Python on compile-time values).
* Calls: a `@jit` callee is inlined from its source (`call_JitFunction`, Triton's name, which the
  semantic layer also uses to inline combine functions); a `tl` builtin gets `_semantic=` (and
  `_generator=` when it takes one); `tl` classes and methods of compile-time `tl` objects (dtypes)
  run in Python; anything else is refused.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import math
from collections import ChainMap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from types import BuiltinFunctionType, FunctionType, ModuleType
from typing import TYPE_CHECKING, Any

from ..errors import CompilationError
from ..language import core as tlc
from ..language.aggregate import BoundMethod, is_aggregate
from ..language.context import active_semantic
from ..language.jit_marker import ConstexprFunction, JITCallable, bind_by_name, closure_cells
from ..language.semantic.base import check_noinline_arguments
from ..language.shape_ops import dtype_call
from ..language.types import dtype
from .refusals import refusal
from .values import is_tensor, unwrap

if TYPE_CHECKING:
    from .code_generator import CodeGenerator


class _Special:
    """A builtin name the code generator implements itself."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<kernel builtin {self.name}>"


PRINT, MIN, MAX = _Special("print"), _Special("min"), _Special("max")
_PYTHON_ALLOWED = (len, isinstance, int, float, bool, abs, getattr, hasattr, tuple)
BUILTIN_NAMESPACE: dict[str, Any] = {f.__name__: f for f in _PYTHON_ALLOWED}
BUILTIN_NAMESPACE.update({"range": tlc.range, "print": PRINT, "min": MIN, "max": MAX})


def _from_language(obj: Any) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module == "triton_metal.language" or module.startswith("triton_metal.language.")


def is_python_function(value: Any) -> bool:
    """A plain Python function (not a class, builtin `tl` function or `@jit` function): a kernel
    may call it, and it runs as Python at compile time (`_python_helper`)."""
    if isinstance(value, (JITCallable, type)) or tlc.is_builtin(value):
        return False
    return isinstance(value, (FunctionType, BuiltinFunctionType))


def is_allowed_global(value: Any) -> bool:
    """Triton's rule: kernels see only compile-time globals."""
    if isinstance(value, (tlc.constexpr, ModuleType, JITCallable, dtype, Enum)) or value is None:
        return True
    if tlc.is_builtin(value) or is_namedtuple_class(value):
        return True
    return (isinstance(value, type) or callable(value)) and _from_language(value)


@lru_cache(maxsize=None)
def _takes_parameter(fn: Any, name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _wrap(result: Any) -> Any:
    if isinstance(result, (bool, int, float, str)) or result is None:
        return tlc.constexpr(result)
    return result


def call_python_helper(fn: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    """How every backend calls a plain Python helper from a kernel: compile-time arguments,
    positional and keyword alike, as their Python values (tensors as they are), and a Python
    scalar result as a `tl.constexpr`."""
    plain = {k: tlc.to_python(v) for k, v in kwargs.items()}
    return _wrap(fn(*tlc.to_python(list(args)), **plain))


def is_const_annotation(node: ast.expr | None) -> bool:
    """`tl.const` (a pointer to constant data), not `tl.constexpr`."""
    if node is None:
        return False
    text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ast.unparse(node)
    return text == "const" or text.endswith(".const")


def spread_items(value: Any) -> tuple[Any, ...]:
    """The arguments `f(*value)` passes: the elements of a tuple (its length is known when the
    kernel is compiled)."""
    items = unwrap(value)
    if is_tensor(items) or not isinstance(items, (tuple, list)):
        raise CompilationError(f"'*' in a call needs a tuple, got a {type(items).__name__}",
                               hint="spread a tuple: `f(*values)`")
    return tuple(items)


def is_namedtuple_class(value: Any) -> bool:
    """A class made by `typing.NamedTuple` or `collections.namedtuple`: kernels may call it to
    build one, as Triton's may."""
    return isinstance(value, type) and issubclass(value, tuple) and hasattr(value, "_fields")


def is_constexpr_annotation(node: ast.expr | None) -> bool:
    if node is None:
        return False
    text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ast.unparse(node)
    return text == "constexpr" or text.endswith(".constexpr")


class CallsMixin:
    """Mixed into `CodeGenerator`."""

    # -- names ----------------------------------------------------------------------------------
    def lookup(self: CodeGenerator, name: str) -> Any:
        if name in self.scope:
            return self.scope[name]
        if name in self.poisoned:
            kind, line = self.poisoned[name]
            raise refusal(kind, name=name, line=line)
        if name in self.globals:
            value = self.globals[name]
            if not is_allowed_global(value) and not is_python_function(value):
                raise refusal("python_call" if callable(value) else "global_variable", name=name)
            return value
        if name in BUILTIN_NAMESPACE:
            return BUILTIN_NAMESPACE[name]
        if hasattr(builtins, name):
            raise refusal("python_call", name=name)
        raise CompilationError(f"name '{name}' is not defined")

    # -- calls ----------------------------------------------------------------------------------
    def visit_Call(self: CodeGenerator, node: ast.Call) -> Any:
        return self.call_node(node, self.visit(node.func))

    def visit_unused_call(self: CodeGenerator, node: ast.Call) -> None:
        """A call written as a statement of its own: refused, as in Triton, when the callee is
        marked `must_use_result` (its result is all it does)."""
        fn = self.visit(node.func)
        target = unwrap(fn)
        message = tlc.unused_result_message(
            target.__func__ if isinstance(target, BoundMethod) else target, ast.unparse(node.func)
        )
        if message is not None:
            raise CompilationError(message)
        self.call_node(node, fn)

    def call_node(self: CodeGenerator, node: ast.Call, fn: Any) -> Any:
        """The call `node` of the callee `fn` (its `node.func`, already evaluated)."""
        if any(k.arg is None for k in node.keywords):
            raise refusal("star_args")
        args: list[Any] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(spread_items(self.visit(a.value)))
            else:
                args.append(self.visit(a))
        kwargs = {k.arg: self.visit(k.value) for k in node.keywords if k.arg is not None}
        return self.call(fn, args, kwargs, ast.unparse(node.func))

    def call(self: CodeGenerator, fn: Any, args: list[Any], kwargs: dict[str, Any], name: str) -> Any:
        fn = unwrap(fn)
        if isinstance(fn, BoundMethod):  # an aggregate's @jit or constexpr_function method
            fn, args = fn.__func__, [fn.__self__, *args]
        if isinstance(fn, ConstexprFunction):  # runs now, on compile-time values
            return tlc.constexpr(fn(*args, **kwargs))
        if isinstance(fn, JITCallable):
            check_noinline_arguments(fn, args, kwargs)  # a call written in the kernel, not a combine function
            return self.call_JitFunction(fn, args, kwargs)
        if fn is PRINT:
            return self._device_print(args)
        if fn is MIN or fn is MAX:
            return self._min_max(fn is MIN, args, kwargs)
        if is_aggregate(fn):  # an aggregate called: its `__call__`, a @jit or a Python method
            return self.call(fn.__call__, args, kwargs, name)
        if tlc.is_builtin(fn):
            extra: dict[str, Any] = {"_semantic": self.semantic}
            if _takes_parameter(fn, "_generator"):
                extra["_generator"] = self
            return fn(*args, **kwargs, **extra)
        if any(fn is f for f in _PYTHON_ALLOWED):
            return _wrap(fn(*tlc.to_python(args), **tlc.to_python(kwargs)))
        if is_namedtuple_class(fn):
            return fn(*args, **kwargs)
        if isinstance(fn, dtype):  # `tl.float32(x)`
            return dtype_call(fn, *args, **kwargs, _semantic=self.semantic)
        if isinstance(fn, type) and _from_language(fn):
            return fn(*args, **kwargs)  # tl.range, tl.static_range, tl.constexpr, dtypes, ...
        if is_python_function(fn):
            return self._python_helper(fn, args, kwargs, name)
        owner = getattr(fn, "__self__", None)
        if is_aggregate(owner):  # a Python method of an aggregate, given `_semantic` as Triton gives it
            return _wrap(fn(*args, **kwargs, **self._builtin_extras(fn)))
        if owner is not None and not isinstance(owner, ModuleType) and (
            isinstance(owner, (dtype, tlc.constexpr)) or _from_language(type(owner))
        ):
            return _wrap(fn(*tlc.to_python(args), **tlc.to_python(kwargs)))  # e.g. `x.dtype.is_int()`
        raise refusal("python_call", name=name)

    def _builtin_extras(self: CodeGenerator, method: Any) -> dict[str, Any]:
        """`_semantic=` and `_generator=` for a method of an aggregate that takes them."""
        fn = method.__func__
        extras = {"_semantic": self.semantic, "_generator": self}
        return {k: v for k, v in extras.items() if _takes_parameter(fn, k)}

    def _python_helper(self: CodeGenerator, fn: Any, args: list[Any], kwargs: dict[str, Any], name: str) -> Any:
        """A plain Python function called from a kernel runs as Python, as the interpreter runs
        it: constexpr arguments as their values, tensors as tensors whose operators and `tl`
        calls build IR through this kernel's semantic (made current for the call)."""
        try:
            with active_semantic(self.semantic):
                return call_python_helper(fn, args, kwargs)
        except CompilationError:
            raise
        except Exception as e:  # noqa: BLE001 - the helper's own error, reported at the call
            raise CompilationError(
                f"the Python function '{name}' called from the kernel raised "
                f"{type(e).__name__}: {e}",
                hint="a Python helper runs at compile time on tl values; make it @triton_metal.jit "
                "if it needs control flow on tensor values",
            ) from None

    def _device_print(self: CodeGenerator, args: list[Any]) -> Any:
        from ..language import debug_ops

        prefix = ""
        if args and not is_tensor(args[0]) and isinstance(unwrap(args[0]), str):
            prefix, args = unwrap(args[0]), args[1:]
        return debug_ops.device_print(prefix, *args, _semantic=self.semantic)

    def _min_max(self: CodeGenerator, is_min: bool, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if kwargs or len(args) < 2:
            raise CompilationError(f"{'min' if is_min else 'max'}() in a kernel takes two or more positional arguments")
        if not any(is_tensor(a) for a in args):
            values = tlc.to_python(args)
            check_constexpr_min_max(is_min, values)
            return _wrap((min if is_min else max)(*values))
        from ..language import elementwise

        fold = elementwise.minimum if is_min else elementwise.maximum
        result = args[0]
        for a in args[1:]:
            result = fold(result, a, _semantic=self.semantic)
        return result

    # -- inlining @jit functions ----------------------------------------------------------------
    def call_JitFunction(self: CodeGenerator, fn: JITCallable, args: list[Any], kwargs: dict[str, Any]) -> Any:  # noqa: N802 - Triton's name
        from .code_generator import CodeGenerator, FunctionSource

        if not fn.src:
            raise CompilationError(f"the source of @jit function '{fn.__name__}' is not available")
        source = FunctionSource(fn.src, inspect.getsourcefile(fn.fn) or fn.fn.__code__.co_filename, fn.starting_line)
        fdef = source.func_def
        scope = bind_arguments(fn, fdef, args, kwargs)
        call = InlinedCall(fn, specialization_of(scope))
        check_recursion(call, self.call_stack, self.inline_budget)
        callee = CodeGenerator(
            self.builder, self.semantic, source, visible_globals(fn), self.kernel_name,
            (*self.call_stack, call), self.debug,
        )
        callee.scope = scope
        callee.inline_budget = self.inline_budget
        saved = self.builder.loc
        try:
            callee.begin_body(fdef.body)
            callee.visit_statements(fdef.body)
            return callee.finish_body()
        except CompilationError as e:
            # Triton's chain: the callee's error (located in the callee, at its `def` where no
            # statement of it is to blame; without the code generator's frames) is the cause of
            # an error at this call's site, which the caller's `visit` locates
            inner = e.with_context(source.loc(fdef), self.kernel_name).with_traceback(None)
            raise inner.at_call_site(fn.__name__) from inner
        finally:
            self.builder.set_loc(saved)


MAX_INLINE_DEPTH = 64
"""How deeply `@jit` calls may nest. A recursion that ends when the kernel is compiled (a shape
halved, a constexpr counted down) needs a few dozen levels at most; each inlined level takes
about ten of Python's frames, so 64 levels stay inside Python's default limit of 1000."""
MAX_RECURSIVE_INLINES = 4096
"""How many recursive calls one kernel may inline in all. Triton compiles each specialization
once; here each call is inlined, so a recursion that calls itself twice per level costs 2**depth
bodies, and this bound refuses it before it takes minutes."""


@dataclass(frozen=True)
class InlinedCall:
    """A `@jit` call being inlined: the function and its specialization (what Triton's mangled
    name of the callee encodes: the types of the run-time arguments and the constexpr values)."""

    fn: Any
    specialization: tuple[str, ...]


@dataclass
class InlineBudget:
    """The recursive calls inlined so far in one kernel (shared by every generator of it)."""

    recursive_calls: int = 0


def specialization_of(scope: Mapping[str, Any]) -> tuple[str, ...]:
    """A callee's specialization, from its bound arguments."""
    return tuple(f"{name}={_specialization_text(value)}" for name, value in scope.items())


def _specialization_text(value: Any) -> str:
    if isinstance(value, tlc.constexpr):
        return f"constexpr {value.value!r}"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_specialization_text(v) for v in value) + ")"
    if is_aggregate(value):
        fields = ", ".join(f"{k}={_specialization_text(v)}" for k, v in sorted(vars(value).items()))
        return f"{type(value).__name__}({fields})"
    ty = getattr(value, "type", None)
    return f"{type(value).__name__} {ty!r}" if ty is not None else repr(value)


def check_recursion(call: InlinedCall, stack: tuple[Any, ...], budget: InlineBudget) -> None:
    """Recursion is allowed where it ends when the kernel is compiled: every level is a different
    specialization of the function (a shape halved, a constexpr counted down), so a compile-time
    condition can stop it, as Triton compiles each specialization as a function of its own. A
    call with the specialization of an enclosing call of the same function would be inlined
    forever, and recursion past `MAX_INLINE_DEPTH` levels or `MAX_RECURSIVE_INLINES` calls is
    refused the way Python refuses runaway recursion."""
    name = call.fn.__name__
    # The kernel itself is at the bottom of the stack as a bare function: a kernel that calls
    # itself is taken as the same specialization (refused).
    enclosing = [c if isinstance(c, InlinedCall) else InlinedCall(c, ()) for c in stack]
    same_function = [c for c in enclosing if c.fn is call.fn]
    if not same_function:
        return
    if any(c.specialization in (call.specialization, ()) for c in same_function):
        raise refusal("recursion", name=name)
    if len(stack) > MAX_INLINE_DEPTH:  # the kernel and MAX_INLINE_DEPTH calls
        raise refusal("recursion_depth", name=name, limit=MAX_INLINE_DEPTH)
    budget.recursive_calls += 1
    if budget.recursive_calls > MAX_RECURSIVE_INLINES:
        raise refusal("recursion_calls", name=name, limit=MAX_RECURSIVE_INLINES)


def check_constexpr_min_max(is_min: bool, values: list[Any]) -> None:
    """Refuse `min`/`max` of compile-time floats with a NaN or a -0.0, as Triton refuses them:
    there Python's answer can depend on the order of the arguments (`min(nan, 1.0)` is NaN,
    `min(1.0, nan)` is 1.0; `min(0.0, -0.0)` is 0.0) where the device's does not."""
    floats = [v for v in values if isinstance(v, float)]
    if any(math.isnan(v) or (v == 0.0 and math.copysign(1.0, v) < 0.0) for v in floats):
        name = "min" if is_min else "max"
        raise CompilationError(
            f"{name}() of compile-time floats {tuple(values)} has no single answer: with a NaN or "
            "a -0.0, Python's result can depend on the order of the arguments",
            hint=f"compute it with tl.{'minimum' if is_min else 'maximum'} on tensors (NaN "
            "propagation chosen by propagate_nan), or pass values without NaN or -0.0",
        )


def visible_globals(fn: JITCallable) -> Mapping[str, Any]:
    """The names a function body sees besides its locals: the variables it closes over (they
    shadow globals, as in Python), then its module's globals. Both obey the same rule."""
    closure = {name: value for name, (value, _) in closure_cells(fn.fn).items()}
    return ChainMap(closure, fn.__globals__) if closure else fn.__globals__


def check_parameters(fdef: ast.FunctionDef) -> None:
    a = fdef.args
    if a.posonlyargs or a.kwonlyargs or a.kwarg:
        raise refusal("star_params")


def bind_arguments(fn: JITCallable, fdef: ast.FunctionDef, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The callee's initial scope: arguments by position and keyword, then defaults; a `*name`
    parameter is the tuple of the positional arguments left over, as in Python and Triton."""
    check_parameters(fdef)
    params = fdef.args.args
    names = [p.arg for p in params]
    vararg = fdef.args.vararg
    extra: tuple[Any, ...] = ()
    if vararg is not None:
        args, extra = args[: len(names)], tuple(args[len(names):])
    bound = bind_by_name(f"'{fn.__name__}'", names, args, kwargs, CompilationError)
    defaults = fn.fn.__defaults__ or ()
    first_default = len(names) - len(defaults)
    scope: dict[str, Any] = {}
    for i, (name, param) in enumerate(zip(names, params)):
        if name in bound:
            value = bound[name]
        elif i >= first_default:
            value = defaults[i - first_default]
        else:
            raise CompilationError(f"'{fn.__name__}' is missing the argument '{name}'")
        # A tensor passed to a `tl.constexpr` parameter stays a run-time value: Triton binds a
        # callee's arguments by their values, not its annotations (tutorial 06 passes its
        # offsets to `offs_m: tl.constexpr`).
        if is_constexpr_annotation(param.annotation) and not is_tensor(value):
            value = tlc.constexpr(unwrap(value))
        scope[name] = bound_value(value, name)
    if vararg is not None:
        scope[vararg.arg] = tuple(bound_value(v, vararg.arg) for v in extra)
    return scope


def bound_value(value: Any, name: str) -> Any:
    """An argument as the callee's scope holds it: a plain Python value becomes a constexpr; a
    run-time value without a name is named after the parameter."""
    if not is_tensor(value) and not isinstance(value, (tuple, list)) and not is_aggregate(value):
        return tlc.constexpr(value) if not isinstance(value, tlc.constexpr) else value
    if is_tensor(value) and value.handle is not None and getattr(value.handle, "name_hint", "") is None:
        value.handle.name_hint = name  # an unnamed value is best known by the parameter's name
    return value
