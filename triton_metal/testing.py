"""Benchmarking and comparison helpers with Triton's names: `do_bench`, `assert_close`.

`do_bench` times a callable the way Triton's does (a time-boxed warm-up and repetition, results
in milliseconds), waiting for MLX's queue after every call so lazy work is counted.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

try:
    import mlx.core as _mx
except ImportError:  # pragma: no cover - MLX is a dependency
    _mx = None

RETURN_MODES = ("min", "max", "mean", "median", "all")


def _wait(result: object) -> None:
    """Finish any lazy MLX work the call produced."""
    if _mx is None:
        return
    arrays = [r for r in (result if isinstance(result, (tuple, list)) else (result,))
              if isinstance(r, _mx.array)]
    if arrays:
        _mx.eval(*arrays)
    _mx.synchronize()


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    _wait(fn())
    return (time.perf_counter() - start) * 1e3


def do_bench(
    fn: Callable[[], object],
    warmup: float = 25,
    rep: float = 100,
    grad_to_none: Sequence[Any] | None = None,
    quantiles: Sequence[float] | None = None,
    return_mode: str = "mean",
) -> float | list[float]:
    """Run `fn` for about `warmup` ms, then about `rep` ms, and summarise the run times in ms.

    `quantiles` (e.g. `[0.5, 0.2, 0.8]`) returns those quantiles instead of `return_mode`'s
    statistic; `return_mode="all"` returns every time. `grad_to_none` is accepted for Triton
    compatibility (there is no autograd here) and must be empty or None.
    """
    if return_mode not in RETURN_MODES:
        raise ValueError(f"return_mode must be one of {RETURN_MODES}, not {return_mode!r}")
    if grad_to_none:
        raise ValueError("do_bench: grad_to_none has no meaning without autograd; pass None")
    _wait(fn())
    estimate = statistics.mean(_timed(fn) for _ in range(5))
    n_warmup = max(1, int(warmup / max(estimate, 1e-6)))
    n_repeat = max(1, int(rep / max(estimate, 1e-6)))
    for _ in range(n_warmup):
        _wait(fn())
    times = [_timed(fn) for _ in range(n_repeat)]
    if quantiles is not None:
        values = np.quantile(np.array(times), list(quantiles)).tolist()
        return values[0] if len(values) == 1 else values
    if return_mode == "all":
        return times
    summary: dict[str, Callable[[list[float]], float]] = {
        "min": min, "max": max, "mean": statistics.mean, "median": statistics.median,
    }
    return float(summary[return_mode](times))


def _as_numpy(x: Any) -> np.ndarray:
    if _mx is not None and isinstance(x, _mx.array):
        if x.dtype == _mx.bfloat16:
            x = x.astype(_mx.float32)
        return np.array(x)
    return np.asarray(x)


def assert_close(x: Any, y: Any, atol: float | None = None, rtol: float | None = None,
                 err_msg: str = "") -> None:
    """Assert that two arrays (NumPy, MLX or scalars) are close: Triton's defaults, atol 1e-2
    and rtol 0."""
    a = _as_numpy(x)
    b = _as_numpy(y)
    if a.dtype == np.bool_ or b.dtype == np.bool_:
        np.testing.assert_array_equal(a, b, err_msg=err_msg)
        return
    np.testing.assert_allclose(
        a.astype(np.float64), b.astype(np.float64),
        atol=1e-2 if atol is None else atol, rtol=0.0 if rtol is None else rtol, err_msg=err_msg,
    )
