"""From a `SpecializationKey` to the front end's `KernelSignature`.

The runtime's facts (`PointerArg`, `ScalarArg`, `ConstexprArg`) are what a launch knows; the
front end's `KernelSignature` is what it compiles from. This module is the one place that maps
the former onto the latter.
"""

from __future__ import annotations

from typing import Any

from .specialization import ConstexprArg, PointerArg, ScalarArg, SpecializationKey


def kernel_signature(kernel: Any, key: SpecializationKey) -> Any:
    from ..frontend import KernelSignature

    raise NotImplementedError((KernelSignature, kernel, key, ConstexprArg, PointerArg, ScalarArg))
