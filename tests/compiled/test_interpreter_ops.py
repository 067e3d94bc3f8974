"""The foundation's per-op kernels (`tests/interpreter/`) compiled on the emulator.

Every test of the interpreter's suites is collected here again with the `run` fixture of
`conftest.py`: each launch runs in the interpreter and compiled, the two must agree, and the
test's own assertions then check the compiled results against NumPy. Kernels that the test
modules build with `exec` get their source recorded so the compiler can read it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from differential import register_exec_sources

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interpreter"))

import test_interp_arith  # noqa: E402
import test_interp_casts_math  # noqa: E402
import test_interp_control  # noqa: E402
import test_interp_memory  # noqa: E402
import test_interp_random  # noqa: E402
import test_interp_reduce  # noqa: E402
import test_interp_shape  # noqa: E402
import test_interp_triton_parity  # noqa: E402

_MODULES = (
    test_interp_arith, test_interp_casts_math, test_interp_control, test_interp_memory,
    test_interp_random, test_interp_reduce, test_interp_shape, test_interp_triton_parity,
)
for _module in _MODULES:
    register_exec_sources(_module)
    for _name, _value in vars(_module).items():
        if _name.startswith("test_") and callable(_value):
            globals()[f"{_name}__{_module.__name__[12:]}"] = _value
