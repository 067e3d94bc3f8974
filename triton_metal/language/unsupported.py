"""Triton names that triton_metal knows but refuses, each with the alternative to use.

They exist so that kernels importing them fail with a precise message at the line that uses
them, instead of an AttributeError at import or, worse, a silent miscompile.
"""

from __future__ import annotations

from typing import Any, NoReturn

from ..errors import UnsupportedLanguageConstruct
from .core import TRITON_BUILTIN
from .types import dtype


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


class UnsupportedDType(dtype):
    """A Triton dtype triton_metal does not support (float8e4b15). It answers Triton's dtype
    questions (`primitive_bitwidth`, `exponent_bias`, `is_fp8()`, ...) so code that inspects
    dtypes runs, but any use in a kernel is refused (the semantic layer's `_as_dtype`)."""

    def __init__(self, name: str, public_name: str, hint: str) -> None:
        super().__init__(name)
        self.public_name = public_name
        self.hint = hint

    def refusal(self) -> UnsupportedLanguageConstruct:
        return UnsupportedLanguageConstruct(
            f"tl.{self.public_name} is not supported on Apple GPUs", hint=self.hint
        )

    def __repr__(self) -> str:
        return f"triton_metal.language.{self.public_name} (unsupported)"


_FP8_HINT = ("float8e4b15 has no published definition of its special values: use tl.float8e4nv "
             "(e4m3fn), tl.float8e5 (e5m2), tl.float8e4b8 or tl.float8e5b16")
float8e4b15 = UnsupportedDType("fp8e4b15", "float8e4b15", _FP8_HINT)
