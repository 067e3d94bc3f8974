"""Differentiable MLX operations from kernel launchers: `triton_metal.op`.

    @triton_metal.op                       # or @op(name=..., backward=..., shapes=..., dtypes=...)
    def softmax(x):                        # a launcher: allocates outputs, launches, returns them
        out = mx.zeros_like(x)
        softmax_kernel[(x.shape[0],)](out, x, ...)
        return out

    @softmax.backward
    def softmax_bwd(primals, cotangents, outputs):   # MLX's custom_function vjp convention
        ...
        return (dx,)                                 # one cotangent per array argument

An `Op` is an `mx.custom_function` over the launcher (built once per op): called, it runs the
launcher, whose launches stay nodes of MLX's lazy graph; under `mx.grad` / `mx.value_and_grad`
MLX calls the backward launcher with `primals` (the arguments in parameter order, defaults
filled in; the single argument itself when the launcher has one parameter), `cotangents` and
`outputs` (shaped as the launcher's result: one array or a tuple). Non-array arguments (ints,
floats, None, strings, dtypes) are static: they pass through to both launchers.

Checks, all before anything runs and without evaluating an array:
* arguments: arrays are `mx.array`s (a NumPy array, or arrays inside lists, are refused);
  `shapes={"x": ("M", "N"), "w": ("N",)}` (a name is one size across arguments, an int an exact
  size, None any size, a leading "..." any leading dimensions) and `dtypes={"x": ("float32",
  "float16"), "w": "x"}` (dtype names, or another argument's name: the same dtype) when declared;
* the launcher returns an `mx.array` or a tuple or list of them;
* the backward returns one cotangent per array argument (a bare array when there is one; a
  tuple as long as all arguments, with None for the static ones, is accepted too), each None
  (zeros) or of the argument's shape and dtype.
Errors are `OpError`s naming the op and the argument.

Transformations. `mx.grad`, `mx.vjp` and `mx.value_and_grad` run the backward; an op without
one raises, naming the op and the kernels it launched (never zero gradients). MLX applies
`mx.vmap` and `mx.jvp` to the nodes inside a custom function before its own rule, and a kernel
has neither rule, so an op's array arguments first pass through an identity custom function
(the entry guard: cotangents pass straight through) whose vmap and jvp rules raise, naming the
op and its kernels, before MLX reaches a kernel. Launches inside an op's launchers note their
kernel (`inside_op()`, `note_kernel`) and need no guard of their own. Ops compose inside
`mx.compile`; `mx.export_function` cannot serialize custom functions, so ops are not exported
(bare launches are).
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import OpError

class _State(threading.local):
    """Per thread: how many op launchers are running, and the kernels they launched. The class
    attributes are every thread's starting values, so reading them never fails (a failed
    attribute lookup, as `getattr` with a default on a fresh thread, costs a launch ~0.3 us)."""

    depth = 0
    kernels: list[str] | None = None


_state = _State()


def inside_op() -> bool:
    """True while an op's launcher or backward runs on this thread."""
    return _state.depth > 0


def note_kernel(name: str) -> None:
    """Record a kernel launched inside an op (for the op's error messages)."""
    names = _state.kernels
    if names is not None:
        names.append(name)


class _Inside:
    """Marks this thread as running an op's launcher; collects the kernels it launches."""

    def __enter__(self) -> list[str]:
        _state.depth += 1
        self.saved = _state.kernels
        _state.kernels = []
        return _state.kernels

    def __exit__(self, *exc: object) -> None:
        _state.depth -= 1
        _state.kernels = self.saved


def _mx() -> Any:
    import mlx.core as mx

    return mx


def _is_array(value: object) -> bool:
    return type(value).__module__.startswith("mlx") and hasattr(value, "dtype") and hasattr(value, "shape")


