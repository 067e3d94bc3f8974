"""`tl.extra`: vendor extension libraries. `libdevice` is CUDA/ROCm only and refused here."""

from __future__ import annotations

from . import libdevice

__all__ = ["libdevice"]
