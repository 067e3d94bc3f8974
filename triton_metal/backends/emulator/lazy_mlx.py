"""Lazy emulator launches on MLX arrays: each launch is a node of MLX's graph, as on a Mac.

`launch(label, kernel, inputs, output_shapes, output_dtypes, grid, threadgroup, init_value)`
returns the outputs of one run of `kernel` (an `EmulatorKernel`) as unevaluated MLX arrays.
Their node is an MLX primitive (`EmulatorKernel`, `mlx_primitive/emulator_launch.cpp`) whose
`eval_cpu` runs the kernel's compiled library on MLX's CPU stream, on buffers MLX allocated
(through aligned copies where MLX's lack Metal's 16-byte alignment); nothing is evaluated at the
launch, so `mx.compile` traces launches on Linux too. Like MLX's `CustomKernel` the node has no
vjp, jvp or vmap: MLX's "[Primitive::vjp] Not implemented for CustomKernel" errors, naming the
`metal_kernel` (`label`). MLX cannot export the node; `api.py` builds MLX's own `metal_kernel`
node inside an export trace instead.

The primitive is a Python extension built on first use (about 10 s of g++ CPU time), cached in
the private emulator cache by `toolchain.build` (keyed by its source and `tm_abi.h`, the
compiler, MLX's and nanobind's versions and the Python ABI), compiled against the headers and
`libmlx` the mlx wheel ships and the `nanobind` package, in MLX's nanobind domain so that an
`mx.array` crosses as the C++ array.
`available()` says whether it could be built and loaded; where it cannot (no nanobind, no
Python headers, an MLX built with another nanobind ABI, a compile error), or with
`TRITON_METAL_EMULATOR_LAZY=0`, the caller keeps the eager path (the kernel runs at the call),
after one `RuntimeWarning` that gives the reason.

A fault found by the kernel (bounds checks, the watchdog, barrier errors) surfaces when the
graph is evaluated, as the exception the eager launch raises (`fault`, called by the extension's
exception translator), where a Mac reports a command-buffer error; launches that print
(`tl.device_print`) or run under ASan stay eager, their output being produced by Python.
"""

from __future__ import annotations

import functools
import os
import sys
import sysconfig
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from triton_metal.backends.emulator.kernel import (
    NUMPY_DTYPES, EmulatorKernel, _env_float, _env_int, bfloat16_bits, dispatch_dims, shape_buffer,
)
from triton_metal.backends.emulator.runtime_lib import RUNTIME_DIR, shared_flags
from triton_metal.backends.emulator.signature import ParamKind
from triton_metal.backends.emulator.toolchain import BuildFailure, SourceFiles, ToolchainError, build

SOURCE = Path(__file__).resolve().parent / "mlx_primitive" / "emulator_launch.cpp"
MODULE_NAME = "_emulator_launch"
MLX_NANOBIND_DOMAIN = "mlx"
"""The nanobind domain of MLX's Python module (its `NB_DOMAIN`): bindings share their types
only within one domain, so the extension must be built in MLX's."""

_SLOT_INPUT, _SLOT_OUTPUT, _SLOT_CONSTANT = 0, 1, 2


def enabled() -> bool:
    """Lazy launches are wanted (`TRITON_METAL_EMULATOR_LAZY` is not `0`)."""
    return os.environ.get("TRITON_METAL_EMULATOR_LAZY", "1") != "0"


def available() -> bool:
    """The extension is built and loaded (building it on the first call); False, after one
    warning, where it cannot be."""
    return _extension() is not None


class ExtensionUnavailable(Exception):
    """Why the extension cannot be built here (the text of the fallback warning)."""


def _build_inputs() -> tuple[list[str], list[str]]:
    """(compiler flags, key parts) for the extension; raises `ExtensionUnavailable`."""
    try:
        import mlx.core as mx
        import nanobind
    except ImportError as error:
        raise ExtensionUnavailable(f"{error.name} is not installed (pip install {error.name})") from None
    mlx_dir = Path(mx.__file__).resolve().parent
    mlx_include, mlx_lib = mlx_dir / "include", mlx_dir / "lib"
    python_include = sysconfig.get_paths()["include"]
    nb_dir = Path(nanobind.__file__).resolve().parent
    needed = {
        "MLX's C++ headers": mlx_include / "mlx" / "mlx.h",
        "MLX's library": mlx_lib / "libmlx.so",
        "Python's headers": Path(python_include, "Python.h"),
        "nanobind's sources": nb_dir / "src" / "nb_combined.cpp",
    }
    if sys.platform == "darwin":
        needed["MLX's library"] = mlx_lib / "libmlx.dylib"
    for what, path in needed.items():
        if not path.exists():
            raise ExtensionUnavailable(f"{what}: {path} is missing")
    flags = [
        "-std=c++20", "-O2", "-fPIC", "-shared", "-fvisibility=hidden", "-pthread",
        f"-DNB_DOMAIN={MLX_NANOBIND_DOMAIN}",
        "-isystem", python_include, "-isystem", str(nb_dir / "include"),
        "-isystem", str(nb_dir / "ext" / "robin_map" / "include"), "-isystem", str(mlx_include),
        *shared_flags(),
        "-o", "{out}", SOURCE.name, str(needed["nanobind's sources"]),
        "-L", str(mlx_lib), "-lmlx", f"-Wl,-rpath,{mlx_lib}", "-ldl",
    ]
    keys = [mx.__version__, getattr(nanobind, "__version__", ""), sysconfig.get_config_var("EXT_SUFFIX") or ""]
    return flags, keys


