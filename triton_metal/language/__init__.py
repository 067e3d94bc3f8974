"""The `tl` language: `import triton_metal.language as tl`.

Everything a kernel calls lives here with Triton's names and signatures: dtypes, `constexpr`,
`tensor`, the builtins (`load`, `store`, `arange`, `dot`, `sum`, ...), `tl.math`, `tl.random`'s
Philox generators, `tl.extra.libdevice` on the Metal standard library, and the names
triton_metal refuses with a precise message (inline assembly, `tl.atomic_poll`, ...).
"""

from __future__ import annotations

from . import extra, math, random
from .context import active_semantic, current_semantic
from .core import (
    TRITON_MAX_TENSOR_NUMEL,
    PropagateNan,
    builtin,
    condition,
    constexpr,
    constexpr_type,
    is_builtin,
    range,
    static_range,
    tensor,
    tuple_type,
)
from .debug_ops import (
    assume,
    debug_barrier,
    device_assert,
    device_print,
    expect_zero,
    max_constancy,
    max_contiguous,
    multiple_of,
    static_assert,
    static_print,
)
from .elementwise import add, cast, clamp, map_elementwise, maximum, minimum, mul, sigmoid, sub, where
from .jit_marker import JITCallable
from .math import (
    abs,
    ceil,
    cos,
    div_rn,
    erf,
    exp,
    exp2,
    fdiv,
    floor,
    fma,
    log,
    log2,
    rsqrt,
    sin,
    sqrt,
    sqrt_rn,
    umulhi,
)
from .memory_ops import (
    atomic_add,
    atomic_and,
    atomic_cas,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_poll,
    atomic_xchg,
    atomic_xor,
    load,
    store,
)
from .random import (
    pair_uniform_to_normal,
    philox,
    philox_impl,
    rand,
    rand4x,
    randint,
    randint4x,
    randn,
    randn4x,
    uint_to_uniform_float,
)
from .reduce_ops import (
    argmax,
    argmin,
    associative_scan,
    cumprod,
    cumsum,
    dot,
    dot_scaled,
    max,
    min,
    reduce,
    reduce_or,
    softmax,
    sum,
    xor_sum,
)
from .semantic import Semantic
from .shape_ops import (
    arange,
    broadcast,
    broadcast_to,
    cat,
    cdiv,
    expand_dims,
    flip,
    full,
    gather,
    histogram,
    interleave,
    join,
    num_programs,
    permute,
    program_id,
    ravel,
    reshape,
    split,
    squeeze,
    swizzle2d,
    to_tensor,
    trans,
    unsqueeze,
    view,
    zeros,
    zeros_like,
)
from .types import (
    FP64_REFUSAL,
    bfloat16,
    block_type,
    dtype,
    float16,
    float32,
    float64,
    float8e4b15,
    float8e4b8,
    float8e4nv,
    float8e5,
    float8e5b16,
    int1,
    int8,
    int16,
    int32,
    int64,
    pi32_t,
    pointer_type,
    str_to_ty,
    uint8,
    uint16,
    uint32,
    uint64,
    void,
)
from .descriptor import (
    load_tensor_descriptor,
    make_tensor_descriptor,
    store_tensor_descriptor,
    tensor_descriptor,
    tensor_descriptor_type,
)
from .block_pointer import advance, make_block_ptr
from .unsupported import (
    atomic_load,
    atomic_store,
    inline_asm_elementwise,
)
from .sorting import bitonic_merge, sort, topk
from .aggregate import aggregate_replace



class const:
    """`tl.const`, Triton's annotation of a pointer parameter to constant data
    (`def kernel(in_ptr: tl.const, ...)`): the kernel may load through the pointer, and a store
    through it (or a pointer derived from it) is refused at compile time."""


tuple = tuple  # noqa: A001, PLW0127 - `tl.tuple(values)`, `isinstance(x, tl.tuple)`: kernel tuples are Python tuples

__all__ = [
    "FP64_REFUSAL", "JITCallable", "PropagateNan", "Semantic", "TRITON_MAX_TENSOR_NUMEL",
    "abs", "active_semantic", "add", "advance", "aggregate_replace", "arange", "argmax", "argmin", "associative_scan",
    "assume", "atomic_add", "atomic_and", "atomic_cas", "atomic_load", "atomic_max", "atomic_min",
    "atomic_or", "atomic_poll", "atomic_store", "atomic_xchg", "atomic_xor", "bfloat16",
    "bitonic_merge", "block_type", "broadcast", "broadcast_to", "builtin", "cast", "cat", "cdiv",
    "ceil", "clamp", "condition", "const", "constexpr", "constexpr_type", "cos", "cumprod", "cumsum",
    "current_semantic", "debug_barrier", "device_assert", "device_print", "div_rn", "dot",
    "dot_scaled", "dtype", "erf", "exp", "exp2", "expand_dims", "expect_zero", "extra", "fdiv", "flip",
    "float16", "float32", "float64", "float8e4b15", "float8e4b8", "float8e4nv", "float8e5",
    "float8e5b16", "floor", "fma", "full", "gather", "histogram", "inline_asm_elementwise",
    "int1", "int16", "int32", "int64", "int8", "interleave", "is_builtin", "join", "load",
    "load_tensor_descriptor", "log", "log2", "make_block_ptr", "make_tensor_descriptor",
    "map_elementwise", "math", "max", "max_constancy", "max_contiguous", "maximum", "min",
    "minimum", "mul", "multiple_of", "num_programs", "pair_uniform_to_normal", "permute",
    "philox", "philox_impl", "pi32_t", "pointer_type", "program_id", "rand", "rand4x", "randint",
    "randint4x", "randn", "randn4x", "random", "range", "ravel", "reduce", "reduce_or", "reshape",
    "rsqrt", "sigmoid", "sin", "softmax", "sort", "split", "sqrt", "sqrt_rn", "squeeze",
    "static_assert", "static_print", "static_range", "store", "str_to_ty", "store_tensor_descriptor", "sub",
    "sum", "swizzle2d", "tensor", "tensor_descriptor", "tensor_descriptor_type", "to_tensor",
    "topk", "trans", "tuple", "tuple_type", "uint16", "uint32", "uint64", "uint8",
    "uint_to_uniform_float", "umulhi", "unsqueeze", "view", "void", "where", "xor_sum", "zeros", "zeros_like",
]
