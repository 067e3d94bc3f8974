"""Temporary stand-in for `triton_metal.op` until the op API lands (removed on merge)."""

from __future__ import annotations

from typing import Any, Callable


class _Op:
    def __init__(self, fn: Callable[..., Any], name: str, backward: Callable[..., Any] | None) -> None:
        self.fn, self.name, self._backward = fn, name, backward

    def backward(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        self._backward = fn
        return fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import mlx.core as mx

        arrays = [i for i, a in enumerate(args) if isinstance(a, mx.array)]
        static = list(args)

        def bind(*xs: Any) -> list[Any]:
            full = list(static)
            for i, x in zip(arrays, xs):
                full[i] = x
            return full

        @mx.custom_function
        def f(*xs: Any) -> Any:
            return self.fn(*bind(*xs), **kwargs)

        @f.vjp
        def vjp(primals: Any, cotangents: Any, outputs: Any) -> Any:
            if self._backward is None:
                raise ValueError(f"{self.name}: no backward")
            if isinstance(primals, mx.array):
                primals = (primals,)
            return self._backward(tuple(bind(*primals)), cotangents, outputs, **kwargs)

        return f(*[args[i] for i in arrays])


def op(fn: Callable[..., Any] | None = None, *, name: str | None = None,
       backward: Callable[..., Any] | None = None) -> Any:
    if fn is None:
        return lambda f: _Op(f, name or f.__name__, backward)
    return _Op(fn, name or fn.__name__, backward)
