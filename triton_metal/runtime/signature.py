"""From a `SpecializationKey` to the front end's `KernelSignature`.

The runtime's facts (`PointerArg`, `ScalarArg`, `ConstexprArg`) are what a launch knows; the
front end's `KernelSignature` is what it compiles from. This module is the one place that maps
the former onto the latter: a pointer's alignment and a scalar's divisibility both become
`divisible_by_16`, constexprs (including integers equal to 1) become `ParamConstexpr`, a host
tensor descriptor becomes a `ParamDescriptor` of those, a tuple a `ParamTuple`.
"""

from __future__ import annotations

from typing import Any

from .specialization import ArgSpec, ConstexprArg, DescriptorArg, PointerArg, SpecializationKey, TupleArg


def kernel_signature(kernel: Any, key: SpecializationKey) -> Any:
    """The `frontend.KernelSignature` for compiling `kernel` under `key`."""
    from ..frontend import KernelSignature

    return KernelSignature(tuple(map(signature_param, key.args)), num_warps=key.num_warps, debug=key.debug)


def signature_param(fact: ArgSpec) -> Any:
    """The front end's `Param` for one fact."""
    from ..frontend import ParamConstexpr, ParamDescriptor, ParamTuple, ParamType

    if isinstance(fact, ConstexprArg):
        return ParamConstexpr(fact.value)
    if isinstance(fact, PointerArg):
        return ParamType(fact.ty, fact.aligned16, fact.same_as)
    if isinstance(fact, TupleArg):
        return ParamTuple(tuple(map(signature_param, fact.elements)), fact.kind)
    if isinstance(fact, DescriptorArg):
        return ParamDescriptor(
            signature_param(fact.base), tuple(map(signature_param, fact.shape)), tuple(map(signature_param, fact.strides)),
            fact.block_shape, fact.padding,
        )
    from ..frontend.signature import runtime_scalar

    return runtime_scalar(fact.ty, fact.divisible16)
