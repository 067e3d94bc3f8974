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

Alignment of NumPy arrays is read from the address of the first element (`arr.ctypes.data`), so
a view with an offset is specialized by its own address. MLX arrays do not expose an address:
their buffers come from MLX's allocator, which aligns every allocation (to at least 16 bytes), and
a view with an offset is copied by MLX before a custom kernel sees it unless it is row-contiguous,
so MLX arrays are assumed aligned. (A row-contiguous MLX view at an odd element offset is the
one case this can be wrong; it only matters to the future Metal backend and is documented in
`docs/runtime.md`.)

Every fact is an interned frozen dataclass, so building the key on a launch allocates little.
Errors name the parameter and are raised before anything runs.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..codegen.target import DEFAULT_TARGET
from ..errors import LaunchError
from ..language import types as tlt
from .torch_arrays import TENSOR_TYPE, is_tensor, tensor_spec, tensor_type, torch_dtype

DEFAULT_TARGET_TEXT = str(DEFAULT_TARGET)

try:  # MLX is a dependency, but the interpreter and tests must work where it fails to load.
    import mlx.core as _mx
except ImportError:  # pragma: no cover - exercised only on machines without MLX
    _mx = None


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
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # keys are hashed on every launch: compute once (tl dtypes hash in Python code)
        object.__setattr__(self, "_hash", hash(("ptr", self.element, self.aligned16, self.mps)))

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


ArgSpec = PointerArg | ScalarArg | ConstexprArg | DescriptorArg | TupleArg


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

_NUMPY_DTYPES: dict[np.dtype[Any], tlt.dtype] = {
    np.dtype(np.bool_): tlt.int1,
    np.dtype(np.int8): tlt.int8,
    np.dtype(np.int16): tlt.int16,
    np.dtype(np.int32): tlt.int32,
    np.dtype(np.int64): tlt.int64,
    np.dtype(np.uint8): tlt.uint8,
    np.dtype(np.uint16): tlt.uint16,
    np.dtype(np.uint32): tlt.uint32,
    np.dtype(np.uint64): tlt.uint64,
    np.dtype(np.float16): tlt.float16,
    np.dtype(np.float32): tlt.float32,
}
_POINTER_SPECS: dict[tuple[tlt.dtype, bool], PointerArg] = {
    (ty, a): PointerArg(ty, a) for ty in tlt.SCALAR_DTYPES for a in (False, True)
}
_MPS_POINTER_SPECS: dict[tuple[tlt.dtype, bool], PointerArg] = {
    (ty, a): PointerArg(ty, a, True) for ty in tlt.SCALAR_DTYPES for a in (False, True)
}

MLX_DTYPES: dict[Any, tlt.dtype] = {}
if _mx is not None:
    MLX_DTYPES = {
        _mx.bool_: tlt.int1,
        _mx.int8: tlt.int8,
        _mx.int16: tlt.int16,
        _mx.int32: tlt.int32,
        _mx.int64: tlt.int64,
        _mx.uint8: tlt.uint8,
        _mx.uint16: tlt.uint16,
        _mx.uint32: tlt.uint32,
        _mx.uint64: tlt.uint64,
        _mx.float16: tlt.float16,
        _mx.bfloat16: tlt.bfloat16,
        _mx.float32: tlt.float32,
    }
    MLX_ARRAY: type | None = _mx.array
else:  # pragma: no cover
    MLX_ARRAY = None


def tl_dtype_of_numpy(dt: np.dtype[Any], name: str) -> tlt.dtype:
    """The `tl` element type of a NumPy dtype, or an error naming parameter `name`."""
    ty = _NUMPY_DTYPES.get(dt)
    if ty is not None:
        return ty
    raise _bad_dtype(str(dt), name)


def tl_dtype_of_mlx(dt: Any, name: str) -> tlt.dtype:
    """The `tl` element type of an MLX dtype, or an error naming parameter `name`."""
    ty = MLX_DTYPES.get(dt)
    if ty is not None:
        return ty
    raise _bad_dtype(str(dt).removeprefix("mlx.core."), name)


def is_fp64_refusal(error: BaseException) -> bool:
    """The launch refused a float64 array (a refusal a type error of the program comes before)."""
    return isinstance(error, ArgumentError) and tlt.FP64_REFUSAL in str(error)


