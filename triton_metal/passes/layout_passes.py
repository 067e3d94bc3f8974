"""Registers the layout passes and lists them, in order, in the default pipeline."""

from __future__ import annotations

from . import allocate_threadgroup_memory, insert_barriers, layout_assignment, remove_layout_conversions  # noqa: F401
from .pipeline import LAYOUT_PASSES

for _name in ("assign-layouts", "remove-layout-conversions", "allocate-threadgroup-memory", "insert-barriers"):
    if _name not in LAYOUT_PASSES:
        LAYOUT_PASSES.append(_name)
