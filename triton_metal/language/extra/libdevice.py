"""`tl.extra.libdevice`: Triton's vendor math library, mapped onto the Metal standard library.

Real Triton code calls `libdevice.tanh(x)` (also imported as `tl.extra.cuda.libdevice` or
`tl.extra.hip.libdevice`). Each function here that MSL has is the MSL function, computed in
float for fp16/bf16 operands as the other `tl.math` functions are: `tanh`, `sinh`, `cosh`,
`tan`, `asin`, `acos`, `atan`, `asinh`, `acosh`, `atanh`, `log10`, `trunc`, `rint`
(`nearbyint`), `round` (halfway cases away from zero), and the functions `tl` already has under
libdevice's names (`exp`, `exp2`, `log`, `log2`, `sqrt`, `rsqrt`, `sin`, `cos`, `erf`, `floor`,
`ceil`, `fabs`/`abs`, `fma`, `pow`, `fmod`, `fmin`, `fmax`, `isnan`, `isinf`, `div_rn`,
`sqrt_rn`, `fast_dividef`, and the `fast_*f` spellings); `popc`, `clz` and `finitef` (and their
`ll` / `d` spellings) are DSL functions (`libdevice_bits.py`), and so are `j0`, `j1`, `y0`,
`y1`, `cyl_bessel_i0` and `cyl_bessel_i1` (`libdevice_bessel.py`). A function MSL lacks
(`log1p`, `expm1`, `lgamma`, ...) raises a precise error naming a `tl` alternative where one exists.
"""

from __future__ import annotations

from typing import Any, NoReturn

from ...errors import UnsupportedLanguageConstruct
from ..builder import MathOp
from ..core import builtin, tensor
from ..core import _unwrap as _u
from ..semantic import Semantic
from .libdevice_bessel import cyl_bessel_i0, cyl_bessel_i1, j0, j1, y0, y1  # noqa: F401 - libdevice's names
from .libdevice_bits import clz, clzll, finitef, isfinited, popc, popcll  # noqa: F401 - libdevice's names


