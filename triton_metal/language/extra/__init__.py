"""`tl.extra`: vendor extension libraries. `libdevice` maps onto the Metal standard library."""

from __future__ import annotations

from . import libdevice

__all__ = ["libdevice"]
