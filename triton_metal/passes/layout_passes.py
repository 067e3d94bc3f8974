"""Registers the layout passes and lists them, in order, in the default pipeline."""

from __future__ import annotations

from . import layout_assignment  # noqa: F401  (registers assign-layouts)
from .pipeline import LAYOUT_PASSES

for _name in ("assign-layouts", "remove-layout-conversions", "allocate-threadgroup-memory", "insert-barriers"):
    if _name not in LAYOUT_PASSES:
        LAYOUT_PASSES.append(_name)
