"""What every op shares: argument checks that name the op and the argument, and launch helpers.

Checks run before anything is launched, so bad input raises here and never reaches a kernel.
MLX arrays reach a kernel row-major (the Metal driver builds kernels with
`ensure_row_contiguous=True`, the emulator copies them row-major), so a launcher passes strides
computed from the shape and a non-contiguous input costs MLX's own copy, nothing more.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import OpError

FLOAT_DTYPES = ("float32", "float16", "bfloat16")


def mx() -> Any:
    import mlx.core

    return mlx.core


class OpArgumentError(OpError):
    """Bad input to a `triton_metal.ops` function, raised before any kernel runs (an `OpError`,
    so a `ValueError` too)."""


def fail(op: str, arg: str, why: str) -> OpArgumentError:
    return OpArgumentError(f"triton_metal.ops.{op}: argument '{arg}': {why}")


def dtype_name(a: Any) -> str:
    return str(a.dtype).rsplit(".", 1)[-1]


def check_array(op: str, arg: str, a: Any, dtypes: tuple[str, ...] = FLOAT_DTYPES,
                min_ndim: int = 1) -> None:
    """`a` is an MLX array of one of `dtypes` with at least `min_ndim` axes."""
    m = mx()
    if not isinstance(a, m.array):
        raise fail(op, arg, f"expected an mlx.core.array, got {type(a).__name__}")
    if dtype_name(a) not in dtypes:
        raise fail(op, arg, f"dtype {dtype_name(a)} is not supported (expected one of {', '.join(dtypes)})")
    if a.ndim < min_ndim:
        raise fail(op, arg, f"expected at least {min_ndim} dimension(s), got shape {tuple(a.shape)}")


def check_same_dtype(op: str, arg: str, a: Any, ref_arg: str, ref: Any) -> None:
    if a.dtype != ref.dtype:
        raise fail(op, arg, f"dtype {dtype_name(a)} differs from {ref_arg}'s {dtype_name(ref)}")


def check_int(op: str, arg: str, v: Any, low: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise fail(op, arg, f"expected an int, got {type(v).__name__}")
    if low is not None and v < low:
        raise fail(op, arg, f"expected an int >= {low}, got {v}")
    return v


def check_float(op: str, arg: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise fail(op, arg, f"expected a float, got {type(v).__name__}")
    return float(v)


def normalize_axis(op: str, axis: Any, ndim: int) -> int:
    axis = check_int(op, "axis", axis)
    if not -ndim <= axis < ndim:
        raise fail(op, "axis", f"axis {axis} is out of range for an array of {ndim} dimension(s)")
    return axis % ndim


def rows_of(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape[:-1]:
        n *= s
    return n


def zeros(shape: tuple[int, ...], dtype: Any) -> Any:
    """A fresh output array (the kernel overwrites every element)."""
    return mx().zeros(shape, dtype=dtype)


PROGRAMS_PER_CORE = 4
"""Threadgroups a persistent grid gives each GPU core at most (several fit a core at once)."""
PROGRAMS_UNKNOWN_CHIP = 256
"""A persistent grid's most programs where the core count is unknown (the emulator): as a GPU of
64 cores."""
ROWS_PER_PROGRAM = 16
"""Rows a persistent program takes at least, where there are enough rows to keep one program a
core: each program writes a float32 partial row of the weight (and bias) gradient, so P programs
over M rows add P / M of a 16-bit input's bytes to the pass, and the partials' sum reads them
again. Through the GPU proxy (132 cores) the norms' backward was fastest at 16 rows a program for
8192 x 2048 and 4096 x 4096, and at the core count (8 rows) for 1024 x 16384 (docs/ops.md,
"Tenth round")."""


def persistent_programs(rows: int) -> int:
    """Programs of a persistent grid over `rows` rows: a few per GPU core, as Triton kernels size
    theirs from the SM count (`get_hardware_capabilities().gpu_cores`, read on a Mac from the
    IORegistry), but no fewer than `ROWS_PER_PROGRAM` rows a program while that leaves a program
    a core, and never more programs than rows."""
    from ..backends.metal.chip import gpu_core_count
    from ..runtime.backend import METAL, active_backend_name

    known = gpu_core_count() if active_backend_name() == METAL else None
    cores = known or PROGRAMS_UNKNOWN_CHIP // PROGRAMS_PER_CORE
    return max(1, min(rows, cores * PROGRAMS_PER_CORE, max(rows // ROWS_PER_PROGRAM, cores)))


def next_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def tuning_enabled() -> bool:
    """Benchmark every config that fits? On Metal yes; on the emulator and the interpreter only
    when `TRITON_METAL_TUNE_OPS=1` (their timings rank CPU costs, which say nothing about a GPU,
    and every config is a compile)."""
    from ..runtime.backend import METAL, active_backend_name

    if os.environ.get("TRITON_METAL_TUNE_OPS", "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    return active_backend_name() == METAL


def first_or_all(configs: list[Any]) -> list[Any]:
    """The configs to time: all of them when tuning, else the first (the default)."""
    return list(configs) if tuning_enabled() else list(configs[:1])


def first(v: Any) -> Any:
    """The array of a single-output op's outputs or cotangents (MLX passes one array bare)."""
    return v if isinstance(v, mx().array) else v[0]
