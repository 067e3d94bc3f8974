"""Registers the layout passes and lists them, in order, in the default pipeline."""

from __future__ import annotations

from . import (  # noqa: F401
    allocate_threadgroup_memory,
    insert_barriers,
    layout_assignment,
    order_device_accesses,
    remove_layout_conversions,
    stage_dot_operands,
)
from .pipeline import LAYOUT_PASSES

for _name in ("assign-layouts", "remove-layout-conversions", "stage-dot-operands", "allocate-threadgroup-memory",
              "order-device-accesses", "insert-barriers"):
    if _name not in LAYOUT_PASSES:
        LAYOUT_PASSES.append(_name)
