"""The bad-input catalogue: one launch per kind of mistake, each expected to be refused with a
clear error (the kernel, or the argument, and the reason) and to leave every array as it was.

`CASES` holds `Case(name, kernel, change, reason)`: `change(x, out)` returns the launch's
(args, kwargs, grid) from the good arrays; `reason` is a regular expression the message must
match on every backend. `run(case, interpret)` launches it and classifies the outcome:
"clear", "silent" (nothing raised), "unclear" (the message names neither the kernel nor an
argument, or misses the reason), "crash" (an exception that is not an error of the launch:
AttributeError, IndexError, RecursionError, internal errors) or "corrupted" (an array changed).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mlx.core as mx
import numpy as np

import bad_kernels as K
from triton_metal.errors import TritonError

N = 64


@dataclass(frozen=True)
class Case:
    name: str
    kernel: Any
    change: Callable[[np.ndarray, np.ndarray], tuple[tuple[Any, ...], dict[str, Any], Any]]
    reason: str
    names: tuple[str, ...] = ()
    """Further names the message may give instead of the kernel's or a parameter's (an unknown
    keyword names itself)."""


def _std(x: np.ndarray, out: np.ndarray, **kw: Any) -> tuple[tuple[Any, ...], dict[str, Any], Any]:
    kwargs = {"BLOCK": N}
    kwargs.update(kw)
    return (x, out, N), kwargs, (1,)


def _args(*args: Any, grid: Any = (1,), **kwargs: Any):  # type: ignore[no-untyped-def]
    return lambda x, out: (tuple(x if a == "X" else out if a == "OUT" else a for a in args), kwargs, grid)


def _grid(grid: Any):  # type: ignore[no-untyped-def]
    return lambda x, out: ((x, out, N), {"BLOCK": N}, grid)


def _opt(**kw: Any):  # type: ignore[no-untyped-def]
    return lambda x, out: _std(x, out, **kw)


def _x(make: Callable[[np.ndarray], Any]):  # type: ignore[no-untyped-def]
    return lambda x, out: ((make(x), out, N), {"BLOCK": N}, (1,))


def _out(make: Callable[[np.ndarray], Any]):  # type: ignore[no-untyped-def]
    return lambda x, out: ((x, make(out), N), {"BLOCK": N}, (1,))


def _n(value: Any):  # type: ignore[no-untyped-def]
    return lambda x, out: ((x, out, value), {"BLOCK": N}, (1,))


def _readonly(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


G = K.good
LAUNCH_CASES = [
    # argument count, names and kinds
    Case("missing argument", G, _args("X", "OUT", BLOCK=N), r"missing a required argument: 'n'"),
    Case("too many positional arguments", G, _args("X", "OUT", N, N, 5), r"too many positional arguments"),
    Case("unknown keyword", G, _args("X", "OUT", N, BLOCK=N, nn=3), r"nn", ("nn",)),
    Case("argument given twice", G, _args("X", "OUT", N, BLOCK=N, x_ptr=0), r"multiple values for argument 'x_ptr'"),
    Case("constexpr missing", G, _args("X", "OUT", N), r"BLOCK"),
    Case("list for a pointer", G, _x(lambda x: list(x)), r"x_ptr"),
    Case("tuple for a pointer", G, _x(lambda x: tuple(x)), r"x_ptr"),
    Case("object for a pointer", G, _x(lambda x: object()), r"x_ptr"),
    Case("bytes for a pointer", G, _x(lambda x: x.tobytes()), r"x_ptr"),
    Case("memoryview for a pointer", G, _x(lambda x: memoryview(x)), r"x_ptr"),
    Case("dict for a pointer", G, _x(lambda x: {"a": x}), r"x_ptr"),
    Case("set for a pointer", G, _x(lambda x: {1, 2}), r"x_ptr"),
    Case("None for an output", G, _out(lambda o: None), r"out_ptr"),
    Case("int for a pointer", G, _x(lambda x: 12345), r"x_ptr|pointer"),
    Case("float for a pointer", G, _x(lambda x: 1.5), r"x_ptr|pointer"),
    Case("NumPy scalar for a pointer", G, _x(lambda x: np.float32(1.0)), r"x_ptr|pointer"),
    Case("float64 array", G, _x(lambda x: x.astype(np.float64)), r"float64"),
    Case("complex64 array", G, _x(lambda x: x.astype(np.complex64)), r"complex"),
    Case("complex128 output", G, _out(lambda o: o.astype(np.complex128)), r"complex"),
    Case("object array", G, _x(lambda x: x.astype(object)), r"object"),
    Case("datetime array", G, _x(lambda x: np.zeros(N, "datetime64[s]")), r"datetime|M8"),
    Case("timedelta array", G, _x(lambda x: np.zeros(N, "timedelta64[s]")), r"timedelta|m8"),
    Case("string array", G, _x(lambda x: np.array(["a"] * N)), r"x_ptr|<U1|str"),
    Case("bytes array", G, _x(lambda x: np.array([b"a"] * N)), r"x_ptr|S1|bytes"),
    Case("structured array", G, _x(lambda x: np.zeros(N, dtype=[("a", np.float32), ("b", np.int32)])), r"x_ptr"),
    Case("longdouble array", G, _x(lambda x: x.astype(np.longdouble)), r"float128|longdouble|x_ptr"),
    Case("big-endian array", G, _x(lambda x: x.astype(">f4")), r"x_ptr|byte order|endian|>f4"),
    Case("reversed columns of a 2-D view", G, _x(lambda x: x.reshape(8, 8)[:, ::-1]), r"x_ptr"),
    Case("grid as a dict", G, _grid({"x": 1}), r"grid"),
    Case("num_warps True", G, _opt(num_warps=True), r"num_warps"),
    Case("MLX complex array", G, _x(lambda x: mx.array(x.astype(np.complex64))), r"complex"),
    Case("read-only output", G, _out(_readonly), r"out_ptr.*read-only|read-only.*out_ptr"),
    Case("reversed view as output", G, _out(lambda o: o[::-1]), r"out_ptr"),
    Case("reversed view as input", G, _x(lambda x: x[::-1]), r"x_ptr"),
    Case("read-only second output", K.two_outputs, _x(_readonly), r"x_ptr.*read-only|read-only.*x_ptr"),
    # scalars
    Case("integer past 64 bits", G, _n(2**70), r"\bn\b"),
    Case("integer below int64", G, _n(-(2**64)), r"\bn\b"),
    Case("complex scalar", G, _n(1j), r"\bn\b"),
    Case("None for a scalar", G, _n(None), r"\bn\b|None"),
    Case("array for a scalar", G, _n(np.arange(3)), r"\bn\b|pointer"),
    Case("string for a scalar", G, _n("sixty-four"), r"\bn\b|str"),
    Case("list for a scalar", G, _n([64]), r"\bn\b"),
    # constexprs
    Case("BLOCK not a power of two", G, _opt(BLOCK=48), r"power of 2|power of two"),
    Case("BLOCK zero", G, _opt(BLOCK=0), r"arange|BLOCK|range"),
    Case("BLOCK negative", G, _opt(BLOCK=-64), r"arange|BLOCK|range"),
    Case("BLOCK a float", G, _opt(BLOCK=1.5), r"arange|BLOCK|int"),
    Case("BLOCK an array", G, _opt(BLOCK=np.arange(4)), r"BLOCK"),
    Case("BLOCK a string", G, _opt(BLOCK="64"), r"arange|BLOCK|str|int"),
    Case("BLOCK too large", G, _opt(BLOCK=1 << 24), r"arange|BLOCK|elements|too|large|exceed"),
    # grids
    Case("negative grid", G, _grid((-1,)), r"grid"),
    Case("grid of four dimensions", G, _grid((1, 1, 1, 1)), r"grid"),
    Case("float grid", G, _grid((1.5,)), r"grid"),
    Case("string grid", G, _grid("1"), r"grid"),
    Case("None grid", G, _grid(None), r"grid"),
    Case("empty grid", G, _grid(()), r"grid"),
    Case("grid with a negative axis", G, _grid((1, -1)), r"grid"),
    Case("grid past 2**32 programs", G, _grid((2**40,)), r"grid"),
    Case("grid function giving a negative size", G, _grid(lambda meta: (-2,)), r"grid"),
    Case("grid function giving a string", G, _grid(lambda meta: "x"), r"grid"),
    Case("grid of arrays", G, _grid(np.ones((2, 2))), r"grid"),
    # launch options
    Case("num_warps 3", G, _opt(num_warps=3), r"num_warps"),
    Case("num_warps 0", G, _opt(num_warps=0), r"num_warps"),
    Case("num_warps negative", G, _opt(num_warps=-4), r"num_warps"),
    Case("num_warps 64", G, _opt(num_warps=64), r"num_warps"),
    Case("num_warps a string", G, _opt(num_warps="4"), r"num_warps"),
    Case("num_warps a float", G, _opt(num_warps=4.0), r"num_warps"),
]

COMPILE_CASES = [
    Case("undefined name", K.undefined_name, _std, r"undefined_thing"),
    Case("arange of 48", K.arange_not_power_of_two, _std, r"power of 2|power of two"),
    Case("arange with a run-time bound", K.arange_runtime_bound, _std, r"arange|constexpr"),
    Case("arange reversed", K.arange_reversed, _std, r"arange|range"),
    Case("arange too long", K.arange_too_long, _std, r"arange|elements|too|large|exceed"),
    Case("shapes that do not broadcast", K.shape_mismatch, _std, r"shape|broadcast"),
    Case("load from a scalar", K.load_from_scalar, _std, r"pointer"),
    Case("static_assert", K.static_assert_fails, _std, r"BLOCK must exceed 4096"),
    Case("assert on a constexpr", K.python_assert_fails, _std, r"BLOCK must be 3"),
    Case("float offset", K.float_offset, _std, r"pointer|float|offset|integer"),
    Case("bitwise and of floats", K.bitwise_on_floats, _std, r"float|bitwise|integer|&|and"),
    Case("shift of floats", K.shift_on_floats, _std, r"float|shift|integer|<<"),
    Case("dot with mismatched K", K.dot_inner_mismatch, _std, r"dot|shape|K|inner|dimension"),
    Case("dot of vectors", K.dot_of_vectors, _std, r"dot|2-D|2D|rank|dimension|shape"),
    Case("reduce along axis 3", K.reduce_bad_axis, _std, r"axis"),
    Case("reshape to another size", K.reshape_bad_size, _std, r"reshape|elements|size|numel|shape"),
    Case("try statement", K.try_statement, _std, r"try|not supported|unsupported"),
    Case("with statement", K.with_statement, _std, r"with|not supported|unsupported|open"),
    Case("lambda", K.lambda_inside, _std, r"lambda|not supported|unsupported"),
    Case("nested def", K.nested_def, _std, r"def|function|not supported|unsupported"),
    Case("while on a tensor", K.tensor_while_condition, _std, r"while|scalar|tensor|condition"),
    Case("call of a callable Python object", K.calls_python_object, _std, r"not_jit"),
    Case("program_id(3)", K.program_id_axis_3, _std, r"program_id|axis"),
    Case("full with a run-time shape", K.full_runtime_shape, _std, r"shape|constexpr"),
    Case("store of a pointer", K.store_a_pointer, _std, r"pointer|store|value"),
    Case("helper called with one argument", K.helper_wrong_arity, _std, r"helper_two|argument"),
    Case("kernel returns a value", K.kernel_returns_value, _std, r"return"),
    Case("where with mismatched shapes", K.where_shape_mismatch, _std, r"shape|broadcast"),
    Case("mask of another shape", K.mask_shape_mismatch, _std, r"shape|broadcast|mask"),
    Case("store to a scalar", K.store_to_scalar, _std, r"pointer|store"),
    Case("string in arithmetic", K.string_arithmetic, _std, r"str|type|one"),
    Case("cast to an unknown dtype", K.cast_unknown_dtype, _std, r"float99|dtype|type"),
    Case("float64 in a kernel", K.uses_float64, _std, r"float64|fp64|double"),
    Case("atomic on float16", K.atomic_on_float16, _std, r"atomic|fp16|float16|32-bit"),
    Case("atomic on int8", K.atomic_on_int8, _std, r"atomic|int8|32-bit"),
    Case("zeros of a negative shape", K.zeros_negative_shape, _std, r"shape|negative|-4"),
    Case("device_print with a number as prefix", K.print_bad_prefix, _std, r"prefix|string"),
    Case("subscript of a tensor", K.subscript_tensor, _std, r"subscript|index|slice|\[|not supported"),
    Case("unknown tl function", K.unknown_tl_function, _std, r"not_a_function"),
    Case("unknown keyword of tl.load", K.unknown_keyword, _std, r"maks"),
    Case("constexpr rebound to a run-time value", K.constexpr_reassigned, _std, r"arange|constexpr|BLOCK"),
    Case("unknown eviction policy", K.load_bad_eviction, _std, r"eviction|sometimes"),
    Case("other without mask", K.other_without_mask, _std, r"other|mask"),
    Case("sum of pointers", K.sum_of_pointer, _std, r"pointer|sum|reduce"),
    Case("range with a float step", K.range_float_step, _std, r"range|float|int|step"),
    Case("static_range of a run-time value", K.static_range_runtime, _std, r"static_range|constexpr"),
    Case("loop changing a shape", K.loop_changes_type, _std, r"\bv\b|shape|type|loop"),
    Case("maximum of mismatched shapes", K.cat_mismatched, _std, r"shape|broadcast"),
    Case("permute with a repeated axis", K.trans_of_1d_bad_perm, _std, r"permut|order|axis|dims"),
    Case("expand_dims past the rank", K.expand_dims_bad_axis, _std, r"axis|expand_dims|dimension"),
    Case("broadcast_to a smaller shape", K.broadcast_to_bad, _std, r"broadcast|shape"),
    Case("if on a tensor", K.constexpr_compare_tensor_if, _std, r"if|scalar|tensor|condition"),
    Case("fp8 type", K.fp8_type, _std, r"fp8|float8|type|not supported"),
    Case("multiple_of 0", K.multiple_of_not_power, _std, r"multiple_of|0|positive|divis"),
    Case("atomic with an unknown sem", K.atomic_bad_sem, _std, r"sem|whenever"),
    Case("global statement", K.global_keyword, _std, r"global|not supported|unsupported"),
    Case("yield in a kernel", K.yield_inside, _std, r"yield|generator|not supported|unsupported"),
    Case("arange with a float start", K.float_arange, _std, r"arange|int|float"),
    Case("full with an unknown dtype", K.full_unknown_dtype, _std, r"int99|dtype|type"),
    Case("dot of int8 and float32", K.dot_mixed_types, _std, r"dot|type|int8|float32"),
    Case("class in a kernel", K.class_inside, _std, r"class"),
    Case("del statement", K.del_statement, _std, r"del"),
    Case("raise statement", K.raise_statement, _std, r"raise"),
    Case("dict comprehension", K.comprehension_inside, _std, r"comprehension"),
    Case("break in a loop", K.break_inside, _std, r"break"),
]

CASES = LAUNCH_CASES + COMPILE_CASES
CRASHES = (AttributeError, IndexError, RecursionError, ZeroDivisionError, NameError, OverflowError,
           UnboundLocalError, AssertionError, SystemError, MemoryError, FloatingPointError)


@dataclass
class Outcome:
    kind: str
    """"clear", "silent", "unclear", "crash" or "corrupted"."""
    message: str


def _names(case: Case) -> list[str]:
    kernel = case.kernel
    return [kernel.__name__, *kernel.arg_names, *case.names]


def run(case: Case, interpret: bool) -> Outcome:
    saved = os.environ.get("TRITON_METAL_INTERPRET")
    if interpret:
        os.environ["TRITON_METAL_INTERPRET"] = "1"
    else:
        os.environ.pop("TRITON_METAL_INTERPRET", None)
    try:
        x = np.linspace(-1.0, 1.0, N, dtype=np.float32)
        out = np.full(N, 7.0, dtype=np.float32)
        args, kwargs, grid = case.change(x, out)
        arrays = [a for a in (*args, *kwargs.values()) if isinstance(a, np.ndarray)]
        before = [np.array(a, copy=True) for a in arrays]
        before_base = [x.copy(), out.copy()]
        try:
            case.kernel[grid](*args, **kwargs)
        except Exception as error:  # noqa: BLE001 - classified below
            message = f"{type(error).__name__}: {error}"
            if isinstance(error, CRASHES) and not isinstance(error, TritonError):
                return Outcome("crash", message)
            if not isinstance(error, (TritonError, TypeError, ValueError, KeyError)):
                return Outcome("crash", message)
            text = str(error)
            named = any(re.search(rf"'{re.escape(n)}'|\b{re.escape(n)}\b", text) for n in _names(case))
            if not named or not re.search(case.reason, text):
                return Outcome("unclear", message)
            changed = any(
                a.tobytes() != b.tobytes() for a, b in zip(arrays, before) if a.dtype != object
            ) or x.tobytes() != before_base[0].tobytes() or out.tobytes() != before_base[1].tobytes()
            return Outcome("corrupted" if changed else "clear", message)
        return Outcome("silent", "")
    finally:
        if saved is None:
            os.environ.pop("TRITON_METAL_INTERPRET", None)
        else:
            os.environ["TRITON_METAL_INTERPRET"] = saved
