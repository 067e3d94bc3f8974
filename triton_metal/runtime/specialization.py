"""Specialization: what a launch's arguments tell the compiler, as a hashable key.

Triton compiles one variant of a kernel per *specialization*: the types of the arguments plus a
few facts about their values that let the compiler vectorise or fold (DESIGN section 6). The
rules here are Triton's (`specialize_impl` in `triton/runtime/jit.py`):

| argument                         | becomes                                    |
|----------------------------------|--------------------------------------------|
| `tl.constexpr` parameter         | its value (part of the key)                |
| `None`, `str`, a `tl.dtype`, a `@jit` function | a constexpr                  |
| `bool`                           | `i1`, never value-specialized              |
| `int == 1`                       | the constexpr `1` (unless `do_not_specialize`) |
| `int` in [-2**31, 2**31)         | `i32`, plus "divisible by 16" when it is   |
| `int` in [2**63, 2**64)          | `u64`, plus "divisible by 16"              |
| other `int` in [-2**63, 2**63)   | `i64`, plus "divisible by 16"              |
| `float`                          | `fp32`, never value-specialized            |
| NumPy / MLX array, torch tensor  | a pointer to its element type, plus "16-byte aligned" |
| a tuple                          | one fact per element (nested tuples too)   |
| host `TensorDescriptor`          | its base's pointer fact, the shape's and strides' integer facts, the block shape and padding |

`do_not_specialize` turns off the `== 1` and divisibility facts for a parameter (and alignment for
arrays, as Triton does); `do_not_specialize_on_alignment` turns off only divisibility/alignment.

An array's fact comes from the adapter of its kind (`arrays/`): NumPy arrays are specialized by
the address of their first element, torch tensors by `data_ptr()` and their device, MLX arrays
(which expose no address) as aligned. The commonest kinds are tested here by exact type before
the adapter lookup, as the generated binder does (`binder.py`).

Every fact (`facts.py`) is an interned frozen dataclass, so building the key on a launch
allocates little. Errors name the parameter and are raised before anything runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..codegen.target import DEFAULT_TARGET
from ..language import types as tlt
from .arrays import adapter_of, element_of_dtype, is_array, is_host_descriptor
from .arrays.mlx import ARRAY_TYPE as MLX_ARRAY
from .arrays.mlx import MLX as _MLX_KIND
from .arrays.mlx import POINTER_FACTS_OF as MLX_POINTER_FACTS
from .arrays.numpy import pointer_fact as _numpy_spec
from .arrays.torch import TENSOR_TYPE
from .arrays.torch import pointer_fact as _torch_spec
from .facts import (
    POINTER_FACTS,
    ArgSpec,
    ArgumentError,
    ConstexprArg,
    DescriptorArg,
    IntegerArgumentOverflow,
    PointerArg,
    ScalarArg,
    TupleArg,
)

__all__ = [
    "ArgSpec", "ArgumentError", "ConstexprArg", "DescriptorArg", "IntegerArgumentOverflow",
    "MockArray", "MockTensor", "PointerArg", "ScalarArg", "Specialization", "SpecializationKey", "TupleArg",
    "constexpr_arg", "make_specializer", "signature_type", "specialization_of", "specialize_arg",
]
# the facts (`facts.py`) are re-exported: the rest of the package imports them from here

DEFAULT_TARGET_TEXT = str(DEFAULT_TARGET)


@dataclass(frozen=True, slots=True)
class SpecializationKey:
    """Everything a compiled variant depends on, apart from the kernel's source."""

    kernel: str
    args: tuple[ArgSpec, ...]
    num_warps: int
    debug: bool
    backend: str
    compiler_version: str
    index_bits: int = 32
    """64 when an array argument holds 2**31 elements or more: offsets are computed in 64 bits."""
    spread: bool = False
    """The grid is too large for one launch dimension: programs are spread over y and z."""
    math_mode: str = "safe"
    target: str = DEFAULT_TARGET_TEXT
    """`<family>:<msl>` compiled for (`runtime/target.py`); every launch passes the active one."""


