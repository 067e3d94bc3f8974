"""Semantic layer, common part: errors, Python scalars as tensors, promotion, broadcasting, casts.

Every rule lives here once and serves both builders (the front end's IR builder and the
interpreter's NumPy builder): the builder only ever sees operands already promoted to one dtype
and broadcast to one shape. Rules follow Triton's `triton-semantics` document:

* kinds rank bool < integer < float; the wider type wins; fp16 with bf16 gives fp32 unless both
  are bf16 (Triton's `computation_type_impl`); fp8 with fp32, fp16 or bf16 computes in that
  type's rule (fp32, fp16, fp32), two different fp8 types in fp16, and arithmetic whose type
  stays fp8 is refused (fp8 is a storage type); same-width signed with unsigned gives unsigned;
* a Python scalar is weak: of the same or a lower kind it takes the tensor's dtype (and must fit);
  of a higher kind it becomes int32 < uint32 < int64 < uint64 or float32 by value;
* broadcasting is NumPy's.

No NumPy and no IR here. Errors are `CompilationError`s; the caller adds the source location.
"""

from __future__ import annotations

import math as _pymath
from collections.abc import Callable, Sequence
from typing import Any

from ...errors import CompilationError, UnsupportedLanguageConstruct
from ..builder import Builder, CastKind, Handle, RoundingMode
from ..core import constexpr, tensor
from ..types import (
    FP64_REFUSAL,
    bfloat16,
    block_type,
    dtype,
    float16,
    float32,
    float64,
    int1,
    int32,
    int64,
    uint32,
    uint64,
)

Number = bool | int | float
JitCaller = Callable[[Any, Sequence[Any], dict[str, Any]], Any]
"""Calls a user `@jit` function (a helper, a reduce combine function) with its arguments."""

_KIND_BOOL, _KIND_INT, _KIND_FLOAT = 0, 1, 2

BLOCK_CONDITION = (
    "Boolean value of Tensor with more than one value is ambiguous: the condition of an 'if', "
    "'while' or conditional expression is a block of shape {shape}"
)
BLOCK_CONDITION_HINT = (
    "use tl.where(cond, a, b) for elementwise choices, or reduce the block (tl.max, tl.sum, ...)"
)
"""A block used as a condition: Triton's words, shared by the front end and the interpreter."""


def kind(ty: dtype) -> int:
    if ty.is_bool():
        return _KIND_BOOL
    if ty.is_int():
        return _KIND_INT
    return _KIND_FLOAT


def int_min(ty: dtype) -> int:
    return 0 if ty.is_int_unsigned() else -(1 << (ty.int_bitwidth - 1))


def int_max(ty: dtype) -> int:
    bits = ty.int_bitwidth
    return (1 << bits) - 1 if ty.is_int_unsigned() else (1 << (bits - 1)) - 1


def with_element(ty: dtype, elem: dtype) -> dtype:
    """`ty` with its scalar replaced: a block keeps its shape, a scalar becomes `elem`."""
    return block_type(elem, ty.shape) if isinstance(ty, block_type) else elem


def shape_of(ty: dtype) -> tuple[int, ...]:
    return ty.shape if isinstance(ty, block_type) else ()


def is_pow2(n: int) -> bool:
    return n > 0 and (n & (n - 1)) == 0


def error(
    message: str, hint: str | None = None, kind: type[Exception] = ValueError, triton_words: str | None = None
) -> CompilationError:
    """A refusal of the program. Its `__cause__` is the exception Triton raises for the same
    mistake (`kind`, with Triton's text: `triton_words` where the message says more than
    Triton's, else the message), as Triton's compiler chains it, so ported tests that inspect
    `exc.__cause__` still find Triton's words."""
    err = CompilationError(message, hint=hint)
    err.__cause__ = kind(triton_words if triton_words is not None else message)
    return err


