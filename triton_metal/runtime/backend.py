"""Which backend executes a launch, chosen from the environment.

* `TRITON_METAL_INTERPRET=1`: the NumPy interpreter runs the kernel's Python body directly; the
  front end is not involved (as Triton's `TRITON_INTERPRET=1`).
* `TRITON_METAL_BACKEND=metal|emulator|interpreter|torch_mps` forces a backend for compiled
  launches: `metal` runs through `mx.fast.metal_kernel` (refused where MLX has no Metal),
  `emulator` runs the same MSL on the CPU, `interpreter` compiles to MSL (so compile errors
  surface) and executes the Python body in the interpreter, `torch_mps` runs through
  `torch.mps.compile_shader` (or its installed stand-in).
* otherwise: `metal` when MLX reports Metal (`mx.metal.is_available()`), else `emulator`.
* whatever the environment says, a launch with a torch tensor on the MPS device runs on
  `torch_mps` (`backend_for_arrays`): its memory belongs to PyTorch's MPS allocator.

The choice is read on every launch (tests and notebooks switch it); the answer for the
automatic case is computed once, since it cannot change within a process.
"""

from __future__ import annotations

import os

from ..errors import LaunchError
from .environ import DEBUG_LEVELS, ENV_BYTES

INTERPRETER = "interpreter"
EMULATOR = "emulator"
METAL = "metal"
TORCH_MPS = "torch_mps"
KNOWN_BACKENDS = (METAL, EMULATOR, INTERPRETER, TORCH_MPS)
AVAILABLE_BACKENDS = KNOWN_BACKENDS

_FALSE_WORDS = ("", "0", "false", "no", "off")
_metal: bool | None = None

_PLAIN_FORCED = {b"emulator": EMULATOR, b"interpreter": INTERPRETER}
"""Forced backends that need no check of the machine (the others go through
`active_backend_name`)."""


def interpret_mode() -> bool:
    """`TRITON_METAL_INTERPRET` is set to a true value."""
    return os.environ.get("TRITON_METAL_INTERPRET", "").strip().lower() not in _FALSE_WORDS


def metal_available() -> bool:
    """MLX has a Metal device (computed once per process)."""
    global _metal
    if _metal is None:
        try:
            import mlx.core as mx

            _metal = bool(mx.metal.is_available())
        except Exception:  # noqa: BLE001 - any failure to load MLX means no Metal
            _metal = False
    return _metal


def launch_environment() -> tuple[bool, str, int]:
    """(interpret mode, backend, debug level) for one launch, read quickly (`environ.py`)."""
    env = ENV_BYTES
    if env is None:
        from .log import debug_level

        interpret = interpret_mode()
        return interpret, active_backend_name(), debug_level()
    raw = env.get(b"TRITON_METAL_INTERPRET")
    interpret = raw is not None and raw.strip().lower().decode(errors="replace") not in _FALSE_WORDS
    level_raw = env.get(b"TRITON_METAL_DEBUG", b"")
    level = DEBUG_LEVELS.get(level_raw)
    if level is None:
        from .log import debug_level

        level = debug_level()
    if interpret:
        return True, INTERPRETER, level
    requested = env.get(b"TRITON_METAL_BACKEND")
    if not requested:
        metal = _metal if _metal is not None else metal_available()  # known after the first launch
        return False, (METAL if metal else EMULATOR), level
    forced = _PLAIN_FORCED.get(requested)
    if forced is not None or (requested == b"torch_mps" and stand_in_active()):
        return False, forced or TORCH_MPS, level
    return False, active_backend_name(), level


def active_backend_name() -> str:
    """The backend a launch made now would execute on ("interpreter" under
    `TRITON_METAL_INTERPRET=1`)."""
    if interpret_mode():
        return INTERPRETER
    requested = os.environ.get("TRITON_METAL_BACKEND")
    if not requested:
        return METAL if metal_available() else EMULATOR
    requested = requested.strip().lower()
    if requested == METAL and not metal_available():
        raise LaunchError(
            "TRITON_METAL_BACKEND=metal: MLX reports no Metal device here (mx.metal.is_available() "
            "is False); unset TRITON_METAL_BACKEND to run on the emulator, or run on a Mac with "
            "Apple silicon"
        )
    if requested == TORCH_MPS:
        if not _torch_mps_ready():
            raise LaunchError(
                "TRITON_METAL_BACKEND=torch_mps: PyTorch reports no MPS device here; unset "
                "TRITON_METAL_BACKEND to run CPU tensors on the emulator"
            )
    if requested not in KNOWN_BACKENDS:
        raise LaunchError(
            f"TRITON_METAL_BACKEND={requested}: unknown backend (choose one of "
            f"{', '.join(KNOWN_BACKENDS)})"
        )
    return requested


_mps: bool | None = None
_DRIVER: list[object] = []
"""`backends.torch_mps.driver`, imported on first need (it pulls in the emulator's signature
tables, which a process launching on MLX or NumPy does not need at import)."""


def stand_in_active() -> bool:
    """A stand-in for `torch.mps.compile_shader` is installed (`backends.torch_mps`)."""
    if not _DRIVER:
        from ..backends.torch_mps import driver

        _DRIVER.append(driver)
    return _DRIVER[0]._ACTIVE[0] is not None  # type: ignore[attr-defined]


def _torch_mps_ready() -> bool:
    """A torch_mps launch can run: a stand-in is installed, or PyTorch has an MPS device (the
    latter computed once per process)."""
    global _mps
    if stand_in_active():
        return True
    if _mps is None:
        import torch

        _mps = bool(torch.backends.mps.is_available())
    return _mps


def backend_for_arrays(backend: str, facts: tuple[object, ...]) -> str:
    """The backend a launch runs on, given the environment's choice and the argument facts: a
    torch tensor on the MPS device sends it to torch_mps."""
    for fact in facts:
        if getattr(fact, "mps", False):
            if backend == INTERPRETER:
                raise LaunchError(
                    "a torch tensor on the MPS device cannot be run by the interpreter; pass CPU "
                    "tensors (tensor.cpu()) or leave TRITON_METAL_BACKEND unset"
                )
            return TORCH_MPS
    return backend
