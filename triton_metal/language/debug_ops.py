"""`tl` builtins for the compiler and the programmer: hints, `assume`, prints, asserts."""

from __future__ import annotations

from typing import Any

from .builder import HintKind
from .core import _unwrap, builtin, tensor
from .semantic import Semantic


@builtin
def multiple_of(input: Any, values: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]  # noqa: A002
    """Promise that the leading element of each contiguous group is a multiple of `values`."""
    return _semantic.hint(_unwrap(input), HintKind.MULTIPLE_OF, _unwrap(values))


@builtin
def max_contiguous(input: Any, values: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]  # noqa: A002
    return _semantic.hint(_unwrap(input), HintKind.MAX_CONTIGUOUS, _unwrap(values))


@builtin
def max_constancy(input: Any, values: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]  # noqa: A002
    return _semantic.hint(_unwrap(input), HintKind.MAX_CONSTANCY, _unwrap(values))


@builtin
def assume(cond: Any, _semantic: Semantic = None) -> None:  # type: ignore[assignment]
    _semantic.assume(_unwrap(cond))


@builtin
def debug_barrier(_semantic: Semantic = None) -> None:  # type: ignore[assignment]
    _semantic.debug_barrier()


@builtin
def static_assert(cond: Any, msg: Any = "", _semantic: Semantic = None) -> None:  # type: ignore[assignment]
    _semantic.static_assert(cond, msg)


@builtin
def static_print(*values: Any, sep: str = " ", end: str = "\n", file: Any = None, flush: bool = False,
                 _semantic: Semantic = None) -> None:  # type: ignore[assignment]
    _semantic.static_print(values, sep, end)


@builtin
def device_print(prefix: Any, *args: Any, hex: Any = False, _semantic: Semantic = None) -> None:  # type: ignore[assignment]  # noqa: A002
    _semantic.device_print(prefix, args, hex)


@builtin
def device_assert(cond: Any, msg: Any = "", mask: Any = None, _semantic: Semantic = None) -> None:  # type: ignore[assignment]
    _semantic.device_assert(cond, msg, mask)


@builtin
def expect_zero(x: Any, mask: Any, _semantic: Semantic = None) -> Any:  # type: ignore[assignment]
    """Mark values expected to have underflowed to zero where `mask` holds; returns `x`.

    Triton rewrites them to zero only under its floating-point sanitizer, which Apple GPUs do
    not have, so here (as in Triton's regular compilation) `x` is returned unchanged."""
    _semantic.to_tensor(_unwrap(mask))
    return _unwrap(x)
