"""What the front end compiles a kernel for: one entry per parameter, plus the options that
reach the IR.

A parameter is either a run-time argument (`ParamType`: its `tl` type and whether it is known to
be a multiple of 16 - for a pointer, that its address is 16-byte aligned) or a value baked into
the kernel (`ParamConstexpr`: `tl.constexpr` parameters, and integers equal to 1, which the
runtime passes this way as Triton does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..language.types import dtype, pointer_type

RUNTIME_SCALARS = ("int1", "int32", "int64", "uint64", "fp32")
"""The scalar types a run-time argument may have (Triton's specialization rules)."""


@dataclass(frozen=True)
class ParamType:
    """A run-time argument of type `ty` (a `tl.pointer_type` or one of `RUNTIME_SCALARS`)."""

    ty: dtype
    divisible_by_16: bool = False
    """Scalars: the value is a multiple of 16. Pointers: the address is 16-byte aligned."""

    def __post_init__(self) -> None:
        if isinstance(self.ty, pointer_type):
            return
        if not isinstance(self.ty, dtype) or self.ty.name not in RUNTIME_SCALARS:
            raise ValueError(f"a kernel argument must be a pointer or one of {RUNTIME_SCALARS}, got {self.ty!r}")
        if self.divisible_by_16 and self.ty.name in ("int1", "fp32"):
            raise ValueError(f"divisibility does not apply to {self.ty!r}")


@dataclass(frozen=True)
class ParamConstexpr:
    """A compile-time value for the parameter."""

    value: Any


Param = ParamType | ParamConstexpr


@dataclass(frozen=True)
class KernelSignature:
    params: tuple[Param, ...]
    """One entry per kernel parameter, in declaration order."""
    num_warps: int = 4
    debug: bool = False
    """Compile `tl.device_assert` and `assert` statements in (they are dropped otherwise)."""

    def __post_init__(self) -> None:
        if self.num_warps <= 0 or self.num_warps & (self.num_warps - 1):
            raise ValueError(f"num_warps must be a power of two, got {self.num_warps}")
