"""The Metal driver: compiled kernels launched through `mx.fast.metal_kernel` (mlx_api.md).

`MetalLauncher(msl, plan, mx=None)` holds one compiled variant (an `MSLKernel` and its
`LaunchPlan`); `mx` is the `mlx.core` module, or a stand-in with the same `fast.metal_kernel`,
`array`, `where`, `eval`, ... (the tests pass one that records every call). A launch through
the runtime runs on the launcher of the module `_mlx()` finds at that moment
(`for_current_mlx`), so a launcher kept from before a stand-in was installed or removed is
never used with another module. Per variant:

* one `mx.fast.metal_kernel(name=msl.name, input_names, output_names, source, header,
  ensure_row_contiguous=True, atomic_outputs=msl.atomic_outputs, compile_options={"math_mode":
  ...})`, built on first use and kept; MLX versions without `compile_options` raise `TypeError`
  and get the call without it (their math mode is MLX's default, "safe").

Per launch (`prepare` computes everything, `__call__` runs it). All but the inputs is the
launch's recipe (`recipe.py`), memoised per launcher under the launch's grid, its output
arguments' types and shapes and the scalars the coverage proof reads, so a repeated launch
gathers its inputs, calls the kernel and rebinds:

* written arguments that are one array (or overlapping NumPy views), and a read argument that
  is the same array as a written one it may be read after, are refused before anything runs,
  naming both (each written argument gets its own output here).
* inputs in the kernel's order: MLX arrays as they are (0-d arrays reshaped to `(1,)`, since
  the kernel indexes every array), NumPy buffers (flat views the runtime made) copied in with
  `mx.array`, bfloat16 buffers (`uint16` words) viewed as `mx.bfloat16`; runtime scalars as
  explicitly typed 0-d arrays (`mx.array(v, mx.int32)`, kept per value for reuse); the grid input of a spread variant as
  `mx.array(grid, mx.int32)`. An input read through vector loads with fewer than 8 elements is
  padded to 8 (MLX passes smaller inputs in `constant` memory).
* grid `(gx * T, gy, gz)` in threads, threadgroup `(T, 1, 1)` (`plan.launch_dims`).
* outputs: every stored or atomically updated argument, with its shape and dtype. MLX
  allocates them fresh, so each takes one of four forms (docs/runtime.md, "Exact in-place
  memory"), fixed per launcher but for the coverage verdicts:
  - plain: an array only stored to (or loaded before any store) whose launch is proven to
    write every element (`LaunchCoverage`: the code generator's coverage program run for this
    launch's grid, scalars and output sizes by `runtime.coverage`, memoised): used as is;
  - merged: the same, not proven: the variant's twin compiled with written masks runs
    instead (once, compiled on first need): its stores also set a bool output per merged
    output, and one `mx.where(mask, result, old)` per output keeps the old values where
    nothing was written;
  - combined: an integer array updated by one of add, max, min, and, or, xor and nothing
    else (no load, store or returned value): the output starts at the operation's identity
    (`init_value`) and is combined with the old array afterwards;
  - relative: every other written array (float and other atomics, arrays with a load that may
    read what the kernel stored, arrays loaded and stored under a lock): the twin compiled with
    relative outputs (`codegen.kernel.relative_encoding`) starts the output at 0, takes the
    array as an input (its own, or one more) and keeps each element as its bitwise or
    wrapping difference from it; one op (`bitwise_xor` or `add` on the bits) decodes the
    result. An array of 16- or 32-bit elements only loaded and stored, by programs that wait
    for each other through atomics, is held with the key instead (`codegen.kernel.keeps_key`:
    each element xor a fixed key, 0 for "the old value", one more uint8 output of escape bytes
    for the elements stored with the key's own bits), so the kernel reads old contents only
    where it finds 0, and a `where` decodes; keys give way to the bitwise difference where
    their outputs could take the twin past the buffer limit. A float32 array updated by atomic
    adds alone (their results may be used) is "marked" instead (`codegen.kernel.marks_untouched`)
    when nothing else in the launch needs another start: the output starts at a NaN mark for
    "untouched", the first add to an element swaps in the old value plus its operand, every later
    one is the hardware's atomic add, and one `where` puts the old value back where the mark
    stayed.
  One kernel run per launch, always. `init_value` is one value for all outputs: beside a
  relative output (0), a combined one of another identity is kept relative too; written masks
  start at it as well, so at a combined output's other identity (`atomic_max` of int32 at
  -2**31) a bool output starts true, the twin's stores clear the masks instead, and the select
  keeps the old values where they stayed true. A 16-bit atomic output of odd size is
  allocated one element longer (its atomics update whole 32-bit words) and sliced back; a
  kernel that stores nothing has one "unused" one-element output (metal_kernel needs an
  output), which is dropped. At `TRITON_METAL_DEBUG=1` a merged launch logs why the proof
  failed (the store line and the reason).
* results: an MLX argument is rebound (`arr[None] = result`, MLX's `arr[...] = result` without
  the squeeze and broadcast nodes it adds for a leading dimension of 1; its dtype checked when
  the recipe is made, its shape restored); a NumPy buffer is copied back in place.
* nothing is evaluated: the launch adds one `CustomKernel` node (plus the merge, combine or
  decode ops of outputs that need the old contents) to MLX's lazy graph. The one exception is
  a debug build with device asserts: its status output (the last output, after any written
  masks) is read right after the launch, which waits for the kernel
  (`runtime/device_asserts.py`). A Metal compile error therefore
  surfaces where the graph is evaluated, as MLX's `RuntimeError` whose diagnostics name the
  kernel's Python file and line (the MSL's `#line` directives); `metal_errors()` turns it into
  a `CompilationError` with the source line and caret.
* transformations: MLX's `CustomKernel` has no vjp, jvp or vmap, so `mx.grad` or `mx.vmap`
  through a bare launch raises MLX's `ValueError` ("[Primitive::vjp] Not implemented for
  CustomKernel."); at `TRITON_METAL_DEBUG` >= 1 the launch's arrays pass through a per-variant
  identity `mx.custom_function` whose rules raise a `LaunchError` naming the kernel instead.
  Inside a `triton_metal.op` the op's own rules apply. The plain launch adds nothing else to
  the graph, so functions of launches trace under `mx.compile` and `mx.export_function`.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any

import numpy as np

from triton_metal.errors import LaunchError
from triton_metal.runtime.device_asserts import has_asserts, read_status, warn_prints
from triton_metal.runtime.arrays import share_elements
from triton_metal.runtime.picker import picker
from triton_metal.runtime.log import debug_level
from triton_metal.runtime.mlx_op import inside_op, note_kernel

from triton_metal.codegen.kernel import (KEY_BITS, UNTOUCHED_BITS, escape_bytes, keeps_key, marks_untouched,
                                         relative_encoding)

from .launch_coverage import LaunchCoverage, coverage_scalars  # noqa: F401 - driver.coverage_scalars
from .metal_errors import _LAUNCHED, map_metal_error, metal_errors  # noqa: F401 - the package's names
from .plan import MAX_BUFFERS, LaunchPlan, OutputSlot, buffer_count, launch_dims
from .recipe import (
    RECIPE_LIMIT,
    LaunchInputs,
    LaunchRecipe,
    OutputPlan,
    PreparedLaunch,
    ScalarArrays,
)

MLX_DTYPE_NAMES = {
    "float": "float32", "float16_t": "float16", "bfloat16_t": "bfloat16", "bool": "bool_",
    "int8_t": "int8", "int16_t": "int16", "int32_t": "int32", "int64_t": "int64",
    "uint8_t": "uint8", "uint16_t": "uint16", "uint32_t": "uint32", "uint64_t": "uint64",
}
_ITEM_BYTES = {
    "float": 4, "float16_t": 2, "bfloat16_t": 2, "bool": 1, "int8_t": 1, "int16_t": 2,
    "int32_t": 4, "int64_t": 8, "uint8_t": 1, "uint16_t": 2, "uint32_t": 4, "uint64_t": 8,
}
_FLOATS = ("float", "float16_t", "bfloat16_t")
_COMBINABLE = ("add", "max", "min", "and", "or", "xor")
_SHAPE = attrgetter("shape")
_NO_START = (None, None)
"""The start of an output that starts empty."""
_ENCODINGS = ("key", "xor", "sub", "mark")
"""How an output kept relative to its array holds it (`codegen.kernel`)."""
UNTOUCHED = struct.unpack("<f", UNTOUCHED_BITS.to_bytes(4, "little"))[0]
"""The `init_value` of a marked output: a float whose float32 bits are `UNTOUCHED_BITS` (a quiet
NaN keeps its payload through float64 and back)."""
_READS_OLD = ("merge", "combine", "relative")
"""Output actions that need the array's old contents."""


