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

ANNOTATED_CARRIERS = {
    "int8": "int32", "int16": "int32", "uint8": "int32", "uint16": "int32", "uint32": "int64",
    "fp16": "fp32", "bf16": "fp32",
}
"""A parameter annotated with one of these scalar types (`v: tl.uint8`, `x: tl.float16`) is
passed as the wider runtime scalar and converted at the kernel's entry; the runtime has checked
that the value fits (integers) or rounded it to the type through fp32 (floats), so the
conversion is exact."""


@dataclass(frozen=True)
class ParamType:
    """A run-time argument of type `ty` (a `tl.pointer_type` or one of `RUNTIME_SCALARS`)."""

    ty: dtype
    divisible_by_16: bool = False
    """Scalars: the value is a multiple of 16. Pointers: the address is 16-byte aligned."""
    same_as: int = -1
    """Pointers: the index of an earlier parameter whose array this is (the kernel uses that
    parameter in its place; this one stays in the signature, unused), else -1."""
    annotated: dtype | None = None
    """The type the kernel sees the scalar as when its annotation names a narrower one
    (`ANNOTATED_CARRIERS`): `ty` is then the carrier it is passed as."""

    def __post_init__(self) -> None:
        if isinstance(self.ty, pointer_type):
            return
        if not isinstance(self.ty, dtype) or self.ty.name not in RUNTIME_SCALARS:
            raise ValueError(f"a kernel argument must be a pointer or one of {RUNTIME_SCALARS}, got {self.ty!r}")
        if self.divisible_by_16 and self.ty.name in ("int1", "fp32"):
            raise ValueError(f"divisibility does not apply to {self.ty!r}")


def runtime_scalar(ty: dtype, divisible_by_16: bool) -> ParamType:
    """The parameter for a run-time scalar of type `ty`, through its carrier when `ty` is not
    one of `RUNTIME_SCALARS` itself."""
    from ..language.types import dtype_from_name

    carrier = ANNOTATED_CARRIERS.get(ty.name)
    if carrier is None:
        return ParamType(ty, divisible_by_16)
    carried = dtype_from_name(carrier)
    return ParamType(carried, divisible_by_16 and carried.is_int(), annotated=ty)


@dataclass(frozen=True)
class ParamConstexpr:
    """A compile-time value for the parameter."""

    value: Any


@dataclass(frozen=True)
class ParamDescriptor:
    """A tensor descriptor made on the host: the kernel sees a `tl.tensor_descriptor` built from
    a run-time base pointer, a shape and strides (each entry a run-time integer or a
    compile-time one) and a compile-time block shape and padding."""

    base: ParamType
    shape: tuple[ParamType | ParamConstexpr, ...]
    strides: tuple[ParamType | ParamConstexpr, ...]
    block_shape: tuple[int, ...]
    padding: str = "zero"

    def __post_init__(self) -> None:
        if not isinstance(self.base.ty, pointer_type):
            raise ValueError(f"a descriptor's base must be a pointer, got {self.base.ty!r}")
        if not (len(self.shape) == len(self.strides) == len(self.block_shape)):
            raise ValueError("a descriptor needs one shape, stride and block size per dimension")

    def parts(self, name: str) -> tuple[tuple[str, ParamType | ParamConstexpr], ...]:
        """(name, entry) of the base, the shape and the strides, in launch order."""
        return tuple(zip(descriptor_part_names(name, len(self.shape)), (self.base, *self.shape, *self.strides)))


def descriptor_part_names(name: str, rank: int) -> tuple[str, ...]:
    """The compiled kernel's parameters for descriptor parameter `name`: its base, then one
    per dimension for the shape and for the strides."""
    return (
        f"{name}_base",
        *(f"{name}_shape{d}" for d in range(rank)),
        *(f"{name}_stride{d}" for d in range(rank)),
    )


@dataclass(frozen=True)
class ParamTuple:
    """A tuple argument: the kernel sees a Python tuple of its elements' values."""

    elements: tuple[Any, ...]
    """One `Param` per element (nested `ParamTuple`s and `ParamDescriptor`s included)."""
    kind: type | None = None
    """A named tuple's class, which the kernel's value is an instance of; None for a tuple."""

    def rebuilt(self, values: tuple[Any, ...]) -> tuple[Any, ...]:
        """The kernel's value of the parameter from its elements' values."""
        return values if self.kind is None else self.kind(*values)


Param = ParamType | ParamConstexpr | ParamDescriptor | ParamTuple


def leaves(name: str, spec: Param) -> list[tuple[str, ParamType | ParamConstexpr]]:
    """The run-time and compile-time entries a parameter is made of, named as the compiled
    kernel's arguments: a descriptor's base, shape and strides (`descriptor_part_names`), a
    tuple's elements as `<name>_<i>`, recursively."""
    if isinstance(spec, ParamDescriptor):
        return list(spec.parts(name))
    if isinstance(spec, ParamTuple):
        return [leaf for i, e in enumerate(spec.elements) for leaf in leaves(f"{name}_{i}", e)]
    return [(name, spec)]


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
