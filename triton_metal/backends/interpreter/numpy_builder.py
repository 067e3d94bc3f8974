"""The interpreter's builder: every `create_*` of `language.builder.Builder` computed at once.

A handle is a `TensorHandle`: a NumPy array in the storage of its scalar `tl` dtype (see
`numerics`). Operands arrive promoted and broadcast by the semantic layer, so each method is the
plain NumPy computation with C/Metal semantics: integers wrap, `//` and `%` truncate, shifts act on
the bit pattern, float-to-int conversion truncates toward zero, bf16 results round to bfloat16.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from triton_metal import fp8
from triton_metal.errors import InterpreterError
from triton_metal.language.builder import (
    AtomicOp,
    BinaryOp,
    CastKind,
    CmpPredicate,
    HintKind,
    MathOp,
    RegionFn,
    RoundingMode,
)
from triton_metal.language.print_format import Operand, print_lines, type_code
from triton_metal.language.types import dtype, int1, int32, uint8

from .memory import Memory, far_from, poison
from .numerics import (
    bf16_bits_to_f32,
    f32_to_bf16_bits,
    f32_to_f16_rtz,
    memory_dtype,
    normalize,
    round_bf16,
    signed_of,
    storage_dtype,
    unsigned_of,
)


@dataclass(frozen=True, eq=False)
class TensorHandle:
    data: np.ndarray
    dtype: dtype
    """The scalar element type (a pointer type for pointers)."""


def _h(data: Any, ty: dtype) -> TensorHandle:
    return TensorHandle(normalize(data, ty), ty)


_erf = np.frompyfunc(math.erf, 1, 1)


def _round_half_away(f: np.ndarray) -> np.ndarray:
    """MSL's `round`: to the nearest integer, halfway cases away from zero (exact in float)."""
    t = np.trunc(f)
    return t + np.where(np.abs(f - t) >= 0.5, np.sign(f), 0).astype(f.dtype)

# float math functions, on float32 data (float64 for fp64), rounded to the result type by `_h`
_FLOAT_MATH: dict[MathOp, Callable[[np.ndarray], np.ndarray]] = {
    MathOp.EXP: np.exp,
    MathOp.EXP2: np.exp2,
    MathOp.LOG: np.log,
    MathOp.LOG2: np.log2,
    MathOp.COS: np.cos,
    MathOp.SIN: np.sin,
    MathOp.SQRT: np.sqrt,
    MathOp.SQRT_RN: np.sqrt,
    MathOp.RSQRT: lambda f: 1.0 / np.sqrt(f),
    MathOp.ERF: lambda f: _erf(f.astype(np.float64)).astype(np.float64),
    MathOp.FLOOR: np.floor,
    MathOp.CEIL: np.ceil,
    MathOp.FABS: np.abs,
    MathOp.TANH: np.tanh,
    MathOp.SINH: np.sinh,
    MathOp.COSH: np.cosh,
    MathOp.TAN: np.tan,
    MathOp.LOG10: np.log10,
    MathOp.ASIN: np.arcsin,
    MathOp.ACOS: np.arccos,
    MathOp.ATAN: np.arctan,
    MathOp.ASINH: np.arcsinh,
    MathOp.ACOSH: np.arccosh,
    MathOp.ATANH: np.arctanh,
    MathOp.TRUNC: np.trunc,
    MathOp.RINT: np.rint,
    MathOp.ROUND: lambda f: _round_half_away(f),
}


def _u8() -> dtype:
    return uint8


