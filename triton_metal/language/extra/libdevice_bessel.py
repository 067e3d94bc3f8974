"""libdevice's Bessel functions `j0`, `j1` (first kind), `y0`, `y1` (second kind) and
`cyl_bessel_i0`, `cyl_bessel_i1` (modified, first kind), float32, written in the DSL itself (the
Metal standard library has no Bessel functions). Both backends run this same code.

`j0`, `j1`: for |x| <= `TRAPEZOID_LIMIT`, Bessel's integral J_n(x) = 1/pi int_0^pi cos(n t -
x sin t) dt by the trapezoidal rule with `TRAPEZOID_INTERVALS` intervals (the integrand is
periodic and smooth, so the error falls like J_2N(x): about 1e-16 at the limit); beyond, Hankel's
expansion J_v(x) ~ sqrt(2 / (pi x)) (P cos(c) - Q sin(c)), c = x - (2v + 1) pi / 4, with P and Q
the even and odd terms of sum_k (-1)^k a_k(v) / x^k below (`HANKEL_TERMS` terms: the smallest
is about 3e-8 at the limit), cos(c) and sin(c) taken from cos(x) and sin(x) so that c is never
rounded. J0 is even, J1 odd.

`y0`, `y1` (x > 0; -inf at 0, NaN below): for x <= `Y_SERIES_LIMIT`, the series of Abramowitz
and Stegun 9.1.11 around J0, J1 above (their terms stay below 6 there, so float32 keeps about
1e-7); on (`Y_SERIES_LIMIT`, `TRAPEZOID_LIMIT`], where that series cancels too much for float32,
a Chebyshev expansion of `Y_CHEBYSHEV_TERMS` terms fitted when the module is imported, in double
precision, to the same series (whose cancellation double precision absorbs); beyond, Hankel's
expansion Y_v(x) ~ sqrt(2 / (pi x)) (P sin(c) + Q cos(c)).

`cyl_bessel_i0`, `cyl_bessel_i1`: for |x| <= `SERIES_LIMIT`, the power series
    I0(x) = sum_k (x^2/4)^k / (k!)^2,    I1(x) = (x/2) sum_k (x^2/4)^k / (k! (k+1)!),
whose terms are all positive (no cancellation: float32 keeps a few ulp); `SERIES_TERMS` terms
reach below float32's resolution at the limit. Beyond it they use Hankel's asymptotic expansion
    I_v(x) ~ e^x / sqrt(2 pi x) * sum_k (-1)^k a_k(v) / x^k,
    a_k(v) = (4v^2 - 1^2)(4v^2 - 3^2)...(4v^2 - (2k-1)^2) / (k! 8^k),
with `ASYMPTOTIC_TERMS` terms (the next one is below 1e-8 relative at the limit), e^x taken as
e^(x/2) times e^(x/2) (the argument stays exact, and the result overflows only where the
function does). I0 is even, I1 odd.
"""

from __future__ import annotations

import math
from typing import Any

from .. import core as tl
from ..elementwise import where
from ..jit_marker import JITCallable
from ..debug_ops import static_assert
from ..math import abs as _abs
from ..math import cos, exp, log, sin, sqrt
from ..shape_ops import zeros_like
from ..types import float32

SERIES_LIMIT = tl.constexpr(15.0)
SERIES_TERMS = tl.constexpr(48)
ASYMPTOTIC_TERMS = tl.constexpr(8)
TWO_PI = tl.constexpr(6.283185307179586)
PI = tl.constexpr(3.141592653589793)
SQRT_HALF = tl.constexpr(0.7071067811865476)
TRAPEZOID_LIMIT = tl.constexpr(8.0)
TRAPEZOID_INTERVALS = tl.constexpr(16)
HANKEL_TERMS = tl.constexpr(14)
Y_SERIES_LIMIT = tl.constexpr(4.0)
Y_SERIES_TERMS = tl.constexpr(20)
Y_CHEBYSHEV_TERMS = tl.constexpr(18)
EULER_GAMMA = tl.constexpr(0.5772156649015329)
SIN_TABLE = tl.constexpr(tuple(math.sin(math.pi * m / TRAPEZOID_INTERVALS.value) for m in range(TRAPEZOID_INTERVALS.value)))
"""sin(pi m / N) at the trapezoidal rule's nodes, computed once in double precision."""


def jit(fn: Any) -> JITCallable:
    return JITCallable(fn)


@jit
def _series(x, order: tl.constexpr):  # noqa: ANN001, ANN202
    """sum_k (x^2/4)^k / (k! (k+order)!) for order 0 or 1, each term from the one before."""
    q = x * x * 0.25
    term = zeros_like(x) + 1.0
    total = term
    for k in tl.static_range(1, SERIES_TERMS):
        term = term * q / (k * (k + order))
        total = total + term
    return total


