"""Launch grids and launch options: checked and normalised before anything runs.

A grid is what `kernel[grid]` receives: a tuple (or list) of 1 to 3 non-negative ints, or a
callable `grid(META)` returning one, where META maps every parameter name to its bound value
(constexprs included), as in Triton. The result is padded to three dimensions. A grid with a
zero dimension has no programs: the launch compiles the kernel and runs nothing, as Triton's
launcher does (`kernel[(triton.cdiv(0, BLOCK),)]` over an empty batch).

Limits: `tl.program_id` is a 32-bit signed value, so each dimension holds at most 2**31 - 1
programs; the Metal backend spreads programs over the y and z thread dimensions when the x
dimension would pass MLX's 2**31-thread bound, so no tighter limit applies here. A program is one
threadgroup of `32 * num_warps` threads, and Metal allows at most 1024 threads per threadgroup,
so `num_warps` is a power of two from 1 to 32.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..chip import MAX_THREADS_PER_THREADGROUP
from ..errors import LaunchError, NumWarpsError

MAX_PROGRAMS_PER_DIM = 2**31 - 1
"""`tl.program_id` is an int32: a dimension holds at most this many programs."""

VALID_NUM_WARPS = frozenset({1, 2, 4, 8, 16, 32})

Grid3 = tuple[int, int, int]
GridSpec = tuple[int, ...] | list[int] | Callable[[dict[str, Any]], Any]


def resolve_grid(grid: object, meta: Callable[[], dict[str, Any]], kernel: str) -> Grid3:
    """The grid as three non-negative ints; `meta()` builds META only when `grid` is callable."""
    if callable(grid):
        value = grid(meta())
        where = "the grid function returned"
    else:
        value = grid
        where = "grid is"
    return normalize_grid(value, kernel, where)


def normalize_grid(value: object, kernel: str, where: str = "grid is") -> Grid3:
    if type(value) is tuple:  # the common case, checked without building anything
        n = len(value)
        if n == 1:
            (x,) = value
            if type(x) is int and 0 <= x <= MAX_PROGRAMS_PER_DIM:
                return (x, 1, 1)
        elif n == 2:
            x, y = value
            if (
                type(x) is int and type(y) is int
                and 0 <= x <= MAX_PROGRAMS_PER_DIM
                and 0 <= y <= MAX_PROGRAMS_PER_DIM
            ):
                return (x, y, 1)
        elif n == 3:
            x, y, z = value
            if (
                type(x) is int and type(y) is int and type(z) is int
                and 0 <= x <= MAX_PROGRAMS_PER_DIM
                and 0 <= y <= MAX_PROGRAMS_PER_DIM
                and 0 <= z <= MAX_PROGRAMS_PER_DIM
            ):
                return value  # type: ignore[return-value]
    return _normalize_grid_slow(value, kernel, where)


def _normalize_grid_slow(value: object, kernel: str, where: str) -> Grid3:
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        value = (value,)  # Triton accepts a bare int as a 1-D grid
    if not isinstance(value, (tuple, list)):
        raise LaunchError(
            f"{kernel}[grid]: {where} {value!r}; a grid is a tuple of 1 to 3 non-negative ints "
            "or a function of META returning one"
        )
    if not 1 <= len(value) <= 3:
        raise LaunchError(
            f"{kernel}[grid]: {where} {tuple(value)!r} with {len(value)} entries; "
            "a grid has 1 to 3 dimensions"
        )
    dims: list[int] = []
    for axis, entry in enumerate(value):
        if isinstance(entry, (bool, np.bool_)) or not isinstance(entry, (int, np.integer)):
            raise LaunchError(
                f"{kernel}[grid]: {where} {tuple(value)!r}; entry {axis} ({entry!r}) is not an int"
            )
        n = int(entry)
        if n < 0:
            raise LaunchError(
                f"{kernel}[grid]: {where} {tuple(value)!r}; entry {axis} is {n}, but a grid "
                "dimension cannot be negative"
            )
        if n > MAX_PROGRAMS_PER_DIM:
            raise LaunchError(
                f"{kernel}[grid]: {where} {tuple(value)!r}; entry {axis} is {n}, over the limit of "
                f"{MAX_PROGRAMS_PER_DIM} programs per dimension (tl.program_id is 32-bit)"
            )
        dims.append(n)
    while len(dims) < 3:
        dims.append(1)
    return (dims[0], dims[1], dims[2])


@dataclass(frozen=True, slots=True)
class LaunchOptions:
    """The launch keyword arguments Triton accepts; only `num_warps` and `debug` matter here."""

    num_warps: int = 4
    num_stages: int = 3
    """Software-pipelining depth on NVIDIA GPUs: accepted for portability, ignored."""
    num_ctas: int = 1
    """Thread-block clusters on Hopper: accepted for portability, ignored."""
    maxnreg: int | None = None
    """A register cap on NVIDIA GPUs: accepted for portability, ignored."""
    debug: bool = False


LAUNCH_OPTION_NAMES: tuple[str, ...] = ("num_warps", "num_stages", "num_ctas", "maxnreg", "debug")


def check_num_warps(num_warps: object, kernel: str) -> int:
    if type(num_warps) is int and num_warps in VALID_NUM_WARPS:
        return num_warps
    raise NumWarpsError(
        f"{kernel}: num_warps={num_warps!r}; num_warps must be a power of 2, from 1 to 32 "
        f"(a program is one threadgroup of 32 * num_warps threads, at most "
        f"{MAX_THREADS_PER_THREADGROUP} on Apple GPUs)"
    )


AMD_TUNING_OPTION_NAMES: frozenset[str] = frozenset(
    {"waves_per_eu", "matrix_instr_nonkdim", "kpack", "schedule_hint", "instruction_sched_variant"}
)
"""Options of Triton's AMD backend that only steer AMD code generation (occupancy, MFMA tile
shape, instruction scheduling), never a result: accepted and ignored, as `num_stages` is. Code
that picks its configs by backend takes AMD's on any backend that is not CUDA (tutorial 03's
`get_autotune_config()`), and those carry `waves_per_eu`. Options that can change results
(`enable_fp_fusion`, `allow_flush_denorm`, ...) are not among them: they stay errors."""


COOPERATIVE_LAUNCH_OPTION = "launch_cooperative_grid"
"""Triton's request for a cooperative launch on NVIDIA GPUs (every program resident at once,
so programs may wait for each other across the grid). Metal has no such launch: accepted and
ignored, so a launch runs as Triton's does without it, where nothing promises that the programs
one waits for have started (the emulator's watchdog stops a wait that never ends)."""


def reject_unknown_kwargs(kwargs: Mapping[str, object]) -> None:
    """Triton's error for a keyword that is neither a parameter nor a launch option (AMD's
    tuning options and `launch_cooperative_grid` excepted: accepted and ignored)."""
    unknown = [name for name in kwargs
               if name not in AMD_TUNING_OPTION_NAMES and name != COOPERATIVE_LAUNCH_OPTION]
    if unknown:
        raise KeyError(f"Keyword argument {unknown[0]} was specified but unrecognised")
