"""Which backend executes a launch, chosen from the environment.

* `TRITON_METAL_INTERPRET=1`: the NumPy interpreter runs the kernel's Python body directly; the
  front end is not involved (as Triton's `TRITON_INTERPRET=1`).
* otherwise the kernel is compiled to IR through the front end (so compile errors surface and the
  IR is cached per specialization) and then executed. The code generator that turns IR into MSL
  for the Metal and emulator backends is not part of this version, so the compiled path executes
  on the interpreter as well; `active_backend_name()` says so, and `TRITON_METAL_DEBUG=1` logs it.

`TRITON_METAL_BACKEND=metal|emulator` asks for a backend explicitly; asking for one that this
version cannot run is an error rather than a silent substitution.
"""

from __future__ import annotations

import os

from ..errors import LaunchError

INTERPRETER = "interpreter"
KNOWN_BACKENDS = ("metal", "emulator", "interpreter")
AVAILABLE_BACKENDS = (INTERPRETER,)

_FALSE_WORDS = ("", "0", "false", "no", "off")


def interpret_mode() -> bool:
    """`TRITON_METAL_INTERPRET` is set to a true value."""
    return os.environ.get("TRITON_METAL_INTERPRET", "").strip().lower() not in _FALSE_WORDS


def active_backend_name() -> str:
    """The backend a launch made now would execute on (`"interpreter"` in this version)."""
    requested = os.environ.get("TRITON_METAL_BACKEND", "").strip().lower()
    if requested and requested not in AVAILABLE_BACKENDS:
        if requested in KNOWN_BACKENDS:
            raise LaunchError(
                f"TRITON_METAL_BACKEND={requested}: the {requested} backend needs the MSL code "
                "generator, which this version does not have yet; unset TRITON_METAL_BACKEND to "
                "run kernels in the NumPy interpreter"
            )
        raise LaunchError(
            f"TRITON_METAL_BACKEND={requested}: unknown backend (choose one of "
            f"{', '.join(KNOWN_BACKENDS)})"
        )
    return INTERPRETER