def _mlx() -> Any:
    import mlx.core as mx

    return mx


def atomic_identity(kind: str, dtype: str) -> float | None:
    """The `init_value` that leaves the old contents unchanged once combined, or None when
    metal_kernel's float `init_value` cannot express it for this type."""
    signed = dtype.startswith("int")
    if kind in ("add", "or", "xor"):
        return 0.0
    if kind == "max":
        if dtype in _FLOATS:
            return -math.inf
        return float(-(2 ** (_ITEM_BYTES[dtype] * 8 - 1))) if signed else 0.0
    if kind == "min":
        return math.inf if dtype in _FLOATS else None  # 2**31 - 1 has no float32 twin
    if kind == "and":
        return -1.0 if signed else None
    return None


class MetalLauncher:
    """One compiled variant on the Metal backend (module docstring)."""

    def __init__(self, msl: Any, plan: LaunchPlan, arg_names: Sequence[str], mx: Any = None,
                 twin: Callable[[tuple[str, ...], tuple[str, ...], bool], Any] | None = None) -> None:
        self.msl = msl
        self.plan = plan
        self.arg_names = tuple(arg_names)
        self.mx = mx if mx is not None else _mlx()
        self._kernel: Any = None
        self.coverage = LaunchCoverage(msl, self.arg_names)
        self.twin = twin
        """(masked, relative, unwritten) -> the `MSLKernel` whose stores to the outputs `masked`
        also set written masks (clear them, `unwritten`) and which keeps the outputs `relative`
        relative to their arrays' contents."""
        self._twins: dict[tuple[tuple[str, ...], tuple[str, ...], bool], tuple[Any, Any]] = {}
        self._dtypes: dict[str, Any] = {}
        self._prints_dropped = bool(msl.metadata.get("device_prints")) and not getattr(
            self.mx, "runs_device_prints", False)
        """The kernel's `tl.device_print`s cannot print here (Metal; not the emulator's mx)."""
        self._guard: Any = None
        self._exit_guard: Any = None
        self._pending: Any = None
        self.kernel_name = msl.name.rsplit("_", 1)[0]
        _LAUNCHED[msl.name] = msl
        self.math_mode = str(msl.metadata.get("math_mode", "safe"))
        self.atomics: dict[str, Any] = dict(msl.metadata.get("atomics", {}) or {})
        self._recipes: dict[tuple[object, ...], LaunchRecipe] = {}
        self._inputs = LaunchInputs(plan.inputs, ScalarArrays(self.mx), self._dtype, self._to_mlx)
        self._coverage_values = picker([i for i, _ in self.coverage.scalars])
        self._unused_output = any(slot.arg < 0 for slot in plan.outputs)
        self._targets = picker([slot.arg for slot in plan.outputs])
        self._reads_stored = frozenset(msl.metadata.get("reads_stored", ()) or ())
        self._reinterpreted = frozenset(msl.metadata.get("reinterpreted", ()) or ())
        self.asserts = has_asserts(msl)
        self._starts = self._fitting_keys(_agreeing_starts([self._fixed_start(slot) for slot in plan.outputs],
                                                           plan.outputs))
        """Per output, (encoding or atomic kind, init_value) when it is kept relative to its
        array or combined with it, else `_NO_START`: fixed per variant."""
        self._marked = tuple(slot.name for slot, (kind, _) in zip(plan.outputs, self._starts) if kind == "mark")
        """Outputs held with the untouched mark (a subset of every launch's relative ones)."""
        self._keyed = tuple(slot.name for slot, (kind, _) in zip(plan.outputs, self._starts) if kind == "key")
        """Outputs held with the key (a subset of every launch's relative ones)."""
        self._written = tuple(k for k, slot in enumerate(plan.outputs) if slot.arg >= 0)
        index = {name: i for i, name in enumerate(self.arg_names)}
        self._read_after_write = tuple(
            (index[a], index[b]) for a, b in msl.metadata.get("loads_after_writes", ()) or ()
            if a in index and b in index)
        """(read argument, written argument) pairs where a load of the first may follow a write
        of the second: the two must not be one array here."""
        array_inputs = {s.arg for s in plan.inputs if s.role == "array"}
        self._appends_old = frozenset(k for k, slot in enumerate(plan.outputs) if slot.arg not in array_inputs)
        """Outputs whose twin takes the array's old contents as one more input (a parameter also
        read finds them in its own input)."""

    def for_current_mlx(self) -> MetalLauncher:
        """This launcher, or, when `mlx.core` as the driver finds it now (`_mlx`) is another
        module than the one it was built with (a recording stand-in installed or removed since),
        a launcher of the same variant built for that one. Everything it keeps (the metal_kernel
        objects, recipes, scalar arrays) belongs to the module it was built with: a launch must
        never reach a module other than the one in use."""
        mx = _mlx()
        if mx is self.mx:
            return self
        return MetalLauncher(self.msl, self.plan, self.arg_names, mx=mx, twin=self.twin)

    # -- the kernel object ----------------------------------------------------------------------
    def factory_arguments(self) -> dict[str, Any]:
        msl = self.msl
        return {
            "name": msl.name,
            "input_names": list(msl.input_names),
            "output_names": list(msl.output_names),
            "source": msl.source,
            "header": msl.header,
            "ensure_row_contiguous": True,
            "atomic_outputs": bool(msl.atomic_outputs),
        }

    def kernel(self, masked: tuple[str, ...] = (), relative: tuple[str, ...] = (),
               unwritten: bool = False) -> Any:
        """The metal_kernel object of this variant, or of its twin that also writes the written
        masks of the outputs `masked` (marking elements not written, `unwritten`) and keeps
        `relative` relative to their arrays' contents (compiled and built on first use)."""
        if masked or relative:
            return self._twin_variant(masked, relative, unwritten)[1]
        if self._kernel is None:
            self._kernel = self._build(self.factory_arguments())
        return self._kernel

    def _build(self, args: dict[str, Any]) -> Any:
        try:
            return self.mx.fast.metal_kernel(**args, compile_options={"math_mode": self.math_mode})
        except TypeError:  # MLX before 0.32: no compile_options (math mode "safe")
            return self.mx.fast.metal_kernel(**args)

    def _twin_variant(self, masked: tuple[str, ...], relative: tuple[str, ...],
                      unwritten: bool) -> tuple[Any, Any]:
        got = self._twins.get((masked, relative, unwritten))
        if got is None:
            if self.twin is None:
                raise self._refuse("an output is not proven to be written in full, or must start "
                                   "as its array, and this launcher cannot compile the twin variant")
            msl = self.twin(masked, relative, unwritten, self._marked, self._keyed)
            args = dict(self.factory_arguments(), name=msl.name, input_names=list(msl.input_names),
                        output_names=list(msl.output_names), source=msl.source, header=msl.header)
            got = (msl, self._build(args))
            self._twins[masked, relative, unwritten] = got
        return got

    # -- one launch ------------------------------------------------------------------------------
    def _dtype(self, type_string: str) -> Any:
        dtype = self._dtypes.get(type_string)
        if dtype is None:  # looked up once per launcher: the launch path is hot
            dtype = self._dtypes[type_string] = getattr(self.mx, MLX_DTYPE_NAMES[type_string])
        return dtype

    def _to_mlx(self, value: object, type_string: str, pad: bool) -> Any:
        mx = self.mx
        if isinstance(value, np.ndarray):
            host = value.reshape(-1)
            if pad and host.size < 8:
                padded = np.zeros(8, dtype=host.dtype)
                padded[: host.size] = host
                host = padded
            arr = mx.array(host)
            return arr.view(mx.bfloat16) if type_string == "bfloat16_t" and host.dtype == np.uint16 else arr
        arr = value
        if arr.ndim == 0:  # type: ignore[attr-defined]
            arr = arr.reshape(1)  # type: ignore[attr-defined]
        if pad and arr.size < 8:  # type: ignore[attr-defined]
            arr = mx.concatenate([arr, mx.zeros((8 - arr.size,), dtype=arr.dtype)])  # type: ignore[attr-defined]
        return arr

    def prepare(self, values: Sequence[object], grid: tuple[int, int, int]) -> PreparedLaunch:
        """The metal_kernel call of a launch; `values` hold flat NumPy buffers for NumPy
        arguments (bfloat16 as uint16 words) and MLX arrays as given. The call's recipe is
        memoised (`recipe.py`): a repeated launch gathers its inputs and old contents only."""
        if type(values) is not tuple:
            values = tuple(values)
        targets, key = self._recipe_key(values, grid)
        if len(self._written) > 1:
            self._check_aliasing(targets)
        if self._read_after_write:
            for i, k in self._read_after_write:
                if share_elements(values[i], values[k]):
                    raise self._aliasing_error(self.arg_names[i], self.arg_names[k],
                                               "reads one after writing the other")
        recipe = self._recipes.get(key)
        if recipe is None:
            recipe = self._make_recipe(values, grid, targets, self._starts)
            if len(self._recipes) >= RECIPE_LIMIT:
                self._recipes.clear()
            self._recipes[key] = recipe
        prepared = PreparedLaunch(recipe, self._inputs(values, recipe.grid_input), targets)
        if recipe.reads_old:
            prepared.olds = olds = self._olds(recipe, targets)
            # the old contents of relative outputs are the twin's last inputs (codegen.kernel)
            prepared.inputs.extend(olds[k] for k, out in enumerate(recipe.outputs)
                                   if out.action == "relative" and k in self._appends_old)
        return prepared

    def _check_aliasing(self, targets: tuple[Any, ...]) -> None:
        """Refuse two written arguments that are one array (or overlapping views of one NumPy
        buffer): each has its own fresh output here, and one rebinding or copy-back would drop
        the stores made through the other (in place they are one buffer)."""
        written = [(k, targets[k]) for k in self._written]
        if len({id(t) for _, t in written}) == len(written) and not any(
                isinstance(t, np.ndarray) for _, t in written):
            return
        for i, (k, a) in enumerate(written):
            for m, b in written[i + 1:]:
                if share_elements(a, b):
                    raise self._aliasing_error(self.plan.outputs[k].param, self.plan.outputs[m].param,
                                               "writes both")

    def _aliasing_error(self, first: str, second: str, what: str) -> LaunchError:
        return LaunchError(
            f"kernel '{self.kernel_name}': arguments '{first}' and '{second}' are the same array (or "
            f"overlapping views of one buffer) and the kernel {what}; on the Metal path each written "
            "argument gets its own output and loads read the contents from before the launch, so "
            "the kernel would not see its own writes as one buffer. Pass separate arrays, or one "
            "array through one parameter"
        )

    def _recipe_key(self, values: tuple[object, ...], grid: tuple[int, int, int]
                    ) -> tuple[tuple[Any, ...], tuple[object, ...]]:
        """(the output arguments, the key of the launch's recipe): the key holds everything a
        recipe depends on that is not fixed per launcher (module docstring), gathered in C."""
        if self._unused_output:  # a kernel that stores nothing: no output argument
            return (None,), (grid, *self._coverage_values(values))
        targets = self._targets(values)
        return targets, (grid, *map(type, targets), *map(_SHAPE, targets), *self._coverage_values(values))

    def _make_recipe(self, values: Sequence[object], grid: tuple[int, int, int],
                     targets: tuple[Any, ...], starts: list[tuple[Any, Any]]) -> LaunchRecipe:
        """Outputs (shapes, dtypes, actions), coverage verdicts, written masks and `init_value`
        of a launch (module docstring)."""
        plan = self.plan
        launch_grid, threadgroup = launch_dims(grid, plan.threads, plan.spread)
        shapes: list[tuple[int, ...]] = []
        dtypes: list[Any] = []
        outputs: list[OutputPlan] = []
        identities: set[float] = set()
        plain: dict[str, int] = {}
        for slot, value, (kind, first) in zip(plan.outputs, targets, starts):
            dtypes.append(self._dtype(slot.dtype))
            if slot.kind == "unused":
                shapes.append((1,))
                outputs.append(OutputPlan(slot, "unused"))
                continue
            is_numpy = isinstance(value, np.ndarray)
            size = int(value.size)  # type: ignore[attr-defined]
            shape = (size,) if is_numpy or value.ndim == 0 else tuple(value.shape)  # type: ignore[attr-defined]
            out = OutputPlan(slot, "plain", size=size)
            if slot.kind == "pointer_atomic" and _ITEM_BYTES[slot.dtype] == 2 and size % 2:
                out.padded, shape = True, (size,)
            shapes.append((size + 1,) if out.padded else shape)
            if not is_numpy:
                self._check_target(slot, value, dtypes[-1])
                if tuple(value.shape) != shape:  # type: ignore[attr-defined]
                    out.final_shape = tuple(value.shape)  # type: ignore[attr-defined]
            if kind is not None:
                out.action, out.kind = ("relative" if kind in _ENCODINGS else "combine"), kind
                identities.add(first)
            else:
                plain[slot.name] = size
            outputs.append(out)
        first = next(iter(identities)) if identities else None
        masked = self._merged(values, grid, plain, outputs, shapes)
        unwritten = False
        if masked:
            # init_value starts the masks too: at 0 they mark the elements written; at an atomic
            # start other than 0 (true, for a bool) they mark those not written
            unwritten = bool(first)
            first = first or 0.0
            by_name = {out.slot.name: shape for out, shape in zip(outputs, shapes)}
            for o in masked:  # shaped as its output, for the select
                shapes.append(by_name[o])
                dtypes.append(self.mx.bool_)
        escaped = tuple(out.slot.name for out in outputs if out.kind == "key")
        for out in outputs:  # after the masks, in the order of the outputs (codegen.driver)
            if out.kind == "key":
                shapes.append((escape_bytes(out.size),))
                dtypes.append(self.mx.uint8)
        if self.asserts:  # the status output, last (device_asserts.py)
            shapes.append((4,))
            dtypes.append(self.mx.uint32)
            if first is None:
                first = 0.0  # uninitialised memory could hold anything
        return LaunchRecipe(
            shapes, dtypes, launch_grid, threadgroup, first, tuple(outputs), masked, unwritten,
            grid_input=self.mx.array(list(grid), dtype=self.mx.int32) if plan.spread else None,
            relative=tuple(o.slot.name for o in outputs if o.action == "relative"),
            escaped=escaped,
            reads_old=tuple(k for k, o in enumerate(outputs) if o.action in _READS_OLD),
            adjusted=tuple(k for k, o in enumerate(outputs) if o.action not in ("plain", "unused") or o.padded),
            rebound=tuple((k, out.final_shape) for k, (t, out) in enumerate(zip(targets, outputs))
                          if t is not None and not isinstance(t, np.ndarray)),
            copied=tuple(k for k, t in enumerate(targets) if isinstance(t, np.ndarray)),
        )

    def _merged(self, values: Sequence[object], grid: tuple[int, int, int], plain: dict[str, int],
                outputs: list[OutputPlan], shapes: list[tuple[int, ...]]) -> tuple[str, ...]:
        """The outputs not proven written in full (merged through written masks); sets the
        shape the old contents of merged and combined outputs take."""
        verdicts = self.coverage(values, grid, plain) if plain else {}
        # in the order of the outputs, which is the order of the twin's mask outputs
        masked = tuple(out.slot.name for out in outputs if out.slot.name in verdicts
                       and not verdicts[out.slot.name].proven)
        for out, shape in zip(outputs, shapes):
            if out.slot.name in masked:
                out.action = "merge"
                out.reason = verdicts[out.slot.name].reason
            if out.action in _READS_OLD:
                out.old_shape = (out.size,) if out.padded else shape  # combined before slicing
        return masked

    def _check_target(self, slot: OutputSlot, target: Any, dtype: Any) -> None:
        """An MLX argument receives an output of its own dtype. Checked once per recipe: the
        argument's dtype is part of the variant's specialization."""
        if target.dtype != dtype:
            raise LaunchError(
                f"argument '{slot.param}': the kernel produced {dtype} for an array of {target.dtype}"
            )

    def _olds(self, recipe: LaunchRecipe, targets: tuple[Any, ...]) -> list[Any]:
        """The old contents of the outputs a merge or combine reads, shaped as the output."""
        olds: list[Any] = [None] * len(targets)
        for k in recipe.reads_old:
            out = recipe.outputs[k]
            old = self._to_mlx(targets[k], out.slot.dtype, False)
            if tuple(old.shape) != out.old_shape:
                old = old.reshape(out.old_shape)
            olds[k] = old
        return olds

    def _fixed_start(self, slot: OutputSlot) -> tuple[str, float] | None:
        """(kind, init_value) of an output that does not start empty (docs/runtime.md, "Exact
        in-place memory"): an integer atomic operation whose identity starts the output,
        combined with the old array afterwards, when the kernel neither reads, stores nor uses
        the values atomics return there; else "xor" or "sub" with 0 for an output kept relative
        to its array (every other atomically updated array, and arrays with a load that may
        read what the kernel stored). None: the output starts empty (written in full, or merged
        through a written mask). An array written through a pointer of another element size, or
        updated atomically through a pointer of another type, is kept relative with "xor", the
        one encoding that is the same bijection whatever type reads or writes its bytes."""
        if slot.param in self._reinterpreted:
            return "xor", 0.0
        if slot.kind == "pointer_inout" and slot.param in self._reads_stored:
            return relative_encoding(slot.dtype, ()), 0.0  # type: ignore[return-value]
        if slot.kind != "pointer_atomic":
            return None
        info = self.atomics.get(slot.param, {})
        kinds = list(info.get("kinds", ()))
        if keeps_key(slot.dtype, kinds, bool(info.get("polled"))):
            # loaded and stored by programs that wait for each other: the key keeps the old
            # contents out of their critical sections; an array only read after the program's
            # own stores keeps the bitwise difference, whose decode is one op over the array
            return "key", 0.0
        if (not info.get("loaded") and not info.get("result_used") and not info.get("stored")
                and len(kinds) == 1 and kinds[0] in _COMBINABLE and slot.dtype not in _FLOATS):
            identity = atomic_identity(kinds[0], slot.dtype)
            if identity is not None:
                return kinds[0], identity
        if marks_untouched(slot.dtype, kinds, bool(info.get("loaded")), bool(info.get("stored"))) \
                and not self.asserts:  # the status output needs its start at 0
            return "mark", UNTOUCHED
        encoding = relative_encoding(slot.dtype, kinds)
        if encoding is None:
            raise self._refuse(
                f"'{slot.param}' is updated by atomics ({', '.join(kinds)}) that must start from the "
                f"array's contents, and no {slot.dtype} atomic can run relative to them")
        return encoding, 0.0

    def _fitting_keys(self, starts: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
        """The starts with every key given up for the bitwise difference when the escape outputs
        could take the twin past Metal's buffer limit (counting the old contents of every
        relative output and a written mask for every other written one): the key saves reads,
        and must never cost a launch that would run without it."""
        keyed = [k for k, (kind, _) in enumerate(starts) if kind == "key"]
        if not keyed:
            return starts
        slots = self.plan.outputs
        array_inputs = {s.arg for s in self.plan.inputs if s.role == "array"}
        olds = sum(1 for (kind, _), slot in zip(starts, slots) if kind in _ENCODINGS and slot.arg not in array_inputs)
        masks = sum(1 for (kind, _), slot in zip(starts, slots) if kind is None and slot.arg >= 0)
        if buffer_count(self.msl).total + olds + masks + len(keyed) <= MAX_BUFFERS:
            return starts
        return [(relative_encoding(slot.dtype, ()), 0.0) if k in keyed else start
                for k, (start, slot) in enumerate(zip(starts, slots))]

    def _refuse(self, why: str) -> LaunchError:
        return LaunchError(
            f"kernel '{self.msl.name}' cannot run through mx.fast.metal_kernel: {why}. Split the "
            "kernel, or (off Metal) pass NumPy arrays, which the emulator updates in place"
        )

    def __call__(self, values: Sequence[object], grid: tuple[int, int, int]) -> None:
        prepared = self.prepare(values, grid)
        if inside_op():  # the op's custom function supplies the transformations
            note_kernel(self.kernel_name)
            results = self.run(prepared)
        elif debug_level() >= 1:
            results = self.guarded(prepared)
        else:
            results = self.run(prepared)
        if prepared.status is not None:
            # Debug builds only (asserts are compiled in only then): the status is read now,
            # which waits for the kernel; inside an MLX function transformation nothing may be
            # read, and the asserts go unchecked with a warning (device_asserts.read_status)
            read_status(self.msl, prepared.status, self.kernel_name)
        if self._prints_dropped:
            warn_prints(self.msl, "Metal")
        self.write_back(prepared, results)

    def run(self, prepared: PreparedLaunch) -> list[Any]:
        """The launch's metal_kernel call and each output's final value, as lazy arrays."""
        recipe = prepared.recipe
        masked, relative = recipe.masked, recipe.relative
        kernel = self._kernel
        if kernel is None or masked or relative:
            kernel = self.kernel(masked, relative, recipe.unwritten)
        if masked:
            self._log_merge(prepared)
        results = kernel(inputs=prepared.inputs, **recipe.call)
        if self.asserts:
            prepared.status = results[-1]
        if recipe.plain:
            return results[: len(recipe.outputs)]
        return self.finish(prepared, results)

    def guarded(self, prepared: PreparedLaunch) -> list[Any]:
        """`run` between two `mx.custom_function`s whose rules raise, naming the kernel (at
        `TRITON_METAL_DEBUG` >= 1): an identity on the launch's arrays for vmap and jvp (MLX
        transforms a graph's nodes from the inputs on, so it answers before the kernel) and one
        around the launch for vjp (reverse mode meets it first, and its rule replaces the
        kernel's). MLX's own error for a kernel names no kernel. Not the default:
        `mx.export_function` cannot serialize a custom function, and the guards cost a few
        microseconds per launch."""
        if self._guard is None:
            guard = self.mx.custom_function(_identity)
            guard.vjp(self._no_vjp)
            guard.jvp(self._no_jvp)
            guard.vmap(self._no_vmap)
            self._guard = guard
            exit_guard = self.mx.custom_function(self._guarded_run)
            exit_guard.vjp(self._no_vjp)
            self._exit_guard = exit_guard
        olds = prepared.recipe.reads_old
        arrays = list(self._guard(*prepared.inputs, *[prepared.olds[k] for k in olds]))  # type: ignore[index]
        self._pending = (prepared, olds)
        try:
            return list(self._exit_guard(*arrays))
        finally:
            self._pending = None

    def _guarded_run(self, *arrays: Any) -> list[Any]:
        prepared, olds = self._pending  # type: ignore[misc]
        count = len(prepared.inputs)
        prepared.inputs = list(arrays[:count])
        for k, old in zip(olds, arrays[count:]):
            prepared.olds[k] = old
        return self.run(prepared)

    def _transform_error(self, what: str) -> LaunchError:
        return LaunchError(
            f"kernel '{self.kernel_name}' was launched inside {what}, but a kernel launch has no "
            "derivative or batching rule of its own: wrap the launcher in triton_metal.op "
            "(with backward= for mx.grad), or launch it outside the transformation"
        )

    def _no_vjp(self, *args: Any, **kwargs: Any) -> Any:
        raise self._transform_error("mx.grad / mx.vjp (a gradient)")

    def _no_jvp(self, *args: Any, **kwargs: Any) -> Any:
        raise self._transform_error("mx.jvp (a forward-mode derivative)")

    def _no_vmap(self, *args: Any, **kwargs: Any) -> Any:
        raise self._transform_error("mx.vmap")

    def _log_merge(self, prepared: PreparedLaunch) -> None:
        from triton_metal.runtime.log import log

        if debug_level() >= 1:
            for out in prepared.outputs:
                if out.action == "merge":
                    log(f"launch {self.msl.name}: '{out.slot.param}' is not proven to be written in "
                        f"full ({out.reason}); the run also writes a mask of the elements it "
                        "stores, and one select keeps the old values elsewhere")

    def finish(self, prepared: PreparedLaunch, results: list[Any]) -> list[Any]:
        """Each output's final value: the result, merged (one select on the written mask) or
        combined with the old array, or decoded from it."""
        recipe = prepared.recipe
        outputs = recipe.outputs
        if recipe.plain:
            return results[: len(outputs)]
        final = list(results[: len(outputs)])
        mx = self.mx
        olds: list[Any] = prepared.olds  # type: ignore[assignment]
        masks = dict(zip(recipe.masked, results[len(outputs):])) if recipe.masked else {}
        escapes: dict[str, Any] = {}
        if recipe.escaped:  # after the masks, in the recipe's order
            first = len(outputs) + len(recipe.masked)
            escapes = dict(zip(recipe.escaped, results[first:first + len(recipe.escaped)]))
        for k in recipe.adjusted:
            out = outputs[k]
            result = final[k]
            if out.padded:
                result = result[: out.size]
            if out.action == "merge":
                if recipe.unwritten:  # the masks mark the elements not written
                    result = mx.where(masks[out.slot.name], olds[k], result)
                else:
                    result = mx.where(masks[out.slot.name], result, olds[k])
            elif out.action == "combine":
                result = _combine(mx, out.kind, olds[k], result)
            elif out.action == "relative":
                result = _decode_relative(mx, out.kind, olds[k], result, escapes.get(out.slot.name))
            final[k] = result
        return final

    def write_back(self, prepared: PreparedLaunch, results: list[Any]) -> None:
        """Rebind each MLX argument to its output (its dtype checked with the recipe); copy
        each NumPy buffer's output into it."""
        recipe = prepared.recipe
        targets = prepared.targets
        for k, shape in recipe.rebound:
            result = results[k]
            if shape is not None:
                result = result.reshape(shape)
            # `[None]`, not `[...]`: the same rebinding (mlx_api.md 3), but MLX expands an
            # Ellipsis into slices and, for a leading dimension of 1, adds a squeeze and a
            # broadcast to the graph and ~0.5 us to the launch
            targets[k][None] = result
        for k in recipe.copied:
            target, result = targets[k], results[k]
            if recipe.outputs[k].slot.dtype == "bfloat16_t":
                result = result.view(self.mx.uint16)
            np.copyto(target, np.array(result).reshape(target.shape), casting="no")


def _agreeing_starts(starts: list[tuple[str, float] | None], slots: Sequence[OutputSlot]
                     ) -> list[tuple[Any, Any]]:
    """The starts of a launch's outputs, made to agree on one `init_value` (metal_kernel has
    one for every output): when an output kept relative starts at 0, an atomic combined from
    another identity (`atomic_max` of int32 at -2**31) is kept relative too."""
    relative = any(s is not None and s[0] in ("key", "xor", "sub") for s in starts)
    identities = {s[1] for s in starts if s is not None}  # UNTOUCHED is one object: one entry
    out: list[tuple[Any, Any]] = []
    for start, slot in zip(starts, slots):
        if start is not None and (relative or len(identities) > 1) and start[1] != 0.0:
            # a marked output too (its adds then loop on the held difference): only the mark
            # can start it
            kind = "add" if start[0] == "mark" else start[0]
            start = (relative_encoding(slot.dtype, [kind]) or "xor", 0.0)
        out.append(start if start is not None else _NO_START)
    return out


def _identity(*arrays: Any) -> list[Any]:
    return list(arrays)


_BITS = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}


