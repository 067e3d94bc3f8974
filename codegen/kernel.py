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
  kernel keeps each element relative to them (`relative_encoding`, or "mark" for the outputs
  of `CodegenOptions.marked_outputs`, "key" for those of `CodegenOptions.keyed_outputs`, each
  with one more uint8 output of escape bytes named in `metadata["escape_outputs"]`, after the
  written masks); the launch decodes the result with one op (a few for a key).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

PARAM_KINDS = ("pointer_in", "pointer_out", "pointer_inout", "pointer_atomic", "scalar", "constexpr")


_NATIVE_ON_SUB = frozenset({"cas", "xchg", "add"})
_RELATIVE_TYPES = ("int32_t", "uint32_t", "float", "float16_t", "bfloat16_t")
"""Element types whose atomics an output kept relative to its contents carries (the atomic
types); any type may be kept relative when the kernel only loads and stores it."""


def relative_encoding(dtype: str, kinds: Iterable[str]) -> str | None:
    """How an output can start at zero while it stands for its array's contents, given its MLX
    type string and the atomic operations the kernel applies to it.

    The kernel then holds each element relative to the array's old value `o`: "xor" keeps the
    bitwise difference `v ^ o`, "sub" the wrapping difference `v - o` of a 32-bit integer. Both
    are bijections of the element's bits, so loads (which decode) and stores (which encode) see
    the array exactly, every bit pattern included, and compare-and-swap and exchange carry their
    encoded operands; "sub" also carries atomic adds as they are, so it is chosen for 32-bit
    integers whose atomics are adds (a ticket counter). Every other read-modify-write runs as a
    compare-and-swap loop on the held difference (templates/helpers/relative_atomics.metal).
    None where no atomic of the type exists (64-bit atomics; bools are stored only). An output
    only loaded and stored may be held with the key instead (`keeps_key`)."""
    kinds = set(kinds)
    if kinds and dtype not in _RELATIVE_TYPES:
        return None
    if "add" in kinds and kinds <= _NATIVE_ON_SUB and dtype in ("int32_t", "uint32_t"):
        return "sub"
    return "xor"


def keeps_key(dtype: str, kinds: Iterable[str], polled: bool) -> bool:
    """Whether an output kept relative can be held with the "key" encoding: an array of 16- or
    32-bit elements that the kernel only loads and stores (no atomic, no poll, which compares
    the held bits themselves). Each element then holds `v ^ K` (`KEY_BITS`), so a store writes
    and a load reads without the old value; 0 stands for "the old value", unless the element's
    byte in the escape output (`escape_output_name`) says a store wrote K itself. Loads read the
    old value and the escape byte only where they find 0 (templates/helpers/
    relative_contents.metal; docs/runtime.md, "Exact in-place memory"). The runtime holds an
    array with the key where programs that wait for each other exchange it, so its accesses
    are scalar atomic ones (`Buffer.shared`)."""
    return dtype in _KEY_TYPES and not set(kinds) and not polled


KEY_BITS = {32: 0x7FD5A5A5, 16: 0x7FD5}
"""The key K of a "key" output, by element width: a quiet NaN of the float type of that width
(float32's is `UNTOUCHED_BITS`; 0x7FD5 is one in half and in bfloat), so that a value with
its bits is rare, though any value is kept exactly."""
_KEY_TYPES = ("float", "int32_t", "uint32_t", "float16_t", "bfloat16_t", "int16_t", "uint16_t")


def escape_output_name(output: str) -> str:
    """`x_out` -> `x_esc`: the uint8 output of a "key" output whose byte i is set where a store
    wrote the key's bits themselves at element i."""
    return output.removesuffix("_out") + "_esc"


def escape_bytes(size: int) -> int:
    """The bytes of an escape output for an array of `size` elements: whole 32-bit words, which
    the kernel's atomics update (one at least)."""
    return max(4, (size + 3) // 4 * 4)


UNTOUCHED_BITS = 0x7FD5A5A5
"""The float32 bits a "mark" output starts at (`init_value`): a quiet NaN whose payload no
float operation makes from operands without it, standing for "still the array's old value".
Quiet, so that it survives the float64 `init_value` on its way to the output."""


def marks_untouched(dtype: str, kinds: Iterable[str], loaded: bool, stored: bool) -> bool:
    """Whether an output can be held with the "mark" encoding: float32 updated by atomic adds
    only (their results may be used), neither loaded nor stored. The output then holds each
    element's own value, or `UNTOUCHED_BITS` until the first add, which a compare-and-swap
    applies to the old value; every later add is the hardware's atomic add, as in place
    (templates/helpers/relative_atomics.metal; docs/runtime.md, "Exact in-place memory")."""
    return dtype == "float" and set(kinds) == {"add"} and not loaded and not stored


def native_on(encoding: str, kind: str) -> bool:
    """Whether atomic `kind` runs as the hardware atomic on an output held with `encoding`
    (its operands encoded, its result decoded), rather than as a compare-and-swap loop."""
    return kind in ("cas", "xchg") or (encoding == "sub" and kind == "add")


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