def check_noinline_arguments(fn: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
    """Triton's rule for a call to a `noinline=True` function written in a kernel, for every
    backend (the front end checks compiled calls, `JITCallable.__call__` interpreted ones;
    combine functions, which Triton calls with scalars, are not checked): its arguments are scalars
    and compile-time values, never blocks of more than one element. Functions are inlined here
    whatever their flag, so only the refusal is kept, in Triton's words, so that a program this
    package accepts also compiles on Triton."""
    if not getattr(fn, "noinline", False):
        return
    names = list(getattr(fn, "arg_names", ()))
    bound = [*zip(names, args), *kwargs.items()]
    for name, value in bound:
        if isinstance(value, tensor) and value.type.is_block() and value.type.numel != 1:  # type: ignore[attr-defined]
            raise UnsupportedLanguageConstruct(
                f"Function {fn.__name__} is marked noinline, but was called with non-scalar "
                f"argument {name}:{value.type}",
                hint="pass scalars and tl.constexpr values to a noinline function, or drop "
                "noinline=True to call it with blocks",
            )


def refuse_fp64(ty: dtype) -> None:
    if ty.scalar.is_fp64() or (ty.is_ptr() and ty.element_ty.is_fp64()):
        raise error(FP64_REFUSAL, hint="cast to tl.float32")


def refuse_fp8_arithmetic(ty: dtype) -> None:
    """fp8 types are storage types: loads, stores, selects, shape ops and `.to()` only."""
    if not ty.is_ptr() and ty.scalar.is_fp8():
        raise error(
            f"arithmetic on {ty.scalar.name} values is not supported: fp8 is a storage type on Apple GPUs",
            hint="convert first, e.g. x.to(tl.float32) (and back with .to() to store fp8)",
        )


class SemanticBase:
    """Shared machinery of `Semantic`; the op families are mixins in sibling modules."""

    def __init__(
        self,
        builder: Builder,
        *,
        concrete: Callable[[Handle], Any] | None = None,
        call_jit: JitCaller | None = None,
    ) -> None:
        self.builder = builder
        self._concrete = concrete
        self._call_jit = call_jit

    # -- eager (interpreter) support ----------------------------------------------------------
    @property
    def eager(self) -> bool:
        """True when handles hold values (the interpreter): Python control flow on scalars works."""
        return self._concrete is not None

    def concrete_scalar(self, x: tensor, what: str) -> Any:
        if self._concrete is None:
            raise error(f"a tensor's {what} value is not known when the kernel is compiled")
        if x.type.is_block():
            if x.type.numel == 1:  # type: ignore[attr-defined]
                x = self.item(x)  # type: ignore[attr-defined]  # a one-element block is its element, as in Triton
            elif what == "bool":  # a condition: the front end's refusal, word for word
                from ...errors import UnsupportedLanguageConstruct

                raise UnsupportedLanguageConstruct(
                    BLOCK_CONDITION.format(shape=list(x.type.shape)), hint=BLOCK_CONDITION_HINT
                )
            else:
                raise error(
                    f"the {what} value of a block of shape {list(x.type.shape)} is ambiguous",
                    hint="reduce it first (tl.sum, tl.max, ...) or index a scalar kernel argument",
                )
        return self._concrete(x.handle)

    def concrete_value(self, x: tensor) -> Any:
        """Eager only: the values a tensor holds (a Python scalar or an array)."""
        if self._concrete is None:
            raise error("a tensor's values are not known when the kernel is compiled")
        return self._concrete(x.handle)

    def call_jit(self, fn: Any, args: Sequence[Any], generator: Any = None,
                 kwargs: dict[str, Any] | None = None) -> Any:
        """Call a user `@jit` function: through the front end when compiling, through the
        eager builder's caller (the interpreter's, which binds arguments as the front end does)
        when eager."""
        if generator is not None:
            return generator.call_JitFunction(fn, list(args), kwargs=dict(kwargs or {}))
        if self._call_jit is not None:
            return self._call_jit(fn, args, dict(kwargs or {}))
        target = getattr(fn, "fn", fn)
        return target(*args, **(kwargs or {}))

    # -- Python values as tensors -------------------------------------------------------------
    def to_tensor_type(self, x: Number) -> dtype:
        if isinstance(x, bool):
            return int1
        if isinstance(x, int):
            if -(2**31) <= x < 2**31:
                return int32
            if 2**31 <= x < 2**32:
                return uint32
            if -(2**63) <= x < 2**63:
                return int64
            if 2**63 <= x < 2**64:
                return uint64
            raise error(f"Nonrepresentable integer {x}: it does not fit in 64 bits")
        if isinstance(x, float):
            a = abs(x)
            if a == 0.0 or _pymath.isinf(a) or _pymath.isnan(x) or 2**-126 <= a <= (2 - 2**-23) * 2**127:
                return float32
            return float64
        raise error(f"cannot convert {x} of type {type(x)} to tensor", kind=TypeError)

    def to_tensor(self, x: Any) -> tensor:
        x = x.value if isinstance(x, constexpr) else x
        if isinstance(x, tensor):
            return x
        if isinstance(x, (bool, int, float)):
            ty = self.to_tensor_type(x)
            refuse_fp64(ty)
            return self.scalar_constant(x, ty)
        raise error(f"cannot convert {x} of type {type(x)} to tensor", kind=TypeError)

    def scalar_constant(self, value: Number, ty: dtype) -> tensor:
        refuse_fp64(ty)
        if ty.is_fp8():  # rounded and saturated by the one conversion every backend shares
            return self.cast(self.scalar_constant(float(value), float32), ty)
        if ty.is_int():
            if isinstance(value, float) and not value.is_integer():
                raise error(
                    f"the constant {value} is not an integer, so it cannot be a {ty!r}",
                    hint="convert explicitly (e.g. tl.full(shape, value, tl.float32).to(...))",
                )
            value = int(value)
            if ty.is_bool():
                value = bool(value)
            elif not int_min(ty) <= value <= int_max(ty):
                raise error(f"the constant {value} is out of range for {ty!r}")
        elif ty.is_floating():
            value = float(value)
        return tensor(self.builder.get_constant(value, ty), ty)

    def _as_dtype(self, ty: Any, what: str) -> dtype:
        ty = ty.value if isinstance(ty, constexpr) else ty
        if isinstance(ty, str):
            from ..types import dtype_from_name

            try:
                ty = dtype_from_name(ty)
            except ValueError as e:
                raise error(str(e)) from None
        if not isinstance(ty, dtype):
            raise error(f"{what} must be a tl dtype, not {ty!r}")
        refuse_fp64(ty)
        return ty

    # -- promotion ----------------------------------------------------------------------------
    def integer_promote_impl(self, a: dtype, b: dtype) -> dtype:
        a_bits, b_bits = a.int_bitwidth, b.int_bitwidth
        a_uns, b_uns = a.is_int_unsigned(), b.is_int_unsigned()
        if a_uns == b_uns:
            return a if a_bits > b_bits else b
        if a_uns:
            return a if a_bits >= b_bits else b
        return b if b_bits >= a_bits else a

    def loop_types(self, bounds: Sequence[dtype]) -> tuple[dtype, dtype]:
        """For a run-time `range(start, end, step)` with integer bounds of these types: the signed
        type the loop counts and compares in, and the type of its index.

        As Triton's `scf.for`: the index has the bounds' integer promotion, and MLIR compares the
        bounds as signed integers of that width (so an unsigned start of 0xFFFFFFFF counts from
        -1). Bounds narrower than 32 bits count in `int32` with an `int32` index."""
        promoted = bounds[0]
        for ty in bounds[1:]:
            promoted = self.integer_promote_impl(promoted, ty)
        count = int64 if promoted.int_bitwidth == 64 else int32
        return count, (promoted if promoted.int_bitwidth >= 32 else count)

    def loop_index_constant(self, value: int, ty: dtype) -> tensor:
        """The loop index `value` (counted signed) as a constant of the index type `ty`."""
        if ty.is_int_unsigned():
            value %= 2 ** ty.int_bitwidth
        return self.scalar_constant(value, ty)

    def computation_type_impl(
        self, a: dtype, a_is_scalar: bool, b: dtype, b_is_scalar: bool, div_or_mod: bool
    ) -> dtype:
        ret = self._computation_type(a, a_is_scalar, b, b_is_scalar, div_or_mod)
        # Triton computes in fp8 where both operands have one fp8 type; here fp8 values convert
        # (exactly) only to a wider type
        refuse_fp8_arithmetic(ret)
        return ret

    def _computation_type(
        self, a: dtype, a_is_scalar: bool, b: dtype, b_is_scalar: bool, div_or_mod: bool
    ) -> dtype:
        if a_is_scalar != b_is_scalar:
            scalar_ty, tensor_ty = (a, b) if a_is_scalar else (b, a)
            if kind(scalar_ty) <= kind(tensor_ty):
                if div_or_mod and tensor_ty in (float16, bfloat16):
                    return float32
                return tensor_ty
        if a.is_fp64() or b.is_fp64():
            return float64
        if a.is_fp32() or b.is_fp32():
            return float32
        if a.is_fp16() or b.is_fp16():
            return float32 if div_or_mod else float16
        if a.is_bf16() and b.is_bf16():
            return float32 if div_or_mod else a
        if a.is_bf16() or b.is_bf16():
            return float32
        if a.is_fp8() and b.is_fp8():
            return a if a == b else float16
        if not a.is_int() or not b.is_int():
            raise error(f"invalid operands of type {a!r} and {b!r}", kind=TypeError)
        if div_or_mod and a.is_int_signed() != b.is_int_signed():
            raise error(
                f"Cannot use /, #, or % with {a!r} and {b!r} because they have different signedness; "
                "this is unlikely to result in a useful answer. Cast them to the same signedness.",
                hint="cast one operand, e.g. x.to(tl.int32) // y.to(tl.int32)",
                kind=TypeError,
            )
        return self.integer_promote_impl(a, b)

    def _check_ptr(self, a: dtype, b: dtype, allow_ptr_a: bool) -> None:
        if not a.is_ptr():
            return
        if not allow_ptr_a:
            raise error(f"invalid operands of type {a!r} and {b!r}", kind=TypeError)
        if b.is_ptr() and a != b:
            raise error(f"invalid operands of type {a!r} and {b!r}", kind=TypeError)
        if b.is_floating():
            raise error(
                f"invalid operands of type {a!r} and {b!r}: a pointer cannot be offset by a float",
                hint="pointer offsets are integers: cast the offset with .to(tl.int32)",
                kind=TypeError,
            )

    def binary_op_type_checking_impl(
        self,
        lhs: Any,
        rhs: Any,
        allow_lhs_ptr: bool = False,
        allow_rhs_ptr: bool = False,
        arithmetic_check: bool = True,
        div_or_mod: bool = False,
    ) -> tuple[tensor, tensor]:
        lhs = lhs.value if isinstance(lhs, constexpr) else lhs
        rhs = rhs.value if isinstance(rhs, constexpr) else rhs
        lhs_is_scalar = isinstance(lhs, (bool, int, float))
        rhs_is_scalar = isinstance(rhs, (bool, int, float))
        lhs_val, rhs_val = lhs, rhs
        lhs_t = self._weak_tensor(lhs) if lhs_is_scalar else self._expect_tensor(lhs)
        rhs_t = self._weak_tensor(rhs) if rhs_is_scalar else self._expect_tensor(rhs)
        lsca, rsca = lhs_t.type.scalar, rhs_t.type.scalar
        self._check_ptr(lsca, rsca, allow_lhs_ptr)
        self._check_ptr(rsca, lsca, allow_rhs_ptr)
        if arithmetic_check and not lsca.is_ptr() and not rsca.is_ptr():
            ret = self.computation_type_impl(lsca, lhs_is_scalar, rsca, rhs_is_scalar, div_or_mod)
            refuse_fp64(ret)
            for is_scalar, v in ((lhs_is_scalar, lhs_val), (rhs_is_scalar, rhs_val)):
                if is_scalar and ret.is_int():
                    if v < 0 and ret.is_int_unsigned():
                        raise error(
                            "Cannot perform a binary operation between an unsigned tensor and a "
                            f"negative scalar ({ret!r} and {v}). Perform a explicit cast on one of them.",
                            hint="cast one of them explicitly",
                        )
                    if not int_min(ret) <= v <= int_max(ret):
                        raise error(f"Scalar {v} is out of range for type {ret.name}")
            lhs_t = self.scalar_constant(lhs_val, ret) if lhs_is_scalar else self.cast(lhs_t, ret)
            rhs_t = self.scalar_constant(rhs_val, ret) if rhs_is_scalar else self.cast(rhs_t, ret)
        else:
            # pointer arithmetic with a Python int: the int is an offset of its default type
            if lhs_is_scalar:
                lhs_t = self.scalar_constant(lhs_val, lhs_t.type)
            if rhs_is_scalar:
                rhs_t = self.scalar_constant(rhs_val, rhs_t.type)
        return self.broadcast_impl_value(lhs_t, rhs_t)

    def _weak_tensor(self, x: Number) -> tensor:
        """A placeholder typed by the Python scalar's default type; promotion decides the
        constant actually built, so nothing reaches the builder yet."""
        return tensor(None, self.to_tensor_type(x))

    def _expect_tensor(self, x: Any) -> tensor:
        if isinstance(x, tensor):
            return x
        raise error(f"expected a tensor or a number, got {x!r} of type {type(x).__name__}")

    # -- broadcasting -------------------------------------------------------------------------
    def splat(self, x: tensor, shape: Sequence[int]) -> tensor:
        if x.type.is_block():
            raise internal("cannot splat a block")
        if len(shape) == 0:
            return x
        ty = block_type(x.type, tuple(shape))
        return tensor(self.builder.create_splat(x.handle, ty), ty)

    def broadcast_impl_shape(self, x: tensor, shape: Sequence[int]) -> tensor:
        shape = tuple(int(s) for s in shape)
        if not x.type.is_block():
            return self.splat(x, shape)
        src = x.type.shape
        if len(src) != len(shape):
            raise error(f"Cannot broadcast, rank mismatch: {list(src)}, {list(shape)}")
        if src == shape:
            return x
        for i, s in enumerate(src):
            if s != shape[i] and s != 1:
                raise error(
                    f"Cannot broadcast, the expanded size of the tensor ({shape[i]}) must match the "
                    f"existing size ({s}) at non-singleton dimension {i}: {list(src)}, {list(shape)}"
                )
        ty = block_type(x.type.scalar, shape)
        return tensor(self.builder.create_broadcast(x.handle, ty), ty)

    def broadcast_impl_value(self, lhs: tensor, rhs: tensor) -> tuple[tensor, tensor]:
        lb, rb = lhs.type.is_block(), rhs.type.is_block()
        if lb and not rb:
            return lhs, self.splat(rhs, lhs.type.shape)
        if rb and not lb:
            return self.splat(lhs, rhs.type.shape), rhs
        if not lb and not rb:
            return lhs, rhs
        ls, rs = list(lhs.type.shape), list(rhs.type.shape)
        while len(ls) < len(rs):
            lhs = self._expand(lhs, 0)
            ls = [1] + ls
        while len(rs) < len(ls):
            rhs = self._expand(rhs, 0)
            rs = [1] + rs
        out: list[int] = []
        for i, (a, b) in enumerate(zip(ls, rs)):
            if a == 1:
                out.append(b)
            elif b == 1 or a == b:
                out.append(a)
            else:
                raise error(
                    f"Cannot make_shape_compatible: incompatible dimensions at index {i}: {a} and {b} "
                    f"(shapes {ls} and {rs})",
                    hint="broadcasting follows NumPy: sizes must match or be 1 (use x[:, None])",
                )
        return self.broadcast_impl_shape(lhs, out), self.broadcast_impl_shape(rhs, out)

    def broadcast_tensors(self, *xs: tensor) -> list[tensor]:
        out = list(xs)
        for i in range(1, len(out)):
            out[0], out[i] = self.broadcast_impl_value(out[0], out[i])
        for i in range(1, len(out)):
            out[0], out[i] = self.broadcast_impl_value(out[0], out[i])
        return out

    def _expand(self, x: tensor, axis: int) -> tensor:
        shape = list(x.type.shape)
        shape.insert(axis, 1)
        ty = block_type(x.type.scalar, shape)
        return tensor(self.builder.create_expand_dims(x.handle, axis), ty)

    # -- casts --------------------------------------------------------------------------------
    def bitcast(self, x: Any, dst: Any) -> tensor:
        x = self.to_tensor(x)
        dst = self._as_dtype(dst, "bitcast target")
        src_ty = x.type
        dst_ty = with_element(src_ty, dst.scalar)
        if src_ty == dst_ty:
            return x
        s, d = src_ty.scalar, dst.scalar
        if s.is_ptr() or d.is_ptr():
            return self.cast(x, dst)
        if s.primitive_bitwidth != d.primitive_bitwidth:
            raise error(
                f"Cannot bitcast data-type of size {s.primitive_bitwidth} to data-type of size "
                f"{d.primitive_bitwidth} ({s!r} to {d!r})",
                hint="bitcast needs equal widths; use .to(dtype) for a value conversion",
            )
        return tensor(self.builder.create_cast(x.handle, CastKind.BITCAST, dst_ty), dst_ty)

    def cast(self, x: Any, dst: Any, fp_downcast_rounding: str | None = None) -> tensor:
        x = self.to_tensor(x)
        dst = self._as_dtype(dst, "cast target")
        src_ty = x.type
        s, d = src_ty.scalar, dst.scalar
        if s == d:
            return x
        dst_ty = with_element(src_ty, d)
        rounding = RoundingMode.RTNE
        if fp_downcast_rounding is not None:
            if fp_downcast_rounding not in ("rtne", "rtz"):
                raise error(
                    f"invalid rounding mode {fp_downcast_rounding!r}",
                    hint="fp_downcast_rounding is 'rtne' or 'rtz'",
                )
            if not (s.is_floating() and d.is_floating() and d.primitive_bitwidth < s.primitive_bitwidth):
                raise error(
                    "fp_downcast_rounding applies only to narrowing float conversions, "
                    f"not {s!r} -> {d!r}"
                )
            rounding = RoundingMode(fp_downcast_rounding)
        b = self.builder

        def make(kind_: CastKind) -> tensor:
            return tensor(b.create_cast(x.handle, kind_, dst_ty, rounding), dst_ty)

        if s.is_fp8() or d.is_fp8():
            if s.is_ptr() or d.is_ptr():
                raise error(f"cannot convert {s!r} to {d!r}")
            if (s.is_fp8() and d.is_fp32()) or (s.is_fp32() and d.is_fp8()):
                return make(CastKind.FP_EXT if s.is_fp8() else CastKind.FP_TRUNC)
            # every other conversion goes through float32, exactly on the wide side: fp8 values
            # are float32 values, and fp16, bf16 and integers that do not convert exactly lie
            # past every fp8 format's range (they saturate either way)
            wide = self.cast(x, float32)
            return wide if d.is_fp32() else self.cast(wide, d, fp_downcast_rounding if d.is_fp8() else None)
        if s.is_floating() and d.is_floating():
            if s.primitive_bitwidth == d.primitive_bitwidth:  # fp16 <-> bf16 goes through fp32
                return self.cast(self.cast(x, float32), d, fp_downcast_rounding)
            return make(CastKind.FP_TRUNC if d.primitive_bitwidth < s.primitive_bitwidth else CastKind.FP_EXT)
        if s.is_int() and d.is_int():
            if d.is_bool():
                return self.not_equal(x, self.scalar_constant(0, s))  # type: ignore[attr-defined]
            if d.int_bitwidth < s.int_bitwidth:
                return make(CastKind.INT_TRUNC)
            if d.int_bitwidth > s.int_bitwidth:
                signed = s.is_int_signed() and not s.is_bool()
                return make(CastKind.INT_SEXT if signed else CastKind.INT_ZEXT)
            return make(CastKind.BITCAST)  # same width, other signedness
        if s.is_floating() and d.is_int():
            if d.is_bool():
                return self.not_equal(x, self.scalar_constant(0.0, s))  # type: ignore[attr-defined]
            return make(CastKind.FP_TO_SI if d.is_int_signed() else CastKind.FP_TO_UI)
        if s.is_int() and d.is_floating():
            return make(CastKind.SI_TO_FP if s.is_int_signed() and not s.is_bool() else CastKind.UI_TO_FP)
        if s.is_ptr() and d.is_int():
            if d.int_bitwidth == 64:
                return make(CastKind.PTR_TO_INT)
            if d.is_bool():
                return self.not_equal(self.cast(x, int64), self.scalar_constant(0, int64))  # type: ignore[attr-defined]
            # Triton's own words (its cast falls through to "cannot cast")
            raise error(f"cannot cast {s.name} to {d.name}",
                        hint="a pointer converts to int64 or int1; to another element type, use "
                             "ptr.to(tl.pointer_type(T))")
        if s.is_int() and d.is_ptr():
            return make(CastKind.INT_TO_PTR)
        if s.is_ptr() and d.is_ptr():
            return make(CastKind.PTR_TO_PTR)
        raise error(f"cannot cast {s.name} to {d.name}")


def internal(message: str) -> AssertionError:
    from ...errors import internal_error

    return internal_error(message)
