"""`metal_kernel`: the emulator's counterpart of `mx.fast.metal_kernel`, with MLX's calling rules.

    kernel = metal_kernel(name, input_names, output_names, source, header="",
                          ensure_row_contiguous=True, atomic_outputs=False, compile_options=None)
    outputs = kernel(inputs=[...], output_shapes=[...], output_dtypes=[...], grid=(x, y, z),
                     threadgroup=(x, y, z), template=None, init_value=None, verbose=False,
                     stream=None)   # -> list of new mx.array

Inputs may be MLX arrays, NumPy arrays or Python scalars (bool -> bool, int -> int32 or int64
outside the int32 range, float -> float32, as MLX converts them). Outputs are new MLX arrays of the
given shapes and dtypes, filled with
`init_value` when given and otherwise with all bits set (MLX leaves them uninitialised; all bits
set makes a kernel that forgets to write an element visible as NaN or -1). Inputs are always passed
row-contiguous: with `ensure_row_contiguous=False` the `_strides` buffers describe that row-major
copy, which indexes the same elements.

With an MLX input the call is lazy, as on a Mac: the outputs are nodes of MLX's graph whose
evaluation runs the kernel (`lazy_mlx.py`; inside `mx.export_function` tracing, the node of MLX's
own `metal_kernel`). Otherwise (NumPy and scalar inputs only, `tl.device_print`, ASan, or the
lazy-launch extension unavailable) the kernel runs when it is called, reading the inputs' values,
which MLX forbids inside `mx.compile`, `mx.vmap` and export tracing: refused there, naming the
kernel. Either way the outputs depend on the MLX inputs and, like MLX's `CustomKernel`, have no
vjp, jvp or vmap, so `mx.grad` through a kernel raises as on a Mac rather than seeing constants.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from triton_metal.backends.emulator.bounds import checks_enabled
from triton_metal.backends.emulator.kernel import (
    NUMPY_DTYPES, EmulatorKernel, PrintRecords, asan_enabled, bfloat16_bits,
)
from triton_metal.backends.emulator.signature import (
    TYPE_STRINGS,
    InputSpec,
    OutputSpec,
    build_kernel_source,
)

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_MATH_MODES = ("safe", "relaxed", "fast")


def _mlx() -> Any:
    import mlx.core as mx  # imported lazily: the NumPy path works without MLX

    return mx


def _is_mlx_array(x: object) -> bool:
    return type(x).__module__.startswith("mlx")


def dtype_name(dtype: object) -> str:
    """MLX or NumPy dtype (or its name) -> MLX's dtype name ("float32", "bfloat16", ...)."""
    if isinstance(dtype, str):
        name = dtype
    elif type(dtype).__module__.startswith("mlx"):
        name = str(dtype).rsplit(".", 1)[-1]
    else:
        name = np.dtype(dtype).name  # type: ignore[arg-type]
    if name == "bool_":
        name = "bool"
    if name not in TYPE_STRINGS:
        raise ValueError(f"unsupported dtype {dtype!r}")
    return name


def _to_numpy(value: object) -> tuple[np.ndarray, str]:
    """(array, MLX type string) for one input, bfloat16 as its uint16 bits."""
    if isinstance(value, bool):
        return np.asarray(value, dtype=np.bool_), "bool"
    if isinstance(value, int):
        if _INT32_MIN <= value <= _INT32_MAX:
            return np.asarray(value, dtype=np.int32), "int32_t"
        return np.asarray(value, dtype=np.int64), "int64_t"
    if isinstance(value, float):
        return np.asarray(value, dtype=np.float32), "float"
    if _is_mlx_array(value):
        mx = _mlx()
        name = dtype_name(value.dtype)  # type: ignore[attr-defined]
        if name == "bfloat16":
            return np.array(value.view(mx.uint16)), "bfloat16_t"  # type: ignore[attr-defined]
        return np.array(value), TYPE_STRINGS[name]
    arr = np.asarray(value)
    return arr, TYPE_STRINGS[dtype_name(arr.dtype)]


