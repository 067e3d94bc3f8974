"""Block pointers: `tl.make_block_ptr`, `tl.advance`, and `tl.load` / `tl.store` through them.

A block pointer names a block of a strided tensor and where that block starts:

    bp = tl.make_block_ptr(base, shape=(M, N), strides=(sm, sn), offsets=(m0, n0),
                           block_shape=(BM, BN), order=(1, 0))
    tile = tl.load(bp, boundary_check=(0, 1), padding_option="zero")
    bp = tl.advance(bp, (0, BN))           # or bp.advance((0, BN))
    tl.store(bp, tile, boundary_check=(0,))

On NVIDIA GPUs it drives the TMA unit; Apple GPUs have none, so, as with tensor descriptors
(descriptor.py), a block pointer here is what it means, built from `tl` operations the compiler
and the interpreter share. Its block is `base + sum(offsets[d] + i_d) * strides[d]` for `i_d`
in `[0, block_shape[d])`. A load checks the bounds `[0, shape[d])` only in the dimensions listed
in `boundary_check`; elements outside them read as zero (`padding_option` "" or "zero") or NaN
("nan", float tensors only), and a store writes only the elements inside. A dimension that is
not checked is not masked: as in Triton, reaching outside the tensor there is the kernel's error
(the emulator's and the interpreter's bounds checks report it). `order`, the memory order TMA uses, is checked to be a
permutation and is otherwise unused. Block pointers flow through loops, branches and calls as
tensor descriptors do: their base, shape, strides and offsets are carried (`parts()`).
"""

from __future__ import annotations

from typing import Any

from ..errors import CompilationError
from .core import builtin, constexpr, must_use_result, tensor
from .core import _unwrap as _u
from .descriptor import strided_block
from .semantic import Semantic
from .types import int1, int8, int32, pointer_type

ADVANCE_UNUSED = (
    "Note that tl.advance does not have any side effects. To move the block pointer, you need to "
    "assign the result of tl.advance to a variable."
)
"""Triton's words after "The result of tl.advance is not being used." (`must_use_result`)."""

_PADDINGS = ("", "zero", "nan")


def _ints(value: Any) -> list[Any]:
    """A tuple or list argument as a list (a single value is a list of one, as in Triton)."""
    value = _u(value)
    items = list(value) if isinstance(value, (tuple, list)) else [value]
    return [_u(v) for v in items]


class block_pointer:  # noqa: N801 - Triton's spelling of its builtin types
    """A block of a strided tensor in memory and its position (module docstring)."""

    def __init__(self, base: tensor, shape: list[Any], strides: list[Any], offsets: list[Any],
                 block_shape: list[int], order: list[int]) -> None:
        self.base = base
        self.shape = shape
        self.strides = strides
        self.offsets = offsets
        self.block_shape = block_shape
        self.order = order

    @property
    def dtype(self) -> Any:
        return self.base.type.scalar.element_ty

    def parts(self) -> list[Any]:
        """What the block pointer carries at run time: base, shape, strides and offsets."""
        return [self.base, *self.shape, *self.strides, *self.offsets]

    def rebuilt(self, parts: list[Any]) -> block_pointer:
        """This block pointer over other `parts()` (a loop's or a branch's results)."""
        rank = len(self.block_shape)
        return block_pointer(parts[0], list(parts[1:1 + rank]), list(parts[1 + rank:1 + 2 * rank]),
                             list(parts[1 + 2 * rank:]), self.block_shape, self.order)

    def part_names(self, name: str) -> list[str]:
        """Names for the carried tensors of variable `name`."""
        dims = range(len(self.block_shape))
        return [f"{name}_base", *(f"{name}_shape{d}" for d in dims),
                *(f"{name}_stride{d}" for d in dims), *(f"{name}_offset{d}" for d in dims)]

    def same_structure(self, other: object) -> bool:
        """Both block pointers of one compile-time form (block shape and order)."""
        return (isinstance(other, block_pointer) and other.block_shape == self.block_shape
                and other.order == self.order)

    @must_use_result(ADVANCE_UNUSED)
    @builtin
    def advance(self, offsets: Any, _semantic: Semantic = None) -> block_pointer:  # type: ignore[assignment]
        """`tl.advance(self, offsets)`."""
        return advance(self, offsets, _semantic=_semantic)

    @builtin
    def to(self, dtype: Any, fp_downcast_rounding: Any = None, bitcast: Any = False,
           _semantic: Semantic = None) -> block_pointer:  # type: ignore[assignment]
        """Refused: a block pointer's element type is its base's. Triton lowers the cast to a
        `tt.bitcast` of the block pointer to a scalar pointer, which no load of a block takes."""
        raise CompilationError(
            f"a block pointer to {self.dtype} cannot be cast to {_u(dtype)}: a block pointer's element "
            "type is its base pointer's",
            hint="reinterpret the base before making the block pointer: "
                 "tl.make_block_ptr(base.to(tl.pointer_type(T)), shape, strides, offsets, block_shape, order)",
        )

    def pointers(self, boundary_check: Any, sem: Semantic, op: str) -> tuple[tensor, tensor | None]:
        """The block of pointers, and the mask of the checked dimensions (None if none is)."""
        checked = _boundary_dims(boundary_check, len(self.block_shape), op)
        ptrs, mask = strided_block(self.base, self.shape, self.strides, self.offsets, self.block_shape,
                                   checked, sem)
        if mask is not None:
            mask = sem.broadcast_impl_shape(mask, list(self.block_shape))
        return ptrs, mask


