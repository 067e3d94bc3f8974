"""The semantic layer: Triton's typing rules over a `Builder`, shared by compiler and interpreter.

`Semantic(builder)` checks arguments, promotes dtypes, broadcasts shapes and then calls one
`create_*` per primitive on the builder. The op families live in sibling modules (`arith`,
`shape`, `memory`, `reduce`, `map`, `scaled_dot`, `misc`) as mixins of `SemanticBase`.

    Semantic(builder, *, concrete=None, call_jit=None)

`concrete(handle) -> python value` is given by the interpreter (whose handles hold data): it
makes the semantic *eager*, so `bool(t)`/`int(t)` on scalar tensors work as in Triton's
interpreter. `call_jit(fn, args, kwargs)` calls a user `@jit` function (combine functions); builtins may
instead pass the front end's generator (`_generator=`), which is used when present.
"""

from __future__ import annotations

from .arith import MATH_DTYPES, ArithMixin
from .base import SemanticBase
from .memory import BLOCK_POINTER_HINT, MemoryMixin
from .map import MapMixin
from .misc import MiscMixin
from .reduce import ReduceMixin
from .scaled_dot import ScaledDotMixin
from .shape import ShapeMixin, check_block_shape


class Semantic(ScaledDotMixin, ReduceMixin, MapMixin, MemoryMixin, ShapeMixin, MiscMixin, ArithMixin,
               SemanticBase):
    """Triton's semantics over one builder (see the module docstring)."""


__all__ = [
    "BLOCK_POINTER_HINT",
    "MATH_DTYPES",
    "Semantic",
    "check_block_shape",
]