def _template_value(value: object) -> bool | int | str:
    if isinstance(value, (bool, int)):
        return value
    try:
        return TYPE_STRINGS[dtype_name(value)]
    except ValueError:
        raise ValueError(f"Invalid template argument {value!r}: expected bool, int or a dtype") from None


@dataclass(frozen=True)
class _Call:
    """The arguments of one kernel call (MLX's names)."""

    inputs: Sequence[object]
    output_shapes: Sequence[Sequence[int]]
    output_dtypes: Sequence[object]
    grid: Sequence[int]
    threadgroup: Sequence[int]
    template: Sequence[tuple[str, object]] | None
    init_value: float | None


@dataclass
class MetalKernel:
    """The callable `metal_kernel` returns (one per name/source; compiled per specialization)."""

    name: str
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    source: str
    header: str
    ensure_row_contiguous: bool
    atomic_outputs: bool
    fast_math: bool
    device_prints: Callable[[PrintRecords], None] | None = None
    """Receives each launch's `tl.device_print` records (None: they are dropped, as on Metal)."""
    faults: Callable[[Exception], Exception] | None = None
    """Rewords a kernel fault of a lazy launch in the caller's terms (None: as the runtime says)."""
    compile_options: dict[str, str] | None = None
    """As given to `metal_kernel` (MLX's own kernel is built with them inside an export trace)."""
    _compiled: dict[tuple[str, bool, bool], EmulatorKernel] = field(default_factory=dict, repr=False)
    _mlx_kernel: Any = field(default=None, repr=False)

    def __call__(
        self,
        *,
        inputs: Sequence[object],
        output_shapes: Sequence[Sequence[int]],
        output_dtypes: Sequence[object],
        grid: Sequence[int],
        threadgroup: Sequence[int],
        template: Sequence[tuple[str, object]] | None = None,
        init_value: float | None = None,
        verbose: bool = False,
        stream: object = None,
    ) -> list[Any]:
        del stream  # the emulator runs on the CPU whatever the stream
        if len(inputs) != len(self.input_names):
            raise ValueError(
                f"[metal_kernel] Expected `inputs` to have size {len(self.input_names)} "
                f"but got size {len(inputs)}."
            )
        if len(output_shapes) != len(self.output_names) or len(output_dtypes) != len(self.output_names):
            raise ValueError(
                f"[metal_kernel] Expected `output_shapes` and `output_dtypes` to have size "
                f"{len(self.output_names)}."
            )
        if self._lazy(inputs):
            call = _Call(inputs, output_shapes, output_dtypes, grid, threadgroup, template, init_value)
            return self._launch_lazily(call, verbose)
        try:
            converted = [_to_numpy(v) for v in inputs]
        except ValueError as error:
            if "transformation" not in str(error):
                raise
            raise ValueError(
                f"[metal_kernel] kernel '{self.name}': the emulator runs a kernel when it is called, "
                "which needs its inputs' values, so it cannot run inside mx.compile, mx.vmap or "
                "mx.export_function tracing (on a Mac the call is a lazy graph node). MLX said: "
                f"{error}"
            ) from None
        _check_types([t for _, t in converted] + [TYPE_STRINGS[dtype_name(d)] for d in output_dtypes])
        specs = [
            InputSpec(n, t, a.ndim, int(a.size)) for n, (a, t) in zip(self.input_names, converted)
        ]
        kernel = self._kernel(specs, output_dtypes, template, verbose)
        out_names = [dtype_name(d) for d in output_dtypes]
        outputs: list[np.ndarray] = []
        for shape, name in zip(output_shapes, out_names):
            dtype = NUMPY_DTYPES[TYPE_STRINGS[name]]
            if init_value is None:
                arr = np.empty(tuple(shape), dtype=dtype)
                arr.reshape(-1).view(np.uint8)[:] = 0xFF
            elif name == "bfloat16":
                arr = np.full(tuple(shape), bfloat16_bits(init_value), dtype=np.uint16)
            else:
                arr = np.full(tuple(shape), init_value).astype(dtype)
            outputs.append(arr)
        records = PrintRecords.for_launch() if self.device_prints is not None else None
        try:
            kernel.launch([a for a, _ in converted], outputs, grid, threadgroup, prints=records)
        finally:
            if records is not None and self.device_prints is not None:
                self.device_prints(records)
        mx = _mlx()
        result = []
        for arr, name in zip(outputs, out_names):
            if name == "bfloat16":
                result.append(mx.array(arr).view(mx.bfloat16))
            else:
                result.append(mx.array(arr))
        arrays = [v for v in inputs if _is_mlx_array(v)]
        return _connected(self.name, arrays, result) if arrays else result

    def _kernel(
        self,
        specs: list[InputSpec],
        output_dtypes: Sequence[object],
        template: Sequence[tuple[str, object]] | None,
        verbose: bool,
    ) -> EmulatorKernel:
        """The compiled kernel for these inputs and outputs (built once per kernel text)."""
        out_specs = [
            OutputSpec(n, TYPE_STRINGS[dtype_name(d)]) for n, d in zip(self.output_names, output_dtypes)
        ]
        targs = [(k, _template_value(v)) for k, v in (template or ())]
        ksrc = build_kernel_source(
            self.name, specs, out_specs, self.source, self.header, targs, self.atomic_outputs
        )
        if verbose:
            print(ksrc.text)
        asan = asan_enabled()
        key = (ksrc.text, asan, checks_enabled())
        kernel = self._compiled.get(key)
        if kernel is None:
            kernel = EmulatorKernel.build(
                ksrc, self.source, self.header, asan=asan, fast_math=self.fast_math
            )
            self._compiled[key] = kernel
        return kernel

    def _lazy(self, inputs: Sequence[object]) -> bool:
        """A launch with an MLX input becomes a node of MLX's graph (`lazy_mlx.py`), unless it
        prints (its lines are written from Python), runs under ASan, or the extension is off or
        cannot be built (then it runs now, as before)."""
        if self.device_prints is not None or asan_enabled() or not any(_is_mlx_array(v) for v in inputs):
            return False
        from triton_metal.backends.emulator import lazy_mlx

        return lazy_mlx.enabled() and lazy_mlx.available()

    def _launch_lazily(self, call: _Call, verbose: bool) -> list[Any]:
        from triton_metal.backends.emulator import lazy_mlx

        mx = _mlx()
        exported = self._in_export_trace(call)
        if exported is not None:
            return exported
        arrays = [v if _is_mlx_array(v) else _mlx_input(v) for v in call.inputs]
        names = [dtype_name(d) for d in call.output_dtypes]
        _check_types([TYPE_STRINGS[n] for n in [dtype_name(a.dtype) for a in arrays] + names])
        specs = [
            InputSpec(n, TYPE_STRINGS[dtype_name(a.dtype)], a.ndim, int(a.size))
            for n, a in zip(self.input_names, arrays)
        ]
        mlx_dtypes = [getattr(mx, "bool_" if name == "bool" else name) for name in names]
        kernel = self._kernel(specs, call.output_dtypes, call.template, verbose)
        reword = self.faults or (lambda error: error)

        def describe(status: int, message: str) -> Exception:
            return reword(kernel.error(status, message))

        return lazy_mlx.launch(self.name, describe, kernel, arrays, call.output_shapes, mlx_dtypes, call.grid,
                               call.threadgroup, call.init_value)

    def _in_export_trace(self, call: _Call) -> list[Any] | None:
        """Inside `mx.export_function` tracing, the node of MLX's own `mx.fast.metal_kernel`
        built from the very same arguments: the exported function is what a Mac exports (MLX
        can serialize its `CustomKernel`, not the emulator's primitive). Without Metal MLX builds
        that node only inside an export trace and raises "No Metal back-end" anywhere else,
        which is how the trace is recognised; None outside one (or where Metal exists, so that
        the emulator never hands a launch to the GPU)."""
        mx = _mlx()
        if mx.metal.is_available():
            return None
        if self._mlx_kernel is None:
            self._mlx_kernel = mx.fast.metal_kernel(
                name=self.name, input_names=list(self.input_names),
                output_names=list(self.output_names), source=self.source, header=self.header,
                ensure_row_contiguous=self.ensure_row_contiguous,
                atomic_outputs=self.atomic_outputs,
                **({"compile_options": self.compile_options} if self.compile_options else {}),
            )
        try:
            return list(self._mlx_kernel(
                inputs=list(call.inputs), output_shapes=[tuple(s) for s in call.output_shapes],
                output_dtypes=list(call.output_dtypes), grid=tuple(call.grid),
                threadgroup=tuple(call.threadgroup),
                template=list(call.template) if call.template else None, init_value=call.init_value,
            ))
        except RuntimeError as error:
            if "No Metal back-end" not in str(error):
                raise
            return None