def _unary(op: MathOp, name: str, precise: bool = False, fast: bool = False) -> Any:
    def fn(arg0: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
        return _semantic.math_unary(op, _u(arg0), name, precise, fast)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"libdevice `{name}`: elementwise, floating point (MSL `{op.value}`)."
    return builtin(fn)


tanh = _unary(MathOp.TANH, "tanh")
sinh = _unary(MathOp.SINH, "sinh")
cosh = _unary(MathOp.COSH, "cosh")
tan = _unary(MathOp.TAN, "tan")
asin = _unary(MathOp.ASIN, "asin")
acos = _unary(MathOp.ACOS, "acos")
atan = _unary(MathOp.ATAN, "atan")
asinh = _unary(MathOp.ASINH, "asinh")
acosh = _unary(MathOp.ACOSH, "acosh")
atanh = _unary(MathOp.ATANH, "atanh")
log10 = _unary(MathOp.LOG10, "log10")
trunc = _unary(MathOp.TRUNC, "trunc")
rint = _unary(MathOp.RINT, "rint")
nearbyint = _unary(MathOp.RINT, "nearbyint")
round = _unary(MathOp.ROUND, "round")  # noqa: A001
# libdevice's exp, log, sqrt, ... are accurate functions (`__nv_expf`, `__nv_sqrtf`) where
# `tl.exp`, `tl.sqrt`, ... are approximate instructions: they keep MSL's precise forms
exp = _unary(MathOp.EXP, "exp", precise=True)
exp2 = _unary(MathOp.EXP2, "exp2", precise=True)
log = _unary(MathOp.LOG, "log", precise=True)
log2 = _unary(MathOp.LOG2, "log2", precise=True)
sqrt = _unary(MathOp.SQRT, "sqrt", precise=True)
rsqrt = _unary(MathOp.RSQRT, "rsqrt", precise=True)
sin = _unary(MathOp.SIN, "sin")
cos = _unary(MathOp.COS, "cos")
erf = _unary(MathOp.ERF, "erf")
floor = _unary(MathOp.FLOOR, "floor")
ceil = _unary(MathOp.CEIL, "ceil")
sqrt_rn = _unary(MathOp.SQRT_RN, "sqrt_rn")
fast_expf = _unary(MathOp.EXP, "fast_expf")
fast_logf = _unary(MathOp.LOG, "fast_logf")
fast_log2f = _unary(MathOp.LOG2, "fast_log2f")
# libdevice's __nv_fast_sinf/cosf are sin.approx.f32/cos.approx.f32: Metal's fast:: forms
fast_sinf = _unary(MathOp.SIN, "fast_sinf", fast=True)
fast_cosf = _unary(MathOp.COS, "fast_cosf", fast=True)
fast_tanf = _unary(MathOp.TAN, "fast_tanf")


@builtin
def fabs(arg0: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    """libdevice `fabs`: absolute value."""
    return _semantic.abs(_u(arg0))


abs = fabs  # noqa: A001


@builtin
def fma(arg0: Any, arg1: Any, arg2: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    """libdevice `fma`: `a * b + c` with one rounding."""
    return _semantic.fma(_u(arg0), _u(arg1), _u(arg2))


@builtin
def pow(arg0: Any, arg1: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]  # noqa: A001
    """libdevice `pow` (also `powf`): `x ** y` for floats."""
    return _semantic.pow(_u(arg0), _u(arg1))


powf = pow


@builtin
def fmod(arg0: Any, arg1: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    """libdevice `fmod`: remainder with the sign of the dividend (`x % y` on floats)."""
    return _semantic.mod(_u(arg0), _u(arg1))


@builtin
def fmin(arg0: Any, arg1: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    """libdevice `fmin`: the smaller operand; a NaN operand gives the other one."""
    return _semantic.minimum(_u(arg0), _u(arg1))


@builtin
def fmax(arg0: Any, arg1: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    """libdevice `fmax`: the larger operand; a NaN operand gives the other one."""
    return _semantic.maximum(_u(arg0), _u(arg1))


@builtin
def isnan(arg0: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    """libdevice `isnan`, as a boolean tensor."""
    x = _semantic.to_tensor(_u(arg0))
    return _semantic.not_equal(x, x)


@builtin
def isinf(arg0: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    """libdevice `isinf`, as a boolean tensor."""
    return _semantic.equal(_semantic.abs(_u(arg0)), float("inf"))


@builtin
def div_rn(arg0: Any, arg1: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    """libdevice `div_rn`: correctly rounded division."""
    return _semantic.div_rn(_u(arg0), _u(arg1))


@builtin
def fast_dividef(arg0: Any, arg1: Any, _semantic: Semantic = None) -> tensor:  # type: ignore[assignment]
    """libdevice `fast_dividef`: float32 division that need not be correctly rounded
    (`tl.math.fdiv` without IEEE rounding)."""
    return _semantic.fdiv(_u(arg0), _u(arg1), False)


_ALTERNATIVES = {
    "log1p": "tl.log(1 + x) (less accurate near 0)",
    "expm1": "tl.exp(x) - 1 (less accurate near 0)",
    "erfc": "1 - tl.erf(x)",
    "exp10": "tl.exp2(x * 3.321928094887362)",
    "cbrt": "tl.exp2(tl.log2(x) / 3) for positive x",
}


def __getattr__(name: str) -> NoReturn:
    if name.startswith("__"):
        raise AttributeError(name)
    alt = _ALTERNATIVES.get(name)
    hint = f"use {alt}" if alt else "write it with tl / tl.math functions"
    raise UnsupportedLanguageConstruct(
        f"tl.extra.libdevice.{name}: the Metal standard library has no such function",
        hint=hint,
    )