def _boundary_dims(boundary_check: Any, rank: int, op: str) -> list[int]:
    """Triton's canonical `boundary_check`: distinct dimensions of the block, sorted."""
    raw = _u(boundary_check)
    dims = [] if raw is None or raw in ((), []) else _ints(raw)
    for d in dims:
        if not isinstance(d, int) or not 0 <= d < rank:
            raise CompilationError(
                f"tl.{op}: boundary_check entries must be dimensions of the block (0 to {rank - 1}), not {d!r}",
                hint="list the dimensions whose bounds to check, e.g. boundary_check=(0, 1)",
            )
    if len(set(dims)) != len(dims):
        raise CompilationError(f"tl.{op}: duplicate dimension in boundary_check {dims}",
                               hint="list each dimension once, e.g. boundary_check=(0, 1)")
    return sorted(dims)


@builtin
def make_block_ptr(
    base: Any, shape: Any, strides: Any, offsets: Any, block_shape: Any, order: Any,
    _semantic: Semantic = None,  # type: ignore[assignment]
) -> block_pointer:
    """A block pointer to the `block_shape` block at `offsets` of the strided tensor at `base`
    (module docstring)."""
    base = _u(base)
    if not isinstance(base, tensor) or not base.type.scalar.is_ptr() or base.type.is_block():
        raise CompilationError(
            "tl.make_block_ptr: expected `base` to be a scalar pointer",
            hint="pass the tensor's pointer argument (plus an offset) as `base`",
        )
    if base.type.scalar.element_ty == int1:  # bools are bytes in memory, as tl.load reads them
        base = _semantic.cast(base, pointer_type(int8))
    block = _ints(block_shape)
    for b in block:
        if not isinstance(b, int) or b <= 0 or b & (b - 1):
            raise CompilationError(
                f"tl.make_block_ptr: block_shape entries must be compile-time powers of two, not {b!r}",
                hint="use tl.constexpr block sizes such as 16, 32, 64",
            )
    perm = _ints(order)
    if not all(isinstance(o, int) for o in perm) or sorted(perm) != list(range(len(perm))):
        raise CompilationError(
            f"tl.make_block_ptr: expected a permutation of (0, 1, ..., {len(perm) - 1}) in order, not {perm}",
            hint="order=(1, 0) for a row-major 2-D tensor",
        )
    shape_, strides_, offsets_ = _ints(shape), _ints(strides), _ints(offsets)
    if not block or not all(len(v) == len(block) for v in (shape_, strides_, offsets_, perm)):
        raise CompilationError(
            "tl.make_block_ptr: expected shape, strides, offsets, block_shape and order to have the same length",
            hint="for a 2-D tensor: shape=(M, N), strides=(sm, sn), offsets=(m0, n0), block_shape=(BM, BN), order=(1, 0)",
        )
    offsets_ = [_offset(o, _semantic) for o in offsets_]
    return block_pointer(base, shape_, strides_, offsets_, block, perm)


