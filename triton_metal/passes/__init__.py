"""Passes over the IR: infrastructure, cleanup passes, analyses and the default pipeline.

`PASS_REGISTRY` maps each pass name to its class (read by `triton-metal-opt -p`);
`default_pipeline(options)` lists the passes the compiler runs, in order. Analyses (axis info)
return results and never mutate the IR.
"""

from __future__ import annotations

from . import print_axis_info as _print_axis_info  # noqa: F401  (registers the test pass)
from .axis_info import AxisInfo, AxisInfoResult, analyze_axis_info
from .pass_base import (
    PASS_REGISTRY,
    ModulePass,
    PassContext,
    PassPipeline,
    parse_pass_spec,
    register_pass,
)

__all__ = [
    "PASS_REGISTRY", "AxisInfo", "AxisInfoResult", "ModulePass", "PassContext", "PassPipeline",
    "analyze_axis_info", "parse_pass_spec", "register_pass",
]