def _check_types(type_strings: Sequence[str]) -> None:
    for type_string in type_strings:
        if type_string not in NUMPY_DTYPES and type_string != "double":  # refused by the source
            raise ValueError(f"the Metal emulator does not support arrays of {type_string}")


def _mlx_input(value: object) -> Any:
    """A Python scalar or NumPy input as the MLX array MLX would make of it."""
    arr, _ = _to_numpy(value)
    return _mlx().array(arr)


def _connected(name: str, inputs: list[Any], outputs: list[Any]) -> list[Any]:
    """The outputs as nodes of MLX's graph that depend on the inputs and, like MLX's
    `CustomKernel`, have no vjp, jvp or vmap: the emulator computes them eagerly, and constants
    would let `mx.grad` through a kernel return zeros instead of failing as it does on a Mac."""
    mx = _mlx()

    def refuse(rule: str) -> Callable[..., Any]:
        def raise_(*args: Any, **kwargs: Any) -> Any:
            raise ValueError(f"[Primitive::{rule}] Not implemented for CustomKernel "
                             f"(metal_kernel '{name}').")

        return raise_

    node = mx.custom_function(lambda *arrays: list(outputs))
    node.vjp(refuse("vjp"))
    node.jvp(refuse("jvp"))
    node.vmap(refuse("vmap"))
    return list(node(*inputs))