@functools.lru_cache(maxsize=None)
def _extension() -> ModuleType | None:
    try:
        return _load()
    except ExtensionUnavailable as why:
        warnings.warn(
            f"triton_metal: MLX launches on the emulator run eagerly (each kernel runs when it is "
            f"launched, so mx.compile, mx.vmap and mx.export_function over them raise), because "
            f"the lazy-launch extension is unavailable: {why}",
            RuntimeWarning,
            stacklevel=4,
        )
        return None


def _announce_build() -> None:
    """One stderr line before the build (it runs only when no cached one fits): a first MLX
    launch waits for it."""
    from triton_metal.runtime import progress

    if progress.enabled():
        print("[triton_metal] building the emulator's MLX launch extension (once per MLX and "
              "compiler; about 10 s of CPU)", file=sys.stderr, flush=True)


def _load() -> ModuleType:
    import importlib.util

    flags, keys = _build_inputs()
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    try:
        # the launch description's layout comes from the runtime's header: part of the key
        path = build("mlx-launch", suffix, SourceFiles((SOURCE, RUNTIME_DIR / "tm_abi.h")), flags, keys,
                     prepare=_announce_build)
    except BuildFailure as failure:
        tail = "\n".join(failure.stderr.strip().splitlines()[-12:])
        raise ExtensionUnavailable(f"it failed to compile:\n{tail}") from None
    except ToolchainError as error:  # no compiler: the emulator itself cannot run either
        raise ExtensionUnavailable(str(error)) from None
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
    if spec is None or spec.loader is None:
        raise ExtensionUnavailable(f"{path} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as error:
        raise ExtensionUnavailable(f"it does not load: {error}") from None
    import mlx.core as mx

    try:
        module.accepts(mx.zeros((1,)))
    except TypeError:
        raise ExtensionUnavailable(
            "the installed MLX was built with a nanobind whose ABI differs from the installed "
            "nanobind's, so MLX arrays cannot cross into the extension"
        ) from None
    return module


def _fill_bytes(dtype: np.dtype, init_value: float | None, bfloat16: bool) -> bytes:
    """One element's bytes to fill an output with: `init_value`, or all bits set (what
    `metal_kernel` on the emulator gives for MLX's uninitialised outputs)."""
    if init_value is None:
        return b"\xff" * dtype.itemsize
    if bfloat16:
        return np.uint16(bfloat16_bits(init_value)).tobytes()
    return np.asarray(np.full((), init_value).astype(dtype)).tobytes()


_describers: dict[int, tuple[EmulatorKernel, Callable[[int, str], BaseException]]] = {}
"""Per compiled kernel launched lazily (by `id`, the kernel held so the id stays its own): what
makes the exception its eager launch raises for a fault."""


def fault(token: int, status: int, message: str) -> BaseException:
    """The exception for a fault of a lazy launch, raised from MLX's evaluation (the extension's
    exception translator calls this): what the eager launch raises at the call."""
    entry = _describers.get(token)
    return entry[1](status, message) if entry is not None else RuntimeError(message)


def launch(
    label: str,
    describe: Callable[[int, str], BaseException],
    kernel: EmulatorKernel,
    inputs: Sequence[Any],
    output_shapes: Sequence[Sequence[int]],
    output_dtypes: Sequence[Any],
    grid: Sequence[int],
    threadgroup: Sequence[int],
    init_value: float | None,
) -> list[Any]:
    """The outputs of one run of `kernel` as lazy MLX arrays (module docstring). `label` is the
    `metal_kernel`'s name (the derivative refusals give it), `describe` makes the exception for
    a fault from the runtime's status and message, `inputs` are MLX arrays, `output_dtypes` MLX
    dtypes."""
    import mlx.core as mx

    module = _extension()
    assert module is not None, "launch() is called after available()"
    token = id(kernel)
    _describers[token] = (kernel, describe)
    g, tpt = dispatch_dims(grid, threadgroup)
    kinds: list[int] = []
    index: list[int] = []
    constants: list[bytes] = []
    counts: list[int] = []
    fills: dict[int, bytes] = {}
    for p in kernel.source.params:
        if p.kind is ParamKind.ATTRIBUTE:
            continue
        assert p.arg is not None
        if p.kind is ParamKind.INPUT:
            kinds.append(_SLOT_INPUT)
            index.append(p.arg)
        elif p.kind is ParamKind.OUTPUT:
            kinds.append(_SLOT_OUTPUT)
            index.append(p.arg)
            bf16 = output_dtypes[p.arg] == mx.bfloat16
            fills[p.arg] = _fill_bytes(NUMPY_DTYPES[p.element], init_value, bf16)
        else:
            buf = shape_buffer(p.kind, inputs[p.arg].shape)
            kinds.append(_SLOT_CONSTANT)
            index.append(len(constants))
            constants.append(buf.tobytes())
            counts.append(int(buf.size))
    return list(module.launch(
        list(inputs), [list(s) for s in output_shapes], list(output_dtypes),
        kernel.source.kernel_name, label, token, str(kernel.artifact), kinds, index, constants, counts,
        [fills[i] for i in range(len(output_shapes))], list(g), list(tpt), kernel.checked,
        _env_float("TRITON_METAL_EMULATOR_WATCHDOG", 30.0), _env_int("TRITON_METAL_EMULATOR_THREADS", 0),
        _env_int("TRITON_METAL_EMULATOR_STACK", 128 * 1024),
    ))
