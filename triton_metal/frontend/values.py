"""Small predicates on the Python values a kernel's scope holds."""

from __future__ import annotations

from typing import Any

from ..language import core as tlc


def is_tensor(v: Any) -> bool:
    return isinstance(v, tlc.tensor)


def unwrap(v: Any) -> Any:
    """The value inside a constexpr; anything else unchanged."""
    return v.value if isinstance(v, tlc.constexpr) else v


