"""`tl.extra.libdevice`: NVIDIA/AMD device math libraries, absent on Apple GPUs.

Any function looked up here raises a precise error naming the `tl`/`tl.math` alternative.
"""

from __future__ import annotations

from typing import NoReturn

from ...errors import UnsupportedLanguageConstruct

_ALTERNATIVES = {
    "exp": "tl.exp", "exp2": "tl.exp2", "log": "tl.log", "log2": "tl.log2", "sqrt": "tl.sqrt",
    "rsqrt": "tl.rsqrt", "sin": "tl.sin", "cos": "tl.cos", "erf": "tl.erf", "floor": "tl.floor",
    "ceil": "tl.ceil", "fma": "tl.fma", "abs": "tl.abs", "fabs": "tl.abs", "pow": "x ** y",
    "tanh": "2 * tl.sigmoid(2 * x) - 1", "div_rn": "tl.math.div_rn", "sqrt_rn": "tl.math.sqrt_rn",
}


def __getattr__(name: str) -> NoReturn:
    if name.startswith("__"):
        raise AttributeError(name)
    alt = _ALTERNATIVES.get(name)
    hint = f"use {alt}" if alt else "write it with tl / tl.math functions"
    raise UnsupportedLanguageConstruct(
        f"tl.extra.libdevice.{name}: libdevice is a CUDA/ROCm library, not available on Apple GPUs",
        hint=hint,
    )
