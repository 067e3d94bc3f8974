"""The contract between the semantic layer and the two builders that realise it.

`language/semantic.py` checks arguments, promotes types, broadcasts and decides *what* to compute;
it then calls exactly one `create_*` method per primitive operation on a `Builder`. Two builders
implement this protocol:

* the front end's IR builder (`frontend/ir_builder.py`) appends typed SSA ops to the IR;
* the interpreter's NumPy builder (`backends/interpreter/numpy_builder.py`) computes at once.

Handles are opaque to the semantic layer: an IR value for one builder, a NumPy-backed value for
the other. Operands reaching a builder are already promoted to a common dtype and broadcast to a
common shape, so a builder never re-derives Triton's rules; it only needs the result type when the
operation cannot tell it (casts, constants, loads of `other`, ...), which is passed as `ty`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any, Protocol

from .types import dtype

Handle = Any
"""A builder-specific value: an IR SSA value, or an interpreter tensor."""

RegionFn = Callable[[Sequence[Handle], Sequence[Handle]], Sequence[Handle]]
"""A combine function for reductions and scans: (lhs values, rhs values) -> combined values.

The semantic layer builds it from the user's `@jit` combine function; the IR builder calls it once
with block arguments to build a region, the NumPy builder calls it with whole arrays."""


class CmpPredicate(Enum):
    EQ = "eq"
    NE = "ne"
    SLT = "slt"
    SLE = "sle"
    SGT = "sgt"
    SGE = "sge"
    ULT = "ult"
    ULE = "ule"
    UGT = "ugt"
    UGE = "uge"
    # ordered float comparisons (false if either side is NaN), and UNE for `!=` (true on NaN)
    OEQ = "oeq"
    UNE = "une"
    OLT = "olt"
    OLE = "ole"
    OGT = "ogt"
    OGE = "oge"


class BinaryOp(Enum):
    """Elementwise binary operations; the operand dtype picks the int or float variant."""

    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    FDIV = "fdiv"          # float division: `/`, approximate within 2 ulp for fp32 as on Triton's GPUs
    FDIV_RN = "fdiv_rn"    # float division rounded to nearest (tl.math.div_rn, tl.fdiv(ieee_rounding=True))
    FREM = "frem"          # float remainder with the sign of the dividend (C fmod)
    SDIV = "sdiv"          # signed integer division, rounding toward zero
    UDIV = "udiv"
    SREM = "srem"          # signed remainder with the sign of the dividend
    UREM = "urem"
    AND = "and"
    OR = "or"
    XOR = "xor"
    SHL = "shl"
    LSHR = "lshr"
    ASHR = "ashr"
    SMIN = "smin"
    UMIN = "umin"
    SMAX = "smax"
    UMAX = "umax"
    FMIN = "fmin"          # NaN-ignoring (fmin); `minimum(propagate_nan=ALL)` uses FMIN_NAN
    FMAX = "fmax"
    FMIN_NAN = "fmin_nan"  # NaN-propagating
    FMAX_NAN = "fmax_nan"
    UMULHI = "umulhi"      # high half of the unsigned product (any signedness)
    POW = "pow"            # float power, for `**` with a float exponent


class MathOp(Enum):
    """Elementwise unary math functions (float operands unless noted)."""

    EXP = "exp"
    EXP2 = "exp2"
    LOG = "log"
    LOG2 = "log2"
    COS = "cos"
    SIN = "sin"
    SQRT = "sqrt"
    SQRT_RN = "sqrt_rn"
    RSQRT = "rsqrt"
    ERF = "erf"
    FLOOR = "floor"
    CEIL = "ceil"
    TANH = "tanh"
    SINH = "sinh"
    COSH = "cosh"
    TAN = "tan"
    ASIN = "asin"
    ACOS = "acos"
    ATAN = "atan"
    ASINH = "asinh"
    ACOSH = "acosh"
    ATANH = "atanh"
    LOG10 = "log10"
    TRUNC = "trunc"
    RINT = "rint"
    ROUND = "round"
    FABS = "fabs"
    IABS = "iabs"          # integer absolute value
    NEG = "neg"            # float or integer negation
    NOT = "not"            # bitwise complement of an integer


class CastKind(Enum):
    FP_EXT = "fp_ext"          # fp16/bf16 -> fp32
    FP_TRUNC = "fp_trunc"      # fp32 -> fp16/bf16 (rounding as given), or fp16 <-> bf16
    SI_TO_FP = "si_to_fp"
    UI_TO_FP = "ui_to_fp"
    FP_TO_SI = "fp_to_si"      # truncates toward zero
    FP_TO_UI = "fp_to_ui"
    INT_SEXT = "int_sext"      # widen a signed integer
    INT_ZEXT = "int_zext"      # widen an unsigned integer or int1
    INT_TRUNC = "int_trunc"
    INT_TO_BOOL = "int_to_bool"  # x != 0
    FP_TO_BOOL = "fp_to_bool"    # x != 0.0
    BITCAST = "bitcast"        # same bit width, reinterpret
    PTR_TO_INT = "ptr_to_int"
    INT_TO_PTR = "int_to_ptr"
    PTR_TO_PTR = "ptr_to_ptr"  # change of pointee type


class RoundingMode(Enum):
    RTNE = "rtne"   # round to nearest even (the default)
    RTZ = "rtz"     # round toward zero


class AtomicOp(Enum):
    ADD = "add"
    FADD = "fadd"
    MAX = "max"     # signedness / float-ness from the dtype
    MIN = "min"
    AND = "and"
    OR = "or"
    XOR = "xor"
    XCHG = "xchg"


class HintKind(Enum):
    MULTIPLE_OF = "multiple_of"
    MAX_CONTIGUOUS = "max_contiguous"
    MAX_CONSTANCY = "max_constancy"


class Builder(Protocol):
    """What the semantic layer needs from a builder. Types are `tl` types (see `types.py`)."""

    # -- values ---------------------------------------------------------------------------------
    def get_constant(self, value: bool | int | float, ty: dtype) -> Handle: ...
    def create_splat(self, x: Handle, ty: dtype) -> Handle: ...          # scalar -> block `ty`
    def create_make_range(self, start: int, end: int) -> Handle: ...     # int32 block [start, end)
    def create_get_program_id(self, axis: int) -> Handle: ...            # int32 scalar
    def create_get_num_programs(self, axis: int) -> Handle: ...          # int32 scalar

    # -- elementwise ----------------------------------------------------------------------------
    def create_binary(self, op: BinaryOp, lhs: Handle, rhs: Handle) -> Handle: ...
    def create_math(self, op: MathOp, x: Handle, precise: bool = False,
                    fast: bool = False) -> Handle: ...  # precise: libdevice's; fast: fast_sinf/cosf
    def create_fma(self, a: Handle, b: Handle, c: Handle) -> Handle: ...
    def create_cmp(self, pred: CmpPredicate, lhs: Handle, rhs: Handle) -> Handle: ...  # -> int1
    def create_select(self, cond: Handle, x: Handle, y: Handle) -> Handle: ...
    def create_cast(
        self, x: Handle, kind: CastKind, ty: dtype, rounding: RoundingMode = RoundingMode.RTNE
    ) -> Handle: ...
    def create_addptr(self, ptr: Handle, offset: Handle) -> Handle: ...  # offset in elements

    # -- shapes ---------------------------------------------------------------------------------
    def create_broadcast(self, x: Handle, ty: dtype) -> Handle: ...
    def create_expand_dims(self, x: Handle, axis: int) -> Handle: ...
    def create_reshape(self, x: Handle, shape: tuple[int, ...], can_reorder: bool) -> Handle: ...
    def create_trans(self, x: Handle, order: tuple[int, ...]) -> Handle: ...
    def create_cat(self, lhs: Handle, rhs: Handle) -> Handle: ...        # along dim 0
    def create_join(self, lhs: Handle, rhs: Handle) -> Handle: ...       # new minor dim of 2
    def create_split(self, x: Handle) -> tuple[Handle, Handle]: ...      # minor dim of 2 -> two
    def create_gather(self, src: Handle, index: Handle, axis: int) -> Handle: ...
    def create_histogram(self, x: Handle, num_bins: int, mask: Handle | None) -> Handle: ...

    # -- memory ---------------------------------------------------------------------------------
    def create_load(
        self, ptr: Handle, mask: Handle | None, other: Handle | None, volatile: bool, layout: str | None = None
    ) -> Handle: ...
    def create_store(self, ptr: Handle, value: Handle, mask: Handle | None, layout: str | None = None) -> None: ...
    def create_atomic_rmw(
        self, op: AtomicOp, ptr: Handle, value: Handle, mask: Handle | None, sem: str, scope: str
    ) -> Handle: ...
    def create_atomic_cas(
        self, ptr: Handle, cmp: Handle, value: Handle, sem: str, scope: str
    ) -> Handle: ...
    def create_atomic_poll(
        self, ptr: Handle, expected: Handle, timeout: Handle | None, sem: str, scope: str
    ) -> Handle: ...

    # -- cooperative ----------------------------------------------------------------------------
    def create_dot(
        self, a: Handle, b: Handle, acc: Handle, input_precision: str | None, out_ty: dtype
    ) -> Handle: ...
    def create_reduce(
        self, operands: Sequence[Handle], axis: int, combine: RegionFn
    ) -> Sequence[Handle]: ...
    def create_scan(
        self, operands: Sequence[Handle], axis: int, reverse: bool, combine: RegionFn
    ) -> Sequence[Handle]: ...
    def create_map_elementwise(
        self, operands: Sequence[Handle], body: Callable[[Sequence[Handle]], Sequence[Handle]]
    ) -> Sequence[Handle]: ...

    # -- hints and debugging --------------------------------------------------------------------
    def create_hint(self, x: Handle, kind: HintKind, values: tuple[int, ...]) -> Handle: ...
    def create_assume(self, cond: Handle) -> None: ...
    def create_barrier(self) -> None: ...
    def create_print(self, prefix: str, hex: bool, args: Sequence[Handle], signed: Sequence[bool]) -> None: ...
    def create_assert(self, cond: Handle, message: str) -> None: ...