def without_fp64(value: object) -> object:
    """A float64 array stands in as a float32 one, to type-check a program that received it."""
    dt = getattr(value, "dtype", None)
    if isinstance(value, np.ndarray) and dt == np.float64:
        return MockArray(tlt.float32)
    if _mx is not None and isinstance(value, _mx.array) and dt == _mx.float64:
        return MockArray(tlt.float32)
    if is_tensor(value) and str(dt) == "torch.float64":
        return MockArray(tlt.float32)
    return value


def _bad_dtype(dtype_name: str, name: str) -> LaunchError:
    if dtype_name in ("float64", "double"):
        return ArgumentError(f"argument '{name}' is a float64 array: {tlt.FP64_REFUSAL}")
    supported = "bool, int8-int64, uint8-uint64, float16, bfloat16 (MLX), float32"
    return ArgumentError(
        f"argument '{name}' has element type {dtype_name}, which a kernel cannot use "
        f"(supported: {supported})"
    )


# -- per-value specialization ------------------------------------------------------------------


class ReinterpretedArray:
    """An array seen through another element type (`triton_metal.reinterpret`).

    Used only where the array library cannot express the view itself (bfloat16 over a NumPy
    array); everywhere else `reinterpret` returns a real view."""

    __slots__ = ("base", "dtype")

    def __init__(self, base: np.ndarray[Any, Any], dtype: tlt.dtype) -> None:
        self.base = base
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"reinterpret({self.base!r}, {self.dtype!r})"


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
        """`value` as a `MockArray` if it is a NumPy or MLX dtype, else unchanged."""
        if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
            return MockArray(tl_dtype_of_numpy(np.dtype(value), "warmup"))
        if _mx is not None and isinstance(value, _mx.Dtype):
            return MockArray(tl_dtype_of_mlx(value, "warmup"))
        element = torch_dtype(value)
        if element is not None:
            return MockArray(element)
        return value

    def __repr__(self) -> str:
        return f"MockArray({self.element!r})"


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


_NUMPY_POINTERS: dict[np.dtype[Any], tuple[PointerArg, PointerArg]] = {
    dt: (_POINTER_SPECS[(ty, False)], _POINTER_SPECS[(ty, True)]) for dt, ty in _NUMPY_DTYPES.items()
}


_ALIGNED: dict[int, tuple[Any, tuple[int, ...], int]] = {}
"""id(array) -> (weak reference, shape, first element 16-byte aligned). Reading an address
(`arr.ctypes.data`) costs about a microsecond; an array's address is fixed for its lifetime
unless `ndarray.resize` reallocates it, which also changes its shape (checked). Entries leave
with their arrays (the weak reference's callback)."""


def _forget(key: int) -> Callable[[Any], None]:
    return lambda _ref: _ALIGNED.pop(key, None)


def _address_mod16(value: np.ndarray[Any, Any]) -> int:
    key = id(value)
    entry = _ALIGNED.get(key)
    if entry is not None and entry[0]() is value and entry[1] == value.shape:
        return entry[2]
    mod = value.ctypes.data % 16
    try:
        _ALIGNED[key] = (weakref.ref(value, _forget(key)), value.shape, mod)
    except TypeError:  # pragma: no cover - an array type without weak references
        pass
    return mod


def _numpy_spec(value: np.ndarray[Any, Any], name: str, specialize: bool, align: bool) -> ArgSpec:
    pair = _NUMPY_POINTERS.get(value.dtype)
    if pair is None:
        raise _bad_dtype(str(value.dtype), name)
    mod = _address_mod16(value)
    if mod % value.itemsize:
        # Metal reads elements only at multiples of their size; refused here so that every
        # backend refuses it (the CPU would read the misaligned element, the GPU would not)
        raise ArgumentError(
            f"argument '{name}': its first element is at an address {mod % value.itemsize} byte(s) "
            f"past a multiple of its element size {value.itemsize} ({value.dtype}); kernels read "
            "elements only at aligned addresses: pass an aligned copy (np.ascontiguousarray of a "
            "fresh array)"
        )
    return pair[specialize and align and mod == 0]


MLX_POINTER_FACTS: dict[Any, tuple[PointerArg, PointerArg]] = {
    dt: (_POINTER_SPECS[(ty, False)], _POINTER_SPECS[(ty, True)]) for dt, ty in MLX_DTYPES.items()
}
"""MLX dtype -> the (unaligned, aligned) facts, looked up by the MLX dtype (hashed in C; the
generated binder reads this table itself)."""


