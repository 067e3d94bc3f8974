"""`JITCallable`: the type of every `@jit` function, as the front end and the interpreter see it.

The runtime's `JITFunction` (the launchable kernel) subclasses it; library helpers written in the
DSL itself (`language/random.py`) use it directly. The front end recognises a callee as a device
function by `isinstance(callee, JITCallable)` and inlines `callee.fn`'s source (`src`,
`starting_line`, `__globals__`).

Calling an instance is only meaningful inside a kernel run by the interpreter, where the helper's
Python body simply runs; anywhere else it raises a clear error.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .context import current_semantic
from .semantic.base import check_noinline_arguments


class JITCallable:
    """A Python function marked as Triton device code."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        do_not_specialize: Iterable[int | str] = (),
        noinline: bool = False,
    ) -> None:
        if not callable(fn) or not hasattr(fn, "__code__"):
            raise TypeError(f"@jit decorates a Python function, not {type(fn).__name__}")
        self.fn: Callable[..., Any] = fn
        self.__name__: str = fn.__name__
        self.__qualname__: str = getattr(fn, "__qualname__", fn.__name__)
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__
        self.__globals__: dict[str, Any] = fn.__globals__
        self.arg_names: list[str] = list(inspect.signature(fn).parameters)
        self.noinline: bool = bool(noinline)
        self.do_not_specialize: list[int | str] = list(do_not_specialize)
        self.src, self.starting_line = _source_of(fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        sem = current_semantic()
        if sem is None:
            raise RuntimeError(
                f"@jit function '{self.__name__}' cannot be called directly: launch a kernel with "
                f"kernel[grid](...), or call '{self.__name__}' from inside a @jit kernel"
            )
        if not sem.eager:
            # The compiler inlines @jit calls from the source; reaching here means a builtin or
            # a Python helper called it outside the front end's view.
            raise RuntimeError(
                f"@jit function '{self.__name__}' was called from Python code the compiler "
                "cannot see; call it directly from the kernel body"
            )
        check_noinline_arguments(self, args, kwargs)
        return sem.call_jit(self, args, kwargs=kwargs)

    def __repr__(self) -> str:
        return f"JITCallable({self.__module__}:{self.__qualname__})"


def _source_of(fn: Callable[..., Any]) -> tuple[str, int]:
    """The function's source starting at `def` (decorators dropped) and the line of that `def`."""
    code = fn.__code__
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return "", code.co_firstlineno
    src = textwrap.dedent("".join(lines))
    offset = 0
    for offset, line in enumerate(src.splitlines()):
        stripped = line.lstrip()
        if stripped.startswith("def ") or stripped.startswith("async def "):
            break
    else:
        offset = 0
    body = "\n".join(src.splitlines()[offset:]) + "\n"
    return body, first + offset


def closure_cells(fn: Any) -> dict[str, tuple[Any, Any]]:
    """The variables a Python function closes over that are bound: name -> (value, its cell). An
    empty cell (a variable assigned after the function was made) is left out."""
    code, cells = getattr(fn, "__code__", None), getattr(fn, "__closure__", None)
    found: dict[str, tuple[Any, Any]] = {}
    if code is None or not cells:
        return found
    for name, cell in zip(code.co_freevars, cells):
        try:
            found[name] = (cell.cell_contents, cell)
        except ValueError:
            continue
    return found


def bind_by_name(
    what: str, names: Sequence[str], args: Sequence[Any], kwargs: dict[str, Any], error: Callable[[str], Exception]
) -> dict[str, Any]:
    """`args` and `kwargs` bound to `names`, by position then keyword, as Python binds a call;
    `what` names the callee in the `error` raised for a call that does not fit (`'f'`, `State()`).
    Names left unbound are the caller's to default or refuse."""
    if len(args) > len(names):
        raise error(f"{what} takes {len(names)} argument(s) but {len(args)} were given")
    bound = dict(zip(names, args))
    for key, value in kwargs.items():
        if key not in names:
            raise error(f"{what} got an unexpected keyword argument '{key}'")
        if key in bound:
            raise error(f"{what} got multiple values for argument '{key}'")
        bound[key] = value
    return bound


class ConstexprFunction(JITCallable):
    """`@triton.constexpr_function`: a Python function a kernel calls at compile time on
    compile-time arguments; its result is a compile-time value (`tl.constexpr`). Its source
    joins the calling kernel's cache key as a `@jit` helper's does."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The function on its arguments' values (constexprs unwrapped), from host code, from
        another constexpr function or from a kernel run by the interpreter; the front end wraps
        the result as a `tl.constexpr`."""
        kwargs.pop("_semantic", None)
        plain = [getattr(a, "value", a) if _is_constexpr(a) else a for a in args]
        named = {k: getattr(v, "value", v) if _is_constexpr(v) else v for k, v in kwargs.items()}
        return self.fn(*plain, **named)

    def __repr__(self) -> str:
        return f"ConstexprFunction({self.__module__}:{self.__qualname__})"


def _is_constexpr(value: object) -> bool:
    from .core import constexpr  # core imports this module

    return isinstance(value, constexpr)


def constexpr_function(fn: Callable[..., Any]) -> ConstexprFunction:
    """Triton's `triton.constexpr_function`: mark `fn` to run at compile time when a kernel
    calls it (arguments and result are compile-time values)."""
    return ConstexprFunction(fn)
