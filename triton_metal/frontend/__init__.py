"""The front end: a `@jit` function's Python source -> IR (`ir.Module` holding one `tt.func`).

    compile_to_ir(kernel: JITCallable, signature: KernelSignature) -> ir.Module

The runtime calls it once per specialization. `TRITON_METAL_DEBUG=2` (or higher) prints the IR
to stderr.
"""

from __future__ import annotations

from .compile import compile_to_ir
from .ir_builder import IRBuilder, ir_type
from .signature import KernelSignature, Param, ParamConstexpr, ParamDescriptor, ParamTuple, ParamType

__all__ = ["IRBuilder", "KernelSignature", "Param", "ParamConstexpr", "ParamDescriptor", "ParamTuple", "ParamType", "compile_to_ir", "ir_type"]
