"""`triton.set_allocator` and `triton.runtime._allocation`: Triton's hook for the global scratch
memory some kernels need at launch (on NVIDIA GPUs, device-built tensor descriptors and
profiling buffers).

No kernel compiled here asks for such memory: a descriptor made in a kernel
(`tl.make_tensor_descriptor`) lives in the kernel's registers. The allocator is recorded (per
context, as in Triton) so that code written for Triton, which sets one before launching such
kernels, runs unchanged; `allocator()` returns it.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Protocol


class Allocator(Protocol):
    def __call__(self, size: int, alignment: int, stream: int | None) -> Any: ...


class NullAllocator:
    """The allocator before any is set: a kernel needing scratch memory would be refused."""

    def __call__(self, size: int, alignment: int, stream: int | None) -> Any:
        raise RuntimeError(
            "Kernel requires a runtime memory allocation, but no allocator was set. "
            "Use triton.set_allocator to specify an allocator."
        )


_NULL_ALLOCATOR = NullAllocator()
_allocator: ContextVar[Any] = ContextVar("_allocator", default=_NULL_ALLOCATOR)


def set_allocator(allocator: Allocator | None) -> None:
    """Set the scratch allocator (`None` restores the null allocator); see the module docstring."""
    _allocator.set(_NULL_ALLOCATOR if allocator is None else allocator)


def allocator() -> Allocator:
    """The allocator set in this context."""
    return _allocator.get()
