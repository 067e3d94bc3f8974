"""Compiling test kernels to IR with a compact signature notation."""

from __future__ import annotations

from typing import Any

from triton_metal import ir
from triton_metal.frontend import KernelSignature, ParamConstexpr, ParamType, compile_to_ir
from triton_metal.language.jit_marker import JITCallable
from triton_metal.language.types import dtype_from_name


class C:
    """A constexpr parameter value in `compile_kernel`'s argument list."""

    def __init__(self, value: Any) -> None:
        self.value = value


def param(spec: Any) -> ParamType | ParamConstexpr:
    """`"*fp32"` (pointer), `"*fp32/16"` (16-byte aligned), `"i32"`, `"i32/16"` (multiple of 16),
    or `C(value)` for a constexpr."""
    if isinstance(spec, C):
        return ParamConstexpr(spec.value)
    name, _, div = spec.partition("/")
    return ParamType(dtype_from_name(name), div == "16")


def compile_kernel(fn: Any, *params: Any, num_warps: int = 4, debug: bool = False) -> ir.Module:
    kernel = fn if isinstance(fn, JITCallable) else JITCallable(fn)
    sig = KernelSignature(tuple(param(p) for p in params), num_warps=num_warps, debug=debug)
    return compile_to_ir(kernel, sig)


def ir_text(fn: Any, *params: Any, **kw: Any) -> str:
    """The printed IR, after checking that it verifies and round-trips through the parser."""
    module = compile_kernel(fn, *params, **kw)
    text = ir.print_module(module)
    again = ir.parse_module(text)
    again.verify()
    assert ir.print_module(again) == text
    with_locs = ir.print_module(module, print_locs=True)
    assert ir.print_module(ir.parse_module(with_locs), print_locs=True) == with_locs
    return text


def op_names(module_or_text: ir.Module | str) -> list[str]:
    module = ir.parse_module(module_or_text) if isinstance(module_or_text, str) else module_or_text
    return [op.name for op in module.walk()]
