"""Tensor descriptors made in the kernel: `tl.make_tensor_descriptor` and its block loads/stores.

On NVIDIA GPUs a descriptor drives the TMA unit; Apple GPUs have none, so a descriptor here is
what it means, built from `tl` operations the compiler and the interpreter already share:

    desc = tl.make_tensor_descriptor(base, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    tile = desc.load([m0, n0])            # tl.load_tensor_descriptor(desc, [m0, n0])
    desc.store([m0, n0], tile * 2)         # tl.store_tensor_descriptor(desc, [m0, n0], value)
    rows = desc1.gather(row_ids, n0)       # a [1, BN] descriptor: the rows row_ids, columns n0..
    desc1.scatter(rows, row_ids, n0)
    desc.atomic_add([m0, n0], tile)        # also atomic_min, _max, _and, _or, _xor

A load gives the `block_shape` block whose first element is at `offsets`, reading
`base + sum(offsets[d] + i_d) * strides[d]`; elements outside `[0, shape[d])` in any dimension
read as zero (`padding_option="zero"`, Triton's default) or NaN (`"nan"`). A store writes only
the elements inside the shape. `block_shape` is compile-time; `shape`, `strides` and `offsets`
may be run-time values. Unlike TMA, no alignment or contiguity is required of the strides; the
one TMA rule kept is Triton's own check in `make_tensor_descriptor`, that a block's last
dimension holds at least 16 bytes (refused in Triton's words on every backend).

A descriptor made on the host (`triton.tools.tensor_descriptor.TensorDescriptor`) and passed
as an argument arrives as this same object, over its base pointer, shape and strides
(runtime/flat_args.py).
"""

from __future__ import annotations

from typing import Any

from ..errors import CompilationError
from .core import builtin, tensor
from .core import _unwrap as _u
from .semantic import Semantic
from .semantic.base import error
from .shape_ops import arange, expand_dims

_PADDINGS = ("zero", "nan")
_REDUCE_DTYPES = {
    "add": ("uint32", "int32", "uint64", "fp32", "fp16", "bf16"),
    "min": ("uint32", "int32", "uint64", "int64", "fp16", "bf16"),
    "max": ("uint32", "int32", "uint64", "int64", "fp16", "bf16"),
    "and": ("uint32", "int32", "uint64", "int64"),
    "or": ("uint32", "int32", "uint64", "int64"),
    "xor": ("uint32", "int32", "uint64", "int64"),
}
"""The element types Triton's descriptor reductions take, by kind (its TMA reductions'); 16-bit
float min/max need NVIDIA's native TMA, so they are refused here as Triton refuses them without
it."""


def strided_block(base: tensor, shape: list[Any], strides: list[Any], offsets: list[Any],
                  block_shape: list[int], checked: Any, sem: Semantic) -> tuple[tensor, Any]:
    """The pointers of the `block_shape` block at `offsets` of the strided tensor at `base`,
    `base + sum(offsets[d] + i_d) * strides[d]`, and the mask of its elements inside
    `[0, shape[d])` in the dimensions `checked` (None when none is): what a descriptor's and a
    block pointer's loads and stores address."""
    rank = len(block_shape)
    ptrs: Any = base
    mask: Any = None
    for d, (block, offset) in enumerate(zip(block_shape, offsets)):
        pos = arange(0, block, _semantic=sem)
        for axis in range(rank):
            if axis != d:
                pos = expand_dims(pos, axis, _semantic=sem)
        pos = sem.add(pos, _u(offset))
        ptrs = sem.add(ptrs, sem.mul(pos, _u(strides[d])))
        if d in checked:
            inside = sem.and_(sem.greater_equal(pos, 0), sem.less_than(pos, _u(shape[d])))
            mask = inside if mask is None else sem.and_(mask, inside)
    return ptrs, mask


