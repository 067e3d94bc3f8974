"""The code generator: layout-annotated IR -> per-thread program -> MSL text (an `MSLKernel`).

`compile_module(module, options)` runs the lowering (one rule per op class, registered with
`@lowers`) and the one `MSLPrinter`; templates under `templates/` hold the fixed scaffolding.
"""

from __future__ import annotations

from .kernel import MSLKernel, OutputCoverage, ParamBinding
from .options import CodegenOptions
from .target import DEFAULT_TARGET, Target, parse_target


def compile_module(module, options: CodegenOptions, axis_info: object | None = None) -> MSLKernel:  # noqa: ANN001
    """Lower `module` (one kernel function, layouts assigned by the layout passes) to an
    `MSLKernel`. `axis_info` (the passes' `analyze_axis_info(module)` result, computed on this
    module) lets loads and stores use vector accesses where it proves them safe."""
    from .driver import compile_module as _compile

    return _compile(module, options, axis_info)


__all__ = [
    "DEFAULT_TARGET", "CodegenOptions", "MSLKernel", "OutputCoverage", "ParamBinding", "Target", "compile_module",
    "parse_target",
]
