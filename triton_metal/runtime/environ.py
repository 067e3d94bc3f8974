"""The environment variables a launch reads, read fast.

`os.environ.get` costs about a microsecond (it encodes the key and decodes the value), and a
launch reads several variables (`TRITON_METAL_INTERPRET`, `TRITON_METAL_BACKEND`,
`TRITON_METAL_DEBUG`) because tests and notebooks change them between launches. `ENV_BYTES` is
the bytes mapping behind `os.environ`, which `os.environ` keeps in step with every change made
through it (POSIX); it is None elsewhere, and readers then use `os.environ`.
"""

from __future__ import annotations

import os

ENV_BYTES: dict[bytes, bytes] | None = getattr(os.environ, "_data", None)
if not isinstance(ENV_BYTES, dict) or not all(isinstance(k, bytes) for k in list(ENV_BYTES)[:1]):
    ENV_BYTES = None

DEBUG_LEVELS = {b"": 0, b"0": 0, b"1": 1, b"2": 2, b"3": 3}
"""`TRITON_METAL_DEBUG` values read without parsing (anything else is parsed by `log.debug_level`)."""