def _mlx_spec(value: Any, name: str, specialize: bool, align: bool) -> ArgSpec:
    pair = MLX_POINTER_FACTS.get(value.dtype)
    if pair is None:
        tl_dtype_of_mlx(value.dtype, name)  # raises, naming the parameter
    return pair[specialize and align]  # type: ignore[index]


def _reinterpreted_spec(value: ReinterpretedArray, name: str, specialize: bool, align: bool) -> ArgSpec:
    aligned = specialize and align and value.base.ctypes.data % 16 == 0
    return _POINTER_SPECS[(value.dtype, aligned)]


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
        return _mlx_spec(value, name, specialize, align)
    if cls is float:
        return _FP32
    if cls is bool:
        return _I1
    if cls is TENSOR_TYPE[0]:
        return _torch_spec(value, name, specialize, align)
    return _specialize_other(value, name, specialize, align)


_TORCH_POINTERS: dict[tuple[Any, bool], tuple[PointerArg, PointerArg]] = {}
"""(torch dtype, on MPS) -> the (unaligned, aligned) facts: torch dtypes hash fast, tl dtypes
do not."""


def _torch_spec(value: Any, name: str, specialize: bool, align: bool) -> ArgSpec:
    dt, ty, mps, address = tensor_spec(value, name)
    pair = _TORCH_POINTERS.get((dt, mps))
    if pair is None:
        table = _MPS_POINTER_SPECS if mps else _POINTER_SPECS
        pair = _TORCH_POINTERS[(dt, mps)] = (table[(ty, False)], table[(ty, True)])
    return pair[specialize and align and address % 16 == 0]


def _specialize_other(value: object, name: str, specialize: bool, align: bool) -> ArgSpec:
    from ..language import constexpr  # the language package is imported by now; keep this lazy

    if value is None:
        return _NONE
    if isinstance(value, np.ndarray):  # subclasses (np.memmap, ...)
        return _numpy_spec(value, name, specialize, align)
    if MLX_ARRAY is not None and isinstance(value, MLX_ARRAY):
        return _mlx_spec(value, name, specialize, align)
    if isinstance(value, ReinterpretedArray):
        return _reinterpreted_spec(value, name, specialize, align)
    torch_tensor = tensor_type()
    if torch_tensor is not None and isinstance(value, torch_tensor):
        return _torch_spec(value, name, specialize, align)
    if isinstance(value, MockArray):
        return _POINTER_SPECS[(value.element, specialize and align)]
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
        if hasattr(value, "_fields"):
            raise ArgumentError(
                f"argument '{name}' is a named tuple; pass a plain tuple (named tuple arguments "
                "are not supported yet)"
            )
        return TupleArg(tuple(
            specialize_arg(v, f"{name}[{i}]", specialize, align) for i, v in enumerate(value)
        ))
    raise ArgumentError(
        f"argument '{name}' has unsupported type {type(value).__module__}.{type(value).__qualname__}:"
        " pass a torch tensor, mlx.core.array or numpy.ndarray for a pointer, or a Python int, float"
        " or bool"
    )


def is_host_descriptor(value: object) -> bool:
    """`value` is a `tools.tensor_descriptor.TensorDescriptor` (its module is imported by
    whoever made one, so this imports nothing new)."""
    module = sys.modules.get("triton_metal.tools.tensor_descriptor")
    return module is not None and isinstance(value, module.TensorDescriptor)


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


def constexpr_arg(value: object, name: str) -> ConstexprArg:
    """The fact for a value given to a `tl.constexpr` parameter (or a value that is one)."""
    cls = type(value)
    if cls in _PLAIN_CONSTEXPR_TYPES:  # the common case: interned, nothing to check
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
    if (
        isinstance(value, np.ndarray)
        or (MLX_ARRAY is not None and isinstance(value, MLX_ARRAY))
        or is_tensor(value)
    ):
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
    return ConstexprArg(value, type(value).__name__)


SpecializeFn = Callable[[object], ArgSpec]


def make_specializer(name: str, is_constexpr: bool, specialize: bool, align: bool) -> SpecializeFn:
    """A one-argument function computing a parameter's fact (used by the generated binder)."""
    if is_constexpr:
        return lambda value: constexpr_arg(value, name)
    return lambda value: specialize_arg(value, name, specialize, align)
