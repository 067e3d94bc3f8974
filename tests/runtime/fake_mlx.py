"""A stand-in for `mlx.core` that records the Metal driver's `mx.fast.metal_kernel` calls.

Everything but `fast.metal_kernel` and `eval` is the real `mlx.core` (the CPU build). The
factory and the kernel call accept exactly the keyword arguments `mx.fast.metal_kernel` takes
(mlx_api.md 1.1), check what MLX would refuse or mis-handle (argument counts, grid and
threadgroup sizes, scalars not passed as typed 0-d arrays), record the call, and run it on the
emulator's `metal_kernel`, which follows MLX's rules (fresh outputs filled with `init_value`,
or with all bits set when it is None). So the driver's launches are checked for the calls they
make and for the results those calls give.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import mlx.core as mx

from triton_metal.backends.emulator import metal_kernel as emulator_metal_kernel

_FACTORY_KEYS = {
    "name", "input_names", "output_names", "source", "header", "ensure_row_contiguous",
    "atomic_outputs", "compile_options",
}
_CALL_KEYS = {
    "inputs", "output_shapes", "output_dtypes", "grid", "threadgroup", "template", "init_value",
    "verbose", "stream",
}


@dataclass
class FakeFast:
    accepts_compile_options: bool = True
    factory_calls: list[dict[str, Any]] = field(default_factory=list)
    launches: list[dict[str, Any]] = field(default_factory=list)

    def metal_kernel(self, **kwargs: Any) -> Any:
        unknown = set(kwargs) - _FACTORY_KEYS
        assert not unknown, f"metal_kernel() got unexpected keywords {unknown}"
        if "compile_options" in kwargs and not self.accepts_compile_options:
            raise TypeError("metal_kernel(): incompatible function arguments (compile_options)")
        self.factory_calls.append(dict(kwargs))
        inner = emulator_metal_kernel(**kwargs)
        launches = self.launches

        def call(**call: Any) -> list[Any]:
            unknown_call = set(call) - _CALL_KEYS
            assert not unknown_call, f"kernel call got unexpected keywords {unknown_call}"
            for value in call["inputs"]:
                assert isinstance(value, mx.array), "inputs must be arrays (scalars as typed 0-d arrays)"
            grid, group = call["grid"], call["threadgroup"]
            assert len(grid) == 3 and len(group) == 3
            assert all(isinstance(g, int) and 0 < g < 2**31 for g in (*grid, *group))
            assert group[1] == group[2] == 1 and grid[0] % group[0] == 0
            launches.append({"name": kwargs["name"], **call})
            return inner(**call)

        return call


class FakeMx:
    """`mlx.core` with a recording `fast` (module docstring)."""

    def __init__(self, accepts_compile_options: bool = True, eval_error: Exception | None = None) -> None:
        self.fast = FakeFast(accepts_compile_options)
        self.eval_error = eval_error
        self.evals = 0

    def eval(self, *arrays: Any) -> None:
        self.evals += 1
        if self.eval_error is not None:
            raise self.eval_error
        mx.eval(*arrays)

    def __getattr__(self, name: str) -> Any:
        return getattr(mx, name)


class LazyFast:
    """`mx.fast` whose kernels return lazy arrays: outputs of the requested shapes and dtypes
    (zeros, or `init_value`) that depend on every input (`mx.depends`) and, like MLX's
    `CustomKernel`, have no vjp, jvp or vmap. Nothing runs, so launches can be traced inside
    `mx.compile` on Linux, where `mx.fast.metal_kernel` cannot be built."""

    def __init__(self) -> None:
        self.factory_calls: list[dict[str, Any]] = []
        self.launches: list[dict[str, Any]] = []

    def metal_kernel(self, **kwargs: Any) -> Any:
        unknown = set(kwargs) - _FACTORY_KEYS
        assert not unknown, f"metal_kernel() got unexpected keywords {unknown}"
        self.factory_calls.append(dict(kwargs))
        name = kwargs["name"]

        def refuse(*args: Any, **rest: Any) -> Any:
            raise ValueError(f"[Primitive] Not implemented for CustomKernel ('{name}').")

        def call(**call: Any) -> list[Any]:
            unknown_call = set(call) - _CALL_KEYS
            assert not unknown_call, f"kernel call got unexpected keywords {unknown_call}"
            self.launches.append({"name": name, **call})
            fill = call.get("init_value") or 0

            def forward(*inputs: Any) -> list[Any]:
                shapes, dtypes = call["output_shapes"], call["output_dtypes"]
                outs = [mx.full(tuple(s), fill, d) for s, d in zip(shapes, dtypes)]
                return list(mx.depends(outs, list(inputs)))

            node = mx.custom_function(forward)
            node.vjp(refuse)
            node.jvp(refuse)
            node.vmap(refuse)
            return list(node(*call["inputs"]))

        return call


class LazyMx:
    """`mlx.core` with `LazyFast`, whose `eval` fails: a launch must never evaluate."""

    def __init__(self) -> None:
        self.fast = LazyFast()

    def eval(self, *arrays: Any) -> None:
        raise AssertionError("a launch evaluated an array (mx.eval)")

    def __getattr__(self, name: str) -> Any:
        return getattr(mx, name)
