"""How a launch's bound values map onto a compiled kernel's inputs and outputs.

`LaunchPlan.of(msl, arg_names)` is computed once per compiled variant from the `MSLKernel`'s
parameter bindings: for every metal_kernel input, in order, which argument feeds it and how
(an array, a runtime scalar of a given type, or the grid input of a kernel compiled with
`spread_programs`); for every output, which argument receives it. Backends walk these tuples on
each launch, so the hot path does no name lookups.

`check_buffer_limit(msl, kernel, where)` is the one check of Metal's limit of 31 buffers per
kernel: `runtime.launch.compile_variant` runs it on every compiled variant (so every backend,
the interpreter included, refuses the same kernels with the same error before anything runs),
and `runtime.launch` on the twin (written masks, outputs kept relative to their arrays) when a
launch first needs it. The count is what `metal_kernel` binds (`buffer_count`): one buffer per input (each array the
kernel reads, each runtime scalar, the grid input of a spread variant) and one per output (each
array it stores to or updates atomically, each written mask of the twin, the device-assert
status of a debug build, or the placeholder output of a kernel that writes nothing), and for the
twin the old contents of each output it keeps relative to its array (one input each).

`launch_dims(grid, threads, spread)` is the metal_kernel `grid`/`threadgroup` of a launch: MLX
counts the grid in threads, `(gx * T, gy, gz)` with threadgroup `(T, 1, 1)`; with `spread` the
programs are numbered over a launch grid whose every dimension stays below 2**31 threads (the
kernel reads its logical grid from the extra input).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from triton_metal.errors import BufferLimitError, LaunchError

LAUNCH_DIM_LIMIT = 2**31 - 1
"""MLX passes grid and threadgroup sizes as C `int`s."""

SCALAR_NUMPY = {
    "bool": np.bool_, "int8_t": np.int8, "int16_t": np.int16, "int32_t": np.int32,
    "int64_t": np.int64, "uint8_t": np.uint8, "uint16_t": np.uint16, "uint32_t": np.uint32,
    "uint64_t": np.uint64, "float": np.float32, "float16_t": np.float16,
}


@dataclass(frozen=True)
class InputSlot:
    name: str
    role: str
    """"array", "scalar" or "grid"."""
    arg: int
    """Index of the feeding argument (-1 for the grid input)."""
    dtype: str
    """MSL/MLX type string."""
    vector: bool
    """Read through vector loads: must arrive in device memory (8 elements or more)."""


@dataclass(frozen=True)
class OutputSlot:
    name: str
    arg: int
    param: str
    kind: str
    """The parameter's kind ("pointer_out", "pointer_inout", "pointer_atomic"), or "unused" for
    the one-element int32 output of a kernel that stores to no array (`arg` -1: no parameter
    receives it, the launch allocates and drops it)."""
    dtype: str




@dataclass(frozen=True)
class LaunchPlan:
    inputs: tuple[InputSlot, ...]
    outputs: tuple[OutputSlot, ...]
    threads: int
    spread: bool

    @property
    def word_atomic_args(self) -> tuple[int, ...]:
        """Arguments with float16/bfloat16 atomics, which update the aligned 32-bit word holding
        each element (so the buffer must start on a word and hold whole words)."""
        return tuple(o.arg for o in self.outputs
                     if o.kind == "pointer_atomic" and o.dtype in ("float16_t", "bfloat16_t") and o.arg >= 0)

    @classmethod
    def of(cls, msl: object, arg_names: Sequence[str]) -> LaunchPlan:
        index = {name: i for i, name in enumerate(arg_names)}
        metadata = getattr(msl, "metadata", {})
        vector = set(metadata.get("vector_inputs", ()) or ())
        grid_input = metadata.get("grid_input")
        feeds: dict[str, InputSlot] = {}
        outputs: list[OutputSlot] = []
        for p in msl.params:  # type: ignore[attr-defined]
            if p.kind == "constexpr":
                continue
            if p.name not in index:
                raise LaunchError(f"compiled kernel parameter '{p.name}' is not a parameter of the kernel")
            role = "scalar" if p.kind == "scalar" else "array"
            for n in p.msl_inputs:
                feeds[n] = InputSlot(n, role, index[p.name], p.dtype, n in vector or p.name in vector)
            for n in p.msl_outputs:
                outputs.append(OutputSlot(n, index[p.name], p.name, p.kind, p.dtype))
        inputs: list[InputSlot] = []
        for n in msl.input_names:  # type: ignore[attr-defined]
            if n == grid_input:
                inputs.append(InputSlot(n, "grid", -1, "int32_t", False))
            elif n in feeds:
                inputs.append(feeds[n])
            else:
                raise LaunchError(f"compiled kernel input '{n}' is fed by no parameter")
        # the device-assert status output is the launchers' own (runtime/device_asserts.py)
        fed = {o.name for o in outputs} | {msl.metadata.get("assert_output")}  # type: ignore[attr-defined]
        for n in msl.output_names:  # type: ignore[attr-defined]
            if n not in fed:
                outputs.append(OutputSlot(n, -1, "", "unused", "int32_t"))
        order = {n: k for k, n in enumerate(msl.output_names)}  # type: ignore[attr-defined]
        outputs.sort(key=lambda o: order[o.name])
        return cls(tuple(inputs), tuple(outputs), int(msl.threads_per_program), bool(grid_input))  # type: ignore[attr-defined]


MAX_BUFFERS = 31
"""Buffer arguments a Metal kernel may take (its argument table's buffer entries)."""


@dataclass(frozen=True)
class BufferCount:
    """The buffers `metal_kernel` binds for one compiled variant, by what they hold."""

    read: int
    """Arrays the kernel reads (one input each)."""
    scalars: int
    """Runtime scalars (a 0-d input each)."""
    grid: int
    """The grid input of a variant compiled with program spreading (0 or 1)."""
    contents: int
    """Old contents of the twin's outputs kept relative to their arrays (one input each)."""
    written: int
    """Arrays the kernel stores to or updates atomically (one output each)."""
    masks: int
    """Written masks of the twin variant (one bool output per merged output)."""
    escapes: int
    """Escape bytes of the twin's outputs held with the key (one uint8 output each)."""
    status: int
    """The device-assert status output of a debug build (0 or 1)."""
    placeholder: int
    """The one-element output of a kernel that writes nothing (metal_kernel needs an output)."""

    @property
    def total(self) -> int:
        return (self.read + self.scalars + self.grid + self.contents + self.written + self.masks + self.escapes
                + self.status + self.placeholder)


    def describe(self) -> str:
        parts = [
            (self.read, "array read", "arrays read"),
            (self.written, "array written", "arrays written"),
            (self.scalars, "scalar", "scalars"),
            (self.grid, "grid input of a spread launch", ""),
            (self.contents, "array's old contents", "arrays' old contents"),
            (self.masks, "written mask", "written masks"),
            (self.escapes, "output of escape bytes", "outputs of escape bytes"),
            (self.status, "device-assert status", ""),
            (self.placeholder, "placeholder output", ""),
        ]
        return ", ".join(f"{n} {one if n == 1 else many}" for n, one, many in parts if n)


def buffer_count(msl: object) -> BufferCount:
    """What `metal_kernel` binds for `msl` (an `MSLKernel`): its inputs and outputs, in full."""
    metadata = getattr(msl, "metadata", {}) or {}
    grid = 1 if metadata.get("grid_input") else 0
    status = 1 if metadata.get("assert_output") else 0
    masks = len(metadata.get("written_masks") or ())
    escapes = len(metadata.get("escape_outputs") or ())
    # an output kept relative whose parameter is also read finds its old contents in its input
    contents = sum(1 for old, _ in (metadata.get("relative_outputs") or {}).values() if old.endswith("_old"))
    scalars = sum(len(p.msl_inputs) for p in msl.params if p.kind == "scalar")  # type: ignore[attr-defined]
    read = len(msl.input_names) - scalars - grid - contents  # type: ignore[attr-defined]
    outputs = len(msl.output_names)  # type: ignore[attr-defined]
    fed = sum(len(p.msl_outputs) for p in msl.params)  # type: ignore[attr-defined]
    return BufferCount(read, scalars, grid, contents, fed, masks, escapes, status,
                       outputs - fed - masks - escapes - status)


def check_buffer_limit(msl: object, kernel: str, where: str = "", twin_of: Sequence[str] = (),
                       plain: object = None) -> None:
    """Refuse a variant that binds more than `MAX_BUFFERS` buffers (module docstring); `where`
    is the kernel's definition (`file:line`); for a twin, `plain` is the variant it is the twin
    of and `twin_of` names the arguments whose written masks or old contents it adds."""
    count = buffer_count(msl)
    if count.total <= MAX_BUFFERS:
        return
    at = f" ({where})" if where else ""
    own = buffer_count(plain).total if plain is not None else count.total
    if own <= MAX_BUFFERS:
        hint = (
            f"the kernel itself takes {own} buffers; this launch of MLX arrays needs its twin, with "
            f"{count.total - own} more for {', '.join(repr(m) for m in twin_of)} (a written mask for an "
            "output whose stores are not proven to cover the whole array, the old contents of one "
            "that must start as its array): store to every element, pass NumPy or torch arrays "
            "(written in place: nothing added), or pass fewer arrays and scalars"
        )
    else:
        hint = ("pass fewer arrays and scalars: pack scalars into one array, or split the kernel "
                "in two")
    raise BufferLimitError(
        f"kernel '{kernel}'{at} takes {count.total} buffers ({count.describe()}), more than Metal's "
        f"limit of {MAX_BUFFERS} buffers per kernel\nhint: {hint}",
        count.total, MAX_BUFFERS,
    )


def launch_dims(
    grid: tuple[int, int, int], threads: int, spread: bool
) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(grid in threads, threadgroup) for metal_kernel (module docstring)."""
    gx, gy, gz = grid
    if not spread:
        if gx * threads > LAUNCH_DIM_LIMIT:
            raise LaunchError(
                f"grid {grid}: {gx} programs of {threads} threads pass the 2**31 threads a launch "
                "dimension holds; this variant was compiled without program spreading"
            )
        return (gx * threads, gy, gz), (threads, 1, 1)
    total = gx * gy * gz
    if total >= 2**32:
        raise LaunchError(
            f"grid {grid}: {total} programs in one launch; at most 2**32 - 1 can be numbered"
        )
    per_row = LAUNCH_DIM_LIMIT // threads
    x = min(total, per_row)
    rows = -(-total // x)
    y = min(rows, LAUNCH_DIM_LIMIT)
    z = -(-rows // y)
    return (x * threads, y, z), (threads, 1, 1)


def needs_spread(grid: tuple[int, int, int], threads: int) -> bool:
    return grid[0] * threads > LAUNCH_DIM_LIMIT
