"""From a `SpecializationKey` to the front end's `KernelSignature`.

The runtime's facts (`PointerArg`, `ScalarArg`, `ConstexprArg`) are what a launch knows; the
front end's `KernelSignature` is what it compiles from. This module is the one place that maps
the former onto the latter: a pointer's alignment and a scalar's divisibility both become
`divisible_by_16`, constexprs (including integers equal to 1) become `ParamConstexpr`, a host
tensor descriptor becomes a `ParamDescriptor` of those.
"""

from __future__ import annotations

from typing import Any

from .specialization import ArgSpec, ConstexprArg, DescriptorArg, PointerArg, SpecializationKey


def kernel_signature(kernel: Any, key: SpecializationKey) -> Any:
    """The `frontend.KernelSignature` for compiling `kernel` under `key`."""
    from ..frontend import KernelSignature

    return KernelSignature(tuple(map(_param, key.args)), num_warps=key.num_warps, debug=key.debug)


def _param(fact: ArgSpec) -> Any:
    from ..frontend import ParamConstexpr, ParamDescriptor, ParamType

    if isinstance(fact, ConstexprArg):
        return ParamConstexpr(fact.value)
    if isinstance(fact, PointerArg):
        return ParamType(fact.ty, fact.aligned16)
    if isinstance(fact, DescriptorArg):
        return ParamDescriptor(
            _param(fact.base), tuple(map(_param, fact.shape)), tuple(map(_param, fact.strides)),
            fact.block_shape, fact.padding,
        )
    return ParamType(fact.ty, fact.divisible16)
