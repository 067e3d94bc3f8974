"""Compile progress on long first calls: one stderr line per kernel compiled, once a second has
passed since the call that compiles began.

A first call of a model (its forward, or `mx.grad` of it) compiles every kernel it meets; on the
emulator each costs up to a second of C++ compiling, so the call can take tens of seconds with
nothing said. Compiles that follow one another (no pause of `IDLE_SECONDS` between them) count as
one call, timed from the start of its first compile; a call that is done within `QUIET_SECONDS`
prints nothing, a longer one prints a line for each kernel compiled after that point:

    [triton_metal] compiling rms_norm_fwd (kernel 4 of this call, 2.1 s so far)

The line is printed when the kernel's MSL is made, before the backend builds it (the emulator's
C++ compile, which `touch` counts as part of the call).

`TRITON_METAL_DEBUG=1` logs every compile anyway, so it prints no progress lines;
`TRITON_METAL_PROGRESS=0` turns them off.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

from .log import debug_level, log

QUIET_SECONDS = 1.0
IDLE_SECONDS = 5.0
ENV = "TRITON_METAL_PROGRESS"


@dataclass
class Burst:
    """Compiles that followed one another: when the first began, the last ended, how many."""

    start: float
    last: float
    count: int = 0


_lock = threading.Lock()
_burst: Burst | None = None


def enabled() -> bool:
    return os.environ.get(ENV, "").strip().lower() not in ("0", "false", "no", "off") and debug_level() < 1


def line(name: str, burst: Burst, now: float) -> str:
    return f"compiling {name} (kernel {burst.count} of this call, {now - burst.start:.1f} s so far)"


def compiled(name: str, seconds: float, now: float | None = None) -> str | None:
    """Note that kernel `name` was compiled to MSL in `seconds`, ending `now`; the progress line,
    printed on stderr, when its call has been compiling for over `QUIET_SECONDS` (else None)."""
    global _burst
    now = time.perf_counter() if now is None else now
    with _lock:
        burst = _burst
        if burst is None or now - seconds - burst.last > IDLE_SECONDS:
            burst = _burst = Burst(start=now - seconds, last=now)
        burst.count += 1
        burst.last = now
        text = line(name, burst, now) if now - burst.start > QUIET_SECONDS else None
    if text is not None and enabled():
        log(text)
        return text
    return None


def touch(now: float | None = None) -> None:
    """Note compiling work that is not a kernel of its own (the emulator's C++ build of a kernel
    already counted), so a long build is not taken for a pause between calls."""
    now = time.perf_counter() if now is None else now
    with _lock:
        if _burst is not None:
            _burst.last = max(_burst.last, now)


def reset() -> None:
    global _burst
    with _lock:
        _burst = None


__all__ = ["ENV", "IDLE_SECONDS", "QUIET_SECONDS", "compiled", "reset", "touch"]
