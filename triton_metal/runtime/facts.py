"""The facts a launch's arguments give the compiler, and the errors of bad arguments.

`specialization.py` computes them (the rules are listed there); the array adapters (`arrays/`)
make the pointer facts of their kinds. They live here, below both, so that an adapter needs
nothing from `specialization.py`. Every fact is a frozen dataclass; the pointer facts are
interned (`POINTER_FACTS`, `MPS_POINTER_FACTS`), so building a key on a launch allocates little.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import LaunchError
from ..language import types as tlt


class ArgumentError(LaunchError, TypeError):
    """A kernel argument of the wrong kind (a `LaunchError` that is also a `TypeError`)."""


class IntegerArgumentOverflow(ArgumentError, OverflowError):
    """An integer argument that fits no kernel integer type: an `OverflowError`, as in Triton."""


# -- the facts ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PointerArg:
    """An array argument: a pointer to its first element."""

    element: tlt.dtype
    aligned16: bool
    """The address of the first element is a multiple of 16 bytes."""
    mps: bool = False
    """A torch tensor on the MPS device: the launch runs on the torch_mps backend."""
    same_as: int = -1
    """On the Metal path, the index of an earlier argument that is this very array (one object
    passed twice), else -1: the variant compiles both parameters as one (`same_array_facts`)."""
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # keys are hashed on every launch: compute once (tl dtypes hash in Python code)
        object.__setattr__(self, "_hash", hash(("ptr", self.element, self.aligned16, self.mps, self.same_as)))

    def __hash__(self) -> int:
        return self._hash

    @property
    def ty(self) -> tlt.pointer_type:
        return tlt.pointer_type(self.element)


@dataclass(frozen=True, slots=True)
class ScalarArg:
    """A runtime scalar argument (`i1`, `i32`, `i64`, `u64` or `fp32`)."""

    ty: tlt.dtype
    divisible16: bool
    """The value is a multiple of 16 (never set for `i1`/`fp32`)."""
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash(("scalar", self.ty, self.divisible16)))

    def __hash__(self) -> int:
        return self._hash


@dataclass(frozen=True, slots=True)
class ConstexprArg:
    """A value baked into the compiled kernel.

    `kind` keeps values that compare equal across types apart (`1`, `1.0` and `True` are equal
    and hash alike in Python, but compile to different kernels)."""

    value: Any
    kind: str
    distinct: bool | tuple[Any, ...] = False
    """What equality misses in the value: True for -0.0, which equals and hashes as 0.0 but
    compiles to another kernel (`1.0 / x`); for a tuple, each element's type and this mark, at
    any depth (`(1,)`, `(1.0,)` and `(True,)` are equal tuples, as `1 == 1.0 == True`)."""


@dataclass(frozen=True, slots=True)
class DescriptorArg:
    """A host tensor descriptor (`triton.tools.tensor_descriptor.TensorDescriptor`): its base
    array's fact, one integer fact per dimension for the shape and for the strides, and the
    block shape and padding, which are compile-time."""

    base: PointerArg
    shape: tuple[ScalarArg | ConstexprArg, ...]
    strides: tuple[ScalarArg | ConstexprArg, ...]
    block_shape: tuple[int, ...]
    padding: str


@dataclass(frozen=True, slots=True)
class TupleArg:
    """A tuple argument: one fact per element, as if each were an argument of its own."""

    elements: tuple[Any, ...]
    """`ArgSpec`s, nested `TupleArg`s included."""
    kind: type | None = None
    """The named tuple's class (`typing.NamedTuple`, `collections.namedtuple`), which the kernel
    sees the argument as; None for a plain tuple."""


ArgSpec = PointerArg | ScalarArg | ConstexprArg | DescriptorArg | TupleArg


POINTER_FACTS: dict[tuple[tlt.dtype, bool], PointerArg] = {
    (ty, a): PointerArg(ty, a) for ty in tlt.SCALAR_DTYPES for a in (False, True)
}
"""(element type, first element 16-byte aligned) -> the interned pointer fact."""
MPS_POINTER_FACTS: dict[tuple[tlt.dtype, bool], PointerArg] = {
    (ty, a): PointerArg(ty, a, True) for ty in tlt.SCALAR_DTYPES for a in (False, True)
}
"""The same for torch tensors on the MPS device."""


def same_array_facts(values: tuple[object, ...], facts: tuple[ArgSpec, ...]) -> tuple[ArgSpec, ...]:
    """`facts` with `same_as` set on each array argument that is the very object an earlier
    array argument is (Liger-Kernel's norms pass `dY` as their output `dX` too). On the Metal
    path every written argument has its own output buffer and loads read the contents from
    before the launch, so a kernel that reads one of the two after writing the other is refused
    (docs/runtime.md, "Aliasing"); compiled as one parameter, the array is one buffer again."""
    if len(set(map(id, values))) == len(values):
        return facts  # the common launch: no object twice (checked in C, per launch)
    first: dict[int, int] = {}
    out = list(facts)
    for i, (value, fact) in enumerate(zip(values, facts)):
        if type(fact) is PointerArg:
            j = first.setdefault(id(value), i)
            if j != i:
                twin = _SAME_AS.get((fact, j))
                if twin is None:
                    twin = _SAME_AS[fact, j] = replace(fact, same_as=j)
                out[i] = twin
    return tuple(out)


_SAME_AS: dict[tuple[PointerArg, int], PointerArg] = {}
"""Interned `same_as` facts: (the argument's own fact, the index of its first occurrence)."""


def bad_dtype(dtype_name: str, name: str) -> LaunchError:
    """The error for an array of an element type no kernel takes, naming parameter `name`."""
    if dtype_name in ("float64", "double"):
        return ArgumentError(f"argument '{name}' is a float64 array: {tlt.FP64_REFUSAL}")
    supported = "bool, int8-int64, uint8-uint64, float16, bfloat16 (MLX), float32"
    return ArgumentError(
        f"argument '{name}' has element type {dtype_name}, which a kernel cannot use "
        f"(supported: {supported})"
    )
