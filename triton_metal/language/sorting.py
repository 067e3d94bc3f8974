"""`tl.sort`, `tl.topk` and `tl.bitonic_merge`, written in the DSL itself (as `random.py` is).

A bitonic network along the last axis, whose length `n` is a power of two. Stage `s`
(1..log2 n) merges runs of 2**s elements with compare-and-exchange steps at distances 2**(s-1),
..., 1; a run is put in ascending order when bit `s` of the element's position is 0 and in
descending order when it is 1 (so two neighbouring runs form a bitonic sequence for the next
stage), and the last stage uses the requested order. An exchange at distance 2**j pairs each
position with the one whose bit `j` differs (`tl.gather` along the axis); the left element keeps
the smaller of the two when its run ascends, the right one the larger:
`where((x > partner) != (descending_run ^ is_right), partner, x)`. This is Triton's network
(`triton/language/standard.py`, which exchanges on a hypercube view), so results agree with
Triton's, NaNs included: comparisons with a NaN are false, so an exchange may copy a NaN over
its partner or drop it, as Triton's does.

`topk(x, k)` sorts runs of `k` first, then halves the axis log2(n / k) times: neighbouring runs
(one ascending, one descending) are combined elementwise with `max` (`min` for the smallest),
which keeps the `k` largest of the pair as a bitonic sequence, merged by one more stage.
"""

from __future__ import annotations

from typing import Any

from . import core as tl
from .debug_ops import static_assert
from .elementwise import where
from .jit_marker import JITCallable, constexpr_function
from .reduce_ops import max, min  # noqa: A004 - tl's names
from .shape_ops import arange, broadcast_to, gather, reshape


def jit(fn: Any) -> JITCallable:
    return JITCallable(fn)


@constexpr_function
def _log2(i: int) -> int:
    """floor(log2(i)) for i >= 1 (0 for smaller i), at compile time (Triton's standard._log2)."""
    return (int(i) if i > 1 else 1).bit_length() - 1  # (this module's `max` is tl.max)


@constexpr_function
def _is_power_of_two(i: int) -> bool:
    return i != 0 and (i & (i - 1)) == 0


@constexpr_function
def _row_shape(shape: Any) -> list[int]:
    """[1, ..., 1, n]: the positions' shape, broadcast over the leading axes."""
    sizes = [int(getattr(s, "value", s)) for s in shape]
    return [1] * (len(sizes) - 1) + sizes[-1:]


@constexpr_function
def _runs_shape(shape: Any, k: int) -> list[int]:
    """The last axis split into pairs of runs of `k`: [..., n / (2k), 2, k]."""
    sizes = [int(getattr(s, "value", s)) for s in shape]
    return sizes[:-1] + [sizes[-1] // (2 * k), 2, k]


@constexpr_function
def _halved_shape(shape: Any) -> list[int]:
    sizes = [int(getattr(s, "value", s)) for s in shape]
    return sizes[:-1] + [sizes[-1] // 2]


@jit
def _positions(x):  # noqa: ANN001, ANN202
    """Each element's position along the last axis."""
    n: tl.constexpr = x.shape[len(x.shape) - 1]
    return broadcast_to(reshape(arange(0, n), _row_shape(x.shape)), x.shape)


@jit
def _exchange(x, pos, j: tl.constexpr, descending_run):  # noqa: ANN001, ANN202
    """One compare-and-exchange step at distance 2**j (module docstring)."""
    partner = gather(x, pos ^ (1 << j), len(x.shape) - 1)
    is_right = (pos >> j) & 1
    return where((x > partner) != (descending_run ^ is_right), partner, x)


@jit
def _merge(x, pos, stage: tl.constexpr, descending_run):  # noqa: ANN001, ANN202
    """Merge bitonic runs of 2**stage elements into sorted ones."""
    for i in tl.static_range(stage):
        x = _exchange(x, pos, stage - 1 - i, descending_run)
    return x


@jit
def _check_last_axis(x, dim: tl.constexpr):  # noqa: ANN001, ANN202
    _dim: tl.constexpr = len(x.shape) - 1 if dim is None else dim
    static_assert(_dim == len(x.shape) - 1, "only minor dimension is currently supported")


@jit
def _sort_impl(x, k: tl.constexpr, descending: tl.constexpr):  # noqa: ANN001, ANN202
    log_n: tl.constexpr = _log2(x.shape[len(x.shape) - 1])
    log_k: tl.constexpr = _log2(k)
    static_assert(k == 2**log_k and log_k <= log_n, "k must be a power of two no larger than the axis")
    pos = _positions(x)
    for s in tl.static_range(1, log_k + 1):
        if s == log_n:
            x = _merge(x, pos, s, descending)
        else:
            x = _merge(x, pos, s, (pos >> s) & 1)
    for level in tl.static_range(log_k + 1, log_n + 1):
        runs = reshape(x, _runs_shape(x.shape, k))
        if descending:
            runs = max(runs, len(runs.shape) - 2)
        else:
            runs = min(runs, len(runs.shape) - 2)
        x = reshape(runs, _halved_shape(x.shape))
        pos = _positions(x)
        if level == log_n:
            x = _merge(x, pos, log_k, descending)
        else:
            x = _merge(x, pos, log_k, (pos >> log_k) & 1)
    return x


@jit
def sort(x, dim: tl.constexpr = None, descending: tl.constexpr = tl.CONSTEXPR_0):  # noqa: ANN001, ANN201
    """`x` sorted along its last axis (ascending, or descending with `descending=True`)."""
    _check_last_axis(x, dim)
    return _sort_impl(x, x.shape[len(x.shape) - 1], descending)


@jit
def topk(x, k: tl.constexpr, dim: tl.constexpr = None, descending: tl.constexpr = True):  # noqa: ANN001, ANN201
    """The `k` largest elements along the last axis, largest first (the `k` smallest, smallest
    first, with `descending=False`); `k` is a power of two."""
    _check_last_axis(x, dim)
    return _sort_impl(x, k, descending)


@jit
def bitonic_merge(x, dim: tl.constexpr = None, descending: tl.constexpr = tl.CONSTEXPR_0):  # noqa: ANN001, ANN201
    """A bitonic sequence along the last axis, sorted (the last stage of the network)."""
    _check_last_axis(x, dim)
    pos = _positions(x)
    return _merge(x, pos, _log2(x.shape[len(x.shape) - 1]), descending)