class tensor_descriptor:  # noqa: N801 - Triton's name
    """A block view of a strided tensor in memory (module docstring)."""

    def __init__(
        self, base: tensor, shape: list[Any], strides: list[Any], block_shape: list[int],
        padding: str,
    ) -> None:
        self.base = base
        self.shape = shape
        self.strides = strides
        self.block_shape = block_shape
        self.padding = padding

    @property
    def dtype(self) -> Any:
        return self.base.type.scalar.element_ty

    def parts(self) -> list[Any]:
        """What the descriptor carries at run time: its base, shape and strides, in order."""
        return [self.base, *self.shape, *self.strides]

    @classmethod
    def from_parts(cls, parts: list[Any], block_shape: Any, padding: str) -> tensor_descriptor:
        """The descriptor whose `parts()` are `parts`."""
        rank = len(block_shape)
        return cls(parts[0], list(parts[1:1 + rank]), list(parts[1 + rank:]), list(block_shape), padding)

    def rebuilt(self, parts: list[Any]) -> tensor_descriptor:
        """This descriptor over other `parts()` (a loop's or a branch's results)."""
        return tensor_descriptor.from_parts(parts, self.block_shape, self.padding)

    def same_structure(self, other: object) -> bool:
        """Both descriptors of one compile-time form (block shape and padding)."""
        return (isinstance(other, tensor_descriptor) and list(other.block_shape) == list(self.block_shape)
                and other.padding == self.padding)

    def _pointers(self, offsets: Any, sem: Semantic) -> tuple[tensor, tensor]:
        offsets = list(_u(offsets))
        rank = len(self.block_shape)
        if len(offsets) != rank:
            raise CompilationError(
                f"the descriptor has {rank} dimensions but {len(offsets)} offsets were given",
                hint="give one offset per dimension: desc.load([m0, n0])",
            )
        return strided_block(self.base, self.shape, self.strides, offsets, self.block_shape, range(rank), sem)

    @builtin
    def load(self, offsets: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
        """The block at `offsets`; elements outside the shape read as the padding."""
        ptrs, mask = self._pointers(offsets, _semantic)
        other = float("nan") if self.padding == "nan" else 0
        return _semantic.load(ptrs, mask, other, (), "", "", "", False, None)

    @builtin
    def store(self, offsets: Any, value: Any, _semantic: Semantic = None) -> None:  # type: ignore[assignment]
        """Write the block at `offsets`; elements outside the shape are not written."""
        ptrs, mask = self._pointers(offsets, _semantic)
        _semantic.store(ptrs, _u(value), mask, (), "", "", None)

    def _reduce(self, kind: str, offsets: Any, value: Any, sem: Semantic) -> None:
        """Combine `value` into the block at `offsets` elementwise with the atomic `kind`
        (relaxed, as a TMA reduction is); elements outside the shape are left alone."""
        name = self.dtype.name
        if name not in _REDUCE_DTYPES[kind]:
            raise CompilationError(f"Unsupported dtype {self.dtype} for a descriptor's atomic_{kind}",
                                   hint=f"it takes {', '.join(_REDUCE_DTYPES[kind])}")
        if kind in ("min", "max") and name in ("fp16", "bf16"):
            raise CompilationError("16-bit float types require native tma support",
                                   hint=f"Apple GPUs have no TMA: {self.dtype} descriptors take atomic_add only")
        ptrs, mask = self._pointers(offsets, sem)
        getattr(sem, f"atomic_{kind}")(ptrs, _u(value), mask, "relaxed")

    @builtin
    def atomic_add(self, offsets: Any, value: Any, _semantic: Semantic = None) -> None:  # type: ignore[assignment]
        """Add `value` into the block at `offsets` (atomically, per element)."""
        self._reduce("add", offsets, value, _semantic)

    @builtin
    def atomic_min(self, offsets: Any, value: Any, _semantic: Semantic = None) -> None:  # type: ignore[assignment]
        """Replace the block at `offsets` by its minimum with `value` (atomically, per element)."""
        self._reduce("min", offsets, value, _semantic)

    @builtin
    def atomic_max(self, offsets: Any, value: Any, _semantic: Semantic = None) -> None:  # type: ignore[assignment]
        """Replace the block at `offsets` by its maximum with `value` (atomically, per element)."""
        self._reduce("max", offsets, value, _semantic)

    @builtin
    def atomic_and(self, offsets: Any, value: Any, _semantic: Semantic = None) -> None:  # type: ignore[assignment]
        """Bitwise-and `value` into the block at `offsets` (atomically, per element)."""
        self._reduce("and", offsets, value, _semantic)

    @builtin
    def atomic_or(self, offsets: Any, value: Any, _semantic: Semantic = None) -> None:  # type: ignore[assignment]
        """Bitwise-or `value` into the block at `offsets` (atomically, per element)."""
        self._reduce("or", offsets, value, _semantic)

    @builtin
    def atomic_xor(self, offsets: Any, value: Any, _semantic: Semantic = None) -> None:  # type: ignore[assignment]
        """Bitwise-xor `value` into the block at `offsets` (atomically, per element)."""
        self._reduce("xor", offsets, value, _semantic)

    def _row_pointers(self, x_offsets: Any, y_offset: Any, sem: Semantic, what: str) -> tuple[tensor, tensor]:
        """Pointers and bounds mask of the rows `x_offsets` (a 1-D block), each the block's
        columns from `y_offset`: Triton's gather/scatter, with its checks in its words."""
        rows = _u(x_offsets)
        checks = (
            (len(self.block_shape) == 2, f"descriptor must be 2D, but got {self.block_shape}"),
            (self.block_shape[0] == 1, f"descriptor block must have 1 row, but got {self.block_shape}"),
            (isinstance(rows, tensor) and len(rows.shape) == 1,
             f"x offsets must be 1D, but got {getattr(rows, 'shape', rows)}"),
        )
        for ok, reason in checks:
            if not ok:
                raise CompilationError(reason, hint=f"desc.{what} takes a [1, BLOCK] descriptor and a 1-D block of row offsets")
        if rows.dtype.name not in ("int16", "int32"):
            raise CompilationError(f"x offsets must have dtype int16 or int32, but got {rows.dtype}")
        if rows.shape[0] < 8:
            raise CompilationError(f"descriptor {what} must have at least 8 rows, but got {list(rows.shape)}")
        min_cols = 32 // self.dtype.primitive_bitwidth * 8
        if self.block_shape[1] < min_cols:
            raise CompilationError(
                f"descriptor {what} of {self.dtype} must have at least {min_cols} columns, "
                f"but got {self.block_shape[1]}"
            )
        rows = expand_dims(rows, 1, _semantic=sem)
        cols = expand_dims(sem.add(arange(0, self.block_shape[1], _semantic=sem), _u(y_offset)), 0, _semantic=sem)
        ptrs = sem.add(sem.add(self.base, sem.mul(rows, _u(self.strides[0]))), sem.mul(cols, _u(self.strides[1])))
        mask = sem.and_(
            sem.and_(sem.greater_equal(rows, 0), sem.less_than(rows, _u(self.shape[0]))),
            sem.and_(sem.greater_equal(cols, 0), sem.less_than(cols, _u(self.shape[1]))),
        )
        return ptrs, mask

    @builtin
    def gather(self, x_offsets: Any, y_offset: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
        """The rows `x_offsets` from column `y_offset` (a [len(x_offsets), BLOCK] block); rows
        and columns outside the shape read as the padding."""
        ptrs, mask = self._row_pointers(x_offsets, y_offset, _semantic, "gather")
        other = float("nan") if self.padding == "nan" else 0
        return _semantic.load(ptrs, mask, other, (), "", "", "", False, None)

    @builtin
    def scatter(self, value: Any, x_offsets: Any, y_offset: Any, _semantic: Semantic = None) -> None:  # type: ignore[assignment]
        """Write `value` to the rows `x_offsets` from column `y_offset`; elements outside the
        shape are not written."""
        ptrs, mask = self._row_pointers(x_offsets, y_offset, _semantic, "scatter")
        _semantic.store(ptrs, _u(value), mask, (), "", "", None)


tensor_descriptor_type = tensor_descriptor


@builtin
def make_tensor_descriptor(
    base: Any, shape: Any, strides: Any, block_shape: Any, padding_option: Any = "zero",
    _semantic: Semantic = None,  # type: ignore[assignment]
) -> tensor_descriptor:
    """A descriptor of the strided tensor at `base` (module docstring)."""
    base = _u(base)
    if not isinstance(base, tensor) or not base.type.scalar.is_ptr() or base.type.is_block():
        raise CompilationError(
            "make_tensor_descriptor takes a scalar pointer as its base",
            hint="pass the tensor's pointer argument (plus an offset) as `base`",
        )
    shape, strides = list(_u(shape)), list(_u(strides))
    block_shape = [_u(b) for b in _u(block_shape)]
    if not (len(shape) == len(strides) == len(block_shape)) or not block_shape:
        raise CompilationError(
            "make_tensor_descriptor: shape, strides and block_shape need one entry per dimension",
            hint="for a 2-D tensor: shape=[M, N], strides=[stride_m, 1], block_shape=[BM, BN]",
        )
    for b in block_shape:
        if not isinstance(b, int) or b <= 0 or b & (b - 1):
            raise CompilationError(
                f"make_tensor_descriptor: block_shape entries must be compile-time powers of two, not {b!r}",
                hint="use tl.constexpr block sizes such as 16, 32, 64",
            )
    _check_last_dimension_bytes(base.type.scalar.element_ty, block_shape[-1])
    padding = _u(padding_option)
    if padding not in _PADDINGS:
        raise CompilationError(
            f"padding_option must be one of {_PADDINGS}, not {padding!r}",
            hint="out-of-bounds elements of a load read as zero or NaN",
        )
    return tensor_descriptor(base, shape, strides, block_shape, padding)


def _check_last_dimension_bytes(element: Any, last: int) -> None:
    """Triton's rule for descriptors made in a kernel, in its words: a block's rows hold at least
    16 bytes (what NVIDIA's TMA unit moves at least). Loads here have no such limit, but a kernel
    this package accepts should compile on Triton too."""
    size = element.primitive_bitwidth // 8
    if last * size < 16:
        raise error(
            "Descriptor block shape must have at least 16 bytes in the last dimension, "
            f"but got {last} * {size} = {last * size} bytes",
            hint=f"make the block's last dimension at least {16 // max(size, 1)} elements",
        )


@builtin
def load_tensor_descriptor(desc: tensor_descriptor, offsets: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    """`desc.load(offsets)`."""
    return desc.load(offsets, _semantic=_semantic)


@builtin
def store_tensor_descriptor(desc: tensor_descriptor, offsets: Any, value: Any, _semantic: Semantic = None) -> None:  # type: ignore[assignment]
    """`desc.store(offsets, value)`."""
    desc.store(offsets, value, _semantic=_semantic)