# -- interned facts ----------------------------------------------------------------------------

_I1 = ScalarArg(tlt.int1, False)
_FP32 = ScalarArg(tlt.float32, False)
_INT_SPECS: dict[tuple[tlt.dtype, bool], ScalarArg] = {
    (ty, d): ScalarArg(ty, d) for ty in (tlt.int32, tlt.int64, tlt.uint64) for d in (False, True)
}
_ONE = ConstexprArg(1, "int")
_NONE = ConstexprArg(None, "NoneType")


def is_fp64_refusal(error: BaseException) -> bool:
    """The launch refused a float64 array (a refusal a type error of the program comes before)."""
    return isinstance(error, ArgumentError) and tlt.FP64_REFUSAL in str(error)


def without_fp64(value: object) -> object:
    """A float64 array stands in as a float32 one, to type-check a program that received it."""
    adapter = adapter_of(value)
    if adapter is not None and adapter.is_fp64(value):
        return MockArray(tlt.float32)
    return value


# -- per-value specialization ------------------------------------------------------------------


class MockArray:
    """A stand-in for an array in `kernel.warmup`: only its element type (an aligned pointer).

    `warmup` wraps NumPy, MLX and torch dtypes given in place of arrays in one of these, as
    Triton's `MockTensor` does for torch dtypes, so a variant can be compiled before any data
    exists."""

    __slots__ = ("element",)

    def __init__(self, element: tlt.dtype) -> None:
        self.element = element

    @staticmethod
    def wrap_dtype(value: object) -> object:
        """`value` as a `MockArray` if it is a dtype of an array kind (NumPy, MLX, torch),
        a plain tuple with its dtypes wrapped (nested tuples too: a tuple argument holds arrays),
        else unchanged (a named tuple too: launches refuse those)."""
        if type(value) is tuple:
            return tuple(MockArray.wrap_dtype(v) for v in value)
        element = element_of_dtype(value)
        return value if element is None else MockArray(element)

    def __repr__(self) -> str:
        return f"MockArray({self.element!r})"


class MockTensor(MockArray):
    """Triton's `triton.runtime.jit.MockTensor`: an array of `dtype` (a `tl` dtype, or a NumPy,
    MLX or torch one) that holds no data, to compile a variant before any array exists
    (`kernel.warmup(MockTensor(torch.float16), ...)`). Pointers to it count as aligned."""

    def __init__(self, dtype: object, shape: Sequence[int] | None = None) -> None:
        element = dtype if isinstance(dtype, tlt.dtype) else element_of_dtype(dtype)
        if element is None:
            raise TypeError(f"MockTensor: {dtype!r} is not a tl, NumPy, MLX or torch dtype")
        super().__init__(element)
        self.dtype = dtype
        self.shape = list(shape) if shape is not None else [1]

    def stride(self) -> tuple[int, ...]:
        """The strides of a contiguous array of `shape`, as Triton's MockTensor gives."""
        strides = [1]
        for size in reversed(self.shape[1:]):
            strides.append(strides[-1] * size)
        return tuple(reversed(strides))

    def __repr__(self) -> str:
        return f"MockTensor({self.dtype!r}, shape={self.shape})"


_INT_PAIRS: dict[tlt.dtype, tuple[ScalarArg, ScalarArg]] = {
    ty: (_INT_SPECS[(ty, False)], _INT_SPECS[(ty, True)]) for ty in (tlt.int32, tlt.int64, tlt.uint64)
}
I32_FACTS, _I64_PAIR, _U64_PAIR = _INT_PAIRS[tlt.int32], _INT_PAIRS[tlt.int64], _INT_PAIRS[tlt.uint64]
"""The (not divisible, divisible by 16) facts per integer type, indexed by a bool: a launch
computes a fact per scalar, and a dict keyed by `tl` dtypes would hash them in Python. The
generated binder reads `I32_FACTS` itself (`binder.py`)."""


