"""The Metal driver: compiled kernels launched through `mx.fast.metal_kernel` (mlx_api.md).

`MetalLauncher(msl, plan, mx=None)` holds one compiled variant (an `MSLKernel` and its
`LaunchPlan`); `mx` is the `mlx.core` module, or a stand-in with the same `fast.metal_kernel`,
`array`, `where`, `eval`, ... (the tests pass one that records every call). Per variant:

* one `mx.fast.metal_kernel(name=msl.name, input_names, output_names, source, header,
  ensure_row_contiguous=True, atomic_outputs=msl.atomic_outputs, compile_options={"math_mode":
  ...})`, built on first use and kept; MLX versions without `compile_options` raise `TypeError`
  and get the call without it (their math mode is MLX's default, "safe").

Per launch (`prepare` computes everything, `__call__` runs it):

* inputs in the kernel's order: MLX arrays as they are (0-d arrays reshaped to `(1,)`, since
  the kernel indexes every array), NumPy buffers (flat views the runtime made) copied in with
  `mx.array`, bfloat16 buffers (`uint16` words) viewed as `mx.bfloat16`; runtime scalars as
  explicitly typed 0-d arrays (`mx.array(v, mx.int32)`); the grid input of a spread variant as
  `mx.array(grid, mx.int32)`. An input read through vector loads with fewer than 8 elements is
  padded to 8 (MLX passes smaller inputs in `constant` memory).
* grid `(gx * T, gy, gz)` in threads, threadgroup `(T, 1, 1)` (`plan.launch_dims`).
* outputs: every stored or atomically updated argument, with its shape and dtype. MLX
  allocates them fresh, so elements the launch does not write must come from the old array:
  - proven coverage (`MSLKernel.stored_coverage`, checked against this launch's grid, scalars
    and the array's size): the result is used as is;
  - atomics whose old values are not read (add, max, min, and, or, xor): the output starts at
    the operation's identity (`init_value`) and is combined with the old array afterwards;
  - other atomics (locks, counters, compare-and-swap loops) need the output to start as the
    array itself: done with `init_value` when every element holds one value (a zeroed lock);
  - otherwise the kernel runs twice, with `init_value` 0 and 1: an element equal (bit for bit)
    in both runs was written, the others take the old array's value (`mx.where`).
  Atomics that need the array's contents in the output when the array is not uniform are
  refused with an explanation, and so is a merge (two runs) next to such an atomic array.
* results: an MLX argument is rebound (`arr[...] = result`, after checking dtype and shape); a
  NumPy buffer is copied back in place.
* the first launch of a variant evaluates eagerly: a Metal compile error (raised by MLX at
  `mx.eval`) becomes a `CompilationError` at the kernel line its `#line` directives name.
"""

from __future__ import annotations

import linecache
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from triton_metal.errors import CompilationError, LaunchError, Loc
from triton_metal.runtime.device_asserts import check_status, has_asserts, warn_prints

from .plan import LaunchPlan, OutputSlot, launch_dims

MLX_DTYPE_NAMES = {
    "float": "float32", "float16_t": "float16", "bfloat16_t": "bfloat16", "bool": "bool_",
    "int8_t": "int8", "int16_t": "int16", "int32_t": "int32", "int64_t": "int64",
    "uint8_t": "uint8", "uint16_t": "uint16", "uint32_t": "uint32", "uint64_t": "uint64",
}
_BITS_VIEW = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}
_ITEM_BYTES = {
    "float": 4, "float16_t": 2, "bfloat16_t": 2, "bool": 1, "int8_t": 1, "int16_t": 2,
    "int32_t": 4, "int64_t": 8, "uint8_t": 1, "uint16_t": 2, "uint32_t": 4, "uint64_t": 8,
}
_FLOATS = ("float", "float16_t", "bfloat16_t")
_COMBINABLE = ("add", "max", "min", "and", "or", "xor")


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


@dataclass
class OutputPlan:
    """What happens to one output after the launch."""

    slot: OutputSlot
    action: str
    """"plain" (use the result), "merge" (two runs, bitwise compare) or "combine" (atomics)."""
    old: Any = None
    kind: str = ""
    target: Any = None
    """The MLX array to rebind, or the NumPy buffer to copy into."""


