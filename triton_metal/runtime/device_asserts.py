"""Reading the status of a debug build's device asserts after a launch; reporting prints.

A kernel compiled with `debug=True` (or under `TRITON_METAL_DEBUG`) that holds `tl.device_assert`s
has one more output, `metadata["assert_output"]`: four 32-bit words that the first failing
thread sets to the failed assert's code (`ASSERT_MAGIC | k`, k counting the kernel's asserts
from 1) and its program id (codegen `helpers/device_assert.metal`). The backend passes it
(starting at zero, or at whatever value the launch's other outputs start at: a code's high half
is never a starting value) and calls `check_status` after the kernel ran, which raises
`DeviceAssertionError` naming the kernel, the assert's file, line and source, its message and
the program.

On the Metal path the status is an MLX array, read right after the launch (`read_status`, which
waits for the kernel). Inside an MLX function transformation (`mx.compile`, `mx.vmap`,
`mx.export_function` tracing) nothing may be evaluated and MLX offers no way to raise from inside
the graph at the user's evaluation, so there the asserts are not checked: the launch goes on and a
`RuntimeWarning` says so once per kernel. Launched outside a transformation, the same kernel is
checked as usual.

`tl.device_print` prints on the emulator (`device_prints.py`); where a kernel cannot print (MLX on
Metal, torch MPS), `warn_prints` says so once per kernel.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import DeviceAssertionError

ASSERT_MAGIC = 0x7A5E0000
_warned: set[object] = set()


def python_name(msl: Any) -> str:
    """The kernel's Python name (the MSL name is it plus `_` and a hash of the MSL)."""
    return str(msl.name).rsplit("_", 1)[0]


def has_asserts(msl: Any) -> bool:
    return bool(msl.metadata.get("assert_output"))


def failure(msl: Any, status: Sequence[int] | np.ndarray) -> DeviceAssertionError | None:
    """The error a status output reports, or None when no assert failed."""
    words = [int(w) & 0xFFFFFFFF for w in np.asarray(status).reshape(-1)[:4]]
    if len(words) < 4 or (words[0] & 0xFFFF0000) != ASSERT_MAGIC:
        return None
    asserts = {int(a["code"]): a for a in msl.metadata.get("asserts", ())}
    info = asserts.get(words[0])
    if info is None:
        return None
    pid = tuple(w - (1 << 32) if w >= 1 << 31 else w for w in words[1:4])
    where = f"{info['file']}:{info['line']}:{int(info['col']) + 1}: " if info["file"] else ""
    source = f"\n    {info['line']} | {info['source']}" if info["source"] else ""
    message = f": {info['message']}" if info["message"] else ""
    return DeviceAssertionError(
        f"{where}in kernel '{python_name(msl)}', program {pid}{source}\n"
        f"error: device_assert failed{message}"
    )


def check_status(msl: Any, status: Sequence[int] | np.ndarray) -> None:
    error = failure(msl, status)
    if error is not None:
        raise error


def read_status(msl: Any, status: Any, kernel_name: str | None = None) -> None:
    """`check_status` of an MLX status array (module docstring): raises for a failed assert;
    inside an MLX function transformation, where the status cannot be read, warns once per
    kernel that its asserts go unchecked there."""
    try:
        words = np.array(status)
    except ValueError as error:
        if "transformation" not in str(error):
            raise
        name = kernel_name or python_name(msl)
        key = ("transform", msl.name)
        if key in _warned:
            return
        _warned.add(key)
        warnings.warn(
            f"kernel '{name}': its tl.device_asserts are not checked when it is launched inside an "
            "MLX function transformation (mx.compile, mx.vmap, mx.export_function), which allows no "
            "array to be read; launch it outside the transformation (or run it with "
            "TRITON_METAL_INTERPRET=1) to check them",
            RuntimeWarning,
            stacklevel=4,
        )
        return
    check_status(msl, words)


def warn_prints(msl: Any, backend: str) -> None:
    """Say once per kernel that its `tl.device_print`s print nothing on this backend (MLX on
    Metal and torch MPS: Metal kernels have no console). The emulator prints them instead
    (`device_prints.py`), as does the interpreter."""
    if not msl.metadata.get("device_prints") or msl.name in _warned:
        return
    _warned.add(msl.name)
    warnings.warn(
        f"kernel '{python_name(msl)}': tl.device_print is not available on the {backend} backend "
        "(Metal kernels have no console); its output is dropped. Run it on the emulator "
        "(TRITON_METAL_BACKEND=emulator) or with TRITON_METAL_INTERPRET=1 to see it.",
        RuntimeWarning,
        stacklevel=4,
    )