class NumpyBuilder:
    """Implements `Builder` over NumPy for one launch (`program` is set per program)."""

    def __init__(self, memory: Memory, grid: tuple[int, int, int]) -> None:
        self.memory = memory
        self.grid = grid
        self.program: tuple[int, int, int] = (0, 0, 0)

    @staticmethod
    def concrete(h: TensorHandle) -> Any:
        """The Python value of a scalar handle, or a NumPy copy of a block's values."""
        data = np.asarray(h.data)
        return data.item() if data.ndim == 0 else data.copy()

    # -- values ---------------------------------------------------------------------------------
    def get_constant(self, value: bool | int | float, ty: dtype) -> TensorHandle:
        return _h(np.array(value, dtype=storage_dtype(ty)), ty)

    def create_splat(self, x: TensorHandle, ty: dtype) -> TensorHandle:
        return TensorHandle(np.broadcast_to(x.data, ty.shape), x.dtype)  # type: ignore[attr-defined]

    def create_make_range(self, start: int, end: int) -> TensorHandle:
        return TensorHandle(np.arange(start, end, dtype=np.int32), int32)

    def create_get_program_id(self, axis: int) -> TensorHandle:
        return TensorHandle(np.array(self.program[axis], dtype=np.int32), int32)

    def create_get_num_programs(self, axis: int) -> TensorHandle:
        return TensorHandle(np.array(self.grid[axis], dtype=np.int32), int32)

    # -- elementwise ----------------------------------------------------------------------------
    def create_binary(self, op: BinaryOp, lhs: TensorHandle, rhs: TensorHandle) -> TensorHandle:
        a, b, ty = lhs.data, rhs.data, lhs.dtype
        if ty.is_bool() and op in (BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL):
            # 1-bit integers wrap: True + True == False (NumPy's bool + is a logical or)
            wide = self.create_binary(op, _h(a, _u8()), _h(b, _u8()))
            return _h((wide.data & 1).astype(np.bool_), ty)
        if op is BinaryOp.ADD:
            r = a + b
        elif op is BinaryOp.SUB:
            r = a - b
        elif op is BinaryOp.MUL:
            r = a * b
        elif op in (BinaryOp.FDIV, BinaryOp.FDIV_RN):  # exact: within the bound of the approximate one
            r = np.true_divide(a, b)
        elif op is BinaryOp.FREM:
            r = np.fmod(a, b)
        elif op in (BinaryOp.SDIV, BinaryOp.UDIV):
            r = self._int_div(a, b)
        elif op in (BinaryOp.SREM, BinaryOp.UREM):
            # x % 0 == 0 and MIN % -1 == 0 (docs/language.md): a divisor of 0 or -1 gives 0
            minus_one = (b == -1) if b.dtype.kind == "i" else np.zeros(np.shape(b), dtype=np.bool_)
            zero = (b == 0) | minus_one
            r = np.where(zero, 0, np.fmod(a, np.where(zero, 1, b)))
        elif op is BinaryOp.AND:
            r = a & b
        elif op is BinaryOp.OR:
            r = a | b
        elif op is BinaryOp.XOR:
            r = a ^ b
        elif op is BinaryOp.SHL:
            r = self._shift(a, b, ty, left=True, arithmetic=False)
        elif op is BinaryOp.LSHR:
            r = self._shift(a, b, ty, left=False, arithmetic=False)
        elif op is BinaryOp.ASHR:
            r = self._shift(a, b, ty, left=False, arithmetic=True)
        elif op in (BinaryOp.SMIN, BinaryOp.UMIN):
            r = np.minimum(a, b)
        elif op in (BinaryOp.SMAX, BinaryOp.UMAX):
            r = np.maximum(a, b)
        elif op in (BinaryOp.FMIN, BinaryOp.FMIN_NAN):
            r = _signed_zero_order(np.fmin(a, b) if op is BinaryOp.FMIN else np.minimum(a, b), a, b, True)
        elif op in (BinaryOp.FMAX, BinaryOp.FMAX_NAN):
            r = _signed_zero_order(np.fmax(a, b) if op is BinaryOp.FMAX else np.maximum(a, b), a, b, False)
        elif op is BinaryOp.UMULHI:
            r = self._mulhi(a, b, ty)
        elif op is BinaryOp.POW:
            r = np.power(a.astype(np.float32), b.astype(np.float32))
        else:
            raise InterpreterError(f"unsupported binary operation {op}")
        return _h(r, ty)

    @staticmethod
    def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Truncating division with the compiled kernels' rule for what C leaves undefined
        (docs/language.md): x / 0 == 0, MIN / -1 == MAX, every other x / -1 == -x."""
        if b.dtype.kind != "i":
            safe = np.where(b == 0, 1, b)
            return np.where(b == 0, 0, (a - np.fmod(a, safe)) // safe)
        info = np.iinfo(np.result_type(a, b))
        special = (b == 0) | (b == -1)
        safe = np.where(special, 1, b)
        q = (a - np.fmod(a, safe)) // safe  # exact: the dividend is now a multiple of b
        negated = np.where(a == info.min, info.max, -np.where(a == info.min, 0, a))
        return np.where(b == 0, 0, np.where(b == -1, negated, q))

    @staticmethod
    def _shift(a: np.ndarray, b: np.ndarray, ty: dtype, left: bool, arithmetic: bool) -> np.ndarray:
        bits = ty.int_bitwidth
        if ty.is_bool():
            return np.where(b.astype(np.int64) == 0, a, False if left or not arithmetic else a)
        ua = a.view(unsigned_of(bits)) if a.dtype.kind == "i" else a
        amount = b.astype(np.uint64)
        big = amount >= np.uint64(bits)
        amt = np.where(big, 0, amount).astype(ua.dtype)
        if left:
            r = ua << amt
            r = np.where(big, 0, r).astype(ua.dtype)
        elif arithmetic:
            sa = ua.view(signed_of(bits))
            r = sa >> amt.astype(sa.dtype)
            r = np.where(big, np.where(sa < 0, -1, 0), r).astype(sa.dtype)
        else:
            r = ua >> amt
            r = np.where(big, 0, r).astype(ua.dtype)
        return np.asarray(r).view(a.dtype) if np.asarray(r).dtype.itemsize == a.dtype.itemsize else r

    @staticmethod
    def _mulhi(a: np.ndarray, b: np.ndarray, ty: dtype) -> np.ndarray:
        """Triton's umulhi: the operands' bit patterns multiplied as unsigned, whatever the type."""
        bits = ty.int_bitwidth
        unsigned = np.uint32 if bits == 32 else np.uint64
        ua, ub = np.asarray(a).astype(unsigned), np.asarray(b).astype(unsigned)  # same bits, wrapped
        if bits == 32:
            res = ((ua.astype(np.uint64) * ub.astype(np.uint64)) >> np.uint64(32)).astype(np.uint32)
        else:
            flat_a, flat_b = np.broadcast_arrays(ua, ub)
            high = [(int(x) * int(y)) >> 64 for x, y in zip(flat_a.reshape(-1), flat_b.reshape(-1))]
            res = np.array(high, dtype=np.uint64).reshape(flat_a.shape)
        return res.view(np.int32 if bits == 32 else np.int64) if ty.is_int_signed() else res

    def create_math(self, op: MathOp, x: TensorHandle, precise: bool = False, fast: bool = False) -> TensorHandle:
        # NumPy's functions are within the bounds of both forms (docs/language.md): one answer
        a, ty = x.data, x.dtype
        if op is MathOp.NEG:
            return _h(np.negative(a) if a.dtype != np.bool_ else a, ty)
        if op is MathOp.NOT:
            return _h(np.invert(a), ty)
        if op is MathOp.IABS:
            return _h(np.abs(a), ty)
        f = a.astype(np.float32) if ty.primitive_bitwidth <= 32 else a
        fn = _FLOAT_MATH.get(op)
        if fn is None:
            raise InterpreterError(f"unsupported math operation {op}")
        return _h(fn(f), ty)

    def create_fma(self, a: TensorHandle, b: TensorHandle, c: TensorHandle) -> TensorHandle:
        x, y, z = (h.data.astype(np.float64) for h in (a, b, c))
        if a.dtype.name == "fp32":  # bfloat16 is held in float32 too, and rounds below
            return TensorHandle(_fma32(x, y, z), a.dtype)
        return _h(x * y + z, a.dtype)

    def create_cmp(self, pred: CmpPredicate, lhs: TensorHandle, rhs: TensorHandle) -> TensorHandle:
        a, b = lhs.data, rhs.data
        p = pred.value
        if p in ("eq", "oeq"):
            r = a == b
        elif p in ("ne", "une"):
            r = a != b
        elif p in ("slt", "ult", "olt"):
            r = a < b
        elif p in ("sle", "ule", "ole"):
            r = a <= b
        elif p in ("sgt", "ugt", "ogt"):
            r = a > b
        else:
            r = a >= b
        return TensorHandle(np.asarray(r, dtype=np.bool_), int1)

    def create_select(self, cond: TensorHandle, x: TensorHandle, y: TensorHandle) -> TensorHandle:
        return TensorHandle(np.where(cond.data, x.data, y.data).astype(x.data.dtype), x.dtype)

    def create_cast(
        self, x: TensorHandle, kind: CastKind, ty: dtype, rounding: RoundingMode = RoundingMode.RTNE
    ) -> TensorHandle:
        dst = ty.scalar
        a = x.data
        if kind is CastKind.BITCAST:
            raw = f32_to_bf16_bits(a) if x.dtype.is_bf16() else a
            if dst.is_bf16():
                return TensorHandle(bf16_bits_to_f32(raw.view(np.uint16)), dst)
            return TensorHandle(np.asarray(raw).view(storage_dtype(dst)), dst)
        if x.dtype.is_fp8() or dst.is_fp8():  # fp8 <-> fp32 only (the semantic layer's rule)
            if kind is CastKind.FP_EXT:
                return TensorHandle(fp8.decode(a, fp8.FORMATS[x.dtype.name]), dst)
            if kind is CastKind.FP_TRUNC:
                rtz = rounding is RoundingMode.RTZ
                return TensorHandle(fp8.encode(a, fp8.FORMATS[dst.name], rtz), dst)
        if kind is CastKind.FP_TRUNC and rounding is RoundingMode.RTZ:
            f = a.astype(np.float32)
            if dst.is_fp16():
                return TensorHandle(f32_to_f16_rtz(f), dst)
            if dst.is_bf16():
                return TensorHandle(round_bf16(f, rtz=True), dst)
            return _h(f, dst)
        if kind is CastKind.FP_TO_SI or kind is CastKind.FP_TO_UI:
            # truncate, saturate past the type's range, NaN -> 0: the compiled kernels' rule
            # (docs/language.md); the bounds are powers of two, exact in float64
            t = np.trunc(a.astype(np.float64))
            info = np.iinfo(storage_dtype(dst))
            lo, hi = float(info.min), float(info.max) + 1.0
            nan, big, small = np.isnan(t), t >= hi, t <= lo
            mid = np.where(nan | big | small, 0, t).astype(storage_dtype(dst))
            r = np.where(nan, 0, np.where(big, info.max, np.where(small, info.min, mid)))
            return TensorHandle(np.asarray(r).astype(storage_dtype(dst)), dst)
        if kind in (CastKind.SI_TO_FP, CastKind.UI_TO_FP):
            if dst.is_bf16():
                return TensorHandle(round_bf16(a.astype(np.float64).astype(np.float32)), dst)
            return _h(a.astype(storage_dtype(dst)), dst)
        if kind in (CastKind.INT_TO_BOOL, CastKind.FP_TO_BOOL):
            return TensorHandle(np.asarray(a != 0), dst)
        if kind in (CastKind.INT_SEXT, CastKind.INT_ZEXT, CastKind.INT_TRUNC):
            src = a
            if kind is CastKind.INT_ZEXT and a.dtype.kind == "i":
                src = a.view(unsigned_of(x.dtype.int_bitwidth))
            return TensorHandle(np.asarray(src.astype(storage_dtype(dst))), dst)
        if kind is CastKind.PTR_TO_INT:
            return TensorHandle(np.asarray(a, dtype=np.uint64).view(storage_dtype(dst)), dst)
        if kind is CastKind.INT_TO_PTR:
            wide = a.astype(np.int64).view(np.uint64) if a.dtype.kind == "i" else a.astype(np.uint64)
            return TensorHandle(np.asarray(wide), dst)
        if kind is CastKind.PTR_TO_PTR:
            return TensorHandle(a, dst)
        # FP_EXT, FP_TRUNC (nearest even)
        return _h(a.astype(np.float32) if dst.is_bf16() else a.astype(storage_dtype(dst)), dst)

    def create_addptr(self, ptr: TensorHandle, offset: TensorHandle) -> TensorHandle:
        size = memory_dtype(ptr.dtype.element_ty).itemsize
        off = offset.data
        if off.dtype.kind == "u":
            off = off.astype(np.uint64)
        else:
            off = off.astype(np.int64).view(np.uint64)
        base = np.asarray(ptr.data, dtype=np.uint64)
        moved = np.asarray(base + off * np.uint64(size), dtype=np.uint64)
        far = far_from(base, moved, np.asarray(offset.data), size)
        if far.any():  # past its argument's window: made a pointer no access may use
            moved = np.where(far, poison(np.broadcast_to(base, moved.shape)), moved)
        return TensorHandle(moved, ptr.dtype)

    # -- shapes ---------------------------------------------------------------------------------
    def create_broadcast(self, x: TensorHandle, ty: dtype) -> TensorHandle:
        return TensorHandle(np.broadcast_to(x.data, ty.shape), x.dtype)  # type: ignore[attr-defined]

    def create_expand_dims(self, x: TensorHandle, axis: int) -> TensorHandle:
        return TensorHandle(np.expand_dims(x.data, axis), x.dtype)

    def create_reshape(self, x: TensorHandle, shape: tuple[int, ...], can_reorder: bool) -> TensorHandle:
        return TensorHandle(np.reshape(x.data, shape), x.dtype)

    def create_trans(self, x: TensorHandle, order: tuple[int, ...]) -> TensorHandle:
        return TensorHandle(np.transpose(x.data, order), x.dtype)

    def create_cat(self, lhs: TensorHandle, rhs: TensorHandle) -> TensorHandle:
        return TensorHandle(np.concatenate([lhs.data, rhs.data], axis=0), lhs.dtype)

    def create_join(self, lhs: TensorHandle, rhs: TensorHandle) -> TensorHandle:
        return TensorHandle(np.stack([lhs.data, rhs.data], axis=-1), lhs.dtype)

    def create_split(self, x: TensorHandle) -> tuple[TensorHandle, TensorHandle]:
        return TensorHandle(x.data[..., 0], x.dtype), TensorHandle(x.data[..., 1], x.dtype)

    def create_gather(self, src: TensorHandle, index: TensorHandle, axis: int) -> TensorHandle:
        idx = index.data.astype(np.int64)
        n = src.data.shape[axis]
        if ((idx < 0) | (idx >= n)).any():
            bad = int(idx[(idx < 0) | (idx >= n)].reshape(-1)[0])
            raise InterpreterError(f"tl.gather index {bad} is out of range for axis {axis} of size {n}")
        return TensorHandle(np.take_along_axis(src.data, idx, axis=axis), src.dtype)

    def create_histogram(self, x: TensorHandle, num_bins: int, mask: TensorHandle | None) -> TensorHandle:
        v = x.data.astype(np.int64)
        keep = (v >= 0) & (v < num_bins)
        if mask is not None:
            keep &= mask.data
        return TensorHandle(np.bincount(v[keep], minlength=num_bins).astype(np.int32), int32)

    # -- memory ---------------------------------------------------------------------------------
    def create_load(
        self, ptr: TensorHandle, mask: TensorHandle | None, other: TensorHandle | None, volatile: bool,
        layout: str | None = None,  # a compiler hint: no meaning here
    ) -> TensorHandle:
        elt = ptr.dtype.element_ty
        mdt = memory_dtype(elt)
        addrs = np.asarray(ptr.data)
        m = None if mask is None else np.asarray(mask.data)
        raw = self.memory.load(addrs, mdt, m)
        if elt.is_bf16():
            vals = bf16_bits_to_f32(raw)
        else:
            vals = raw.astype(storage_dtype(elt), copy=False)
        if m is not None and other is not None:
            vals = np.where(np.broadcast_to(m, addrs.shape), vals, other.data).astype(vals.dtype)
        return TensorHandle(np.asarray(vals), elt)

    def _to_memory(self, value: TensorHandle) -> np.ndarray:
        if value.dtype.is_bf16():
            return f32_to_bf16_bits(value.data)
        return np.asarray(value.data).astype(memory_dtype(value.dtype), copy=False)

    def create_store(self, ptr: TensorHandle, value: TensorHandle, mask: TensorHandle | None,
                     layout: str | None = None) -> None:
        addrs = np.asarray(ptr.data)
        vals = np.broadcast_to(self._to_memory(value), addrs.shape)
        self.memory.store(addrs, vals, None if mask is None else np.asarray(mask.data))

    def create_atomic_rmw(
        self, op: AtomicOp, ptr: TensorHandle, value: TensorHandle, mask: TensorHandle | None, sem: str, scope: str
    ) -> TensorHandle:
        addrs = np.asarray(ptr.data)
        vals = np.broadcast_to(self._to_memory(value), addrs.shape)
        bfloat = value.dtype.is_bf16()
        old = self.memory.atomic_rmw(op, addrs, vals, None if mask is None else np.asarray(mask.data), bfloat)
        return TensorHandle(bf16_bits_to_f32(old) if bfloat else old.astype(storage_dtype(value.dtype)), value.dtype)

    def create_atomic_poll(
        self, ptr: TensorHandle, expected: TensorHandle, timeout: TensorHandle | None, sem: str, scope: str
    ) -> TensorHandle:
        """One read decides: programs run one after another here, so no other program can change
        the value while this one waits (the compiled kernel polls until it does)."""
        want = self._to_memory(expected)
        seen = self.memory.load(np.asarray(ptr.data).reshape(1), want.dtype, None)
        matched = bool(seen[0] == want.reshape(-1)[0])
        if not matched and timeout is None:
            raise InterpreterError(
                f"tl.atomic_poll waits for {want.reshape(-1)[0]} and reads {seen[0]}, which nothing can change: "
                "the interpreter runs programs one after another, so the program that would write it "
                "cannot run while this one waits (pass timeout_ns= to get False instead, or run compiled)"
            )
        return TensorHandle(np.bool_(matched), int1)

    def create_atomic_cas(
        self, ptr: TensorHandle, cmp: TensorHandle, value: TensorHandle, sem: str, scope: str
    ) -> TensorHandle:
        addrs = np.asarray(ptr.data)
        old = self.memory.atomic_cas(addrs, self._to_memory(cmp), self._to_memory(value))
        if value.dtype.is_bf16():
            return TensorHandle(bf16_bits_to_f32(old), value.dtype)
        return TensorHandle(old.astype(storage_dtype(value.dtype)), value.dtype)

    # -- cooperative ----------------------------------------------------------------------------
    def create_dot(
        self, a: TensorHandle, b: TensorHandle, acc: TensorHandle, input_precision: str | None, out_ty: dtype
    ) -> TensorHandle:
        if a.dtype.is_int():
            r = np.matmul(a.data.astype(np.int32), b.data.astype(np.int32)) + acc.data.astype(np.int32)
            return TensorHandle(r.astype(np.int32), out_ty)
        prod = np.matmul(a.data.astype(np.float32), b.data.astype(np.float32))
        return _h(prod + acc.data.astype(np.float32), out_ty)

    def create_reduce(self, operands: Sequence[TensorHandle], axis: int, combine: RegionFn) -> list[TensorHandle]:
        types = [h.dtype for h in operands]
        arrs = [np.moveaxis(np.asarray(h.data), axis, 0) for h in operands]
        while arrs[0].shape[0] > 1:
            n = arrs[0].shape[0]
            even = n - (n % 2)
            lhs = [TensorHandle(x[0:even:2], t) for x, t in zip(arrs, types)]
            rhs = [TensorHandle(x[1:even:2], t) for x, t in zip(arrs, types)]
            out = _combine(combine, lhs, rhs)
            merged = [normalize(np.broadcast_to(o.data, lhs[0].data.shape), t) for o, t in zip(out, types)]
            if n % 2:
                merged = [np.concatenate([m, x[n - 1 : n]], axis=0) for m, x in zip(merged, arrs)]
            arrs = merged
        return [TensorHandle(np.asarray(x[0]), t) for x, t in zip(arrs, types)]

    def create_map_elementwise(
        self, operands: Sequence[TensorHandle], body: Callable[[Sequence[TensorHandle]], Sequence[TensorHandle]]
    ) -> list[TensorHandle]:
        return _map(body, operands)

    def create_scan(
        self, operands: Sequence[TensorHandle], axis: int, reverse: bool, combine: RegionFn
    ) -> list[TensorHandle]:
        types = [h.dtype for h in operands]
        arrs = [np.moveaxis(np.asarray(h.data), axis, 0) for h in operands]
        if reverse:
            arrs = [x[::-1] for x in arrs]
        n = arrs[0].shape[0]
        d = 1
        while d < n:
            lhs = [TensorHandle(x[: n - d], t) for x, t in zip(arrs, types)]
            rhs = [TensorHandle(x[d:], t) for x, t in zip(arrs, types)]
            out = _combine(combine, lhs, rhs)
            arrs = [
                np.concatenate([x[:d], normalize(np.broadcast_to(o.data, rhs[0].data.shape), t)], axis=0)
                for x, o, t in zip(arrs, out, types)
            ]
            d *= 2
        if reverse:
            arrs = [x[::-1] for x in arrs]
        return [TensorHandle(np.ascontiguousarray(np.moveaxis(x, 0, axis)), t) for x, t in zip(arrs, types)]

    # -- hints and debugging --------------------------------------------------------------------
    def create_hint(self, x: TensorHandle, kind: HintKind, values: tuple[int, ...]) -> TensorHandle:
        return x

    def create_assume(self, cond: TensorHandle) -> None:
        return None

    def create_barrier(self) -> None:
        return None  # programs run one at a time: every barrier is already satisfied

    def create_print(self, prefix: str, hex: bool, args: Sequence[TensorHandle], signed: Sequence[bool]) -> None:  # noqa: A002
        operands = [  # a pointer prints the address a compiled kernel's pointer holds
            Operand(type_code(h.dtype.name), tuple(np.shape(h.data)),
                    self.memory.addresses(h.data) if h.dtype.is_ptr() else np.asarray(h.data))
            for h in args
        ]
        for line in print_lines(self.program, prefix, hex, operands):
            print(line)  # sys.stdout at the time of the call (redirect_stdout, capsys, capfd)

    def create_assert(self, cond: TensorHandle, message: str) -> None:
        ok = np.asarray(cond.data)
        if not ok.all():
            bad = np.argwhere(~ok)
            where = f" at index {tuple(int(i) for i in bad[0])}" if ok.ndim else ""
            raise InterpreterError(f"device_assert failed{where}: {message}")


def _map(body: Callable[[Sequence[TensorHandle]], Sequence[TensorHandle]],
         operands: Sequence[TensorHandle]) -> list[TensorHandle]:
    """`tl.map_elementwise`'s function on every element: as a reduction's combine function,
    on whole arrays typed as scalars, element by element if its control flow needs it."""
    out = _combine(lambda a, _b: body(a), list(operands), [])
    shape = np.shape(operands[0].data)
    return [TensorHandle(normalize(np.broadcast_to(o.data, shape), o.dtype), o.dtype) for o in out]


def _combine(combine: RegionFn, lhs: list[TensorHandle], rhs: list[TensorHandle]) -> list[TensorHandle]:
    """A reduction's or scan's combine function on many element pairs at once: the handles are
    typed as scalars, as the function's arguments are, and hold arrays of elements. A function
    whose own shapes then disagree with its data (one that adds a 1-element block to learn an
    operand's type, `x + tl.zeros((1,), tl.int1)`) is run again pair by pair on true scalars."""
    try:
        return list(combine(lhs, rhs))
    except ValueError:
        shape = np.shape(lhs[0].data)
        if shape == ():
            raise
    results: list[list[np.ndarray]] = []
    for index in np.ndindex(*shape):
        out = combine([TensorHandle(np.asarray(h.data[index]), h.dtype) for h in lhs],
                      [TensorHandle(np.asarray(h.data[index]), h.dtype) for h in rhs])
        results.append([np.asarray(o.data).reshape(()) for o in out])
    types = [o.dtype for o in out]
    return [TensorHandle(np.stack([r[k] for r in results]).reshape(shape), t) for k, t in enumerate(types)]


def _signed_zero_order(r: np.ndarray, a: np.ndarray, b: np.ndarray, is_min: bool) -> np.ndarray:
    """min(-0.0, +0.0) == -0.0 and max(-0.0, +0.0) == +0.0 in either order, as the compiled
    kernels define it (templates/helpers/float_ops.metal): equal operands merge their bits."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    if a.dtype.kind != "f":
        return r
    bits = unsigned_of(a.dtype.itemsize * 8)
    ab, bb = a.view(bits), b.view(bits)
    merged = (ab | bb) if is_min else (ab & bb)
    return np.where(a == b, merged.view(a.dtype), r)


def _fma32(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """x * y + z rounded once to float32, as Metal's fma, from float32 values held as float64.

    The product is exact in float64, the sum is not: rounded to float64 and then to float32, it
    can land exactly halfway between two float32 values that the exact sum is not halfway
    between, and ties-to-even then picks the wrong one. The sum's exact error (Knuth's two-sum)
    says which side the exact sum lies on; such a tie is moved one float64 step towards it."""
    with np.errstate(invalid="ignore", over="ignore"):
        p = x * y
        s = p + z
        back = s - p
        err = (p - (s - back)) + (z - back)
        r = s.astype(np.float32)
        r64 = r.astype(np.float64)
        across = np.nextafter(r, np.where(s > r64, np.float32(np.inf), np.float32(-np.inf)))
        tie = (s != r64) & (s == (r64 + across.astype(np.float64)) / 2) & (err != 0)
        if np.any(tie):
            toward = np.where(err > 0, np.inf, -np.inf)
            r = np.where(tie, np.nextafter(s, toward).astype(np.float32), r)
    return np.asarray(r, dtype=np.float32)
