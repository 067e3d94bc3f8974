"""A Metal launch split into what repeats and what does not.

Launching the same kernel again with arrays of the same shapes on the same grid makes the same
`metal_kernel` call but for its inputs. The `LaunchRecipe` is that call without its inputs: the
launch grid and threadgroup, every output's shape and dtype, `init_value`, what happens to each
output afterwards (`OutputPlan`), the written masks and relative outputs of a twin. The driver
memoises it per launcher under `MetalLauncher._recipe_key`, so a repeated launch only gathers
its inputs (and the old contents a merge, combine or decode reads), calls the kernel and
rebinds its outputs (`PreparedLaunch` holds those per-launch parts).

A recipe depends on the launch's grid, on each output argument's type (NumPy buffer or MLX
array) and shape and on the runtime scalars the coverage proof reads: the key holds all of
them (each output's form but the coverage verdicts, and its starting value, is fixed per
launcher: no array's contents are read). Everything else it reads is fixed per launcher (the compiled variant and its
plan); in particular an argument's dtype is part of the variant's specialization, so an output
array's dtype is checked once, when its recipe is made.

Scalar inputs are typed 0-d arrays (`mx.array(v, dtype)`); `ScalarArrays` and `LaunchInputs`
keep the arrays of recent values, which is safe because an MLX array is an immutable value that
the driver never rebinds (only output arguments are rebound), and the memo's own reference
keeps MLX from donating such an array's buffer to an op's output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from triton_metal.runtime.arrays.mlx import ARRAY_TYPE as MLX_ARRAY
from triton_metal.runtime.picker import picker

from .plan import InputSlot, OutputSlot

_FLOAT_TYPES = ("float", "float16_t", "bfloat16_t")

RECIPE_LIMIT = 256
"""Recipes kept per launcher; the memo starts over when full (a grid or shape that changes on
every launch must not grow memory)."""


@dataclass
class OutputPlan:
    """What happens to one output after the launch (fixed by the recipe)."""

    slot: OutputSlot
    action: str
    """"plain" (use the result), "merge" (select on the written mask), "combine" (atomics),
    "relative" (decoded against the old array) or "unused" (the one-element output of a kernel
    that stores nothing: dropped)."""
    reason: str = ""
    """Why a merged output is not proven written in full."""
    kind: str = ""
    """The atomic operation a "combine" output is combined with the old array by, or the
    encoding ("xor", "sub") a "relative" output is decoded by."""
    size: int = 0
    """Elements of the argument; the output has one more when `padded`."""
    padded: bool = False
    """A 16-bit atomic output of odd size gets one more element: its atomics update the 32-bit
    word holding each element, which must lie inside the buffer."""
    old_shape: tuple[int, ...] | None = None
    """The shape the old contents take in a merge or combine (None: the old contents are not read)."""
    final_shape: tuple[int, ...] | None = None
    """The shape an MLX argument is rebound to when it differs from the result's."""


@dataclass
class LaunchRecipe:
    """A launch's metal_kernel call without its inputs, and what to do with its results."""

    output_shapes: list[tuple[int, ...]]
    output_dtypes: list[Any]
    grid: tuple[int, int, int]
    threadgroup: tuple[int, int, int]
    init_value: float | None
    """metal_kernel's `init_value`: an atomic identity, 0 for relative outputs, written masks or
    a device-assert status, else None."""
    outputs: tuple[OutputPlan, ...]
    masked: tuple[str, ...] = ()
    """Outputs merged through written masks: the kernel's twin with those masks runs, and its
    mask outputs follow the outputs (shapes and dtypes appended in this order; a debug build's
    device-assert status output comes last)."""
    unwritten: bool = False
    """The masks start true and mark the elements not written (`init_value` is not 0)."""
    relative: tuple[str, ...] = ()
    """Outputs kept relative to their array's contents: the twin with those outputs runs, and
    the arrays follow the inputs in this order."""
    escaped: tuple[str, ...] = ()
    """Those of `relative` held with the "key" encoding: each has a uint32 escape output
    (`codegen.kernel.escape_output_name`), after the mask outputs, in this order."""
    grid_input: Any = None
    """The logical grid as an int32 array, for a variant compiled with program spreading."""
    reads_old: tuple[int, ...] = ()
    """Outputs whose old contents the launch reads (merged, combined or relative)."""
    adjusted: tuple[int, ...] = ()
    """Outputs whose result is not used as it is (merged, combined, decoded or padded)."""
    rebound: tuple[tuple[int, tuple[int, ...] | None], ...] = ()
    """(output, `final_shape`) of the outputs whose argument is an MLX array (rebound to the
    result)."""
    copied: tuple[int, ...] = ()
    """Outputs whose argument is a NumPy buffer (the result copied into it)."""
    call: dict[str, Any] = field(init=False)
    """metal_kernel's keyword arguments but `inputs` (built once: the launch passes them on)."""
    plain: bool = field(init=False)
    """Every result is used as it is."""

    def __post_init__(self) -> None:
        self.plain = not self.adjusted
        self.call = {
            "output_shapes": self.output_shapes,
            "output_dtypes": self.output_dtypes,
            "grid": self.grid,
            "threadgroup": self.threadgroup,
            "init_value": self.init_value,
        }