def _int_spec(value: int, name: str, specialize: bool, align: bool) -> ArgSpec:
    if specialize and value == 1:
        return _ONE
    if -(2**31) <= value < 2**31:
        pair = I32_FACTS
    elif 2**63 <= value < 2**64:
        pair = _U64_PAIR
    elif -(2**63) <= value < 2**63:
        pair = _I64_PAIR
    else:
        raise IntegerArgumentOverflow(
            f"argument '{name}' = {value} does not fit in 64 bits (kernels take i32, i64 or u64)"
        )
    return pair[specialize and align and value % 16 == 0]


def specialize_arg(value: object, name: str, specialize: bool = True, align: bool = True) -> ArgSpec:
    """The fact for the value of a non-constexpr parameter `name`.

    `specialize=False` is `do_not_specialize`; `align=False` is `do_not_specialize_on_alignment`.
    """
    cls = type(value)
    if cls is int:
        if -(2**31) <= value < 2**31 and (value != 1 or not specialize):  # type: ignore[operator]
            return I32_FACTS[specialize and align and value % 16 == 0]  # _int_spec, inlined
        return _int_spec(value, name, specialize, align)  # type: ignore[arg-type]
    if cls is np.ndarray:
        return _numpy_spec(value, name, specialize, align)  # type: ignore[arg-type]
    if cls is MLX_ARRAY:
        pair = MLX_POINTER_FACTS.get(value.dtype)  # type: ignore[attr-defined]  # _mlx_spec, inlined
        if pair is not None:
            return pair[specialize and align]
        return _MLX_KIND.pointer_fact(value, name, specialize, align)  # raises, naming the dtype
    if cls is float:
        return _FP32
    if cls is bool:
        return _I1
    if cls is TENSOR_TYPE[0]:
        return _torch_spec(value, name, specialize, align)
    return _specialize_other(value, name, specialize, align)


