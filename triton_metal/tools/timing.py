"""Waiting for and timing GPU work through MLX (mlx_api.md section 7).

MLX has no GPU timestamps: work is timed on the host with `time.perf_counter()` around a call
followed by `mx.eval(*arrays)` (which blocks until the command buffer that computes them has
completed) and `mx.synchronize()` (the default stream drained). Every function takes the MLX
module as `mx` so tests can pass a fake that records exactly these calls; None means
`mlx.core`, or no waiting at all where MLX cannot be imported (the emulator is synchronous).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any


def load_mlx() -> Any:
    try:
        import mlx.core as mx
    except ImportError:  # pragma: no cover - MLX is a dependency
        return None
    return mx


def wait_for(values: Iterable[object], mx: Any) -> None:
    """Evaluate the MLX arrays among `values`, then drain the default stream."""
    if mx is None:
        return
    arrays = [v for v in values if isinstance(v, mx.array)]
    if arrays:
        mx.eval(*arrays)
    mx.synchronize()


def time_ms(fn: Callable[[], object], *, warmup: int = 2, iters: int = 10, mx: Any = None,
            flatten: Callable[[object], Iterable[object]] | None = None) -> list[float]:
    """Milliseconds of each of `iters` calls of `fn` after `warmup` calls, each call waited for
    (its MLX results evaluated). `flatten(result)` lists the arrays a result holds (default: the
    result itself, or its items when it is a tuple or list)."""
    if iters < 1:
        raise ValueError(f"time_ms needs iters >= 1, got {iters}")

    def arrays_of(result: object) -> Iterable[object]:
        if flatten is not None:
            return flatten(result)
        return result if isinstance(result, (tuple, list)) else (result,)

    for _ in range(warmup):
        wait_for(arrays_of(fn()), mx)
    times: list[float] = []
    for _ in range(iters):
        start = time.perf_counter()
        wait_for(arrays_of(fn()), mx)
        times.append((time.perf_counter() - start) * 1e3)
    return times