@dataclass(slots=True)
class PreparedLaunch:
    """One launch: its recipe, its inputs, and the arguments that receive the outputs."""

    recipe: LaunchRecipe
    inputs: list[Any]
    targets: tuple[Any, ...]
    """Per output, the MLX array to rebind or the NumPy buffer to copy into (None: unused)."""
    olds: list[Any] | None = None
    """Per output, the old contents a merge or combine reads (None where not read)."""
    status: Any = None
    """The run's device-assert status output (debug builds with asserts), read after the launch."""

    @property
    def outputs(self) -> tuple[OutputPlan, ...]:
        return self.recipe.outputs

    @property
    def output_shapes(self) -> list[tuple[int, ...]]:
        return self.recipe.output_shapes

    @property
    def output_dtypes(self) -> list[Any]:
        return self.recipe.output_dtypes

    @property
    def init_value(self) -> float | None:
        return self.recipe.init_value

    @property
    def masked(self) -> tuple[str, ...]:
        return self.recipe.masked

    def call_arguments(self) -> dict[str, Any]:
        """metal_kernel's keyword arguments for this launch."""
        return {"inputs": self.inputs, **self.recipe.call}


@dataclass
class ScalarArrays:
    """Typed 0-d arrays of scalar arguments by (value, dtype), the most recent `limit` of them
    (module docstring)."""

    mx: Any
    limit: int = 512
    arrays: dict[tuple[object, ...], Any] = field(default_factory=dict)

    def get(self, value: object, dtype: Any) -> Any:
        if not _keyable(value):
            return self.mx.array(value, dtype=dtype)
        key = (value, type(value), dtype)
        array = self.arrays.get(key)
        if array is None:
            array = self.mx.array(value, dtype=dtype)
            if len(self.arrays) >= self.limit:
                self.arrays.clear()
            self.arrays[key] = array
        return array


def _keyable(value: object) -> bool:
    """A scalar whose equal values make equal arrays: not ±0.0 (equal, with different bits)
    nor NaN (never equal to itself, so never found)."""
    return type(value) is not float or bool(value and value == value)


class LaunchInputs:
    """A launch's metal_kernel inputs, in the kernel's order, from its bound values: array
    arguments as they are when they are MLX arrays the kernel can take directly (else through
    the driver's `convert`), scalars as typed 0-d arrays, memoised per tuple of the launch's
    scalar values (one lookup per launch; `ScalarArrays` for a tuple not seen recently), and
    the grid input of a spread variant."""

    LIMIT = 256

    def __init__(self, slots: Sequence[InputSlot], scalars: ScalarArrays, dtype_of: Callable[[str], Any],
                 convert: Callable[[object, str, bool], Any]) -> None:
        arrays = [s for s in slots if s.role == "array"]
        scalar_slots = [s for s in slots if s.role == "scalar"]
        self.arrays = arrays
        self.vector = tuple(k for k, s in enumerate(arrays) if s.vector)
        self.take_arrays = picker([s.arg for s in arrays])
        self.take_scalars = picker([s.arg for s in scalar_slots])
        self.scalar_types = tuple(s.dtype for s in scalar_slots)
        self.dtype_of = dtype_of  # resolved when first needed: a launcher is built before its mx is used
        self.floats = tuple(k for k, s in enumerate(scalar_slots) if s.dtype in _FLOAT_TYPES)
        # every input's position in (arrays..., scalars..., grid input)
        position = {id(s): k for k, s in enumerate([*arrays, *scalar_slots])}
        grid_at = len(arrays) + len(scalar_slots)
        order = [position.get(id(s), grid_at) for s in slots]
        self.order = picker(order)
        self.in_order = order == list(range(grid_at))
        """The kernel takes its arrays first, then its scalars, and no grid input (the common
        case: no reordering)."""
        self.scalars = scalars
        self.convert = convert
        self.memo: dict[tuple[object, ...], tuple[Any, ...]] = {}

    def __call__(self, values: Sequence[object], grid_input: Any) -> list[Any]:
        arrays = self.take_arrays(values)
        for arr in arrays:  # MLX arrays of one dimension or more go in as they are (one loop:
            if type(arr) is not MLX_ARRAY or not arr.ndim:  # this runs on every launch)
                arrays = self._converted(arrays)
                break
        else:
            for k in self.vector:  # inputs read through vector loads need 8 elements
                if arrays[k].size < 8:
                    arrays = self._converted(arrays)
                    break
        key = self.take_scalars(values)
        scalars = self.memo.get(key)  # safe for any key: none with ±0.0 or NaN is stored
        if scalars is None:
            scalars = self._scalar_arrays(key)
        if self.in_order:
            return [*arrays, *scalars]
        return list(self.order((*arrays, *scalars, grid_input)))

    def _converted(self, arrays: tuple[Any, ...]) -> tuple[Any, ...]:
        done: dict[int, Any] = {}
        out: list[Any] = []
        for slot, value in zip(self.arrays, arrays):
            arr = done.get(slot.arg)  # one copy of a NumPy argument feeding several inputs
            if arr is None or slot.vector:
                arr = self.convert(value, slot.dtype, slot.vector)
                if not slot.vector:
                    done[slot.arg] = arr
            out.append(arr)
        return tuple(out)

    def _scalar_arrays(self, key: tuple[object, ...]) -> tuple[Any, ...]:
        """The arrays of the scalar values `key` (not in the memo), memoised unless a float
        among them is one `_keyable` refuses. A slot's values are all of one Python type (the
        variant's specialization), so equal keys mean equal arrays."""
        dtype_of = self.dtype_of
        got = tuple(self.scalars.get(v, dtype_of(t)) for v, t in zip(key, self.scalar_types))
        if all(_keyable(key[k]) for k in self.floats):
            if len(self.memo) >= self.LIMIT:
                self.memo.clear()
            self.memo[key] = got
        return got