@jit
def _asymptotic(x, order: tl.constexpr):  # noqa: ANN001, ANN202
    """Hankel's expansion of I_order(x) for large x (module docstring)."""
    mu: tl.constexpr = 4 * order * order
    term = zeros_like(x) + 1.0
    total = term
    for k in tl.static_range(1, ASYMPTOTIC_TERMS):
        odd: tl.constexpr = 2 * k - 1
        term = term * (-(mu - odd * odd) / (8.0 * k)) / x
        total = total + term
    half = exp(x * 0.5)  # e^x as e^(x/2) twice: an exact argument, and no overflow before the result's
    return half * (total / sqrt(TWO_PI * x) * half)


@jit
def _bessel_i(x, order: tl.constexpr):  # noqa: ANN001, ANN202
    static_assert(x.dtype == float32, "libdevice's cyl_bessel_i0 and cyl_bessel_i1 take float32")
    ax = _abs(x)
    small = ax <= SERIES_LIMIT
    series = _series(tl.minimum(ax, SERIES_LIMIT), order)
    if order == 1:
        series = series * 0.5 * tl.minimum(ax, SERIES_LIMIT)
    large = _asymptotic(tl.maximum(ax, SERIES_LIMIT), order)
    value = where(small, series, large)
    if order == 1:
        value = where(x < 0, -value, value)  # I1 is odd
    return value


@jit
def cyl_bessel_i0(x):  # noqa: ANN001, ANN201
    """libdevice `cyl_bessel_i0`: the modified Bessel function of the first kind of order 0
    (float32; module docstring)."""
    return _bessel_i(x, 0)


@jit
def cyl_bessel_i1(x):  # noqa: ANN001, ANN201
    """libdevice `cyl_bessel_i1`: the modified Bessel function of the first kind of order 1
    (float32; module docstring)."""
    return _bessel_i(x, 1)


@jit
def _bessel_j_integral(x, order: tl.constexpr):  # noqa: ANN001, ANN202
    """J_order(x) by the trapezoidal rule on Bessel's integral (module docstring)."""
    ends: tl.constexpr = 1.0 if order == 0 else 0.0  # (cos 0 + cos(order pi)) / 2: sin 0 = sin pi = 0
    total = zeros_like(x) + ends
    for m in tl.static_range(1, TRAPEZOID_INTERVALS):
        t: tl.constexpr = PI * m / TRAPEZOID_INTERVALS
        total = total + cos(order * t - x * SIN_TABLE[m])
    return total / TRAPEZOID_INTERVALS


@jit
def _hankel(x, order: tl.constexpr):  # noqa: ANN001, ANN202
    """Hankel's expansion for large x: sqrt(2 / (pi x)), P, Q and cos(c), sin(c) of the phase
    c = x - (2 order + 1) pi / 4 (module docstring)."""
    mu: tl.constexpr = 4 * order * order
    w = 1.0 / x
    p = zeros_like(x) + 1.0
    q = zeros_like(x)
    term = p
    for k in tl.static_range(1, HANKEL_TERMS):
        odd: tl.constexpr = 2 * k - 1
        term = term * ((mu - odd * odd) / (8.0 * k)) * w  # a_k(v) / x^k
        if k % 4 == 1:
            q = q + term
        elif k % 4 == 2:
            p = p - term
        elif k % 4 == 3:
            q = q - term
        else:
            p = p + term
    c, s = cos(x), sin(x)
    if order == 0:  # c = x - pi/4
        cos_c, sin_c = (c + s) * SQRT_HALF, (s - c) * SQRT_HALF
    else:  # c = x - 3 pi/4
        cos_c, sin_c = (s - c) * SQRT_HALF, -(s + c) * SQRT_HALF
    return sqrt(2.0 / PI * w), p, q, cos_c, sin_c


@jit
def _bessel_j(x, order: tl.constexpr):  # noqa: ANN001, ANN202
    static_assert(x.dtype == float32, "libdevice's j0 and j1 take float32")
    ax = _abs(x)
    near = _bessel_j_integral(tl.minimum(ax, TRAPEZOID_LIMIT), order)
    scale, p, q, cos_c, sin_c = _hankel(tl.maximum(ax, TRAPEZOID_LIMIT), order)
    far = scale * (p * cos_c - q * sin_c)
    value = where(ax <= TRAPEZOID_LIMIT, near, far)
    if order == 1:
        value = where(x < 0, -value, value)  # J1 is odd
    return value


@jit
def j0(x):  # noqa: ANN001, ANN201
    """libdevice `j0`: the Bessel function of the first kind of order 0 (float32; module
    docstring)."""
    return _bessel_j(x, 0)


@jit
def j1(x):  # noqa: ANN001, ANN201
    """libdevice `j1`: the Bessel function of the first kind of order 1 (float32; module
    docstring)."""
    return _bessel_j(x, 1)