ANNOTATABLE = frozenset({"int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                         "fp16", "bf16", "fp32"})
"""The scalar types a run-time parameter's annotation may name (`frontend/signature.py` passes
the narrower ones through a wider carrier)."""


def annotated_arg(value: object, name: str, ty: tlt.dtype, align: bool) -> ArgSpec:
    """The fact for a parameter annotated with a scalar type (`v: tl.uint8`, `x: tl.float16`):
    a Python or NumPy scalar is passed as that type, as Triton passes it (never specialized to
    the constexpr 1); a value the type cannot hold is refused. Other values (arrays, tensors)
    are specialized as if unannotated."""
    if not isinstance(value, (bool, int, float, np.generic)) or isinstance(value, np.complexfloating):
        return specialize_arg(value, name, True, align)
    if ty.is_fp64():
        raise ArgumentError(f"argument '{name}' is annotated float64: Apple GPUs have no fp64; annotate it tl.float32")
    if ty.name not in ANNOTATABLE:
        raise ArgumentError(
            f"argument '{name}' is annotated {ty.name}: a run-time scalar may be annotated "
            f"{', '.join(sorted(ANNOTATABLE))}"
        )
    if ty.is_floating():
        return ScalarArg(ty, False)
    if isinstance(value, (float, np.floating)):
        raise ArgumentError(f"argument '{name}' is annotated {ty.name} but was given the float {value!r}")
    v = int(value)
    bits = ty.primitive_bitwidth
    low, high = (0, 2**bits) if ty.is_int_unsigned() or ty.is_bool() else (-(2 ** (bits - 1)), 2 ** (bits - 1))
    if not low <= v < high:
        raise IntegerArgumentOverflow(f"argument '{name}' = {v} does not fit in {ty.name} (its annotation)")
    return ScalarArg(ty, align and not ty.is_bool() and v % 16 == 0)


def _specialize_other(value: object, name: str, specialize: bool, align: bool) -> ArgSpec:
    from ..language import constexpr  # the language package is imported by now; keep this lazy

    if value is None:
        return _NONE
    adapter = adapter_of(value)  # subclasses (np.memmap, ...), reinterpretations, tensors
    if adapter is not None:
        return adapter.pointer_fact(value, name, specialize, align)
    if isinstance(value, MockArray):
        return POINTER_FACTS[(value.element, specialize and align)]
    if isinstance(value, np.bool_):
        return _I1
    if isinstance(value, np.integer):
        return _int_spec(int(value), name, specialize, align)
    if isinstance(value, np.floating):
        return _FP32
    if isinstance(value, constexpr):
        return constexpr_arg(value.value, name)
    if isinstance(value, (str, tlt.dtype)) or _is_jit_callable(value):
        return constexpr_arg(value, name)
    if is_host_descriptor(value):
        return _descriptor_spec(value, name, specialize, align)
    if isinstance(value, (complex, np.complexfloating)):
        raise ArgumentError(f"argument '{name}' is a complex number; kernels have no complex type")
    if isinstance(value, list):
        raise ArgumentError(
            f"argument '{name}' is a Python list; pass an array or a tensor (a torch tensor, "
            "mlx.core.array or numpy.ndarray) for a pointer argument"
        )
    if isinstance(value, tuple):
        return TupleArg(tuple(
            specialize_arg(v, f"{name}[{i}]", specialize, align) for i, v in enumerate(value)
        ), type(value) if hasattr(value, "_fields") else None)
    raise ArgumentError(
        f"argument '{name}' has unsupported type {type(value).__module__}.{type(value).__qualname__}:"
        " pass a torch tensor, mlx.core.array or numpy.ndarray for a pointer, or a Python int, float"
        " or bool"
    )


def _descriptor_spec(value: Any, name: str, specialize: bool, align: bool) -> DescriptorArg:
    from ..tools.tensor_descriptor import check_block_shape

    base = specialize_arg(value.base, f"{name}.base", specialize, align)
    if not isinstance(base, PointerArg):
        raise ArgumentError(
            f"argument '{name}': a tensor descriptor's base must be an array or a tensor, "
            f"not {type(value.base).__name__}"
        )
    block_shape = list(value.block_shape)
    rank = len(value.shape)
    if not (len(value.strides) == len(block_shape) == rank):
        raise ArgumentError(
            f"argument '{name}': the descriptor's shape, strides and block_shape have "
            f"{rank}, {len(value.strides)} and {len(block_shape)} entries; give one per dimension"
        )
    try:
        check_block_shape(block_shape)
    except ValueError as error:
        raise ArgumentError(f"argument '{name}': {error}") from None
    shape = tuple(_descriptor_int(v, f"{name}.shape[{d}]", specialize, align) for d, v in enumerate(value.shape))
    strides = tuple(_descriptor_int(v, f"{name}.strides[{d}]", specialize, align) for d, v in enumerate(value.strides))
    return DescriptorArg(base, shape, strides, tuple(block_shape), value.padding)


def _descriptor_int(value: object, name: str, specialize: bool, align: bool) -> ScalarArg | ConstexprArg:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ArgumentError(f"argument '{name}' must be an integer, not {type(value).__name__}")
    fact = _int_spec(int(value), name, specialize, align)
    assert isinstance(fact, (ScalarArg, ConstexprArg))
    return fact


def _is_jit_callable(value: object) -> bool:
    from ..language.jit_marker import JITCallable

    return isinstance(value, JITCallable)


_CONSTEXPR_FACTS: dict[tuple[type, object], ConstexprArg] = {}
_PLAIN_CONSTEXPR_TYPES = (int, float, bool, str)
_NEGATIVE_ZERO = ConstexprArg(-0.0, "float", distinct=True)


def constexpr_arg(value: object, name: str) -> ConstexprArg:
    """The fact for a value given to a `tl.constexpr` parameter (or a value that is one)."""
    cls = type(value)
    if cls in _PLAIN_CONSTEXPR_TYPES:  # the common case: interned, nothing to check
        if cls is float and value == 0.0 and math.copysign(1.0, value) < 0.0:  # type: ignore[arg-type]
            return _NEGATIVE_ZERO  # equal to 0.0 as a key: never interned under it
        fact = _CONSTEXPR_FACTS.get((cls, value))
        if fact is None:
            fact = ConstexprArg(value, cls.__name__)
            if len(_CONSTEXPR_FACTS) < 4096:
                _CONSTEXPR_FACTS[(cls, value)] = fact
        return fact
    return _constexpr_arg_slow(value, name)


def _constexpr_arg_slow(value: object, name: str) -> ConstexprArg:
    from ..language import constexpr

    if isinstance(value, constexpr):
        value = value.value
    if value is None:
        return _NONE
    if is_array(value):
        raise ArgumentError(
            f"argument '{name}' is a tl.constexpr parameter but was given an array; "
            "constexpr parameters take compile-time values (int, float, bool, str, dtype, None)"
        )
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        value = value.item()
    if isinstance(value, list):
        value = tuple(value)
    try:
        hash(value)
    except TypeError:
        raise ArgumentError(
            f"argument '{name}' is a tl.constexpr parameter but its value of type "
            f"{type(value).__name__} is not hashable"
        ) from None
    distinct = _unequal_parts(value) if isinstance(value, (float, tuple)) else False
    return ConstexprArg(value, type(value).__name__, distinct=distinct)


def _unequal_parts(value: object) -> bool | tuple[Any, ...]:
    """`ConstexprArg.distinct` for `value`: whether it is -0.0 (a float, a NumPy float or a
    `tl.constexpr` of one), and for a tuple each element's type and mark at any depth, so that
    values Python calls equal but that compile differently key apart."""
    from ..language.core import _unwrap

    value = _unwrap(value)
    if isinstance(value, (float, np.floating)):
        return bool(value == 0.0 and math.copysign(1.0, float(value)) < 0.0)
    if isinstance(value, tuple):
        return tuple((type(_unwrap(v)).__name__, _unequal_parts(v)) for v in value)
    return False


SpecializeFn = Callable[[object], ArgSpec]


def make_specializer(name: str, is_constexpr: bool, specialize: bool, align: bool) -> SpecializeFn:
    """A one-argument function computing a parameter's fact (used by the generated binder)."""
    if is_constexpr:
        return lambda value: constexpr_arg(value, name)
    return lambda value: specialize_arg(value, name, specialize, align)


@dataclass(frozen=True)
class Specialization:
    """What Triton's `@jit(repr=fn)` hook receives: each parameter's type in Triton's signature
    spelling (`"i32"`, `"u64"`, `"fp32"`, `"*fp16"`, `"constexpr"`), and the compile-time values
    (`tl.constexpr` parameters and the specialized ones, such as an int argument equal to 1)."""

    signature: dict[str, str]
    constants: dict[str, Any]


def signature_type(ty: tlt.dtype) -> str:
    """Triton's spelling of a scalar type in signatures: `i1`..`i64`, `u8`..`u64`, `fp32`, ..."""
    if ty.is_int():
        return ("u" if ty.is_int_unsigned() and not ty.is_bool() else "i") + str(ty.primitive_bitwidth)
    return ty.name


def specialization_of(names: list[str], args: tuple[ArgSpec, ...]) -> Specialization:
    """The `Specialization` of a compiled variant's parameters `names` and facts `args`."""
    signature: dict[str, str] = {}
    constants: dict[str, Any] = {}
    for name, spec in zip(names, args):
        if isinstance(spec, ConstexprArg):
            signature[name], constants[name] = "constexpr", spec.value
        elif isinstance(spec, PointerArg):
            signature[name] = "*" + signature_type(spec.element)
        elif isinstance(spec, ScalarArg):
            signature[name] = signature_type(spec.ty)
        else:
            signature[name] = type(spec).__name__
    return Specialization(signature, constants)