def metal_kernel(
    name: str,
    input_names: Sequence[str],
    output_names: Sequence[str],
    source: str,
    header: str = "",
    ensure_row_contiguous: bool = True,
    atomic_outputs: bool = False,
    compile_options: dict[str, str] | None = None,
    *,
    device_prints: Callable[[PrintRecords], None] | None = None,
    faults: Callable[[Exception], Exception] | None = None,
) -> Callable[..., list[Any]]:
    """A kernel factory with the signature and rules of `mx.fast.metal_kernel` (module doc);
    `device_prints` (the emulator's own) receives what each launch's `tl.device_print`s printed,
    `faults` rewords the faults of lazy launches (raised when MLX evaluates them)."""
    if not output_names:
        raise ValueError("[metal_kernel] Must specify at least one output.")
    fast_math = False
    if compile_options is not None:
        for key, value in compile_options.items():
            if key != "math_mode":
                raise ValueError(f"[metal_kernel] Unknown compile option '{key}'.")
            if value not in _MATH_MODES:
                raise ValueError(f"[metal_kernel] Invalid math_mode '{value}'.")
            fast_math = value == "fast"
    return MetalKernel(
        name,
        tuple(input_names),
        tuple(output_names),
        source,
        header,
        ensure_row_contiguous,
        atomic_outputs,
        fast_math,
        device_prints,
        faults,
        dict(compile_options) if compile_options is not None else None,
    )
