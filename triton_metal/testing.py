"""Benchmarking and comparison helpers with Triton's names: `do_bench`, `assert_close`,
`perf_report` and `Benchmark` (the tutorials' benchmark tables).

`do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean")` times a
callable as Triton's does: one call (which compiles), an estimate from 5 calls, then about
`warmup` ms of untimed calls and about `rep` ms of timed ones (both are time budgets, at least one
call each), each call timed on its own; the result is in milliseconds. On the host path (below)
the estimating calls are the warm-up: they stop once they have spent `warmup` ms, and only what
they left of it is spent on further untimed calls, so a call slower than both `warmup` and half
of `rep` runs three times in all (compile, estimate, one timed) instead of eight.

`perf_report(...)` tables measure every x value, as in Triton, unless
`TRITON_METAL_BENCH_POINTS=N` (a whole number >= 1) limits each table to its first N x values; a
table so shortened says which values it left out, on stderr. No plot is drawn: `show_plots` and
`save_path` (which gets the CSV tables) say so on stderr rather than being silently ignored.

How a call is timed depends on where kernels run (`timing_path()`):
* "metal" (MLX has a Metal device and no other backend is forced): GPU work is asynchronous and
  MLX has no GPU timestamps (mlx_api.md section 7), so each timed call starts after
  `mx.synchronize()` (earlier queued work is not counted) and ends when the MLX arrays it returned
  are evaluated (`mx.eval`) and `mx.synchronize()` returns: the time includes commit and wait
  (about 10-100 us per call).
* "host" (the emulator and the interpreter): launches run synchronously on the CPU, so the wall
  time of the call is the kernel's; MLX arrays it returns are still evaluated inside the timing.
* with PyTorch imported and an MPS device (torch_mps launches), each timed call also starts and
  ends with `torch.mps.synchronize()`, so work queued on PyTorch's MPS stream is counted.
Unlike Triton's, no cache is flushed between calls (MLX's own benchmarks do not either), so small
kernels are timed with warm caches.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

try:
    import mlx.core as _mx
except ImportError:  # pragma: no cover - MLX is a dependency
    _mx = None

RETURN_MODES = ("min", "max", "mean", "median", "all")
_FALSE_WORDS = ("", "0", "false", "no", "off")
_now: Callable[[], float] = time.perf_counter  # seconds; a test may substitute a fake clock


def timing_path() -> str:
    """"metal" when launches run on the GPU through MLX, else "host" (module docstring)."""
    if _mx is None:
        return "host"
    if os.environ.get("TRITON_METAL_INTERPRET", "").strip().lower() not in _FALSE_WORDS:
        return "host"
    forced = os.environ.get("TRITON_METAL_BACKEND", "").strip().lower()
    if forced and forced != "metal":
        return "host"
    try:
        return "metal" if bool(_mx.metal.is_available()) else "host"
    except Exception:  # noqa: BLE001 - an MLX without the metal module has no GPU
        return "host"


def _evaluate(result: object) -> None:
    """Finish the lazy MLX work the call returned."""
    if _mx is None:
        return
    arrays = [r for r in (result if isinstance(result, (tuple, list)) else (result,))
              if isinstance(r, _mx.array)]
    if arrays:
        _mx.eval(*arrays)


def _torch_mps_synchronize() -> Callable[[], None] | None:
    """`torch.mps.synchronize` when torch is imported and has an MPS device (never imports it)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        return torch.mps.synchronize if torch.backends.mps.is_available() else None
    except Exception:  # noqa: BLE001 - a torch build without MPS support
        return None


def _timer(path: str) -> Callable[[Callable[[], object]], float]:
    gpu = path == "metal"

    mps_sync = _torch_mps_synchronize()

    def timed(fn: Callable[[], object]) -> float:
        if gpu:
            _mx.synchronize()
        if mps_sync is not None:
            mps_sync()
        start = _now()
        _evaluate(fn())
        if gpu:
            _mx.synchronize()
        if mps_sync is not None:
            mps_sync()
        return (_now() - start) * 1e3

    return timed


