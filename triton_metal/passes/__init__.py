"""Passes over the IR: infrastructure, cleanup passes, analyses and the default pipeline.

`PASS_REGISTRY` maps each pass name to its class (read by `triton-metal-opt -p`);
`default_pipeline(options)` lists the passes the compiler runs, in order. Analyses (axis info)
return results and never mutate the IR.
"""

from __future__ import annotations

from . import print_axis_info as _print_axis_info  # noqa: F401  (registers the test pass)
from . import print_coverage_program as _print_coverage_program  # noqa: F401  (registers the test pass)
from .axis_info import AxisInfo, AxisInfoResult, analyze_axis_info
from .canonicalize import Canonicalize
from .cse import CommonSubexpressionElimination
from .dead_code_elimination import DeadCodeElimination
from .pass_base import (
    PASS_REGISTRY,
    ModulePass,
    PassContext,
    PassPipeline,
    parse_pass_spec,
    register_pass,
)
from .pipeline import LAYOUT_PASSES, default_pipeline
from . import layout_passes as _layout_passes  # noqa: F401,E402  (registers the layout passes)

__all__ = [
    "PASS_REGISTRY", "AxisInfo", "AxisInfoResult", "Canonicalize", "CommonSubexpressionElimination",
    "DeadCodeElimination", "LAYOUT_PASSES", "ModulePass", "PassContext", "PassPipeline",
    "analyze_axis_info", "default_pipeline", "parse_pass_spec", "register_pass",
]
