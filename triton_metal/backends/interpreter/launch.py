"""Run a `@jit` kernel in the NumPy interpreter: the kernel's real Python body, once per program.

    launch(kernel, grid, args) -> None

`args` maps every parameter (in order) to its bound value: NumPy arrays (written in place; a view
is the address of its first element), MLX arrays (copied in row-major, as every backend passes
them, and rebound with `arr[...] = result` if the kernel wrote to them), Python/NumPy scalars, constexpr values, None. The runtime has already
validated and bound them. Programs run sequentially `for z, for y, for x` under
`active_semantic(...)`, so builtins find the interpreter's semantic, `print` and `pdb` work, and
`@jit` helpers simply run. An exception from the body is re-raised naming the kernel, the program
and the kernel source line that raised it, with the original as its cause; every value the
launch wrote before is put back first (`Memory.roll_back`), so a refused launch leaves all arrays
as they were (a read-only second output, say, is refused with the first one untouched).
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from triton_metal.errors import (
    CompilationError, InterpreterError, InterpreterOutOfBounds, LaunchError, Loc, TritonError,
    out_of_bounds_message,
)
from triton_metal.language import JITCallable, Semantic, active_semantic, constexpr, tensor
from triton_metal.language.core import tuple_like
from triton_metal.language.descriptor import tensor_descriptor
from triton_metal.language.types import (
    FP64_REFUSAL,
    bfloat16,
    dtype,
    float16,
    float32,
    int1,
    int8,
    int16,
    int32,
    int64,
    pointer_type,
    uint8,
    uint16,
    uint32,
    uint64,
)

from .memory import Memory
from .numpy_builder import NumpyBuilder, TensorHandle
from .numerics import bf16_bits_to_f32, f32_to_bf16_bits, storage_dtype
from .rewrite import call_function, interpretable

# triton_metal/backends/interpreter/launch.py -> triton_metal/
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_NP_TO_TL: dict[str, dtype] = {
    "bool": int1, "int8": int8, "int16": int16, "int32": int32, "int64": int64,
    "uint8": uint8, "uint16": uint16, "uint32": uint32, "uint64": uint64,
    "float16": float16, "float32": float32, "bfloat16": bfloat16,
}


@dataclass
class _MlxBinding:
    original: Any
    host: np.ndarray
    is_bf16: bool


def launch(kernel: JITCallable, grid: tuple[int, int, int], args: dict[str, object]) -> None:
    """Run `kernel` over `grid` programs with the bound `args` (see the module docstring)."""
    gx, gy, gz = (int(g) for g in grid)
    if min(gx, gy, gz) < 0:
        raise LaunchError(f"grid {tuple(grid)} has a negative size")
    from triton_metal.frontend.static_check import check_kernel

    check_kernel(kernel)  # the constructs the compiler refuses are refused here too
    from triton_metal.backends.emulator.bounds import checks_enabled

    memory = Memory(checked=checks_enabled())  # the emulator's opt-out turns both off
    constexprs = _constexpr_params(kernel)
    mlx: dict[int, _MlxBinding] = {}
    bound = {name: _bind(name, value, memory, mlx, name in constexprs) for name, value in args.items()}
    builder = NumpyBuilder(memory, (gx, gy, gz))
    sem = Semantic(builder, concrete=builder.concrete, call_jit=_checked_call)
    body = interpretable(kernel.fn)
    try:
        with np.errstate(all="ignore"), active_semantic(sem):
            for z in range(gz):
                for y in range(gy):
                    for x in range(gx):
                        builder.program = (x, y, z)
                        try:
                            body(**bound)
                        except Exception as exc:  # noqa: BLE001 - re-raised with the kernel's location
                            located = _located(exc, kernel, (x, y, z))
                            if located is exc:
                                raise
                            cause = located.__cause__ if isinstance(located, CompilationError) else exc
                            raise located from cause
    except BaseException:
        memory.roll_back()  # a refused launch (a read-only output, an assert) writes nothing
        raise
    memory.undo.clear()
    _write_back(mlx, memory)


# -- arguments ----------------------------------------------------------------------------------


def _constexpr_params(kernel: JITCallable) -> set[str]:
    names = getattr(kernel, "constexpr_names", None)
    if names is not None:
        return set(names)
    out: set[str] = set()
    for name, ann in getattr(kernel.fn, "__annotations__", {}).items():
        if ann is constexpr or (isinstance(ann, str) and ann.split(".")[-1] == "constexpr"):
            out.add(name)
    return out


def _bind(name: str, value: Any, memory: Memory, mlx: dict[int, _MlxBinding], is_constexpr: bool) -> Any:
    if isinstance(value, constexpr):
        return value
    if is_constexpr or value is None:
        return constexpr(value)  # as the front end binds a compile-time parameter
    if isinstance(value, tensor):
        return value
    if isinstance(value, np.ndarray):
        return _pointer(name, value, memory, _element_type(name, value.dtype))
    if _is_mlx(value):
        return _bind_mlx(name, value, memory, mlx)
    if _is_host_descriptor(value):
        return _bind_descriptor(name, value, memory, mlx)
    if isinstance(value, tuple):  # a tuple argument: each element bound as an argument of its own
        return tuple_like(value, [_bind(f"{name}[{i}]", v, memory, mlx, False) for i, v in enumerate(value)])
    wrapped_dtype = getattr(value, "dtype", None)
    base = getattr(value, "base", None)
    if isinstance(wrapped_dtype, dtype) and base is not None:  # reinterpret(array, tl dtype)
        host = base if isinstance(base, np.ndarray) else _bind_mlx_host(name, base, memory, mlx)
        return _pointer(name, host, memory, wrapped_dtype)
    if isinstance(value, (bool, np.bool_)):
        return _scalar(bool(value), int1)
    if isinstance(value, (int, np.integer)):
        v = int(value)
        if isinstance(value, np.integer):
            return _scalar(v, _element_type(name, value.dtype))
        if -(2**31) <= v < 2**31:
            return _scalar(v, int32)
        if -(2**63) <= v < 2**63:
            return _scalar(v, int64)
        if 0 <= v < 2**64:
            return _scalar(v, uint64)
        raise LaunchError(f"argument '{name}' = {v} does not fit in 64 bits")
    if isinstance(value, (float, np.floating)):
        return _scalar(float(value), float32)
    return constexpr(value)  # dtypes, @jit functions, strings...: compile-time values


def _is_host_descriptor(value: Any) -> bool:
    module = sys.modules.get("triton_metal.tools.tensor_descriptor")
    return module is not None and isinstance(value, module.TensorDescriptor)


def _bind_descriptor(name: str, value: Any, memory: Memory, mlx: dict[int, _MlxBinding]) -> tensor_descriptor:
    """A host `TensorDescriptor` as the kernel sees it: the `tl.tensor_descriptor` over its
    base pointer, shape and strides (run-time scalars, as a compiled kernel receives them)."""
    parts = [value.base, *value.shape, *value.strides]
    bound = [_bind(f"{name}.{i}", v, memory, mlx, False) for i, v in enumerate(parts)]
    return tensor_descriptor.from_parts(bound, value.block_shape, value.padding)


def _element_type(name: str, np_dtype: np.dtype) -> dtype:
    key = np.dtype(np_dtype).name
    if key == "float64":
        raise LaunchError(f"argument '{name}' is a float64 array: {FP64_REFUSAL}")
    try:
        return _NP_TO_TL[key]
    except KeyError:
        raise LaunchError(f"argument '{name}' has dtype {key}, which kernels cannot use") from None


def _scalar(v: bool | int | float, ty: dtype) -> tensor:
    return tensor(TensorHandle(np.array(v, dtype=storage_dtype(ty)), ty), ty)


def scalar_argument(value: Any, ty: dtype) -> tensor:
    """A run-time scalar argument of type `ty` (a parameter annotated `tl.float16`, `tl.uint8`,
    ...; the runtime checked that `ty` holds it), as a compiled launch passes it: a float is
    rounded to fp32 (its carrier), then to `ty`."""
    if ty.is_bf16():
        held = bf16_bits_to_f32(f32_to_bf16_bits(np.array(value, np.float32)))
        return tensor(TensorHandle(held, ty), ty)
    if ty.is_floating():
        return _scalar(np.float32(value), ty)
    return _scalar(value.item() if isinstance(value, np.generic) else value, ty)


def _pointer(name: str, arr: np.ndarray, memory: Memory, elem: dtype) -> tensor:
    addr = memory.register(arr, name)
    ty = pointer_type(elem)
    return tensor(TensorHandle(np.array(addr, dtype=np.uint64), ty), ty)


def _is_mlx(value: Any) -> bool:
    return type(value).__module__.startswith("mlx")


def _bind_mlx_host(name: str, arr: Any, memory: Memory, mlx: dict[int, _MlxBinding]) -> np.ndarray:
    found = mlx.get(id(arr))
    if found is not None:
        return found.host
    import mlx.core as mx

    is_bf16 = arr.dtype == mx.bfloat16
    # Row-major, as every backend sees an MLX array (docs/runtime.md, "MLX arrays"): NumPy would
    # keep the layout of a transposed view, which no other backend passes.
    host = np.array(arr.view(mx.uint16) if is_bf16 else arr, order="C")
    if host.dtype == np.float64:
        raise LaunchError(f"argument '{name}' is a float64 array: {FP64_REFUSAL}")
    mlx[id(arr)] = _MlxBinding(arr, host, is_bf16)
    return host


def _bind_mlx(name: str, arr: Any, memory: Memory, mlx: dict[int, _MlxBinding]) -> tensor:
    host = _bind_mlx_host(name, arr, memory, mlx)
    elem = bfloat16 if mlx[id(arr)].is_bf16 else _element_type(name, host.dtype)
    return _pointer(name, host, memory, elem)


def _write_back(mlx: dict[int, _MlxBinding], memory: Memory) -> None:
    if not mlx:
        return
    import mlx.core as mx

    written = {id(b.owner) for b in memory.buffers if b.written}
    for binding in mlx.values():
        if id(binding.host) not in written:
            continue
        result = mx.array(binding.host)
        if binding.is_bf16:
            result = result.view(mx.bfloat16)
        binding.original[...] = result


def _checked_call(fn: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    """A `@jit` call the interpreter runs, its callee checked first as the compiler checks what
    it inlines (`static_check.check_called`: once per function; an aggregate's method is first
    checked here)."""
    from triton_metal.frontend.static_check import check_called

    if isinstance(fn, JITCallable):
        check_called(fn)
    return call_function(fn, args, kwargs)


# -- errors -------------------------------------------------------------------------------------


def _kernel_frame(exc: BaseException) -> traceback.FrameSummary | None:
    """The kernel (or user helper) line at fault: the last frame of user code on the way from
    the launch into triton_metal's builtins (frames deeper than the builtins, such as NumPy's,
    are not the kernel's)."""
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        inside = os.path.abspath(frame.filename).startswith(_PACKAGE_DIR + os.sep)
        if found is None:
            if not inside:
                found = frame  # the kernel body itself
            continue
        if inside:
            if _passes_through(frame):
                continue  # a call to a user @jit helper: keep following into the helper
            break
        found = frame
    return found


