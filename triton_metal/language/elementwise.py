"""`tl` elementwise builtins beyond operators: `where`, `minimum`/`maximum`, `clamp`, `cast`, ..."""

from __future__ import annotations

from typing import Any

from .builder import MathOp
from .core import PropagateNan, _tensor_member_fn, _unwrap, builtin, tensor
from .semantic import Semantic


@builtin
def where(condition: Any, x: Any, y: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.where(_unwrap(condition), _unwrap(x), _unwrap(y))


@builtin
def minimum(x: Any, y: Any, propagate_nan: Any = PropagateNan.NONE, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.minimum(_unwrap(x), _unwrap(y), _unwrap(propagate_nan))


@builtin
def maximum(x: Any, y: Any, propagate_nan: Any = PropagateNan.NONE, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.maximum(_unwrap(x), _unwrap(y), _unwrap(propagate_nan))


@builtin
def clamp(x: Any, min: Any, max: Any, propagate_nan: Any = PropagateNan.NONE, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]  # noqa: A002
    return _semantic.clamp(_unwrap(x), _unwrap(min), _unwrap(max), _unwrap(propagate_nan))


@_tensor_member_fn
@builtin
def cast(input: Any, dtype: Any, fp_downcast_rounding: Any = None, bitcast: Any = False, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]  # noqa: A002
    x = _semantic.to_tensor(_unwrap(input))
    if _unwrap(bitcast):
        return _semantic.bitcast(x, _unwrap(dtype))
    return _semantic.cast(x, _unwrap(dtype), _unwrap(fp_downcast_rounding))


@builtin
def add(x: Any, y: Any, sanitize_overflow: Any = True, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.add(_unwrap(x), _unwrap(y), bool(_unwrap(sanitize_overflow)))


@builtin
def sub(x: Any, y: Any, sanitize_overflow: Any = True, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.sub(_unwrap(x), _unwrap(y), bool(_unwrap(sanitize_overflow)))


@builtin
def mul(x: Any, y: Any, sanitize_overflow: Any = True, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.mul(_unwrap(x), _unwrap(y), bool(_unwrap(sanitize_overflow)))


@_tensor_member_fn
@builtin
def sigmoid(x: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    s = _semantic
    t = s.to_tensor(_unwrap(x))
    return s.truediv(1, s.add(1, s.math_unary(MathOp.EXP, s.minus(t), "sigmoid")))


@builtin
def map_elementwise(scalar_fn: Any, *args: Any, pack: Any = 1, _semantic: Semantic = None,  # type: ignore[assignment]
                    _generator: Any = None) -> Any:
    """Apply the `@jit` function `scalar_fn` to every element of `args` (broadcast to one shape),
    with control flow of its own per element (`if x < y:`), where `tl.where` would compute both
    sides. It returns one tensor per value the function returns (a tuple when several). With
    `pack=p` (a power of two) the function takes `p` consecutive row-major elements of each
    argument in turn (`a0, a1, b0, b1` for two arguments and `p=2`) and returns `p` values per
    result (`c0, c1, d0, d1`)."""
    return _semantic.map_elementwise(_unwrap(scalar_fn), [_unwrap(a) for a in args], _unwrap(pack), _generator)