def _series_y(x: float, order: int) -> float:
    """Y_order(x) by the series of Abramowitz and Stegun 9.1.11 in double precision (x > 0):
    the module's reference for fitting its Chebyshev expansion."""
    q = x * x / 4
    j = sum((-q) ** k / (math.factorial(k) * math.factorial(k + order)) for k in range(40)) * (x / 2) ** order
    psi = [-EULER_GAMMA.value + sum(1.0 / i for i in range(1, n)) for n in range(1, 43)]  # psi(n)
    tail = sum((psi[k] + psi[k + order]) * (-q) ** k / (math.factorial(k) * math.factorial(k + order)) for k in range(40))
    head = -2 / (math.pi * x) if order == 1 else 0.0
    return head + 2 / math.pi * math.log(x / 2) * j - (x / 2) ** order / math.pi * tail


def _chebyshev(order: int, a: float, b: float, n: int) -> tuple[float, ...]:
    """Chebyshev coefficients of Y_order on [a, b] from `n` Chebyshev nodes (the first halved)."""
    nodes = [math.cos(math.pi * (i + 0.5) / n) for i in range(n)]
    values = [_series_y(a + (b - a) * (t + 1) / 2, order) for t in nodes]
    coeffs = [2.0 / n * sum(v * math.cos(math.pi * j * (i + 0.5) / n) for i, v in enumerate(values)) for j in range(n)]
    coeffs[0] /= 2
    return tuple(coeffs)


Y_CHEBYSHEV = tl.constexpr(tuple(
    _chebyshev(order, Y_SERIES_LIMIT.value, TRAPEZOID_LIMIT.value, Y_CHEBYSHEV_TERMS.value) for order in (0, 1)
))
"""Chebyshev coefficients of Y0 and Y1 on (`Y_SERIES_LIMIT`, `TRAPEZOID_LIMIT`]."""


@jit
def _y_series(x, order: tl.constexpr):  # noqa: ANN001, ANN202
    """Y_order(x) for 0 < x <= Y_SERIES_LIMIT by A&S 9.1.11 (module docstring), in float32."""
    q = x * x * 0.25
    term = zeros_like(x) + 1.0  # (-q)^k / (k! (k + order)!)
    psi_k: tl.constexpr = -EULER_GAMMA  # psi(k + 1)
    psi_ko: tl.constexpr = -EULER_GAMMA + order  # psi(k + order + 1)
    tail = term * (psi_k + psi_ko)
    for k in tl.static_range(1, Y_SERIES_TERMS):
        term = term * -q / (k * (k + order))
        psi_k = psi_k + 1.0 / k
        psi_ko = psi_ko + 1.0 / (k + order)
        tail = tail + term * (psi_k + psi_ko)
    j = _bessel_j_integral(x, order)
    if order == 0:
        return 2.0 / PI * log(x * 0.5) * j - tail / PI
    return -2.0 / (PI * x) + 2.0 / PI * log(x * 0.5) * j - x * 0.5 / PI * tail


@jit
def _y_chebyshev(x, order: tl.constexpr):  # noqa: ANN001, ANN202
    """Y_order(x) on (Y_SERIES_LIMIT, TRAPEZOID_LIMIT] by Clenshaw's recurrence."""
    t = (2.0 * x - (Y_SERIES_LIMIT + TRAPEZOID_LIMIT)) / (TRAPEZOID_LIMIT - Y_SERIES_LIMIT)
    b1 = zeros_like(x)
    b2 = zeros_like(x)
    for i in tl.static_range(Y_CHEBYSHEV_TERMS - 1, 0, -1):
        b1, b2 = 2.0 * t * b1 - b2 + Y_CHEBYSHEV[order][i], b1
    return t * b1 - b2 + Y_CHEBYSHEV[order][0]


@jit
def _bessel_y(x, order: tl.constexpr):  # noqa: ANN001, ANN202
    static_assert(x.dtype == float32, "libdevice's y0 and y1 take float32")
    near = _y_series(tl.minimum(tl.maximum(x, 1e-30), Y_SERIES_LIMIT), order)
    middle = _y_chebyshev(tl.minimum(tl.maximum(x, Y_SERIES_LIMIT), TRAPEZOID_LIMIT), order)
    scale, p, q, cos_c, sin_c = _hankel(tl.maximum(x, TRAPEZOID_LIMIT), order)
    far = scale * (p * sin_c + q * cos_c)
    value = where(x <= Y_SERIES_LIMIT, near, where(x <= TRAPEZOID_LIMIT, middle, far))
    value = where(x == 0, float("-inf"), value)
    return where(x < 0, float("nan"), value)


@jit
def y0(x):  # noqa: ANN001, ANN201
    """libdevice `y0`: the Bessel function of the second kind of order 0 (float32; module
    docstring)."""
    return _bessel_y(x, 0)


@jit
def y1(x):  # noqa: ANN001, ANN201
    """libdevice `y1`: the Bessel function of the second kind of order 1 (float32; module
    docstring)."""
    return _bessel_y(x, 1)
