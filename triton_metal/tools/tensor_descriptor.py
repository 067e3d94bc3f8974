"""`TensorDescriptor`: a tensor descriptor made on the host and passed to a kernel.

    from triton.tools.tensor_descriptor import TensorDescriptor   # under install_as_triton()

    desc = TensorDescriptor.from_tensor(x, block_shape=[32, 64])   # or TensorDescriptor(x, shape, strides, block_shape)
    kernel[grid](desc, ...)                  # in the kernel: desc.load([m0, n0]), desc.store(...)

In the kernel the parameter is a `tl.tensor_descriptor` with the host descriptor's shape,
strides, block shape and padding: the same object `tl.make_tensor_descriptor` makes
(language/descriptor.py), so loads and stores mean the same on every backend. At launch the
descriptor travels as its base array, one integer per dimension for the shape and one for the
strides (specialized as integer arguments are: a stride of 1 is a compile-time 1), while the
block shape, the element type and the padding select the compiled variant. The block shape may
be changed between launches (`desc.block_shape = [BM, BN]`, as autotuning pre-hooks do).

The base is a torch tensor, a NumPy array or an MLX array. The checks are Triton's, so code
that runs here runs on Triton too: rank 1 to 5, block sizes powers of two, the base 16-byte
aligned, every stride but the last a multiple of 16 bytes, the last stride 1, padding `"zero"`
or `"nan"` (`"nan"` for floating-point elements only). Apple GPUs have no TMA unit that needs
them; the loads and stores are ordinary masked ones (language/descriptor.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..runtime.arrays import ArrayAdapter, adapter_of

MAX_RANK = 5
"""Triton's limit on a descriptor's rank."""
MAX_BLOCK_ELEMENTS = 1 << 20
"""Triton's limit on the elements of a block (`TRITON_MAX_TENSOR_NUMEL`)."""


@dataclass
class TensorDescriptor:
    """A block view of a strided tensor, passed to a kernel as a `tl.tensor_descriptor`."""

    base: Any
    shape: list[int]
    strides: list[int]
    block_shape: list[int]
    padding: str = "zero"

    def __post_init__(self) -> None:
        self.shape = [int(s) for s in self.shape]
        self.strides = [int(s) for s in self.strides]
        self.block_shape = list(self.block_shape)
        rank = len(self.shape)
        if len(self.strides) != rank or len(self.block_shape) != rank:
            raise ValueError(f"rank mismatch: {self}")
        if not 0 < rank <= MAX_RANK:
            raise ValueError(f"a tensor descriptor has 1 to {MAX_RANK} dimensions, not {rank}")
        if base_address(self.base) % 16:
            raise ValueError("base must be 16-byte aligned")
        check_block_shape(self.block_shape)
        item = element_size(self.base)
        if any(stride * item % 16 for stride in self.strides[:-1]):
            raise ValueError(f"strides must be 16-byte aligned (strides {self.strides} of {item}-byte elements)")
        if self.strides[-1] != 1:
            raise ValueError("Last dimension must be contiguous")
        if self.padding not in ("zero", "nan"):
            raise ValueError(f"Illegal value for padding: {self.padding!r} (\"zero\" or \"nan\")")
        if self.padding == "nan" and not is_floating(self.base):
            raise ValueError("Padding option `nan` is only supported for floating point tensors")

    @staticmethod
    def from_tensor(tensor: Any, block_shape: list[int], padding: str = "zero") -> TensorDescriptor:
        """The descriptor of all of `tensor` (its own shape and strides)."""
        return TensorDescriptor(tensor, list(tensor.shape), element_strides(tensor), block_shape, padding)


def check_block_shape(block_shape: list[Any]) -> None:
    """Triton's rule: every block size a power of two, at most 2**20 elements in all."""
    elements = 1
    for size in block_shape:
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0 or size & (size - 1):
            raise ValueError(f"block shape {block_shape}: every size must be a power of two, not {size!r}")
        elements *= size
    if elements > MAX_BLOCK_ELEMENTS:
        raise ValueError(f"block shape {block_shape} has {elements} elements, more than {MAX_BLOCK_ELEMENTS}")


def element_strides(array: Any) -> list[int]:
    """Strides in elements: torch's `stride()`, NumPy's byte strides divided by the element
    size, or the row-major strides of an MLX array (MLX hands kernels row-major copies); the
    array's adapter knows which (`runtime/arrays/`)."""
    return _adapter(array).element_strides(array)


def base_address(array: Any) -> int:
    """The address of the first element (0 for an MLX array, whose buffers Metal allocates
    aligned and which kernels receive as whole arrays)."""
    return _adapter(array).base_address(array)


def _adapter(array: Any) -> ArrayAdapter:
    adapter = adapter_of(array)
    if adapter is None:
        raise TypeError(f"a tensor descriptor's base is an array or a tensor, not {type(array).__name__}")
    return adapter


def element_size(array: Any) -> int:
    dt = array.dtype
    size = getattr(dt, "itemsize", None) or getattr(dt, "size", None)
    if not isinstance(size, int):
        raise TypeError(f"a tensor descriptor's base is an array or a tensor, not {type(array).__name__}")
    return size


def is_floating(array: Any) -> bool:
    dt = array.dtype
    flag = getattr(dt, "is_floating_point", None)  # torch
    if isinstance(flag, bool):
        return flag
    if callable(getattr(dt, "is_floating", None)):  # a tl dtype (a reinterpreted array)
        return bool(dt.is_floating())
    name = str(dt).rsplit(".", 1)[-1]
    return name.startswith(("float", "bfloat"))
