"""Semantic layer, cooperative family: reductions, scans and `dot`.

A reduction or scan takes a combine function on tensors; this module turns it into the builder's
`RegionFn` on handles (the IR builder calls it once on block arguments, the NumPy builder on whole
arrays). The standard reductions follow Triton's `standard.py`: bf16 is reduced in fp32, `max`/
`min` (without indices) reduce sub-32-bit types in fp32/int32, `sum`/`cumsum` reduce sub-32-bit
integers in (u)int32 unless `dtype=` says otherwise, index reductions break ties to the left.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ..builder import Handle
from ..core import PropagateNan, constexpr, tensor
from ..types import block_type, dtype, float16, float32, int8, int32, uint32
from .base import SemanticBase, error, is_pow2

TensorCombine = Callable[[list[tensor], list[tensor]], Sequence[Any]]


def _opt(x: Any) -> Any:
    return x.value if isinstance(x, constexpr) else x


class ReduceMixin(SemanticBase):
    # -- generic ------------------------------------------------------------------------------
    def _region(self, dtypes: list[dtype], combine: TensorCombine, what: str) -> Callable[
        [Sequence[Handle], Sequence[Handle]], list[Handle]
    ]:
        def region(lhs: Sequence[Handle], rhs: Sequence[Handle]) -> list[Handle]:
            a = [tensor(h, d) for h, d in zip(lhs, dtypes)]
            b = [tensor(h, d) for h, d in zip(rhs, dtypes)]
            out = combine(a, b)
            out = list(out) if isinstance(out, (tuple, list)) else [out]
            if len(out) != len(dtypes):
                raise error(f"the {what} combine function returned {len(out)} values, expected {len(dtypes)}")
            handles: list[Handle] = []
            for i, (o, d) in enumerate(zip(out, dtypes)):
                o = self.to_tensor(o)
                if o.type.is_block():
                    raise error(f"the {what} combine function must return scalars")
                if o.type.scalar != d:
                    raise error(
                        f"the {what} combine function returned {o.type.scalar!r} for operand {i}, "
                        f"expected {d!r}",
                        hint="cast the result with .to(...) so it keeps the operand's dtype",
                    )
                handles.append(o.handle)
            return handles

        return region

    def _prepare(self, inputs: Sequence[Any], axis: Any, what: str) -> tuple[list[tensor], int, bool]:
        xs = [self.to_tensor(_opt(x)) for x in inputs]
        axis = _opt(axis)
        flat = axis is None
        if flat:
            xs = [self.reshape(x, [x.type.numel if x.type.is_block() else 1], True) for x in xs]  # type: ignore[attr-defined]
            axis = 0
        xs = [x if x.type.is_block() else self.splat(x, [1]) for x in xs]
        shape = xs[0].type.shape
        for x in xs[1:]:
            if x.type.shape != shape:
                raise error(f"all {what} operands must have one shape, got {list(shape)} and {list(x.type.shape)}")
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise error(f"the {what} axis must be a compile-time integer or None, got {axis!r}")
        rank = len(shape)
        if not -rank <= axis < rank:
            raise error(f"invalid axis {axis}. Expected {-rank} <= axis < {rank}")
        return xs, axis % rank, flat

    def reduction(
        self, inputs: Sequence[Any], axis: Any, combine: TensorCombine, keep_dims: Any = False
    ) -> tuple[tensor, ...]:
        orig_rank = len(self.to_tensor(_opt(inputs[0])).shape)
        xs, ax, flat = self._prepare(inputs, axis, "reduce")
        dtypes = [x.type.scalar for x in xs]
        handles = self.builder.create_reduce([x.handle for x in xs], ax, self._region(dtypes, combine, "reduce"))
        shape = list(xs[0].type.shape)
        del shape[ax]
        outs = [tensor(h, block_type(d, shape) if shape else d) for h, d in zip(handles, dtypes)]
        if _opt(keep_dims):
            if flat:
                outs = [self.reshape(o, [1] * max(orig_rank, 1)) for o in outs]  # type: ignore[attr-defined]
            else:
                outs = [self.expand_dims(o, ax) for o in outs]  # type: ignore[attr-defined]
        return tuple(outs)

    def scan(self, inputs: Sequence[Any], axis: Any, combine: TensorCombine, reverse: Any = False) -> tuple[tensor, ...]:
        if _opt(axis) is None:
            raise error("a scan needs an axis")
        was_scalar = not self.to_tensor(_opt(inputs[0])).type.is_block()
        xs, ax, _ = self._prepare(inputs, axis, "scan")
        dtypes = [x.type.scalar for x in xs]
        handles = self.builder.create_scan(
            [x.handle for x in xs], ax, bool(_opt(reverse)), self._region(dtypes, combine, "scan")
        )
        outs = tuple(tensor(h, x.type) for h, x in zip(handles, xs))
        return tuple(self.item(o) for o in outs) if was_scalar else outs  # type: ignore[attr-defined]

    def user_combine(self, fn: Any, generator: Any = None) -> TensorCombine:
        if not callable(fn):
            raise error(f"combine_fn must be a @jit function, got {fn!r}")

        def combine(a: list[tensor], b: list[tensor]) -> Sequence[Any]:
            out = self.call_jit(fn, [*a, *b], generator)
            return list(out) if isinstance(out, (tuple, list)) else [out]

        return combine

    # -- standard reductions ------------------------------------------------------------------
    def _promote_bf16(self, x: tensor) -> tensor:
        return self.cast(x, float32) if x.type.scalar.is_bf16() else x

    def pick_sum_dtype(self, in_ty: dtype, requested: Any) -> dtype | None:
        requested = _opt(requested)
        if requested is not None:
            return self._as_dtype(requested, "the sum dtype")
        if in_ty.is_bf16():
            return float32
        if in_ty.is_int_signed() and in_ty.int_bitwidth < 32:
            return int32
        if in_ty.is_int_unsigned() and in_ty.int_bitwidth < 32:
            return uint32  # int1 counts as unsigned in Triton, so booleans sum to uint32
        return None

    def sum(self, x: Any, axis: Any = None, keep_dims: Any = False, dtype_: Any = None) -> tensor:
        x = self.to_tensor(_opt(x))
        out_ty = self.pick_sum_dtype(x.type.scalar, dtype_)
        if out_ty is not None:
            x = self.cast(x, out_ty)
        add = lambda a, b: [self.add(a[0], b[0])]  # type: ignore[attr-defined]  # noqa: E731
        return self.reduction([x], axis, add, keep_dims)[0]

    def xor_sum(self, x: Any, axis: Any = None, keep_dims: Any = False) -> tensor:
        x = self.to_tensor(_opt(x))
        if not x.type.scalar.is_int():
            raise error(f"tl.xor_sum is defined on integers, got {x.type.scalar!r}")
        xor = lambda a, b: [self.xor_(a[0], b[0])]  # type: ignore[attr-defined]  # noqa: E731
        return self.reduction([x], axis, xor, keep_dims)[0]

    def reduce_or(self, x: Any, axis: Any = None, keep_dims: Any = False) -> tensor:
        x = self.to_tensor(_opt(x))
        if not x.type.scalar.is_int():
            raise error(f"tl.reduce_or is defined on integers, got {x.type.scalar!r}")
        f = lambda a, b: [self.or_(a[0], b[0])]  # type: ignore[attr-defined]  # noqa: E731
        return self.reduction([x], axis, f, keep_dims)[0]

    def _minmax(
        self, x: Any, axis: Any, return_indices: Any, tie_break_left: Any, keep_dims: Any, is_max: bool
    ) -> tensor | tuple[tensor, tensor]:
        x = self._promote_bf16(self.to_tensor(_opt(x)))
        s = x.type.scalar
        if not (s.is_floating() or s.is_int()):
            raise error(f"tl.{'max' if is_max else 'min'} is not defined on {s!r}")
        if _opt(return_indices):
            return self._reduce_with_indices(x, axis, is_max, bool(_opt(tie_break_left)), keep_dims)
        if s.primitive_bitwidth < 32:
            x = self.cast(x, float32 if s.is_floating() else int32)
        if is_max:
            f = lambda a, b: [self.maximum(a[0], b[0], PropagateNan.NONE)]  # type: ignore[attr-defined]  # noqa: E731
        else:
            f = lambda a, b: [self.minimum(a[0], b[0], PropagateNan.NONE)]  # type: ignore[attr-defined]  # noqa: E731
        return self.reduction([x], axis, f, keep_dims)[0]

    def max(self, x: Any, axis: Any = None, return_indices: Any = False, tie_break_left: Any = True,
            keep_dims: Any = False) -> tensor | tuple[tensor, tensor]:
        return self._minmax(x, axis, return_indices, tie_break_left, keep_dims, True)

    def min(self, x: Any, axis: Any = None, return_indices: Any = False, tie_break_left: Any = True,
            keep_dims: Any = False) -> tensor | tuple[tensor, tensor]:
        return self._minmax(x, axis, return_indices, tie_break_left, keep_dims, False)

    def _reduce_with_indices(
        self, x: tensor, axis: Any, is_max: bool, tie_break_left: bool, keep_dims: Any
    ) -> tuple[tensor, tensor]:
        axis = _opt(axis)
        orig_rank = len(x.shape)
        flat = axis is None
        if flat:
            x = self.reshape(x, [x.type.numel if x.type.is_block() else 1], True)  # type: ignore[attr-defined]
            axis = 0
        if not x.type.is_block():
            x = self.splat(x, [1])
        shape = x.type.shape
        rank = len(shape)
        if isinstance(axis, bool) or not isinstance(axis, int) or not -rank <= axis < rank:
            raise error(f"invalid axis {axis}. Expected {-rank} <= axis < {rank}")
        axis %= rank
        n = shape[axis]
        if not is_pow2(n):
            raise error(f"index reductions need a power-of-2 axis, got {n}")
        idx = self.arange(0, n)  # type: ignore[attr-defined]
        for d in range(rank):
            if d != axis:
                idx = self._expand(idx, d)
        idx = self.broadcast_impl_shape(idx, shape)
        floating = x.type.scalar.is_floating()

        def combine(a: list[tensor], b: list[tensor]) -> list[tensor]:
            v1, i1 = a
            v2, i2 = b
            better = self.greater_than(v1, v2) if is_max else self.less_than(v1, v2)  # type: ignore[attr-defined]
            tie = self.equal(v1, v2)  # type: ignore[attr-defined]
            if floating:
                # NaNs are skipped, as Triton's nanargmax/nanargmin: a number beats a NaN, and
                # NaNs tie among themselves (so an all-NaN slice answers its first index)
                nan1 = self.not_equal(v1, v1)  # type: ignore[attr-defined]
                nan2 = self.not_equal(v2, v2)  # type: ignore[attr-defined]
                better = self.or_(better, self.and_(nan2, self.logical_not(nan1)))  # type: ignore[attr-defined]
                tie = self.or_(tie, self.and_(nan1, nan2))  # type: ignore[attr-defined]
            if tie_break_left:
                better = self.or_(better, self.and_(tie, self.less_than(i1, i2)))  # type: ignore[attr-defined]
            return [self.where(better, v1, v2), self.where(better, i1, i2)]  # type: ignore[attr-defined]

        v, i = self.reduction([x, idx], axis, combine, False)
        if _opt(keep_dims):
            if flat:
                v = self.reshape(v, [1] * max(orig_rank, 1))  # type: ignore[attr-defined]
                i = self.reshape(i, [1] * max(orig_rank, 1))  # type: ignore[attr-defined]
            else:
                v, i = self.expand_dims(v, axis), self.expand_dims(i, axis)  # type: ignore[attr-defined]
        return v, i

    # -- standard scans -----------------------------------------------------------------------
    def cumsum(self, x: Any, axis: Any = 0, reverse: Any = False, dtype_: Any = None) -> tensor:
        x = self.to_tensor(_opt(x))
        out_ty = self.pick_sum_dtype(x.type.scalar, dtype_)
        if out_ty is not None:
            x = self.cast(x, out_ty)
        f = lambda a, b: [self.add(a[0], b[0])]  # type: ignore[attr-defined]  # noqa: E731
        return self.scan([x], axis, f, reverse)[0]

    def cumprod(self, x: Any, axis: Any = 0, reverse: Any = False, dtype_: Any = None) -> tensor:
        x = self.to_tensor(_opt(x))
        out_ty = self.pick_sum_dtype(x.type.scalar, dtype_)
        if out_ty is not None:
            x = self.cast(x, out_ty)
        f = lambda a, b: [self.mul(a[0], b[0])]  # type: ignore[attr-defined]  # noqa: E731
        return self.scan([x], axis, f, reverse)[0]

    # -- dot ----------------------------------------------------------------------------------
    def dot(
        self,
        a: Any,
        b: Any,
        acc: Any = None,
        input_precision: Any = None,
        max_num_imprecise_acc: Any = None,
        out_dtype: Any = None,
    ) -> tensor:
        a, b = self.to_tensor(_opt(a)), self.to_tensor(_opt(b))
        acc = _opt(acc)
        out_ty = self._as_dtype(_opt(out_dtype) if _opt(out_dtype) is not None else _acc_out_dtype(acc), "out_dtype")
        precision = _opt(input_precision)
        if precision is None:
            precision = "ieee"
        # Triton's reduced-precision modes for fp32 operands (tf32 products, and the 3- and
        # 6-product splittings into tf32 or bf16 parts) ask for at most fp32's accuracy: Apple
        # GPUs compute every fp32 dot in full fp32, which each of them accepts as its result.
        if precision not in ("ieee", "tf32", "tf32x3", "bf16x3", "bf16x6"):
            raise error(
                f"input_precision {precision!r} is not available on Apple GPUs",
                hint="use 'ieee' (fp32 dots are computed in full fp32 precision; 'tf32', 'tf32x3', "
                "'bf16x3' and 'bf16x6' are accepted as ieee)",
            )
        if not a.type.is_block() or not b.type.is_block():
            raise error("tl.dot takes two blocks")
        sa, sb = a.type.scalar, b.type.scalar
        imprecise = _opt(max_num_imprecise_acc)
        if sa.is_fp8() and sb.is_fp8() and imprecise is not None and imprecise > a.type.shape[-1]:
            # Triton's bound (its fp8 MMAs add at most that many products in reduced precision);
            # here every product is added in fp32, so the value itself changes nothing
            raise error(f"max_num_imprecise_acc ({imprecise}) must be <= K ({a.type.shape[-1]})")
        if sa.is_fp8() and sb.is_fp8():
            # every value of the five fp8 formats is a float16 (ranges and subnormals included):
            # the operands convert exactly and the dot runs on half fragments
            a, b = self.cast(a, float16), self.cast(b, float16)
            sa, sb = float16, float16
        allowed = (int8, float16, float32)
        if sa != sb:
            raise error(f"tl.dot operands must have one dtype, got {sa!r} and {sb!r}", hint="cast one operand")
        if not (sa in allowed or sa.is_bf16()):
            raise error(
                f"tl.dot does not support {sa!r} operands",
                hint="supported operand dtypes: float16, bfloat16, float32, int8",
            )
        ra, rb = len(a.type.shape), len(b.type.shape)
        if ra != rb or ra < 2:
            raise error(f"tl.dot operands must have one rank, at least 2, got shapes {list(a.shape)} and {list(b.shape)}")
        if a.type.shape[-1] != b.type.shape[-2]:
            raise error(
                f"tl.dot shapes {list(a.shape)} and {list(b.shape)} do not chain: "
                f"{a.type.shape[-1]} != {b.type.shape[-2]}"
            )
        if a.type.shape[:-2] != b.type.shape[:-2]:
            raise error(f"tl.dot batch sizes differ: {list(a.type.shape[:-2])} and {list(b.type.shape[:-2])}")
        if ra > 3:
            return self._dot_of_flattened_batches(a, b, acc, precision, out_ty)
        m, k, n = a.type.shape[-2], a.type.shape[-1], b.type.shape[-1]
        batch = a.type.shape[0] if ra == 3 else 1
        # Tiles below simdgroup_matrix's reach (M, N or K under 16), and batched tiles small enough
        # to hold every product, are computed as products and a sum over K, on both backends.
        by_products = min(m, n, k) < 16 or (ra == 3 and batch * m * n * k <= _PRODUCT_DOT_LIMIT)
        if sa.is_int():
            ret = int32
        elif out_ty.is_bf16():
            raise error(
                "out_dtype=bfloat16 is not supported by tl.dot",
                hint="use out_dtype=tl.float32 and cast the result with .to(tl.bfloat16)",
            )
        elif sa.is_fp16():
            ret = float16 if out_ty.is_fp16() else float32
        else:
            ret = float32
        shape = list(a.type.shape[:-1]) + [n]
        ret_ty = block_type(ret, shape)
        if acc is None:
            acc_t = self.splat(self.scalar_constant(0, ret), shape)
        else:
            acc_t = self.to_tensor(acc)
            if acc_t.type != ret_ty:
                raise error(
                    f"tl.dot accumulator has type {acc_t.type}, expected {ret_ty}",
                    hint=f"create it with tl.zeros({shape}, dtype=tl.{_pub(ret)}) (or pass out_dtype)",
                )
        if by_products:
            return self._dot_by_products(a, b, acc_t, ret)
        if ra == 3 and not self.eager and batch <= _BATCH_LOOP_LIMIT:
            return self._dot_per_batch(a, b, acc_t, precision, ret)
        h = self.builder.create_dot(a.handle, b.handle, acc_t.handle, precision, ret)
        return tensor(h, ret_ty)

    def _dot_of_flattened_batches(self, a: tensor, b: tensor, acc: Any, precision: str, out_ty: dtype) -> tensor:
        """A dot of rank 4 or more: its batch axes, the same on both operands, flattened into
        one (reshapes keep the elements' order), the 3-D batched dot, and the result reshaped
        back to the batch axes."""
        batch_shape = list(a.type.shape[:-2])
        m, k, n = a.type.shape[-2], a.type.shape[-1], b.type.shape[-1]
        nb = math.prod(batch_shape)
        if acc is not None:
            acc = self.to_tensor(acc)
            if not acc.type.is_block() or list(acc.type.shape) != [*batch_shape, m, n]:
                raise error(f"tl.dot accumulator has type {acc.type}, expected a block of shape {[*batch_shape, m, n]}")
            acc = self.reshape(acc, [nb, m, n])
        d = self.dot(self.reshape(a, [nb, m, k]), self.reshape(b, [nb, k, n]), acc, precision, None, out_ty)
        return self.reshape(d, [*batch_shape, m, n])

    def _dot_per_batch(self, a: tensor, b: tensor, acc: tensor, precision: str, ret: dtype) -> tensor:
        """A batched dot as one 2-D dot (simdgroup fragments) per batch element, unrolled: each
        batch's operands are picked out by a masked sum over the batch axis (one value and zeros:
        exact), and its product is added into the accumulator where the batch index matches."""
        nb = a.type.shape[0]
        m, n = a.type.shape[1], b.type.shape[2]
        index = self.expand_dims(self.expand_dims(self.arange(0, nb), 1), 2)  # [B, 1, 1]
        out = acc
        for i in range(nb):
            pick = self.equal(index, i)
            ai = self.sum(self.where(pick, a, self.scalar_constant(0, a.type.scalar)), 0, False, a.type.scalar)
            bi = self.sum(self.where(pick, b, self.scalar_constant(0, b.type.scalar)), 0, False, b.type.scalar)
            zero = self.splat(self.scalar_constant(0, ret), [m, n])
            di = tensor(self.builder.create_dot(ai.handle, bi.handle, zero.handle, precision, ret),
                        block_type(ret, [m, n]))
            out = self.add(out, self.where(pick, self.expand_dims(di, 0), self.scalar_constant(0, ret)))
        return out

    def _dot_by_products(self, a: tensor, b: tensor, acc: tensor, ret: dtype) -> tensor:
        """`acc + sum_k a[.., m, k] * b[.., k, n]`, in int32 for int8 operands and float32
        otherwise, rounded to `ret` at the end."""
        wide = int32 if a.type.scalar.is_int() else float32
        rank = len(a.type.shape)
        pa = self.expand_dims(self.cast(a, wide), rank)  # [.., M, K, 1]
        pb = self.expand_dims(self.cast(b, wide), rank - 2)  # [.., 1, K, N]
        total = self.sum(self.mul(pa, pb), rank - 1)
        return self.cast(self.add(self.cast(acc, wide), total), ret)


_PRODUCT_DOT_LIMIT = 16384
"""Most products (batch x M x N x K) a dot computed as products and a sum may hold."""
_BATCH_LOOP_LIMIT = 16
"""Most batch elements a compiled batched dot unrolls into 2-D dots."""


def _pub(ty: dtype) -> str:
    return {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}.get(ty.name, ty.name)


def _acc_out_dtype(acc: Any) -> dtype:
    """`out_dtype` when the call gives none: a float16 accumulator's float16 (Triton's
    `tl.dot(a, b, c)` with a float16 `c` accumulates in float16, as `out_dtype=tl.float16` does),
    else float32 (an accumulator of another type is then checked against the result's type)."""
    if isinstance(acc, tensor) and acc.type.scalar.is_fp16():
        return float16
    return float32
