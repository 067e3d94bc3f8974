"""`tl.math`: elementwise math builtins (also `tl.exp`, ... and tensor methods `x.exp()`, ...).

Floating point only, as in Triton (`_check_dtype`): integers are refused with a hint to cast.
fp16/bf16 keep their dtype for the functions Triton accepts them in.
"""

from __future__ import annotations

from typing import Any

from .builder import MathOp
from .core import PropagateNan, _tensor_member_fn, _unwrap, builtin, tensor
from .semantic import Semantic


def _unary(op: MathOp, name: str) -> Any:
    def fn(x: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
        return _semantic.math_unary(op, _unwrap(x), name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} of a floating point tensor."
    return _tensor_member_fn(builtin(fn))


exp = _unary(MathOp.EXP, "exp")
exp2 = _unary(MathOp.EXP2, "exp2")
log = _unary(MathOp.LOG, "log")
log2 = _unary(MathOp.LOG2, "log2")
cos = _unary(MathOp.COS, "cos")
sin = _unary(MathOp.SIN, "sin")
sqrt = _unary(MathOp.SQRT, "sqrt")
sqrt_rn = _unary(MathOp.SQRT_RN, "sqrt_rn")
rsqrt = _unary(MathOp.RSQRT, "rsqrt")
erf = _unary(MathOp.ERF, "erf")
floor = _unary(MathOp.FLOOR, "floor")
ceil = _unary(MathOp.CEIL, "ceil")


@_tensor_member_fn
@builtin
def abs(x: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]  # noqa: A001
    return _semantic.abs(_unwrap(x))


@_tensor_member_fn
@builtin
def fma(x: Any, y: Any, z: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.fma(_unwrap(x), _unwrap(y), _unwrap(z))


@builtin
def fdiv(x: Any, y: Any, ieee_rounding: Any = False, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.fdiv(_unwrap(x), _unwrap(y), bool(_unwrap(ieee_rounding)))


@builtin
def div_rn(x: Any, y: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.div_rn(_unwrap(x), _unwrap(y))


@builtin
def umulhi(x: Any, y: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    return _semantic.umulhi(_unwrap(x), _unwrap(y))


@builtin
def max(x: Any, y: Any, propagate_nan: Any = PropagateNan.NONE, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]  # noqa: A001
    """Elementwise maximum (`tl.math.max`); `tl.maximum` is the usual spelling."""
    return _semantic.maximum(_unwrap(x), _unwrap(y), _unwrap(propagate_nan))


@builtin
def min(x: Any, y: Any, propagate_nan: Any = PropagateNan.NONE, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]  # noqa: A001
    return _semantic.minimum(_unwrap(x), _unwrap(y), _unwrap(propagate_nan))
