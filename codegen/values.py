"""What an IR value becomes in the per-thread program.

* `RegValue`: a scalar (one register, no distribution, the same in every thread) or a tensor
  (one expression per register of this thread, placed by its layout's `Distribution`).
* `PtrValue`: a pointer or a tensor of pointers, kept as a buffer plus per-register element
  offsets. Buffers are kernel parameters; keeping the base apart lets loads read the parameter's
  input and stores write its output, and sidesteps MSL's address-space rules for pointer
  temporaries (inputs under 8 elements arrive as `constant`).
"""

from __future__ import annotations

from dataclasses import dataclass

from triton_metal.ir.types import ScalarType, Type

from .distribution import Distribution
from .kernel import escape_output_name
from .program import Expr


@dataclass(frozen=True)
class Buffer:
    """A pointer parameter of the kernel as the body sees it."""

    param: str
    pointee: ScalarType
    input_name: str | None
    """The metal_kernel input read by loads (None: never read)."""
    output_name: str | None
    """The metal_kernel output written by stores and atomics (None: never written)."""
    aligned16: bool = False
    """The parameter's address is a multiple of 16 bytes (`tt.divisibility = 16`)."""
    written_name: str | None = None
    """The bool output every store also sets where it writes (`CodegenOptions.written_masks`)."""
    old_name: str | None = None
    """The input holding the array's contents, for an output kept relative to them
    (`CodegenOptions.relative_outputs`)."""
    relative: str = ""
    """"key", "xor" or "sub" for such an output (`kernel.relative_encoding`), "mark" for one held
    with the untouched mark (`kernel.marks_untouched`), else ""."""
    shared: bool = False
    """Other programs of the launch may write what its loads read (an atomically updated or
    live parameter, `params.ParamUse.live`): its loads and stores are relaxed atomic accesses,
    which are coherent across the device where plain ones are only coherent within a
    threadgroup (docs/codegen.md, "Memory order between programs")."""
    view: ScalarType | None = None
    """The element type a reinterpreted pointer sees the buffer as (`ptr.to(tl.pointer_type(T))`,
    `lower_pointer_view`); its offsets count elements of that type. None: the parameter's own."""

    @property
    def escape_name(self) -> str | None:
        """The uint8 output of a "key" output whose bytes mark the elements a store set to the
        key itself (`kernel.escape_output_name`); None for any other buffer."""
        if self.relative != "key" or self.output_name is None:
            return None
        return escape_output_name(self.output_name)


@dataclass(frozen=True)
class RegValue:
    type: Type
    regs: tuple[Expr, ...]
    dist: Distribution | None
    """None for scalars."""

    @property
    def is_scalar(self) -> bool:
        return self.dist is None


@dataclass(frozen=True)
class PtrValue:
    type: Type
    buffer: Buffer
    offsets: tuple[Expr, ...]
    offset_ctype: str
    """"int" or "long" (64-bit indexing)."""
    dist: Distribution | None

    @property
    def is_scalar(self) -> bool:
        return self.dist is None


@dataclass(frozen=True)
class CoopValue:
    """A dot accumulator that a K loop carries as a Metal 4 tensor op's destination cooperative
    tensor (`lower_tensor_dot_loop.py`): the variable `name` exists from the loop's entry to its
    exit, where registers in `dist` (the accumulator's layout) take its elements again. Only the
    tensor-op dot that accumulates into it uses it."""

    type: Type
    name: str
    dist: Distribution


Val = RegValue | PtrValue | CoopValue
