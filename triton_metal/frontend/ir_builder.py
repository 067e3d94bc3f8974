"""`IRBuilder`: the `language.builder.Builder` protocol realised as IR construction.

The semantic layer calls one `create_*` per primitive with operands already promoted and
broadcast; this builder appends the matching typed op at the insertion point and returns its
result value (the handle). It maps `tl` types to IR types and the language's enums to the IR's
own enums by value. The code generator additionally uses the structured control-flow helpers
(`create_for`, `create_if`, `create_while`, `create_yield`, `create_condition`), the insertion
point and `loc`, which stamps every op created from then on with a source location.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..errors import Loc, internal_error
from ..ir import Block, Module, Op, Region, Value
from ..ir import types as T
from ..ir.ops import arith as A
from ..ir.ops import func as F
from ..ir.ops import scf as S
from ..ir.ops import tt
from ..ir.ops import tt_compute as C
from ..ir.ops import tt_debug as D
from ..ir.ops import tt_memory as M
from ..language import builder as lb
from ..language.types import block_type, dtype, pointer_type

_SCALARS = {
    "int1": T.i1, "int8": T.i8, "int16": T.i16, "int32": T.i32, "int64": T.i64,
    "uint8": T.u8, "uint16": T.u16, "uint32": T.u32, "uint64": T.u64,
    "fp16": T.f16, "bf16": T.bf16, "fp32": T.f32, "fp64": T.f64,
    "fp8e4nv": T.f8e4nv, "fp8e5": T.f8e5, "fp8e4b8": T.f8e4b8, "fp8e5b16": T.f8e5b16,
    "fp8e4b15": T.f8e4b15,
}


def ir_type(ty: dtype) -> T.Type:
    """The IR type of a `tl` type (scalar, pointer or block)."""
    if isinstance(ty, block_type):
        el = ir_type(ty.element_ty)
        assert not isinstance(el, T.TensorType)
        return T.TensorType(ty.shape, el)
    if isinstance(ty, pointer_type):
        pointee = ir_type(ty.element_ty)
        assert not isinstance(pointee, T.TensorType)
        return T.PointerType(pointee, ty.address_space)
    try:
        return _SCALARS[ty.name]
    except KeyError:
        raise internal_error(f"no IR type for tl type {ty!r}") from None


_INT_BINARY: dict[lb.BinaryOp, type[A.BinaryOp]] = {
    lb.BinaryOp.ADD: A.AddIOp, lb.BinaryOp.SUB: A.SubIOp, lb.BinaryOp.MUL: A.MulIOp,
    lb.BinaryOp.SDIV: A.DivSIOp, lb.BinaryOp.UDIV: A.DivUIOp, lb.BinaryOp.SREM: A.RemSIOp,
    lb.BinaryOp.UREM: A.RemUIOp, lb.BinaryOp.AND: A.AndIOp, lb.BinaryOp.OR: A.OrIOp,
    lb.BinaryOp.XOR: A.XOrIOp, lb.BinaryOp.SHL: A.ShLIOp, lb.BinaryOp.LSHR: A.ShRUIOp,
    lb.BinaryOp.ASHR: A.ShRSIOp, lb.BinaryOp.SMIN: A.MinSIOp, lb.BinaryOp.UMIN: A.MinUIOp,
    lb.BinaryOp.SMAX: A.MaxSIOp, lb.BinaryOp.UMAX: A.MaxUIOp, lb.BinaryOp.UMULHI: A.MulHiOp,
}
_FLOAT_BINARY: dict[lb.BinaryOp, type[A.BinaryOp]] = {
    lb.BinaryOp.ADD: A.AddFOp, lb.BinaryOp.SUB: A.SubFOp, lb.BinaryOp.MUL: A.MulFOp,
    lb.BinaryOp.FDIV: A.DivFOp, lb.BinaryOp.FDIV_RN: A.PreciseDivFOp, lb.BinaryOp.FREM: A.RemFOp, lb.BinaryOp.FMIN: A.MinNumFOp,
    lb.BinaryOp.FMAX: A.MaxNumFOp, lb.BinaryOp.FMIN_NAN: A.MinimumFOp,
    lb.BinaryOp.FMAX_NAN: A.MaximumFOp, lb.BinaryOp.POW: A.PowFOp,
}
_FLOAT_MATH: dict[lb.MathOp, type[A.UnaryOp]] = {
    lb.MathOp.EXP: A.ExpOp, lb.MathOp.EXP2: A.Exp2Op, lb.MathOp.LOG: A.LogOp,
    lb.MathOp.LOG2: A.Log2Op, lb.MathOp.COS: A.CosOp, lb.MathOp.SIN: A.SinOp,
    lb.MathOp.SQRT: A.SqrtOp, lb.MathOp.SQRT_RN: A.PreciseSqrtOp, lb.MathOp.RSQRT: A.RsqrtOp,
    lb.MathOp.ERF: A.ErfOp, lb.MathOp.FLOOR: A.FloorOp, lb.MathOp.CEIL: A.CeilOp,
    lb.MathOp.FABS: A.AbsFOp, lb.MathOp.NEG: A.NegFOp,
    lb.MathOp.TANH: A.TanhOp,
    lb.MathOp.SINH: A.SinhOp,
    lb.MathOp.COSH: A.CoshOp,
    lb.MathOp.TAN: A.TanOp,
    lb.MathOp.ASIN: A.AsinOp,
    lb.MathOp.ACOS: A.AcosOp,
    lb.MathOp.ATAN: A.AtanOp,
    lb.MathOp.ASINH: A.AsinhOp,
    lb.MathOp.ACOSH: A.AcoshOp,
    lb.MathOp.ATANH: A.AtanhOp,
    lb.MathOp.LOG10: A.Log10Op,
    lb.MathOp.TRUNC: A.TruncOp,
    lb.MathOp.RINT: A.RintOp,
    lb.MathOp.ROUND: A.RoundOp,
}
_INT_MATH: dict[lb.MathOp, type[A.UnaryOp]] = {
    lb.MathOp.IABS: A.AbsIOp, lb.MathOp.NEG: A.NegIOp, lb.MathOp.NOT: A.NotIOp,
}
_CASTS: dict[lb.CastKind, type[A.CastOp]] = {
    lb.CastKind.FP_EXT: A.ExtFOp, lb.CastKind.FP_TRUNC: A.TruncFOp, lb.CastKind.SI_TO_FP: A.SIToFPOp,
    lb.CastKind.UI_TO_FP: A.UIToFPOp, lb.CastKind.FP_TO_SI: A.FPToSIOp, lb.CastKind.FP_TO_UI: A.FPToUIOp,
    lb.CastKind.INT_SEXT: A.ExtSIOp, lb.CastKind.INT_ZEXT: A.ExtUIOp, lb.CastKind.INT_TRUNC: A.TruncIOp,
    lb.CastKind.BITCAST: A.BitcastOp, lb.CastKind.PTR_TO_INT: A.PtrToIntOp,
    lb.CastKind.INT_TO_PTR: A.IntToPtrOp, lb.CastKind.PTR_TO_PTR: A.PtrBitcastOp,
}


def _is_float(v: Value) -> bool:
    el = T.element_type(v.type)
    return isinstance(el, T.ScalarType) and el.is_float()


class IRBuilder:
    """Appends ops at an insertion point (a block); every op gets the current `loc`."""

    def __init__(self, module: Module | None = None, debug: bool = False) -> None:
        self.module = module if module is not None else Module()
        self.block: Block | None = None
        self.loc: Loc | None = None
        self.debug = debug
        """Emit device assertions (they are dropped otherwise, as Triton does without debug)."""

    # -- insertion point ------------------------------------------------------------------------
    def set_insertion_block(self, block: Block) -> None:
        self.block = block

    @contextmanager
    def insertion_block(self, block: Block) -> Iterator[Block]:
        """Build into `block` for the duration of the `with`, then return to where we were."""
        saved = self.block
        self.block = block
        try:
            yield block
        finally:
            self.block = saved

    def set_loc(self, loc: Loc | None) -> None:
        self.loc = loc

    def insert(self, op: Op) -> Op:
        if self.block is None:
            raise internal_error("IRBuilder has no insertion block")
        op.loc = self.loc
        self.block.append(op)
        return op

    def _one(self, op: Op) -> Value:
        return self.insert(op).result

    # -- functions ------------------------------------------------------------------------------
    def create_func(
        self, name: str, arg_types: Sequence[T.Type], arg_names: Sequence[str], arg_attrs: Sequence[dict[str, Any]]
    ) -> F.FuncOp:
        """A function appended to the module; the insertion point moves into its body."""
        block = Block(arg_types, arg_names)
        func = F.FuncOp(sym_name=name, arg_attrs=[dict(a) for a in arg_attrs], body=Region([block]))
        func.loc = self.loc
        self.module.append(func)
        self.block = block
        return func

    def create_return(self, values: Sequence[Value]) -> None:
        self.insert(F.ReturnOp(values=tuple(values)))

    # -- values -------------------------------------------------------------------------------
    def get_constant(self, value: bool | int | float, ty: dtype) -> Value:
        t = ir_type(ty)
        el = T.element_type(t)
        assert isinstance(el, T.ScalarType)
        v: bool | int | float
        if el.is_bool():
            v = bool(value)
        elif el.is_int():
            v = int(value)
        else:
            v = representable(float(value), el.name)
        return self._one(A.ConstantOp(value=v, result_types=[t]))

    def create_splat(self, x: Value, ty: dtype) -> Value:
        return self._one(tt.SplatOp(src=x, result_types=[ir_type(ty)]))

    def create_make_range(self, start: int, end: int) -> Value:
        return self._one(tt.MakeRangeOp(start=start, end=end, result_types=[T.TensorType((end - start,), T.i32)]))

    def create_get_program_id(self, axis: int) -> Value:
        return self._one(tt.GetProgramIdOp(axis=axis, result_types=[T.i32]))

    def create_get_num_programs(self, axis: int) -> Value:
        return self._one(tt.GetNumProgramsOp(axis=axis, result_types=[T.i32]))

    # -- elementwise ----------------------------------------------------------------------------
    def create_binary(self, op: lb.BinaryOp, lhs: Value, rhs: Value) -> Value:
        table = _FLOAT_BINARY if _is_float(lhs) else _INT_BINARY
        cls = table.get(op)
        if cls is None:
            raise internal_error(f"binary op {op.name} on {lhs.type}")
        return self._one(cls(lhs=lhs, rhs=rhs, result_types=[lhs.type]))

    def create_math(self, op: lb.MathOp, x: Value, precise: bool = False, fast: bool = False) -> Value:
        table = _FLOAT_MATH if _is_float(x) else _INT_MATH
        cls = table.get(op)
        if cls is None:
            raise internal_error(f"math op {op.name} on {x.type}")
        if issubclass(cls, A.ApproxUnaryOp):
            return self._one(cls(operand=x, precise=True if precise else None, result_types=[x.type]))
        if issubclass(cls, A.TrigUnaryOp):
            return self._one(cls(operand=x, fast=True if fast else None, result_types=[x.type]))
        return self._one(cls(operand=x, result_types=[x.type]))

    def create_fma(self, a: Value, b: Value, c: Value) -> Value:
        return self._one(A.FmaOp(a=a, b=b, c=c, result_types=[a.type]))

    def create_cmp(self, pred: lb.CmpPredicate, lhs: Value, rhs: Value) -> Value:
        cls = A.CmpFOp if _is_float(lhs) else A.CmpIOp
        rt = T.with_element(lhs.type, T.i1)
        return self._one(cls(predicate=A.CmpPredicate(pred.value), lhs=lhs, rhs=rhs, result_types=[rt]))

    def create_select(self, cond: Value, x: Value, y: Value) -> Value:
        return self._one(A.SelectOp(condition=cond, true_value=x, false_value=y, result_types=[x.type]))

    def create_cast(
        self, x: Value, kind: lb.CastKind, ty: dtype, rounding: lb.RoundingMode = lb.RoundingMode.RTNE
    ) -> Value:
        rt = ir_type(ty)
        if kind in (lb.CastKind.INT_TO_BOOL, lb.CastKind.FP_TO_BOOL):
            el = T.element_type(x.type)
            assert isinstance(el, T.ScalarType)
            zero = self._one(A.ConstantOp(value=0.0 if el.is_float() else (False if el.is_bool() else 0), result_types=[el]))
            if isinstance(x.type, T.TensorType):
                zero = self._one(tt.SplatOp(src=zero, result_types=[x.type]))
            pred = A.CmpPredicate.UNE if el.is_float() else A.CmpPredicate.NE
            cls = A.CmpFOp if el.is_float() else A.CmpIOp
            return self._one(cls(predicate=pred, lhs=x, rhs=zero, result_types=[rt]))
        if kind == lb.CastKind.INT_TO_PTR:
            el = T.element_type(x.type)
            if isinstance(el, T.ScalarType) and el.bitwidth < 64:  # addresses are 64-bit
                cls = A.ExtSIOp if el.is_signed() else A.ExtUIOp
                x = self._one(cls(operand=x, result_types=[T.with_element(x.type, T.u64 if el.is_unsigned() else T.i64)]))
                if el.is_unsigned():
                    x = self._one(A.BitcastOp(operand=x, result_types=[T.with_element(x.type, T.i64)]))
        if kind == lb.CastKind.FP_TRUNC:
            return self._one(A.TruncFOp(operand=x, rounding=A.RoundingMode(rounding.value), result_types=[rt]))
        return self._one(_CASTS[kind](operand=x, result_types=[rt]))

    def create_addptr(self, ptr: Value, offset: Value) -> Value:
        return self._one(tt.AddPtrOp(ptr=ptr, offset=offset, result_types=[ptr.type]))

    # -- shapes ---------------------------------------------------------------------------------
    def create_broadcast(self, x: Value, ty: dtype) -> Value:
        return self._one(tt.BroadcastOp(src=x, result_types=[ir_type(ty)]))

    def create_expand_dims(self, x: Value, axis: int) -> Value:
        shape = list(T.shape_of(x.type))
        shape.insert(axis, 1)
        rt = T.TensorType(tuple(shape), T.element_type(x.type))
        return self._one(tt.ExpandDimsOp(src=x, axis=axis, result_types=[rt]))

    def create_reshape(self, x: Value, shape: tuple[int, ...], can_reorder: bool) -> Value:
        rt = T.make_type(tuple(shape), T.element_type(x.type))
        return self._one(tt.ReshapeOp(src=x, allow_reorder=bool(can_reorder), result_types=[rt]))

    def create_trans(self, x: Value, order: tuple[int, ...]) -> Value:
        shape = T.shape_of(x.type)
        rt = T.TensorType(tuple(shape[i] for i in order), T.element_type(x.type))
        return self._one(tt.TransOp(src=x, order=tuple(order), result_types=[rt]))

    def create_cat(self, lhs: Value, rhs: Value) -> Value:
        shape = T.shape_of(lhs.type)
        rt = T.TensorType((shape[0] + T.shape_of(rhs.type)[0], *shape[1:]), T.element_type(lhs.type))
        return self._one(tt.CatOp(lhs=lhs, rhs=rhs, result_types=[rt]))

    def create_join(self, lhs: Value, rhs: Value) -> Value:
        rt = T.TensorType((*T.shape_of(lhs.type), 2), T.element_type(lhs.type))
        return self._one(tt.JoinOp(lhs=lhs, rhs=rhs, result_types=[rt]))

    def create_split(self, x: Value) -> tuple[Value, Value]:
        rt = T.make_type(T.shape_of(x.type)[:-1], T.element_type(x.type))
        op = self.insert(tt.SplitOp(src=x, result_types=[rt, rt]))
        return op.results[0], op.results[1]

    def create_gather(self, src: Value, index: Value, axis: int) -> Value:
        rt = T.TensorType(T.shape_of(index.type), T.element_type(src.type))
        return self._one(tt.GatherOp(src=src, indices=index, axis=axis, result_types=[rt]))

    def create_histogram(self, x: Value, num_bins: int, mask: Value | None) -> Value:
        return self._one(tt.HistogramOp(src=x, mask=mask, result_types=[T.TensorType((num_bins,), T.i32)]))

    # -- memory ---------------------------------------------------------------------------------
    def _pointee_type(self, ptr: Value) -> T.Type:
        el = T.element_type(ptr.type)
        if not isinstance(el, T.PointerType):
            raise internal_error(f"memory op on non-pointer {ptr.type}")
        return T.with_element(ptr.type, el.pointee)

    def create_load(self, ptr: Value, mask: Value | None, other: Value | None, volatile: bool,
                    layout: str | None = None) -> Value:
        rt = self._pointee_type(ptr)
        return self._one(M.LoadOp(ptr=ptr, mask=mask, other=other, volatile=bool(volatile), layout=layout,
                                  result_types=[rt]))

    def create_store(self, ptr: Value, value: Value, mask: Value | None, layout: str | None = None) -> None:
        self.insert(M.StoreOp(ptr=ptr, value=value, mask=mask, layout=layout))

    def create_atomic_rmw(
        self, op: lb.AtomicOp, ptr: Value, value: Value, mask: Value | None, sem: str, scope: str
    ) -> Value:
        kind = M.AtomicRMWKind(op.value)
        return self._one(M.AtomicRMWOp(
            ptr=ptr, value=value, mask=mask, kind=kind, sem=sem, scope=scope, result_types=[value.type]
        ))

    def create_atomic_cas(self, ptr: Value, cmp: Value, value: Value, sem: str, scope: str) -> Value:
        return self._one(M.AtomicCASOp(ptr=ptr, cmp=cmp, value=value, sem=sem, scope=scope, result_types=[value.type]))

    def create_atomic_poll(self, ptr: Value, expected: Value, timeout: Value | None, sem: str, scope: str) -> Value:
        return self._one(M.AtomicPollOp(ptr=ptr, expected=expected, timeout=timeout, sem=sem, scope=scope,
                                        result_types=[T.i1]))

    # -- cooperative ----------------------------------------------------------------------------
    def create_dot(self, a: Value, b: Value, acc: Value, input_precision: str | None, out_ty: dtype) -> Value:
        # `out_ty` may be the result's element type or its whole block type.
        rt = ir_type(out_ty)
        if not isinstance(rt, T.TensorType):
            a_shape, b_shape = T.shape_of(a.type), T.shape_of(b.type)
            assert not isinstance(rt, T.PointerType)
            rt = T.TensorType((*a_shape[:-1], b_shape[-1]), rt)
        if acc is None:
            el = T.element_type(rt)
            assert isinstance(el, T.ScalarType)
            zero = 0.0 if el.is_float() else 0
            acc = self._one(A.ConstantOp(value=zero, result_types=[rt]))
        return self._one(C.DotOp(a=a, b=b, c=acc, input_precision=input_precision, result_types=[rt]))

    def create_dot_scaled(self, a: Value, a_scale: Value | None, a_format: str, b: Value, b_scale: Value | None,
                          b_format: str, acc: Value, fast_math: bool, a_k_pack: bool, b_k_pack: bool) -> Value:
        return self._one(C.DotScaledOp(a=a, b=b, c=acc, a_scale=a_scale, b_scale=b_scale, a_format=a_format,
                                       b_format=b_format, a_k_pack=a_k_pack, b_k_pack=b_k_pack, fast_math=fast_math,
                                       result_types=[acc.type]))

    def _combine_region(self, operands: Sequence[Value], combine: lb.RegionFn, terminator: type[Op]) -> Region:
        elements = [T.element_type(v.type) for v in operands]
        block = Block([*elements, *elements])
        n = len(operands)
        with self.insertion_block(block):
            out = combine(block.args[:n], block.args[n:])
            self.insert(terminator(values=tuple(out)))  # type: ignore[call-arg]
        return Region([block])

    def create_reduce(self, operands: Sequence[Value], axis: int, combine: lb.RegionFn) -> Sequence[Value]:
        shape = T.shape_of(operands[0].type)
        out_shape = shape[:axis] + shape[axis + 1:]
        rts = [T.make_type(out_shape, T.element_type(v.type)) for v in operands]
        region = self._combine_region(operands, combine, C.ReduceReturnOp)
        op = self.insert(C.ReduceOp(srcs=tuple(operands), axis=axis, combine=region, result_types=rts))
        return list(op.results)

    def create_scan(self, operands: Sequence[Value], axis: int, reverse: bool, combine: lb.RegionFn) -> Sequence[Value]:
        region = self._combine_region(operands, combine, C.ScanReturnOp)
        op = self.insert(C.ScanOp(
            srcs=tuple(operands), axis=axis, reverse=bool(reverse), combine=region,
            result_types=[v.type for v in operands],
        ))
        return list(op.results)

    def create_map_elementwise(self, operands: Sequence[Value], body: Any) -> Sequence[Value]:
        block = Block([T.element_type(v.type) for v in operands])
        with self.insertion_block(block):
            out = list(body(block.args))
            self.insert(C.MapElementwiseReturnOp(values=tuple(out)))
        shape = T.shape_of(operands[0].type)
        op = self.insert(C.MapElementwiseOp(srcs=tuple(operands), body=Region([block]),
                                            result_types=[T.make_type(shape, v.type) for v in out]))
        return list(op.results)

    # -- hints and debugging --------------------------------------------------------------------
    def create_hint(self, x: Value, kind: lb.HintKind, values: tuple[int, ...]) -> Value:
        return self._one(D.HintOp(src=x, kind=D.HintKind(kind.value), values=tuple(values), result_types=[x.type]))

    def create_assume(self, cond: Value) -> None:
        self.insert(D.AssumeOp(condition=cond))

    def create_barrier(self) -> None:
        self.insert(D.BarrierOp())

    def create_print(self, prefix: str, hex: bool, args: Sequence[Value], signed: Sequence[bool]) -> None:  # noqa: A002
        self.insert(D.PrintOp(args=tuple(args), prefix=prefix, hex=bool(hex), is_signed=tuple(bool(s) for s in signed)))

    def create_assert(self, cond: Value, message: str) -> None:
        if self.debug:
            self.insert(D.AssertOp(condition=cond, message=message))
        else:  # a kernel whose only effect is an assert compiles to a launch that does nothing
            self.module.attributes["dropped_asserts"] = True

    # -- structured control flow (used by the code generator) -----------------------------------
    def create_for(self, lower: Value, upper: Value, step: Value, inits: Sequence[Value], iv_name: str | None) -> S.ForOp:
        """A loop whose body block takes (iv, carried values...); the caller fills the body."""
        body = Block([lower.type, *[v.type for v in inits]], [iv_name])
        return self.insert(S.ForOp(
            lower=lower, upper=upper, step=step, iter_args=tuple(inits), body=Region([body]),
            result_types=[v.type for v in inits],
        ))  # type: ignore[return-value]

    def create_if(
        self, cond: Value, result_types: Sequence[T.Type], then_block: Block | None = None, else_block: Block | None = None
    ) -> S.IfOp:
        """An `scf.if` over the given (already filled) blocks, or empty ones."""
        return self.insert(S.IfOp(
            condition=cond, then_region=Region([then_block or Block()]), else_region=Region([else_block or Block()]),
            result_types=list(result_types),
        ))  # type: ignore[return-value]

    def create_while(
        self, inits: Sequence[Value], result_types: Sequence[T.Type], before: Block | None = None
    ) -> S.WhileOp:
        """An `scf.while` taking `inits`; `before`, the condition's region, may be generated
        first (what its `scf.condition` forwards sets `result_types`)."""
        before = before if before is not None else Block([v.type for v in inits])
        after = Block(list(result_types))
        return self.insert(S.WhileOp(
            inits=tuple(inits), before=Region([before]), after=Region([after]), result_types=list(result_types)
        ))  # type: ignore[return-value]

    def create_yield(self, values: Sequence[Value]) -> None:
        self.insert(S.YieldOp(values=tuple(values)))

    def create_condition(self, cond: Value, args: Sequence[Value]) -> None:
        self.insert(S.ConditionOp(condition=cond, args=tuple(args)))


def representable(value: float, name: str) -> float:
    """`value` as the half-precision type `name` (f16, bf16) holds it, rounded to nearest even
    and overflowing to an infinity as Metal converts; other types keep the Python float (an f32
    constant's text stays as written, and every use rounds it to f32 alike). A half constant's
    IR value is then the device's, so folding it (an exact `extf`, say) gives what the kernel
    computes unfolded."""
    if name not in ("f16", "bf16"):
        return value
    with np.errstate(all="ignore"):
        if name == "f16":
            return float(np.float16(value))
        single = np.float32(value)
        if not np.isfinite(single):
            return float(single)
        bits = int(single.view(np.uint32))
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000  # round the low half to nearest even
        return float(np.uint32(bits).view(np.float32))