def _passes_through(frame: traceback.FrameSummary) -> bool:
    """Frames between a kernel line and the user code it calls: the @jit call, the semantic's
    `call_jit`, the launch's `_checked_call`, and the rewritten body's runtime (a logical
    operation calls its operands)."""
    base = os.path.basename(frame.filename)
    return base in ("jit_marker.py", "rewrite.py") or (base, frame.name) in _PASSED_THROUGH


_PASSED_THROUGH = {("base.py", "call_jit"), ("launch.py", "_checked_call")}


def _located(exc: Exception, kernel: JITCallable, pid: tuple[int, int, int]) -> Exception:
    frame = _kernel_frame(exc)
    loc = None
    source = None
    if frame is not None and frame.lineno is not None:
        col = (frame.colno or 0) if hasattr(frame, "colno") else 0
        loc = Loc(frame.filename, frame.lineno, col)
        source = frame.line
    name = kernel.__name__
    if isinstance(exc, CompilationError):
        return exc.with_context(loc, name)
    if isinstance(exc, InterpreterOutOfBounds) and exc.argument and frame is not None:
        # worded as the emulator's bounds checks word it (errors.py)
        return InterpreterOutOfBounds(
            out_of_bounds_message(name, exc.argument, exc.index, exc.extent, frame.filename,
                                  frame.lineno or 0, pid, source or ""),
            exc.argument, exc.index, exc.extent,
        )
    where = f"{loc}: " if loc is not None else ""
    text = f"{where}in kernel '{name}', program {pid}"
    if source:
        text += f"\n    {source.strip()}"
    reason = str(exc) if isinstance(exc, TritonError) else f"{type(exc).__name__}: {exc}"
    cls = InterpreterOutOfBounds if isinstance(exc, InterpreterOutOfBounds) else InterpreterError
    return cls(f"{text}\nerror: {reason}")
