"""`heuristics`: meta-parameters computed from the launch's arguments (Triton's `triton.heuristics`).

    @triton_metal.heuristics({"EVEN_N": lambda args: args["n"] % args["BLOCK"] == 0})
    @triton_metal.jit
    def kernel(x_ptr, n, BLOCK: tl.constexpr, EVEN_N: tl.constexpr): ...

On every launch each entry's function receives a dict of the kernel's arguments (defaults, then
the positional arguments, then the keywords, including those an outer `autotune` chose) and its
result is passed as the keyword of that name. Entries run in order, so a later one sees the values
of earlier ones. The wrapped object is a `JITFunction`, an `Autotuner` or another `Heuristics`:
the usual stack is `@autotune` over `@heuristics` over `@jit`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from .grid import GridSpec


def base_jit_function(fn: Any) -> Any:
    """The `JITFunction` under any stack of `Heuristics` and `Autotuner` wrappers."""
    from .jit import JITFunction

    seen = 0
    while not isinstance(fn, JITFunction):
        inner = getattr(fn, "fn", None)
        if inner is None or seen > 16:
            raise TypeError(
                f"expected a @jit kernel (possibly wrapped by autotune or heuristics), not "
                f"{type(fn).__name__}; put @triton_metal.jit closest to the function"
            )
        fn = inner
        seen += 1
    return fn


def default_arguments(fn: Any) -> dict[str, object]:
    """Parameter name -> default value, for the parameters of the underlying kernel that have one."""
    jit_fn = base_jit_function(fn)
    return {p.name: p.default for p in jit_fn.params if p.default is not inspect.Parameter.empty}


class Heuristics:
    """A kernel whose listed meta-parameters are computed per launch (module docstring)."""

    def __init__(self, fn: Any, values: Mapping[str, Callable[[dict[str, object]], object]]) -> None:
        base = base_jit_function(fn)
        for name, heuristic in values.items():
            if not callable(heuristic):
                raise TypeError(f"heuristics: the value for '{name}' must be a function of the arguments")
            if name not in base.arg_names:
                raise ValueError(
                    f"heuristics: '{name}' is not a parameter of kernel '{base.__name__}' "
                    f"(its parameters: {', '.join(base.arg_names)})"
                )
        self.fn = fn
        self.values = dict(values)
        self.arg_names: list[str] = list(base.arg_names)
        self.__name__: str = base.__name__
        self._defaults = default_arguments(fn)

    @property
    def cache_key(self) -> str:
        return base_jit_function(self.fn).cache_key

    def __getitem__(self, grid: GridSpec) -> Callable[..., None]:
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)

    def run(self, *args: object, grid: GridSpec, warmup: bool, **kwargs: object) -> Any:
        for name, heuristic in self.values.items():
            named = {**self._defaults, **dict(zip(self.arg_names, args)), **kwargs}
            kwargs[name] = heuristic(named)
        return self.fn.run(*args, grid=grid, warmup=warmup, **kwargs)

    def warmup(self, *args: object, grid: GridSpec, **kwargs: object) -> Any:
        return self.run(*args, grid=grid, warmup=True, **kwargs)

    def __repr__(self) -> str:
        return f"Heuristics({', '.join(self.values)}; {self.fn!r})"


def heuristics(values: Mapping[str, Callable[[dict[str, object]], object]]) -> Callable[[Any], Heuristics]:
    """Decorator: `@heuristics({"NAME": lambda args: ...})` over a `@jit` kernel (or an autotuned one)."""
    if not isinstance(values, Mapping):
        raise TypeError("heuristics(values): values must map meta-parameter names to functions")

    def decorator(fn: Any) -> Heuristics:
        return Heuristics(fn, values)

    return decorator


__all__ = ["Heuristics", "base_jit_function", "default_arguments", "heuristics"]