def _dtype_name(dtype: object) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def _shape_text(shape: Sequence[object]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


class Op:
    """A launcher turned into an MLX function with a custom vjp (module docstring)."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        backward: Callable[..., Any] | None = None,
        shapes: dict[str, Sequence[object]] | None = None,
        dtypes: dict[str, object] | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"triton_metal.op expects a launcher function, got {type(fn).__name__}")
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "op")
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__wrapped__ = fn
        signature = inspect.signature(fn)
        params = list(signature.parameters.values())
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise OpError(
                    f"op '{self.name}': the launcher's parameter '{p.name}' is "
                    f"{'*args' if p.kind == p.VAR_POSITIONAL else '**kwargs'}; an op's launcher "
                    "takes named parameters (its backward receives them in order)"
                )
        self._signature = signature
        self.param_names: tuple[str, ...] = tuple(p.name for p in params)
        self._positional = sum(p.kind != p.KEYWORD_ONLY for p in params)
        self._simple = all(p.kind == p.POSITIONAL_OR_KEYWORD for p in params)
        self.shapes = {k: tuple(v) for k, v in (shapes or {}).items()}
        self.dtypes = dict(dtypes or {})
        for table, what in ((self.shapes, "shapes"), (self.dtypes, "dtypes")):
            for key in table:
                if key not in self.param_names:
                    raise OpError(f"op '{self.name}': {what} names '{key}', which is not a parameter "
                                  f"of the launcher ({', '.join(self.param_names)})")
        self._backward = backward
        self._kernels: list[str] = []
        self._function: Any = None
        self._entry: Any = None

    # -- decorators -------------------------------------------------------------------------
    def backward(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Set the vjp launcher: `fn(primals, cotangents, outputs) -> cotangents` (module doc)."""
        self._backward = fn
        return fn

    def __repr__(self) -> str:
        return f"<triton_metal.op {self.name}>"

    # -- calling ----------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs or len(args) != len(self.param_names) or not self._simple:
            try:
                bound = self._signature.bind(*args, **kwargs)
            except TypeError as error:
                raise OpError(f"op '{self.name}': {error}") from None
            bound.apply_defaults()
            values = tuple(bound.arguments[n] for n in self.param_names)
        else:
            values = args
        self._check_arguments(values)
        if self._function is None:
            self._build()
        positions = [k for k, v in enumerate(values) if _is_array(v)]
        if positions:  # through the entry guard (module docstring)
            guarded = list(values)
            for k, arr in zip(positions, self._entry(*[values[k] for k in positions])):
                guarded[k] = arr
            values = tuple(guarded)
        return self._function(*values)

    def _build(self) -> None:
        mx = _mx()
        function = mx.custom_function(self._forward)
        function.vjp(self._vjp_rule)
        self._function = function
        entry = mx.custom_function(_identity)
        entry.vjp(_pass_cotangents)
        entry.jvp(self._no_jvp)
        entry.vmap(self._no_vmap)
        self._entry = entry

    def _call_launcher(self, fn: Callable[..., Any], values: Sequence[Any]) -> Any:
        if self._simple:
            return fn(*values)
        positional = values[: self._positional]
        keywords = dict(zip(self.param_names[self._positional:], values[self._positional:]))
        return fn(*positional, **keywords)

    def _forward(self, *values: Any) -> Any:
        with _Inside() as kernels:
            result = self._call_launcher(self.fn, values)
        for k in kernels:
            if k not in self._kernels:
                self._kernels.append(k)
        items = result if isinstance(result, (tuple, list)) else (result,)
        if not items or not all(_is_array(r) for r in items):
            got = type(result).__name__ if not isinstance(result, (tuple, list)) else \
                "(" + ", ".join(type(r).__name__ for r in items) + ")"
            raise OpError(f"op '{self.name}': the launcher must return an mx.array or a tuple of "
                          f"them (its outputs), got {got}")
        return result

    # -- checks -----------------------------------------------------------------------------
    def _check_arguments(self, values: Sequence[Any]) -> None:
        sizes: dict[str, tuple[int, str]] = {}
        for name, value in zip(self.param_names, values):
            if _is_array(value):
                spec = self.shapes.get(name)
                if spec is not None:
                    self._check_shape(name, tuple(value.shape), spec, sizes)
                allowed = self.dtypes.get(name)
                if allowed is not None:
                    self._check_dtype(name, value, allowed, values)
                continue
            if type(value).__module__ == "numpy" and hasattr(value, "shape"):
                raise OpError(f"op '{self.name}', argument '{name}': a NumPy array; an op takes "
                              "mx.array arguments (mx.array(value))")
            if name in self.shapes or name in self.dtypes:
                raise OpError(f"op '{self.name}', argument '{name}': expected an mx.array, got "
                              f"{type(value).__name__}")
            if isinstance(value, (list, tuple, dict)) and _holds_array(value):
                raise OpError(f"op '{self.name}', argument '{name}': arrays inside a "
                              f"{type(value).__name__}; pass each array as its own argument")

    def _check_shape(self, name: str, shape: tuple[int, ...], spec: tuple[object, ...],
                     sizes: dict[str, tuple[int, str]]) -> None:
        dims = list(spec)
        if dims and dims[0] == "...":
            dims = dims[1:]
            ok = len(shape) >= len(dims)
            shape_tail = shape[len(shape) - len(dims):] if ok else shape
        else:
            ok = len(shape) == len(dims)
            shape_tail = shape
        expected = _shape_text(spec)
        if not ok:
            raise OpError(f"op '{self.name}', argument '{name}': expected shape {expected}, got "
                          f"{_shape_text(shape)} ({len(shape)} dimensions)")
        for dim, size in zip(dims, shape_tail):
            if dim is None:
                continue
            if isinstance(dim, int):
                if size != dim:
                    raise OpError(f"op '{self.name}', argument '{name}': expected shape {expected}, "
                                  f"got {_shape_text(shape)}")
                continue
            seen = sizes.get(str(dim))
            if seen is None:
                sizes[str(dim)] = (size, name)
            elif seen[0] != size:
                raise OpError(f"op '{self.name}', argument '{name}': expected shape {expected} with "
                              f"{dim} = {seen[0]} (from '{seen[1]}'), got {_shape_text(shape)}")

    def _check_dtype(self, name: str, value: Any, allowed: object, values: Sequence[Any]) -> None:
        got = _dtype_name(value.dtype)
        if isinstance(allowed, str) and allowed in self.param_names:
            other = values[self.param_names.index(allowed)]
            if _is_array(other) and _dtype_name(other.dtype) != got:
                raise OpError(f"op '{self.name}', argument '{name}': dtype {got} differs from "
                              f"'{allowed}' ({_dtype_name(other.dtype)}); both must have one dtype")
            return
        names = [allowed] if not isinstance(allowed, (tuple, list, set, frozenset)) else list(allowed)
        accepted = [n if isinstance(n, str) else _dtype_name(n) for n in names]
        if got not in accepted:
            raise OpError(f"op '{self.name}', argument '{name}': dtype {got}; the op takes "
                          f"{', '.join(accepted)}")

    # -- transformations --------------------------------------------------------------------
    def _kernel_text(self) -> str:
        if not self._kernels:
            return ""
        return " (it launches " + ", ".join(f"'{k}'" for k in self._kernels) + ")"

    def _vjp_rule(self, primals: Any, cotangents: Any, outputs: Any) -> Any:
        values = primals if len(self.param_names) != 1 else (primals,)
        if self._backward is None:
            raise OpError(f"op '{self.name}' has no backward{self._kernel_text()}, so it has no "
                          "gradient; give it one (@op.backward or op(fn, backward=...)) or keep "
                          "it out of mx.grad")
        with _Inside():
            result = self._backward(primals, cotangents, outputs)
        return self._check_cotangents(values, result)

    def _check_cotangents(self, values: Sequence[Any], result: Any) -> tuple[Any, ...]:
        arrays = [(n, v) for n, v in zip(self.param_names, values) if _is_array(v)]
        items = list(result) if isinstance(result, (tuple, list)) else [result]
        if len(items) == len(values) and len(values) != len(arrays):
            if any(c is not None for (c, v) in zip(items, values) if not _is_array(v)):
                raise OpError(f"op '{self.name}': its backward returned a cotangent for a static "
                              "argument; return None there (or one cotangent per array argument)")
            items = [c for c, v in zip(items, values) if _is_array(v)]
        if len(items) != len(arrays):
            names = ", ".join(f"'{n}'" for n, _ in arrays)
            raise OpError(f"op '{self.name}': its backward returned {len(items)} "
                          f"cotangent{'s' if len(items) != 1 else ''} for {len(arrays)} array "
                          f"argument{'s' if len(arrays) != 1 else ''} ({names}); return one per "
                          "array argument, in order (None for no gradient)")
        mx = None
        final: list[Any] = []
        for (name, primal), cot in zip(arrays, items):
            if cot is None:
                mx = mx or _mx()
                final.append(mx.zeros_like(primal))
                continue
            if not _is_array(cot):
                raise OpError(f"op '{self.name}': its backward returned {type(cot).__name__} as the "
                              f"cotangent of '{name}'; expected an mx.array or None")
            if tuple(cot.shape) != tuple(primal.shape):
                raise OpError(f"op '{self.name}': its backward's cotangent for '{name}' has shape "
                              f"{_shape_text(tuple(cot.shape))}, but '{name}' has shape "
                              f"{_shape_text(tuple(primal.shape))}")
            if cot.dtype != primal.dtype:
                raise OpError(f"op '{self.name}': its backward's cotangent for '{name}' is "
                              f"{_dtype_name(cot.dtype)}, but '{name}' is {_dtype_name(primal.dtype)}")
            final.append(cot)
        return tuple(final)

    def _no_jvp(self, *args: Any) -> Any:
        raise OpError(f"op '{self.name}' has no forward-mode derivative (mx.jvp){self._kernel_text()}: "
                      "MLX applies forward mode to the kernels inside it, which have none; use "
                      "mx.grad / mx.vjp, which run its backward")

    def _no_vmap(self, *args: Any) -> Any:
        raise OpError(f"op '{self.name}' cannot be vectorised by mx.vmap{self._kernel_text()}: "
                      "its kernels run over the shapes they are given; launch over the batch "
                      "yourself (a grid axis or a leading dimension)")


def _identity(*arrays: Any) -> list[Any]:
    return list(arrays)


def _pass_cotangents(primals: Any, cotangents: Any, outputs: Any) -> Any:
    return cotangents


def _holds_array(value: Any) -> bool:
    items = value.values() if isinstance(value, dict) else value
    return any(_is_array(v) or (isinstance(v, (list, tuple, dict)) and _holds_array(v)) for v in items)


def op(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    backward: Callable[..., Any] | None = None,
    shapes: dict[str, Sequence[object]] | None = None,
    dtypes: dict[str, object] | None = None,
) -> Any:
    """Turn a launcher into a differentiable MLX operation.

    Works as `@op`, `@op(name=..., backward=...)` and `op(fn, backward=...)`. The launcher
    allocates its outputs, launches kernels and returns the outputs; `backward(primals,
    cotangents, outputs)` is a launcher for the vector-Jacobian product (MLX's
    `custom_function.vjp` convention) returning one cotangent per array argument. `shapes` and
    `dtypes` declare what the array arguments must be (module docstring of
    `triton_metal.runtime.mlx_op`). The result is an `Op`: call it like the launcher; it works
    under `mx.grad`, `mx.value_and_grad` and `mx.compile`.
    """
    options = {"name": name, "backward": backward, "shapes": shapes, "dtypes": dtypes}
    if fn is None:
        return lambda f: Op(f, **options)
    return Op(fn, **options)