ESTIMATE_CALLS = 5
"""Calls that estimate a call's time before the warm-up, as in Triton."""


def _estimating_calls(timed: Callable[[Callable[[], object]], float], fn: Callable[[], object],
                      warmup: float, host: bool) -> list[float]:
    """The times of the calls that estimate one call: `ESTIMATE_CALLS` of them on a GPU. On the
    host path they stop once they have used the warm-up budget: a CPU run needs no GPU clocks
    ramped up, so there they are the warm-up, and a call of seconds (a full-size tutorial sweep
    in the interpreter) is not repeated five times before the first timed one."""
    times: list[float] = []
    while len(times) < ESTIMATE_CALLS and not (host and sum(times) >= warmup):
        times.append(timed(fn))
    return times


def _warmup_calls(warmup: float, estimate: float, estimating: list[float], host: bool) -> int:
    """Untimed calls after the estimate: about `warmup` ms of them, at least one (Triton's rule);
    on the host path only what the estimating calls left of the budget, possibly none."""
    if not host:
        return max(1, int(warmup / estimate))
    return max(0, int((warmup - sum(estimating)) / estimate))


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
    statistic; `return_mode="all"` returns every time. `grad_to_none`: torch tensors whose
    `.grad` is reset before every call, as in Triton (MLX and NumPy arrays have no `.grad`).
    """
    if return_mode not in RETURN_MODES:
        raise ValueError(f"return_mode must be one of {RETURN_MODES}, not {return_mode!r}")
    for x in grad_to_none or ():
        if not hasattr(x, "grad"):
            raise ValueError(
                f"do_bench: grad_to_none takes tensors with a .grad (torch), not {type(x).__name__}"
            )
    if grad_to_none:
        inner = fn

        def fn() -> object:
            for x in grad_to_none:
                x.grad = None
            return inner()

    path = timing_path()
    timed = _timer(path)
    timed(fn)
    estimating = _estimating_calls(timed, fn, warmup, host=path == "host")
    estimate = max(sum(estimating) / len(estimating), 1e-6)
    n_warmup = _warmup_calls(warmup, estimate, estimating, host=path == "host")
    n_repeat = max(1, int(rep / estimate))
    for _ in range(n_warmup):
        timed(fn)
    times = [timed(fn) for _ in range(n_repeat)]
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
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        return (x.float() if x.dtype == torch.bfloat16 else x).numpy()
    if _mx is not None and isinstance(x, _mx.array):
        if x.dtype == _mx.bfloat16:
            x = x.astype(_mx.float32)
        return np.array(x)
    return np.asarray(x)


def assert_close(x: Any, y: Any, atol: float | None = None, rtol: float | None = None,
                 err_msg: str = "") -> None:
    """Assert that two arrays (NumPy, MLX, torch or scalars) are close: Triton's defaults, atol
    1e-2 and rtol 0."""
    a = _as_numpy(x)
    b = _as_numpy(y)
    if a.dtype == np.bool_ or b.dtype == np.bool_:
        np.testing.assert_array_equal(a, b, err_msg=err_msg)
        return
    np.testing.assert_allclose(
        a.astype(np.float64), b.astype(np.float64),
        atol=1e-2 if atol is None else atol, rtol=0.0 if rtol is None else rtol, err_msg=err_msg,
    )


@dataclass
class Benchmark:
    """One table of `perf_report`: `x_names` take each of `x_vals`, `line_arg` each of
    `line_vals` (named `line_names`), and `args` are passed to every call (Triton's fields;
    the plotting ones are kept for compatibility)."""

    x_names: list[str]
    x_vals: list[Any]
    line_arg: str
    line_vals: list[Any]
    line_names: list[str]
    plot_name: str
    args: dict[str, Any] = field(default_factory=dict)
    xlabel: str = ""
    ylabel: str = ""
    x_log: bool = False
    y_log: bool = False
    styles: Any = None
    color: Any = None


BENCH_POINTS_ENV = "TRITON_METAL_BENCH_POINTS"


def bench_points() -> int | None:
    """`TRITON_METAL_BENCH_POINTS`: how many x values of each table to measure (None: all)."""
    raw = os.environ.get(BENCH_POINTS_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{BENCH_POINTS_ENV} must be a whole number of x values, at least 1, not {raw!r}")
    return int(raw)


def _measured_x_vals(bench: Benchmark) -> list[Any]:
    """The x values a table measures: all, or the first `TRITON_METAL_BENCH_POINTS` (saying so)."""
    limit = bench_points()
    if limit is None or limit >= len(bench.x_vals):
        return list(bench.x_vals)
    left_out = [str(x) for x in bench.x_vals[limit:]]
    if len(left_out) > 4:  # a long sweep: its first values and its last
        left_out = [*left_out[:2], "...", left_out[-1]]
    _note(f"{bench.plot_name}: measuring the first {limit} of {len(bench.x_vals)} x values "
          f"({BENCH_POINTS_ENV}={limit}); left out: {', '.join(left_out)}")
    return list(bench.x_vals[:limit])


def _note(message: str) -> None:
    print(f"[triton_metal] {message}", file=sys.stderr, flush=True)


class Mark:
    """The benchmark function under `perf_report`; `run()` measures and reports the tables."""

    def __init__(self, fn: Callable[..., Any], benchmarks: Benchmark | Sequence[Benchmark]) -> None:
        self.fn = fn
        self.benchmarks = [benchmarks] if isinstance(benchmarks, Benchmark) else list(benchmarks)

    def _table(self, bench: Benchmark, **kwargs: Any) -> list[list[Any]]:
        rows: list[list[Any]] = []
        for x in _measured_x_vals(bench):
            xs = dict(zip(bench.x_names, x)) if isinstance(x, (tuple, list)) else dict.fromkeys(bench.x_names, x)
            row: list[Any] = [x]
            for line in bench.line_vals:
                result = self.fn(**xs, **{bench.line_arg: line}, **bench.args, **kwargs)
                row.append(result[0] if isinstance(result, (tuple, list)) else result)
            rows.append(row)
        return rows

    def run(self, show_plots: bool = False, print_data: bool = False, save_path: str = "",
            return_df: bool = False, **kwargs: Any) -> Any:
        """Measure every table; print it (`print_data`) and write `<plot_name>.csv` under
        `save_path`. No plots are drawn; asked for one (`show_plots`, or `save_path`, where
        Triton also saves a PNG), it says so on stderr."""
        if show_plots or save_path:
            saved = f"; the tables are saved as CSV under {save_path!r}" if save_path else ""
            _note(f"perf_report draws no plots (Triton draws them with matplotlib){saved}")
        tables = []
        for bench in self.benchmarks:
            header = [" / ".join(bench.x_names), *bench.line_names]
            rows = self._table(bench, **kwargs)
            text = "\n".join(",".join(str(v) for v in r) for r in [header, *rows])
            if print_data:
                print(f"{bench.plot_name}:\n{text}")
            if save_path:
                os.makedirs(save_path, exist_ok=True)
                with open(os.path.join(save_path, f"{bench.plot_name}.csv"), "w") as f:
                    f.write(text + "\n")
            tables.append((header, rows))
        if return_df:
            return tables[0] if len(tables) == 1 else tables
        return None


def perf_report(benchmarks: Benchmark | Sequence[Benchmark]) -> Callable[[Callable[..., Any]], Mark]:
    """`@perf_report(Benchmark(...))`: make a benchmark function a `Mark` with `.run(...)`."""
    return lambda fn: Mark(fn, benchmarks)
