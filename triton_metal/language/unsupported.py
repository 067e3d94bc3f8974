"""Triton names that triton_metal knows but refuses, each with the alternative to use.

They exist so that kernels importing them fail with a precise message at the line that uses
them, instead of an AttributeError at import or, worse, a silent miscompile.
"""

from __future__ import annotations

from typing import Any, NoReturn

from ..errors import UnsupportedLanguageConstruct
from .core import TRITON_BUILTIN


def _refuse(name: str, reason: str, hint: str) -> NoReturn:
    raise UnsupportedLanguageConstruct(f"tl.{name}: {reason}", hint=hint)


def _refusing(name: str, reason: str, hint: str) -> Any:
    def fn(*args: Any, **kwargs: Any) -> NoReturn:
        _refuse(name, reason, hint)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Not supported: {reason} ({hint})."
    setattr(fn, TRITON_BUILTIN, True)  # the front end calls it, so it refuses in its own words
    return fn


_NOT_YET = "not supported yet on Apple GPUs"

inline_asm_elementwise = _refusing(
    "inline_asm_elementwise",
    "inline PTX/AMDGCN assembly cannot run on Apple GPUs",
    "write the operation with tl functions",
)
atomic_load = _refusing("atomic_load", _NOT_YET, "use tl.atomic_add(ptr, 0) to read atomically")
atomic_store = _refusing("atomic_store", _NOT_YET, "use tl.atomic_xchg(ptr, value)")