@dataclass
class PreparedLaunch:
    """Everything one launch passes to metal_kernel, and what to do with its results."""

    inputs: list[Any]
    output_shapes: list[tuple[int, ...]]
    output_dtypes: list[Any]
    grid: tuple[int, int, int]
    threadgroup: tuple[int, int, int]
    init_values: tuple[float | None, ...]
    """One call per entry (two for a merge)."""
    outputs: list[OutputPlan] = field(default_factory=list)

    def call_arguments(self, init_value: float | None) -> dict[str, Any]:
        return {
            "inputs": self.inputs,
            "output_shapes": self.output_shapes,
            "output_dtypes": self.output_dtypes,
            "grid": self.grid,
            "threadgroup": self.threadgroup,
            "init_value": init_value,
        }


def _scalar(values: Sequence[object], names: Sequence[str], name: str | None) -> int | None:
    if name is None or name not in names:
        return None
    value = values[list(names).index(name)]
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        return None
    return int(value)


def _reach(grid: tuple[int, int, int], axis: int, block: int) -> int:
    """How far a proof's index reaches: `grid[axis] * block`, or `block` for an index that does
    not depend on the program (axis -1)."""
    return block if axis < 0 else grid[axis] * block


def output_covered(msl: Any, slot: OutputSlot, values: Sequence[object], names: Sequence[str],
                   grid: tuple[int, int, int], size: int) -> bool:
    """The compiler's proof that this launch writes every element of the output holds here
    (`codegen.kernel.OutputCoverage`: the 1-D form, or a tile of several dimensions)."""
    cov = msl.coverage(slot.name)
    if cov is None:
        return False
    tile = tuple(getattr(cov, "tile", ()) or ())
    if tile:
        bounds: list[int] = []
        for dim in tile:
            reach = _reach(grid, dim.grid_axis, dim.block)
            if dim.bound_param is not None:
                bound = _scalar(values, names, dim.bound_param)
            elif dim.bound_value is not None:
                bound = int(dim.bound_value)
            else:
                bound = reach
            stride = _scalar(values, names, dim.stride_param) if dim.stride_param else dim.stride_value
            if bound is None or stride is None or reach < bound:
                return False
            bounds.append(bound)
        expected = 1
        for dim, bound in zip(reversed(tile), reversed(bounds)):
            stride = _scalar(values, names, dim.stride_param) if dim.stride_param else dim.stride_value
            if bound > 1 and stride != expected:
                return False
            expected *= bound
        return expected == size
    if not cov.proven or cov.block <= 0:
        return False
    reach = _reach(grid, cov.grid_axis, cov.block)
    if cov.bound_param is not None:
        bound = _scalar(values, names, cov.bound_param)
        if bound is None:
            return False
    elif cov.bound_value is not None:
        bound = int(cov.bound_value)
    else:
        bound = reach
    return reach >= bound >= size


