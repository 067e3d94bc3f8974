"""Semantic layer, shape family: program ids, ranges, constants, reshapes, joins, gathers.

Shapes are compile-time constants; every block dimension must be a power of two (Triton's rule,
which the layouts rely on) and a block holds at most `TRITON_MAX_TENSOR_NUMEL` elements.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core import TRITON_MAX_TENSOR_NUMEL, constexpr, tensor
from ..types import block_type, int32
from .base import SemanticBase, error, is_pow2


def _ints(shape: Any, what: str) -> tuple[int, ...]:
    shape = shape.value if isinstance(shape, constexpr) else shape
    if isinstance(shape, (int, constexpr)):
        shape = [shape]
    out: list[int] = []
    for s in shape:
        s = s.value if isinstance(s, constexpr) else s
        if isinstance(s, bool) or not isinstance(s, int):
            raise error(
                f"{what} must be compile-time integers, got {s!r}",
                hint="shapes come from tl.constexpr parameters or literals",
            )
        out.append(s)
    return tuple(out)


def check_block_shape(shape: Sequence[int]) -> None:
    numel = 1
    for i, s in enumerate(shape):
        if not is_pow2(s):
            raise error(
                f"block shape {list(shape)} has a dimension of {s}: every dimension must be a power of 2",
                hint="round the block size up to a power of 2 and mask the extra elements",
                triton_words=f"Shape element {i} must be a power of 2",
            )
        numel *= s
    if numel > TRITON_MAX_TENSOR_NUMEL:
        raise error(
            f"block shape {list(shape)} has {numel} elements, more than the "
            f"{TRITON_MAX_TENSOR_NUMEL} a block may hold"
        )


class ShapeMixin(SemanticBase):
    # -- program model ------------------------------------------------------------------------
    def program_id(self, axis: Any) -> tensor:
        axis = axis.value if isinstance(axis, constexpr) else axis
        if axis not in (0, 1, 2):
            raise error(f"program_id axis must be 0, 1, or 2 but got {axis}")
        return tensor(self.builder.create_get_program_id(axis), int32)

    def num_programs(self, axis: Any) -> tensor:
        axis = axis.value if isinstance(axis, constexpr) else axis
        if axis not in (0, 1, 2):
            raise error(f"num_programs axis must be 0, 1, or 2 but got {axis}")
        return tensor(self.builder.create_get_num_programs(axis), int32)

    # -- creation -----------------------------------------------------------------------------
    def arange(self, start: Any, end: Any) -> tensor:
        start = start.value if isinstance(start, constexpr) else start
        end = end.value if isinstance(end, constexpr) else end
        if isinstance(start, bool) or isinstance(end, bool) or not isinstance(start, int) or not isinstance(end, int):
            raise error(
                "tl.arange's arguments must be compile-time integers",
                hint="declare them tl.constexpr and use masks for run-time bounds",
            )
        if not (-(2**31) <= start < 2**31 and -(2**31) <= end < 2**31):
            raise error(f"arange must fit in int32: tl.arange({start}, {end})")
        if end <= start:
            raise error(f"arange's end argument must be greater than the start argument ({start}, {end})")
        n = end - start
        if not is_pow2(n):
            raise error(
                f"arange's range must be a power of 2, got {n} (= {end} - {start})",
                hint="round up to a power of 2 and mask the extra lanes",
                triton_words="arange's range must be a power of 2",
            )
        check_block_shape([n])
        return tensor(self.builder.create_make_range(start, end), block_type(int32, (n,)))

    def full(self, shape: Any, value: Any, ty: Any) -> tensor:
        shape_t = _ints(shape, "tl.full's shape")
        ty = self._as_dtype(ty, "tl.full's dtype")
        if shape_t:
            check_block_shape(shape_t)
        value = value.value if isinstance(value, constexpr) else value
        if isinstance(value, tensor):
            if value.type.is_block():
                raise error("tl.full's value must be a scalar")
            scalar = self.cast(value, ty)
        else:
            scalar = self.scalar_constant(value, ty)
        return self.splat(scalar, shape_t)

    # -- reshaping ----------------------------------------------------------------------------
    def reshape(self, x: Any, shape: Any, can_reorder: bool = False) -> tensor:
        x = self.to_tensor(x)
        dst = _ints(shape, "reshape's shape")
        numel = 1
        for s in dst:
            numel *= s
        src_numel = x.type.numel if x.type.is_block() else 1  # type: ignore[attr-defined]
        if numel != src_numel:
            raise error(
                f"reshape() cannot change total number of elements in tensor: {list(x.shape)} into {list(dst)}"
            )
        if not x.type.is_block():
            return self.splat(x, dst)
        if len(dst) == 0:
            return self.item(x)
        check_block_shape(dst)
        ty = block_type(x.type.scalar, dst)
        return tensor(self.builder.create_reshape(x.handle, dst, bool(can_reorder)), ty)

    def item(self, x: tensor) -> tensor:
        """A one-element block as a scalar."""
        if not x.type.is_block():
            return x
        if x.type.numel != 1:  # type: ignore[attr-defined]
            raise error(f"item() needs a one-element tensor, got shape {list(x.type.shape)}")
        while len(x.type.shape) > 1:
            x = self.reshape(x, [1])
        # a one-element reduction yields the scalar through the builder's own reduce
        from ..builder import BinaryOp

        def combine(lhs: Sequence[Any], rhs: Sequence[Any]) -> Sequence[Any]:
            return [self.builder.create_binary(BinaryOp.OR if x.dtype.is_int() else BinaryOp.ADD, lhs[0], rhs[0])]

        (h,) = self.builder.create_reduce([x.handle], 0, combine)
        return tensor(h, x.type.scalar)

    def expand_dims(self, x: Any, axis: Any) -> tensor:
        x = self.to_tensor(x)
        axes = _ints(axis, "expand_dims' axis")
        ndim = len(x.shape) + len(axes)
        norm: list[int] = []
        for a in axes:  # Triton's checks and words, in its order: each axis, then duplicates
            if not -ndim <= a < ndim:
                raise error(f"invalid axis {a}. Expected {-ndim} <= axis < {ndim}")
            norm.append(a + ndim if a < 0 else a)
        if len(set(norm)) != len(norm):
            raise error(f"expand_dims received duplicate axes, normalized axes = {norm}")
        for a in sorted(norm):
            if not x.type.is_block():
                x = self.splat(x, [1])
            else:
                x = self._expand(x, a)
        return x

    def squeeze(self, x: Any, dim: Any) -> tensor:
        x = self.to_tensor(x)
        dims = _ints(dim, "squeeze's dim")
        shape = list(x.type.shape) if x.type.is_block() else []
        norm = {d + len(shape) if d < 0 else d for d in dims}
        for d in norm:
            if not 0 <= d < len(shape) or shape[d] != 1:
                raise error(f"cannot squeeze dimension {d} of shape {shape}: it must have size 1")
        return self.reshape(x, [s for i, s in enumerate(shape) if i not in norm])

    def permute(self, x: Any, dims: Any) -> tensor:
        x = self.to_tensor(x)
        order = _ints(dims, "permute's dims")
        shape = x.type.shape if x.type.is_block() else ()
        if len(order) != len(shape):
            raise error(
                f"permute dims must have the same length as input shape, got {len(shape)} and {len(order)}"
            )
        if sorted(order) != list(range(len(order))):
            raise error(f"permute dims must be a permutation of 0, 1, ..., n-1, but were {list(order)}")
        if list(order) == list(range(len(order))):
            return x
        ty = block_type(x.type.scalar, [shape[d] for d in order])
        return tensor(self.builder.create_trans(x.handle, order), ty)

    def trans(self, x: Any, dims: Any = ()) -> tensor:
        x = self.to_tensor(x)
        order = _ints(dims, "trans's dims") if dims not in ((), None, []) else ()
        if not order:  # Triton's default: the last two axes swapped (a batched 2-D transpose)
            n = len(x.shape)
            if n < 2:
                raise error(
                    "tl.trans invoked with a 0- or 1-dimensional tensor",
                    hint="a 1-D tensor has no axes to swap; reshape it first",
                )
            order = (*range(n - 2), n - 1, n - 2)
        return self.permute(x, order)

    def broadcast_to(self, x: Any, shape: Any) -> tensor:
        x = self.to_tensor(x)
        dst = _ints(shape, "broadcast_to's shape")
        check_block_shape(dst)
        while x.type.is_block() and len(x.type.shape) < len(dst):
            x = self._expand(x, 0)
        return self.broadcast_impl_shape(x, dst)

    def broadcast(self, a: Any, b: Any) -> tuple[tensor, tensor]:
        return self.broadcast_impl_value(self.to_tensor(a), self.to_tensor(b))

    # -- combining ----------------------------------------------------------------------------
    def cat(self, a: Any, b: Any, can_reorder: bool = False, dim: Any = 0) -> tensor:
        a, b = self.to_tensor(a), self.to_tensor(b)
        if not a.type.is_block() or not b.type.is_block():
            raise error("tl.cat joins blocks, not scalars", hint="use tl.join for two scalars")
        rank = len(a.type.shape)
        if rank != len(b.type.shape):
            raise error(f"tensors must have the same rank, got {rank} and {len(b.type.shape)}")
        if list(a.type.shape) != list(b.type.shape):  # Triton's wording
            raise error(
                f"tl.cat requires tensors of the same shape, got {list(a.type.shape)} and {list(b.type.shape)}"
            )
        if a.type != b.type:
            raise error(f"tl.cat needs operands of the same type, got {a.type} and {b.type}")
        d = dim.value if isinstance(dim, constexpr) else dim
        d = d + rank if d < 0 else d
        if not 0 <= d < rank:
            raise error(f"invalid axis {dim}. Expected {-rank} <= axis < {rank}")
        if d != 0:
            order = [d] + [i for i in range(rank) if i != d]
            inverse = [order.index(i) for i in range(rank)]
            return self.permute(self.cat(self.permute(a, order), self.permute(b, order)), inverse)
        shape = list(a.type.shape)
        shape[0] *= 2
        ty = block_type(a.type.scalar, shape)
        return tensor(self.builder.create_cat(a.handle, b.handle), ty)

    def join(self, a: Any, b: Any) -> tensor:
        a, b = self.binary_op_type_checking_impl(a, b, True, True, arithmetic_check=False)
        if a.type.scalar != b.type.scalar:
            raise error(f"tl.join needs operands of one dtype, got {a.dtype!r} and {b.dtype!r}")
        scalar_inputs = not a.type.is_block()
        if scalar_inputs:
            a, b = self.splat(a, [1]), self.splat(b, [1])
        shape = list(a.type.shape) + [2]
        ty = block_type(a.type.scalar, shape)
        out = tensor(self.builder.create_join(a.handle, b.handle), ty)
        return self.reshape(out, [2]) if scalar_inputs else out

    def split(self, x: Any) -> tuple[tensor, tensor]:
        x = self.to_tensor(x)
        if not x.type.is_block() or x.type.shape[-1] != 2:
            raise error(
                f"tl.split needs a last dimension of size 2, got shape {list(x.shape)}",
                hint="reshape so the pair you split is the last axis",
            )
        shape = x.type.shape[:-1]
        if not shape:
            # a pair split into two scalars: split a (1, 2) block, then take each one-element
            # half as a scalar, so no primitive ever yields a scalar from a shape op
            lo, hi = self.split(self.reshape(x, [1, 2]))
            return self.item(lo), self.item(hi)
        lo, hi = self.builder.create_split(x.handle)
        ty = block_type(x.type.scalar, shape)
        return tensor(lo, ty), tensor(hi, ty)

    def interleave(self, a: Any, b: Any) -> tensor:
        c = self.join(a, b)
        if len(c.type.shape) == 1:
            return c
        shape = list(c.type.shape)
        return self.reshape(c, shape[:-2] + [2 * shape[-2]])

    def getitem(self, x: tensor, slices: Any) -> tensor:
        """`x[...]` with `None` (a new axis of size 1), `:` (an axis kept) and at most one `...`
        (the `:` the other entries leave), as Triton's `tensor.__getitem__`: entries are taken in
        order, a `:` keeps its axis (one past the rank too: Triton passes over it, and its
        test_reduce stores through `z_ptr[None, None, :]` of a scalar pointer), and any other
        index is refused in Triton's words."""
        if not isinstance(slices, tuple):
            slices = (slices,)
        slices = tuple(s.value if isinstance(s, constexpr) else s for s in slices)
        rank = len(x.shape)
        if sum(1 for s in slices if s is Ellipsis) > 1:
            raise error("an index may contain at most one '...'")
        n_real = sum(1 for s in slices if s is not None and s is not Ellipsis)
        expanded: list[Any] = []
        for s in slices:
            expanded.extend([slice(None)] * max(rank - n_real, 0) if s is Ellipsis else [s])
        out = x
        for i, s in enumerate(expanded):
            if s is None:
                out = self.expand_dims(out, i)
            elif not (isinstance(s, slice) and s == slice(None)):
                raise error(
                    f"unsupported tensor index: {s}",
                    hint="only None, ':' and '...' index a tensor; select elements with pointer "
                    "arithmetic and masks, or tl.gather",
                )
        return out

    # -- data movement ------------------------------------------------------------------------
    def gather(self, src: Any, index: Any, axis: Any) -> tensor:
        src, index = self.to_tensor(src), self.to_tensor(index)
        axis = axis.value if isinstance(axis, constexpr) else axis
        if not src.type.is_block() or not index.type.is_block():
            raise error("tl.gather needs block operands")
        rank = len(src.type.shape)
        if len(index.type.shape) != rank:
            raise error(f"tl.gather: index rank {len(index.shape)} differs from source rank {rank}")
        if not index.type.scalar.is_int():
            raise error(f"tl.gather index must be integer, got {index.dtype!r}")
        axis = axis + rank if axis < 0 else axis
        if not 0 <= axis < rank:
            raise error(f"invalid axis {axis}. Expected {-rank} <= axis < {rank}")
        for d in range(rank):
            if d != axis and index.type.shape[d] != src.type.shape[d]:
                raise error(
                    f"tl.gather: index shape {list(index.shape)} must match source shape "
                    f"{list(src.shape)} except along axis {axis}"
                )
        ty = block_type(src.type.scalar, index.type.shape)
        return tensor(self.builder.create_gather(src.handle, index.handle, axis), ty)

    def histogram(self, x: Any, num_bins: Any, mask: Any = None) -> tensor:
        x = self.to_tensor(x)
        n = num_bins.value if isinstance(num_bins, constexpr) else num_bins
        if not x.type.is_block() or len(x.type.shape) != 1:
            raise error("tl.histogram takes a 1-D tensor")
        if not x.type.scalar.is_int() or x.type.scalar.primitive_bitwidth != 32:
            raise error(
                f"histogram only supports 32-bit integer input, got {x.dtype!r}",
                hint="cast the values to tl.int32 (or tl.uint32) first",
                triton_words="histogram only supports 32-bit integer input",
            )
        if isinstance(n, bool) or not isinstance(n, int):
            raise error("tl.histogram's num_bins must be a compile-time integer")
        check_block_shape([n])
        mask_h = None
        if mask is not None:
            m = self._to_bool(mask)  # type: ignore[attr-defined]
            m = self.broadcast_impl_shape(m, x.type.shape)
            mask_h = m.handle
        return tensor(self.builder.create_histogram(x.handle, n, mask_h), block_type(int32, (n,)))

    def flip(self, x: Any, dim: Any = None) -> tensor:
        x = self.to_tensor(x)
        if not x.type.is_block():
            return x
        rank = len(x.type.shape)
        d = dim.value if isinstance(dim, constexpr) else dim
        d = rank - 1 if d is None else (d + rank if d < 0 else d)
        if not 0 <= d < rank:
            raise error(f"invalid axis {dim}. Expected {-rank} <= axis < {rank}")
        n = x.type.shape[d]
        idx = self.sub(n - 1, self.arange(0, n))  # type: ignore[attr-defined]
        for i in range(rank):
            if i != d:
                idx = self._expand(idx, i)
        idx = self.broadcast_impl_shape(idx, x.type.shape)
        return self.gather(x, idx, d)
