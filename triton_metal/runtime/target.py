"""The target a launch compiles for: `TRITON_METAL_TARGET`, else the Mac's own, else the default.

`active_target() -> str` is read on every launch (tests and notebooks switch it), through the
environment's bytes mapping (`environ.py`); each distinct value is parsed once. Without the
variable: on a Mac with Metal, the chip's family (MLX's architecture string) and the macOS
release's MSL version (`codegen.target.target_of_chip`; 26.0 and 26.1 take MSL 3.2), found once
per process; elsewhere `DEFAULT_TARGET` (apple9:3.2). A bad value is a `LaunchError` listing the
valid targets.
"""

from __future__ import annotations

import functools
import os
import platform
import sys

from ..codegen.target import DEFAULT_TARGET, parse_target, target_of_chip
from ..errors import LaunchError
from .environ import ENV_BYTES

TARGET_VARIABLE = "TRITON_METAL_TARGET"
_TARGET_BYTES = TARGET_VARIABLE.encode()
_resolved: dict[bytes | None, str] = {}
"""The target of each raw value of the variable seen (None: unset), so a launch costs one lookup."""


def active_target() -> str:
    """The target text (`apple9:3.2`) of the next compile (see the module docstring)."""
    if ENV_BYTES is not None:
        raw = ENV_BYTES.get(_TARGET_BYTES)
    else:
        value = os.environ.get(TARGET_VARIABLE)
        raw = None if value is None else value.encode()
    found = _resolved.get(raw)
    if found is None:
        found = _resolve(raw)
        _resolved[raw] = found
    return found


def _resolve(raw: bytes | None) -> str:
    text = raw.decode(errors="replace") if raw is not None else ""
    if not text.strip():
        return machine_target()
    try:
        return str(parse_target(text))
    except ValueError as error:
        raise LaunchError(str(error)) from None


def macos_release(release: str | None = None) -> tuple[int, int] | None:
    """The macOS release as (major, minor) ((26, 1) for "26.1", (15, 0) for "15"), None off macOS;
    `release` is `platform.mac_ver()`'s text unless given."""
    parts = (platform.mac_ver()[0] if release is None else release).split(".")
    if not parts[0].isdigit():
        return None
    minor = parts[1] if len(parts) > 1 and parts[1].isdigit() else "0"
    return int(parts[0]), int(minor)


@functools.lru_cache(maxsize=1)
def machine_target() -> str:
    """This machine's target: its Mac chip and macOS, or `DEFAULT_TARGET` without Metal."""
    from .backend import metal_available

    if sys.platform != "darwin" or not metal_available():
        return str(DEFAULT_TARGET)
    from ..chip import chip_info

    return str(target_of_chip(chip_info().generation, macos_release()))