class MetalLauncher:
    """One compiled variant on the Metal backend (module docstring)."""

    def __init__(self, msl: Any, plan: LaunchPlan, arg_names: Sequence[str], mx: Any = None) -> None:
        self.msl = msl
        self.plan = plan
        self.arg_names = tuple(arg_names)
        self.mx = mx if mx is not None else _mlx()
        self._kernel: Any = None
        self.evaluated = False
        self.math_mode = str(msl.metadata.get("math_mode", "safe"))
        self.atomics: dict[str, Any] = dict(msl.metadata.get("atomics", {}) or {})

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

    def kernel(self) -> Any:
        if self._kernel is None:
            args = self.factory_arguments()
            try:
                self._kernel = self.mx.fast.metal_kernel(
                    **args, compile_options={"math_mode": self.math_mode}
                )
            except TypeError:  # MLX before 0.32: no compile_options (math mode "safe")
                self._kernel = self.mx.fast.metal_kernel(**args)
        return self._kernel

    # -- one launch ------------------------------------------------------------------------------
    def _dtype(self, type_string: str) -> Any:
        return getattr(self.mx, MLX_DTYPE_NAMES[type_string])

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
        """The metal_kernel call(s) for a launch; `values` hold flat NumPy buffers for NumPy
        arguments (bfloat16 as uint16 words) and MLX arrays as given."""
        mx = self.mx
        plan = self.plan
        inputs: list[Any] = []
        converted: dict[int, Any] = {}
        for slot in plan.inputs:
            if slot.role == "array":
                arr = converted.get(slot.arg)
                if arr is None or slot.vector:
                    arr = self._to_mlx(values[slot.arg], slot.dtype, slot.vector)
                    if not slot.vector:
                        converted[slot.arg] = arr
                inputs.append(arr)
            elif slot.role == "scalar":
                inputs.append(mx.array(values[slot.arg], dtype=self._dtype(slot.dtype)))
            else:
                inputs.append(mx.array(list(grid), dtype=mx.int32))
        launch_grid, threadgroup = launch_dims(grid, plan.threads, plan.spread)
        prepared = PreparedLaunch(inputs, [], [], launch_grid, threadgroup, (None,))
        identities: set[float] = set()
        merging = False
        contents = False
        for slot in plan.outputs:
            value = values[slot.arg]
            is_numpy = isinstance(value, np.ndarray)
            size = int(value.size)  # type: ignore[attr-defined]
            shape = (size,) if is_numpy or value.ndim == 0 else tuple(value.shape)  # type: ignore[attr-defined]
            prepared.output_shapes.append(shape)
            prepared.output_dtypes.append(self._dtype(slot.dtype))
            out = OutputPlan(slot, "plain", target=value)
            if slot.kind == "pointer_atomic":
                kind, start = self._atomic_start(slot, value)
                if kind:
                    out.action, out.kind = "combine", kind
                else:  # the output starts as the array itself (its one repeated value)
                    contents = True
                identities.add(start)
            elif not output_covered(self.msl, slot, values, self.arg_names, grid, size):
                out.action = "merge"
                merging = True
            if out.action != "plain":
                out.old = self._to_mlx(value, slot.dtype, False)
                if tuple(out.old.shape) != shape:
                    out.old = out.old.reshape(shape)
            prepared.outputs.append(out)
        if len(identities) > 1:
            raise self._refuse("its atomic outputs need different starting values "
                               f"({sorted(identities)})")
        first = next(iter(identities)) if identities else 0.0
        if merging and contents:
            raise self._refuse("an output must be merged with its old contents by running the kernel "
                               "twice, and an atomically updated array must start as it is: the "
                               "second run would start it from another value")
        if merging:
            second = 1.0 if first == 0.0 else 0.0
            if not math.isfinite(first) and any(
                o.action == "merge" and o.slot.dtype not in _FLOATS for o in prepared.outputs
            ):
                raise self._refuse("an integer output must be merged next to an atomic output "
                                   "that starts at infinity")
            prepared.init_values = (first, second)
        elif identities:
            prepared.init_values = (first,)
        if has_asserts(self.msl):  # the status output, last (device_asserts.py)
            prepared.output_shapes.append((4,))
            prepared.output_dtypes.append(mx.uint32)
            if prepared.init_values == (None,):
                prepared.init_values = (0.0,)  # uninitialised memory could hold anything
        return prepared

    def _atomic_start(self, slot: OutputSlot, value: object) -> tuple[str, float]:
        """(combining kind, init_value) for an atomically updated argument: an operation whose
        identity starts the output, combined with the old array afterwards; or ("", v) when the
        kernel needs the array's contents (it loads them, uses the values atomics return, or
        exchanges) and every element of the array holds the same value v, which `init_value`
        can then reproduce exactly. Anything else is refused."""
        info = self.atomics.get(slot.param, {})
        kinds = list(info.get("kinds", ()))
        if (not info.get("loaded") and not info.get("result_used") and len(kinds) == 1
                and kinds[0] in _COMBINABLE):
            identity = atomic_identity(kinds[0], slot.dtype)
            if identity is not None:
                return kinds[0], identity
        uniform = self._uniform_value(value, slot.dtype)
        if uniform is not None:
            return "", uniform
        if not kinds:
            raise self._refuse(
                f"'{slot.param}' is loaded and stored by programs that wait for each other through "
                "atomics (a lock), so its loads must read the kernel's output, which must start as "
                "the array's current contents: mx.fast.metal_kernel cannot provide them unless every "
                "element holds one value (outputs start empty or at one scalar)"
            )
        if info.get("loaded"):
            problem = "it also loads from the array"
        elif info.get("result_used"):
            problem = "it uses the old values the atomics return"
        elif len(kinds) != 1:
            problem = f"it mixes atomic operations ({', '.join(kinds) or 'none recorded'})"
        elif kinds[0] not in _COMBINABLE:
            problem = f"atomic_{kinds[0]} replaces values"
        else:
            problem = f"atomic_{kinds[0]} on {slot.dtype} has no starting value metal_kernel can express"
        raise self._refuse(
            f"'{slot.param}' is updated atomically and {problem}: that needs the array's "
            "current contents in the kernel's output, which mx.fast.metal_kernel cannot "
            "provide unless every element holds one value (outputs start empty or at one scalar)"
        )

    def _uniform_value(self, value: object, type_string: str) -> float | None:
        """The one value every element of the array holds, if there is one that metal_kernel's
        float `init_value` reproduces exactly (this evaluates the array)."""
        if type_string == "bfloat16_t":
            return None
        if isinstance(value, np.ndarray):
            flat = value.reshape(-1)
            if flat.size == 0 or not (flat == flat[0]).all():
                return None
            first = flat[0].item()
        else:
            mx = self.mx
            flat = value.reshape(-1)  # type: ignore[attr-defined]
            if flat.size == 0 or not bool(mx.all(flat == flat[0]).item()):
                return None
            first = flat[0].item()
        start = float(first)
        if type_string not in _FLOATS and (start != first or abs(start) >= 2**24):
            return None  # not exactly a float32
        if type_string == "float" and start != start:
            return None  # NaN: comparisons above cannot have held
        return start

    def _refuse(self, why: str) -> LaunchError:
        return LaunchError(
            f"kernel '{self.msl.name}' cannot run through mx.fast.metal_kernel: {why}. Split the "
            "kernel, or (off Metal) pass NumPy arrays, which the emulator updates in place"
        )

    def __call__(self, values: Sequence[object], grid: tuple[int, int, int]) -> None:
        if self.msl.metadata.get("no_effect"):  # only asserts or prints, compiled out
            return
        prepared = self.prepare(values, grid)
        kernel = self.kernel()
        runs = [kernel(**prepared.call_arguments(init)) for init in prepared.init_values]
        if has_asserts(self.msl):
            # Debug builds only: the status is read now, which waits for the kernel.
            for run in runs:
                check_status(self.msl, np.array(run[-1]))
        warn_prints(self.msl, "Metal")
        results = self.finish(prepared, runs)
        if not self.evaluated:
            try:
                self.mx.eval(*results)
            except (RuntimeError, ValueError) as error:
                raise map_metal_error(error, self.msl) from None
            self.evaluated = True
        self.write_back(prepared, results)

    def finish(self, prepared: PreparedLaunch, runs: list[list[Any]]) -> list[Any]:
        """Each output's final value: the result, merged or combined with the old array."""
        mx = self.mx
        final: list[Any] = []
        for k, out in enumerate(prepared.outputs):
            result = runs[0][k]
            if out.action == "merge":
                bits = getattr(mx, _BITS_VIEW[_ITEM_BYTES[out.slot.dtype]])
                unwritten = mx.not_equal(runs[0][k].view(bits), runs[1][k].view(bits))
                result = mx.where(unwritten, out.old, result)
            elif out.action == "combine":
                result = _combine(mx, out.kind, out.old, result)
            final.append(result)
        return final

    def write_back(self, prepared: PreparedLaunch, results: list[Any]) -> None:
        mx = self.mx
        for out, result in zip(prepared.outputs, results):
            target = out.target
            if isinstance(target, np.ndarray):
                host = np.array(result.view(mx.uint16) if out.slot.dtype == "bfloat16_t" else result)
                np.copyto(target, host.reshape(target.shape), casting="no")
                continue
            if tuple(result.shape) != tuple(target.shape):
                result = result.reshape(target.shape)
            if result.dtype != target.dtype:
                raise LaunchError(
                    f"argument '{out.slot.param}': the kernel produced {result.dtype} for an array "
                    f"of {target.dtype}"
                )
            target[...] = result


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


_DIAG = re.compile(r"(?P<file>[^\s:]+):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>[^\n]*)")


def map_metal_error(error: Exception, msl: Any) -> Exception:
    """An MLX eval error of a new variant as a `CompilationError` at the kernel line, when the
    Metal compiler's diagnostics name one (through the MSL's `#line` directives)."""
    text = str(error)
    if "Unable to build metal library" not in text and "error:" not in text:
        return LaunchError(f"kernel '{msl.name}' failed on the GPU: {text}")
    m = _DIAG.search(text)
    loc = source_line = None
    message = "the Metal compiler rejected the generated MSL"
    if m is not None:
        message += f": {m.group('msg')}"
        if m.group("file").endswith(".py"):
            loc = Loc(m.group("file"), int(m.group("line")), int(m.group("col")) - 1)
            source_line = linecache.getline(loc.file, loc.line).rstrip("\n") or None
    return CompilationError(
        message, loc,
        hint="Metal's diagnostics:\n" + "\n".join(text.splitlines()[:30])
        + "\nrun with TRITON_METAL_DEBUG=3 to print the MSL",
        kernel=msl.name, source_line=source_line,
    )