def _offset(value: Any, sem: Semantic) -> Any:
    """An offset as Triton keeps it, an int32 (a Python int stays a compile-time int)."""
    if isinstance(value, int):
        return value
    offset = sem.to_tensor(value)
    if not offset.type.scalar.is_int() or offset.type.is_block():
        raise CompilationError(
            f"block pointer offsets must be integer scalars, not {offset.type!r}",
            hint="offsets count elements: pass ints or integer scalars such as pid * BLOCK",
        )
    return sem.cast(offset, int32)


@must_use_result(ADVANCE_UNUSED)
@builtin
def advance(base: Any, offsets: Any, _semantic: Semantic = None) -> block_pointer:  # type: ignore[assignment]
    """The block pointer `base` moved by `offsets` (one per dimension)."""
    bp = _u(base)
    if not isinstance(bp, block_pointer):
        raise CompilationError("tl.advance: expected a block pointer (made by tl.make_block_ptr)",
                               hint="advance a tensor of pointers by adding to it: ptrs += BLOCK * stride")
    deltas = _ints(offsets)
    if len(deltas) != len(bp.block_shape):
        raise CompilationError(
            f"tl.advance: the block pointer has {len(bp.block_shape)} dimensions but {len(deltas)} offsets were given",
            hint="give one offset per dimension: tl.advance(bp, (0, BLOCK_N))",
        )
    moved = [
        old + new if isinstance(old, int) and isinstance(new, int) else _semantic.add(_offset(old, _semantic), _offset(new, _semantic))
        for old, new in zip(bp.offsets, deltas)
    ]
    return bp.rebuilt([bp.base, *bp.shape, *bp.strides, *moved])


def load_block(bp: block_pointer, mask: Any, other: Any, boundary_check: Any, padding_option: Any,
               hints: tuple[Any, ...], sem: Semantic) -> tensor:
    """`tl.load(bp, boundary_check=..., padding_option=...)` (module docstring); `hints` are
    tl.load's cache modifier, eviction policy, volatile and layout, passed on."""
    if mask is not None or other is not None:
        raise CompilationError("`mask` and `other` arguments cannot be specified for loading block pointers",
                               hint="use boundary_check=(dims) and padding_option instead")
    padding = _u(padding_option)
    padding = padding.value if isinstance(padding, constexpr) else padding
    if padding not in _PADDINGS:
        raise CompilationError(f"padding_option must be one of {_PADDINGS}, not {padding!r}",
                               hint="elements outside the checked bounds read as zero (\"\" or \"zero\") or NaN")
    if padding == "nan" and not bp.dtype.is_floating():
        raise CompilationError("Padding option `nan` is not supported for integer block pointers",
                               hint="use padding_option=\"zero\"")
    ptrs, in_bounds = bp.pointers(boundary_check, sem, "load")
    fill = None if in_bounds is None else (float("nan") if padding == "nan" else 0)
    return sem.load(ptrs, in_bounds, fill, (), "", *hints)


def store_block(bp: block_pointer, value: Any, mask: Any, boundary_check: Any,
                hints: tuple[Any, ...], sem: Semantic) -> None:
    """`tl.store(bp, value, boundary_check=...)` (module docstring): a block value must have the
    block's shape (a scalar is broadcast), as in Triton; `hints` are tl.store's cache modifier,
    eviction policy and layout, passed on."""
    if mask is not None:
        raise CompilationError("`mask` argument cannot be specified for storing block pointers",
                               hint="use boundary_check=(dims) instead")
    value = sem.to_tensor(_u(value))
    if value.type.is_block() and list(value.type.shape) != list(bp.block_shape):
        raise CompilationError(
            f"tl.store: block shape {list(bp.block_shape)} and value shape {list(value.type.shape)} mismatch",
            hint="store a block of the block pointer's block_shape (or a scalar)",
        )
    ptrs, in_bounds = bp.pointers(boundary_check, sem, "store")
    sem.store(ptrs, sem.broadcast_impl_shape(value, list(bp.block_shape)), in_bounds, (), *hints)
