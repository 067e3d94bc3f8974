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
* `stored_coverage` says, per output, whether a launch can be proven to write every element;
  `coverage_program` is what the runtime evaluates for that at each launch (docs/runtime.md,
  "Coverage"). An output not proven is merged by the host with a written mask.
* `metadata["written_masks"]`, in a variant compiled with written masks, maps outputs to the
  extra bool outputs the kernel sets wherever it stores.
* `metadata["relative_outputs"]`, in a variant compiled with relative outputs, maps each such
  output to `(old input, encoding)`: the output starts at zero, the launch passes the array's
  contents as the extra input (`<param>_old`, after every other input, in this order) and the
  kernel keeps each element relative to them (`relative_encoding`); the launch decodes the
  result with one bitwise or integer op.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

PARAM_KINDS = ("pointer_in", "pointer_out", "pointer_inout", "pointer_atomic", "scalar", "constexpr")


_RELATIVE_ATOMICS = frozenset({"cas", "xchg", "add"})
_WORD_TYPES = ("int32_t", "uint32_t", "float")


def relative_encoding(dtype: str, kinds: Iterable[str]) -> str | None:
    """How an output that must start as its array's contents (a lock, a counter, an array read
    and written under a lock) can start at zero instead, given its MLX type string and the
    atomic operations the kernel applies to it.

    The kernel then holds each element relative to the array's old value `o`: "xor" keeps the
    bitwise difference `v ^ o`, a bijection that preserves equality, so loads, stores, exchanges
    and compare-and-swaps see through it exactly; "sub" keeps the wrapping difference `v - o` of
    a 32-bit integer, which atomic adds also see through. None where neither is exact: atomic
    max, min, and, or, xor or float adds, 16-bit atomics (they update the 32-bit word holding
    the element) and bools (no arithmetic on their bits)."""
    kinds = set(kinds)
    if dtype == "bool" or not kinds <= _RELATIVE_ATOMICS:
        return None
    if kinds and dtype not in _WORD_TYPES:
        return None
    if "add" in kinds:
        return "sub" if dtype in ("int32_t", "uint32_t") else None
    return "xor"


def old_input_name(output: str) -> str:
    """The input holding an output's old contents (`<param>_old` beside `<param>_out`), for an
    output kept relative to them (`CodegenOptions.relative_outputs`)."""
    return output.removesuffix("_out") + "_old"


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
class OutputCoverage:
    """The static part of one output's coverage proof.

    `checkable`: the launch-time check (`runtime.coverage.check_coverage` on the kernel's
    `coverage_program`) may prove that a launch writes every element; each launch still asks it.
    Otherwise `reason` says why no launch can be proven (atomics, a lock, no store modelled)."""

    output: str
    """The metal_kernel output name."""
    checkable: bool
    reason: str = ""


@dataclass(frozen=True)
class CoverageProgram:
    """A kernel's stores as the program the launch-time coverage check runs
    (`passes.coverage_program` documents the statements)."""

    statements: tuple[Any, ...]
    left_out: tuple[tuple[str, str, str], ...] = ()
    """(output, store location, reason) of every store the program does not model."""
    index_bits: int = 32
    """Pointer offsets are `int` (32) or `long` (64) in the MSL."""


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
    coverage_program: CoverageProgram | None = None
    """The kernel's stores for the launch-time check (None: nothing to check)."""
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
