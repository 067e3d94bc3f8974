"""The compiled-kernel record: what the code generator hands the runtime.

An `MSLKernel` is everything a backend needs to build one `mx.fast.metal_kernel` (or the
emulator's twin) and to bind a launch's arguments onto it: the body and header text, the input
and output names in order, how each kernel parameter maps onto them, the threadgroup size and
what the compiler proved about which output elements a launch writes.

Contract:
* `source` is a `metal_kernel(source=...)` body: pure ASCII, references
  `thread_position_in_grid`, names no local after an MLX attribute or `<input>_shape/_strides/
  _ndim`, reads runtime scalars from 0-d inputs (`const constant T&`).
* A pointer parameter feeds one input (`<param>_in`) when it is read and one output
  (`<param>_out`) when it is written. Loads read the input (the contents before the launch),
  stores and atomics write the output, which metal_kernel allocates fresh: elements the launch
  does not write must come from the old array (host-side merge, or `init_value` for atomics).
* `stored_coverage` lists, per output, the condition under which the launch writes every element
  of the output; an output absent from it (or with `proven=False`) must be merged by the host.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

PARAM_KINDS = ("pointer_in", "pointer_out", "pointer_inout", "pointer_atomic", "scalar", "constexpr")


@dataclass(frozen=True)
class ParamBinding:
    """How one kernel parameter reaches the MSL body."""

    name: str
    """The kernel parameter's name."""
    kind: str
    """One of `PARAM_KINDS`: "pointer_in" (only read), "pointer_out" (stored to, never read),
    "pointer_inout" (read and stored), "pointer_atomic" (updated atomically), "scalar" (a
    runtime value passed as a 0-d input), "constexpr" (baked into the text, feeds nothing)."""
    msl_inputs: tuple[str, ...]
    """Names of the metal_kernel inputs this parameter feeds (in `MSLKernel.input_names`)."""
    msl_outputs: tuple[str, ...]
    """Names of the metal_kernel outputs it receives (in `MSLKernel.output_names`)."""
    dtype: str
    """MLX/MSL element type string ("float", "half", "bfloat16_t", "int32_t", ...); for a
    scalar the type of its 0-d input; "" for a constexpr."""

    def __post_init__(self) -> None:
        if self.kind not in PARAM_KINDS:
            raise ValueError(f"unknown parameter kind '{self.kind}' (expected one of {PARAM_KINDS})")


@dataclass(frozen=True)
class CoveredDim:
    """One dimension of a proven store pattern: indices `i < bound` along it are written when
    `grid[grid_axis] * block >= bound` (`block >= bound` when `grid_axis` is -1: an index
    vector that does not depend on the program); each index contributes `i * stride` to the
    flat element index."""

    grid_axis: int
    block: int
    bound_param: str | None = None
    """The runtime scalar parameter bounding the index (the mask `offs < bound`)."""
    bound_value: int | None = None
    """A constant bound; both None: unmasked, bounded by `grid[grid_axis] * block` itself."""
    stride_param: str | None = None
    """The runtime scalar parameter giving the stride, or None for the constant `stride_value`."""
    stride_value: int = 1


@dataclass(frozen=True)
class OutputCoverage:
    """Which elements of one output a launch writes, as far as the compiler can prove.

    With `proven`, every flat element index `i < bound` of the output is stored by the launch
    provided `grid[grid_axis] * block >= bound`, where `bound` is the runtime scalar parameter
    `bound_param`, or the constant `bound_value`, or (both None: an unmasked store) the launch's
    own `grid[grid_axis] * block`. The runtime must also check `bound >= output.size` (the
    array's element count, contiguous row-major) before skipping the merge of the old contents."""

    output: str
    """The metal_kernel output name."""
    proven: bool
    grid_axis: int = 0
    block: int = 0
    """Elements each program covers along the flat index."""
    bound_param: str | None = None
    bound_value: int | None = None
    reason: str = ""
    """Why coverage could not be proven (for the debug log) when `proven` is False."""
    tile: tuple[CoveredDim, ...] = ()
    """The general form of the proof, for 1-D and multi-dimensional tiles: every flat index
    `sum(i_d * stride_d)` with `i_d < bound_d` for all d is written when every dim's grid
    condition holds. The output is fully written when, in addition, the strides are the
    row-major strides of the bounds (innermost 1) and the bounds' product equals the array's
    size. For 1-D proofs the fields above say the same (`proven`); a multi-dimensional proof has
    `proven=False` there (the 1-D reading does not apply) and this field set."""


@dataclass(frozen=True)
class MSLKernel:
    """One compiled specialization, ready for `metal_kernel(...)`."""

    name: str
    """Sanitized kernel name + "_" + a short hash of the MSL."""
    source: str
    """The body for metal_kernel(source=...)."""
    header: str
    """Helpers placed before the kernel (metal_kernel(header=...))."""
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    params: tuple[ParamBinding, ...]
    threads_per_program: int
    """32 * num_warps: the threadgroup is (threads_per_program, 1, 1)."""
    atomic_outputs: bool
    """metal_kernel(atomic_outputs=...): outputs are declared `device atomic<T>*`."""
    stored_coverage: tuple[OutputCoverage, ...] = ()
    metadata: Mapping[str, object] = field(default_factory=dict)
    """threadgroup_memory_bytes, num_warps, math_mode, index_bits, ... (for logs and dumps)."""

    def param(self, name: str) -> ParamBinding:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def coverage(self, output: str) -> OutputCoverage | None:
        for c in self.stored_coverage:
            if c.output == output:
                return c
        return None
