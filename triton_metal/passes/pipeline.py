"""The compiler's default pass pipeline.

`default_pipeline(options)` returns the passes `compile` runs on a module from the front end:
the cleanup passes (canonicalize, cse, dce), then the layout passes named in `LAYOUT_PASSES`
(registered by their own modules under those names; a name not registered yet is skipped, so
the pipeline works while those passes are being written), then a last cleanup.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .canonicalize import Canonicalize
from .cse import CommonSubexpressionElimination
from .dead_code_elimination import DeadCodeElimination
from .debug_dump import callback_from_env
from .pass_base import PASS_REGISTRY, AfterPass, ModulePass, PassPipeline

LAYOUT_PASSES: list[str] = []
"""Names of the layout passes, in order, run after the cleanup passes. The layout passes'
module appends to it (or it lists them here once they exist)."""


def cleanup_passes() -> tuple[ModulePass, ...]:
    return (Canonicalize(), CommonSubexpressionElimination(), DeadCodeElimination())


def default_pipeline(options: Mapping[str, Any] | None = None, callback: AfterPass | None = None) -> PassPipeline:
    """The passes from front-end IR to IR with layouts, in order. `options` may hold
    `"layout_passes": False` to stop after the cleanup passes. Without a `callback`, the
    environment's IR dump (`debug_dump.callback_from_env`) runs after every pass."""
    options = dict(options or {})
    passes: list[ModulePass] = list(cleanup_passes())
    if options.get("layout_passes", True):
        for name in LAYOUT_PASSES:
            cls = PASS_REGISTRY.get(name)
            if cls is not None:
                passes.append(cls())
        if any(name in PASS_REGISTRY for name in LAYOUT_PASSES):
            passes += [CommonSubexpressionElimination(), DeadCodeElimination()]
    return PassPipeline(tuple(passes), callback if callback is not None else callback_from_env())
