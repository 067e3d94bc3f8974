"""The triton_metal IR: typed SSA values, ops with structured control flow, text form, verifier.

Import the stage through this package (`from triton_metal import ir`); `ir.ops` holds the op
classes by family.
"""

from __future__ import annotations

from . import ops
from .core import (
    OP_REGISTRY,
    Block,
    BlockArgument,
    IRError,
    IRParseError,
    Module,
    Op,
    OpResult,
    Region,
    Value,
    VerifyError,
)
from .parser import parse_module
from .printer import print_module, print_op
from .types import PointerType, ScalarType, TensorType, Type, parse_type
from .verifier import verify_module

__all__ = [
    "OP_REGISTRY", "Block", "BlockArgument", "IRError", "IRParseError", "Module", "Op", "OpResult",
    "Region", "Value", "VerifyError", "ops", "parse_module", "print_module", "print_op",
    "PointerType", "ScalarType", "TensorType", "Type", "parse_type", "verify_module",
]
