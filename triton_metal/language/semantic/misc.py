"""Semantic layer, compiler hints and debugging: `multiple_of`, `assume`, prints and asserts.

`static_*` act while the kernel is traced (compile time); `device_print`/`device_assert` become
builder operations (printed or checked when the kernel runs; Metal backends may elide them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import CompileTimeAssertionFailure
from ..builder import HintKind
from ..context import static_prints_quiet
from ..core import constexpr, tensor
from ..print_format import munge_prefix
from .base import SemanticBase, error


def static_text(value: Any) -> Any:
    """What `tl.static_print` shows for `value`: a tensor as Triton's `str(tensor)`, its dtype's
    name and its shape's constexprs (`int32[constexpr[128]]`, `fp32[]` for a scalar), anything
    else as itself."""
    if isinstance(value, tensor):
        return f"{value.dtype.name}[{', '.join(repr(constexpr(s)) for s in value.shape)}]"
    return _opt(value)


def _opt(x: Any) -> Any:
    return x.value if isinstance(x, constexpr) else x


class MiscMixin(SemanticBase):
    def hint(self, x: Any, kind: HintKind, values: Any) -> tensor:
        x = self.to_tensor(_opt(x))
        vals = _opt(values)
        if isinstance(vals, (int, constexpr)):
            vals = [vals]
        out: list[int] = []
        for v in vals:
            v = _opt(v)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise error(f"tl.{kind.value} values must be positive compile-time integers, got {v!r}")
            out.append(v)
        rank = max(len(x.shape), 1)
        if len(out) == 1 and rank > 1:
            out = out * rank
        if len(out) != rank:
            raise error(f"tl.{kind.value} needs {rank} values for a tensor of rank {len(x.shape)}, got {len(out)}")
        return tensor(self.builder.create_hint(x.handle, kind, tuple(out)), x.type)

    def assume(self, cond: Any) -> None:
        cond = self.to_tensor(_opt(cond))
        if not cond.type.scalar.is_bool():
            raise error(f"tl.assume takes a boolean condition, got {cond.type.scalar!r}")
        self.builder.create_assume(cond.handle)

    def debug_barrier(self) -> None:
        self.builder.create_barrier()

    def static_assert(self, cond: Any, msg: Any = "") -> None:
        cond = _opt(cond)
        if isinstance(cond, tensor):
            raise error(
                "tl.static_assert needs a compile-time condition, got a tensor",
                hint="use tl.device_assert for run-time checks",
            )
        if not cond:
            raise CompileTimeAssertionFailure(f"static_assert failed: {_opt(msg)}".rstrip(": "))

    def static_print(self, values: Sequence[Any], sep: str = " ", end: str = "\n") -> None:
        if not static_prints_quiet():
            print(*[static_text(v) for v in values], sep=sep, end=end)

    def device_print(self, prefix: Any, args: Sequence[Any], hex: Any = False) -> None:  # noqa: A002
        prefix = _opt(prefix)
        if not isinstance(prefix, str):
            raise error(f"tl.device_print's prefix must be a string, got {prefix!r}")
        ts = [self.to_tensor(_opt(a)) for a in args]
        # fp8 values print as their float32 values, or with hex=True as their 8-bit codes
        ts = [(self.bitcast(t, "uint8") if _opt(hex) else self.cast(t, "fp32")) if t.type.scalar.is_fp8() else t
              for t in ts]
        signed = [t.type.scalar.is_int_signed() for t in ts]
        prefix = munge_prefix(prefix, bool(ts))
        self.builder.create_print(prefix, bool(_opt(hex)), [t.handle for t in ts], signed)

    def device_assert(self, cond: Any, msg: Any = "", mask: Any = None) -> None:
        cond = self.to_tensor(_opt(cond))
        if not cond.type.scalar.is_bool():
            cond = self.cast(cond, "int1")
        mask = _opt(mask)
        if mask is not None:
            m = self.cast(self.to_tensor(mask), "int1")
            cond = self.or_(cond, self.logical_not(m))  # type: ignore[attr-defined]
        self.builder.create_assert(cond.handle, str(_opt(msg)))
