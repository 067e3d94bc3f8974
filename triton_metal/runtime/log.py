"""`TRITON_METAL_DEBUG`: the compile and launch log on stderr.

Level 1 logs every compile (with the specialization and the time it took) and every launch (grid,
`num_warps`, backend, cache hit or miss). Levels 2 and 3 add IR and MSL dumps, printed by the
stages that produce them. The level is read on every call so tests and notebooks can change it.
"""

from __future__ import annotations

import os
import sys

from .environ import DEBUG_LEVELS, ENV_BYTES


def debug_level() -> int:
    if ENV_BYTES is not None:  # the launch path asks: read fast (environ.py)
        level = DEBUG_LEVELS.get(ENV_BYTES.get(b"TRITON_METAL_DEBUG", b""))
        if level is not None:
            return level
    raw = os.environ.get("TRITON_METAL_DEBUG", "")
    if not raw:
        return 0
    try:
        return int(raw)
    except ValueError:
        return 1 if raw.strip().lower() not in ("0", "false", "no", "off") else 0


def log(message: str) -> None:
    print(f"[triton_metal] {message}", file=sys.stderr, flush=True)
