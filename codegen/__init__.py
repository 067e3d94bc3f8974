"""The code generator: layout-annotated IR -> per-thread program -> MSL text (an `MSLKernel`).

`compile_module(module, options)` runs the lowering (one rule per op class, registered with
`@lowers`) and the one `MSLPrinter`; templates under `templates/` hold the fixed scaffolding.
"""

from __future__ import annotations

from .kernel import MSLKernel, OutputCoverage, ParamBinding
from .options import CodegenOptions


def compile_module(module, options: CodegenOptions) -> MSLKernel:  # noqa: ANN001 - ir.Module
    """Lower `module` (its single kernel function) to an `MSLKernel`."""
    from .driver import compile_module as _compile

    return _compile(module, options)


__all__ = ["CodegenOptions", "MSLKernel", "OutputCoverage", "ParamBinding", "compile_module"]
