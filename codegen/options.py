"""Options of the code generator (what the runtime's launch options turn into)."""

from __future__ import annotations

from dataclasses import dataclass

from .target import DEFAULT_TARGET, Target

MATH_MODES = ("safe", "relaxed", "fast")
DOT_PATHS = ("cost", "tensor_ops")


@dataclass(frozen=True)
class CodegenOptions:
    num_warps: int = 4
    """A program is one threadgroup of 32 * num_warps threads (1 to 32 warps, a power of two)."""
    math_mode: str = "safe"
    """"safe": `metal::precise::` transcendental functions; "relaxed": the default `metal::`
    functions; "fast": `metal::fast::`."""
    debug: bool = False
    """The launch's debug flag (part of the specialization). `tl.device_print` and
    `tl.device_assert` are elided on Metal either way (docs/codegen.md)."""
    index_bits: int = 32
    """64: pointer offsets computed in `long` (arrays past 2**31 elements)."""
    target: Target = DEFAULT_TARGET
    """The GPU family and MSL version compiled for (`codegen/target.py`)."""
    kernel_name: str | None = None
    """Overrides the module's function name in the MSLKernel name."""
    spread_programs: bool = False
    """Program ids count threadgroups over the whole launch grid (x fastest, then y, z) and the
    kernel's grid arrives in the extra last input `km_grid` (int32, shape (3,)): the runtime
    may then launch any grid of at least that many threadgroups (grids whose x extent times the
    threadgroup size passes 2**32 threads). Off: program id a is the threadgroup position along a."""

    written_masks: tuple[str, ...] = ()
    """Output names (`<param>_out`) whose stores also set a bool output `<param>_written` at
    every element they write: the one-run merge of outputs not proven covered
    (docs/runtime.md, "The written mask")."""
    unwritten_masks: bool = False
    """The masks start true and stores clear them, so each marks where the kernel did not write:
    for a launch whose `init_value` (one value for every output) is an atomic identity other
    than 0, which a bool output takes as true."""
    relative_outputs: tuple[str, ...] = ()
    """Output names whose parameter must start as the array's contents (atomics that read them,
    arrays read and written under a lock): they start at zero and hold each element relative to
    the array's old values, passed as the extra input `<param>_old` (`kernel.relative_encoding`;
    docs/runtime.md, "Exact in-place memory")."""
    marked_outputs: tuple[str, ...] = ()
    """Those of `relative_outputs` held with the "mark" encoding (`kernel.marks_untouched`):
    each element is its own value, or the untouched mark until its first atomic add."""
    keyed_outputs: tuple[str, ...] = ()
    """Those of `relative_outputs` held with the "key" encoding (`kernel.keeps_key`): each
    element is its value xor a fixed key, beside a uint8 output of escape bytes
    (`kernel.escape_output_name`)."""
    dot_path: str = "cost"
    """On targets with tensor ops: "cost", a single tensor-op dot (no K loop carries its
    accumulator) takes tensor ops only where its K step's barriers and threadgroup bytes are no
    worse than on simdgroup matrices (docs/dot.md, "Which path, by cost"); "tensor_ops", every
    dot they apply to takes them (internal: the tests of the single form). Not a launch option."""

    def __post_init__(self) -> None:
        if self.num_warps not in (1, 2, 4, 8, 16, 32):
            raise ValueError(f"num_warps must be a power of two from 1 to 32, got {self.num_warps}")
        if self.math_mode not in MATH_MODES:
            raise ValueError(f"math_mode must be one of {MATH_MODES}, got {self.math_mode!r}")
        if self.dot_path not in DOT_PATHS:
            raise ValueError(f"dot_path must be one of {DOT_PATHS}, got {self.dot_path!r}")
        if self.index_bits not in (32, 64):
            raise ValueError(f"index_bits must be 32 or 64, got {self.index_bits}")

    @property
    def threads_per_program(self) -> int:
        return 32 * self.num_warps
