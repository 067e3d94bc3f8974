"""From a `SpecializationKey` to the front end's `KernelSignature`.

The runtime's facts (`PointerArg`, `ScalarArg`, `ConstexprArg`) are what a launch knows; the
front end's `KernelSignature` is what it compiles from. This module is the one place that maps
the former onto the latter: a pointer's alignment and a scalar's divisibility both become
`divisible_by_16`, constexprs (including integers equal to 1) become `ParamConstexpr`.
"""

from __future__ import annotations

from typing import Any

from .specialization import ConstexprArg, PointerArg, SpecializationKey


def kernel_signature(kernel: Any, key: SpecializationKey) -> Any:
    """The `frontend.KernelSignature` for compiling `kernel` under `key`."""
    from ..frontend import KernelSignature, ParamConstexpr, ParamType

    params: list[Any] = []
    for fact in key.args:
        if isinstance(fact, ConstexprArg):
            params.append(ParamConstexpr(fact.value))
        elif isinstance(fact, PointerArg):
            params.append(ParamType(fact.ty, fact.aligned16))
        else:
            params.append(ParamType(fact.ty, fact.divisible16))
    return KernelSignature(tuple(params), num_warps=key.num_warps, debug=key.debug)