def _decode_relative(mx: Any, encoding: str, old: Any, held: Any, escape: Any = None) -> Any:
    """The array's new contents from an output kept relative to `old` (its bitwise or
    wrapping difference, computed on the elements' bits as unsigned integers; "mark": the
    element itself where it no longer holds the untouched mark; "key": the element's bits
    xor the key, or the old value where the output holds 0 and the element's escape byte in
    `escape` is clear)."""
    bits = getattr(mx, _BITS[old.itemsize])
    a, b = held.view(bits), old.view(bits)
    if encoding == "mark":
        return mx.where(a == UNTOUCHED_BITS, old, held)
    if encoding == "key":
        untouched = (a == 0) & (escape[: old.size].reshape(old.shape) == 0)
        # a Python int takes the bits' own unsigned type
        return mx.where(untouched, b, mx.bitwise_xor(a, KEY_BITS[8 * old.itemsize])).view(old.dtype)
    return (mx.bitwise_xor(a, b) if encoding == "xor" else a + b).view(old.dtype)


def _combine(mx: Any, kind: str, old: Any, result: Any) -> Any:
    if kind == "add":
        return old + result
    if kind == "max":
        return mx.maximum(old, result)
    if kind == "min":
        return mx.minimum(old, result)
    if kind == "and":
        return mx.bitwise_and(old, result)
    if kind == "or":
        return mx.bitwise_or(old, result)
    return mx.bitwise_xor(old, result)
