"""Tensor descriptors made in the kernel: `tl.make_tensor_descriptor` and its block loads/stores.

On NVIDIA GPUs a descriptor drives the TMA unit; Apple GPUs have none, so a descriptor here is
what it means, built from `tl` operations the compiler and the interpreter already share:

    desc = tl.make_tensor_descriptor(base, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    tile = desc.load([m0, n0])            # tl.load_tensor_descriptor(desc, [m0, n0])
    desc.store([m0, n0], tile * 2)         # tl.store_tensor_descriptor(desc, [m0, n0], value)

A load gives the `block_shape` block whose first element is at `offsets`, reading
`base + sum(offsets[d] + i_d) * strides[d]`; elements outside `[0, shape[d])` in any dimension
read as zero (`padding_option="zero"`, Triton's default) or NaN (`"nan"`). A store writes only
the elements inside the shape. `block_shape` is compile-time; `shape`, `strides` and `offsets`
may be run-time values. Unlike TMA, no alignment or contiguity is required of the strides.

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
from .shape_ops import arange, expand_dims

_PADDINGS = ("zero", "nan")


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

    def _pointers(self, offsets: Any, sem: Semantic) -> tuple[tensor, tensor]:
        offsets = list(_u(offsets))
        rank = len(self.block_shape)
        if len(offsets) != rank:
            raise CompilationError(
                f"the descriptor has {rank} dimensions but {len(offsets)} offsets were given",
                hint="give one offset per dimension: desc.load([m0, n0])",
            )
        ptrs: Any = self.base
        mask: Any = None
        for d, (block, offset) in enumerate(zip(self.block_shape, offsets)):
            pos = arange(0, block, _semantic=sem)
            for axis in range(rank):
                if axis != d:
                    pos = expand_dims(pos, axis, _semantic=sem)
            pos = sem.add(pos, _u(offset))
            ptrs = sem.add(ptrs, sem.mul(pos, _u(self.strides[d])))
            inside = sem.and_(
                sem.greater_equal(pos, 0), sem.less_than(pos, _u(self.shape[d]))
            )
            mask = inside if mask is None else sem.and_(mask, inside)
        return ptrs, mask

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
    padding = _u(padding_option)
    if padding not in _PADDINGS:
        raise CompilationError(
            f"padding_option must be one of {_PADDINGS}, not {padding!r}",
            hint="out-of-bounds elements of a load read as zero or NaN",
        )
    return tensor_descriptor(base, shape, strides, block_shape, padding)


@builtin
def load_tensor_descriptor(desc: tensor_descriptor, offsets: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    """`desc.load(offsets)`."""
    return desc.load(offsets, _semantic=_semantic)


@builtin
def store_tensor_descriptor(desc: tensor_descriptor, offsets: Any, value: Any, _semantic: Semantic = None) -> None:  # type: ignore[assignment]
    """`desc.store(offsets, value)`."""
    desc.store(offsets, value, _semantic=_semantic)
