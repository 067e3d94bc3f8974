"""The kernel profiler: compiles, launches, run time and achieved bandwidth per kernel.

    triton_metal.start_profiling()
    ...launches...
    report = triton_metal.stop_profiling()
    print(report)            # one row per kernel
    report.to_dict()         # for tools

While profiling, every compiled launch (Metal or emulator) is timed on the host: MLX arrays among
the arguments are evaluated before the launch (so earlier queued work is not counted) and after
it (so the kernel's own work is), as `timing.wait_for` does; emulator launches are synchronous.
Bytes moved come from the static memory analysis of the launched variant
(`memory_analysis.launch_bytes`: every lane's elements, masked-off lanes included, so an upper
bound), and GB/s divides them by the measured time. Interpreted launches
(`TRITON_METAL_INTERPRET=1`) are not compiled and not profiled.

The hook is `runtime.observer.OBSERVER`: when no profiler runs, a launch reads one attribute.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..runtime.observer import OBSERVER
from .timing import load_mlx, wait_for


@dataclass
class KernelProfile:
    name: str
    backend: str = ""
    launches: int = 0
    compiles: int = 0
    compile_ms: float = 0.0
    run_ms: float = 0.0
    first_launches: int = 0
    """Launches that were the first of their compiled variant."""
    first_run_ms: float = 0.0
    """Their time: on Metal the first evaluation builds the pipeline, on the emulator the first
    launch builds the C++ kernel, so they are reported apart."""
    bytes_moved: int = 0
    bytes_exact: bool = True
    """False when a loop or branch of some launch could not be fixed from its scalars."""

    @property
    def mean_ms(self) -> float:
        return self.run_ms / self.launches if self.launches else 0.0

    @property
    def steady_mean_ms(self) -> float:
        """Mean over the launches that were not the first of their variant (0 when none)."""
        n = self.launches - self.first_launches
        return (self.run_ms - self.first_run_ms) / n if n else 0.0

    @property
    def gb_per_s(self) -> float:
        return self.bytes_moved / (self.run_ms * 1e-3) / 1e9 if self.run_ms > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "backend": self.backend, "launches": self.launches,
            "compiles": self.compiles, "compile_ms": self.compile_ms, "run_ms": self.run_ms,
            "mean_ms": self.mean_ms, "first_launches": self.first_launches, "first_run_ms": self.first_run_ms,
            "steady_mean_ms": self.steady_mean_ms, "bytes_moved": self.bytes_moved, "bytes_exact": self.bytes_exact,
            "gb_per_s": self.gb_per_s,
        }


@dataclass
class ProfileReport:
    kernels: dict[str, KernelProfile] = field(default_factory=dict)
    wall_ms: float = 0.0
    """Time between start_profiling and stop_profiling."""

    def to_dict(self) -> dict[str, Any]:
        return {"wall_ms": self.wall_ms, "kernels": [k.to_dict() for k in self.kernels.values()]}

    def __getitem__(self, name: str) -> KernelProfile:
        return self.kernels[name]

    def __str__(self) -> str:
        rows = [("kernel", "backend", "launches", "compiles", "compile ms", "total ms", "mean ms", "steady ms",
                 "MB moved", "GB/s")]
        for k in self.kernels.values():
            rows.append((
                k.name, k.backend, str(k.launches), str(k.compiles), f"{k.compile_ms:.1f}", f"{k.run_ms:.3f}",
                f"{k.mean_ms:.3f}", f"{k.steady_mean_ms:.3f}" if k.launches > k.first_launches else "-",
                f"{k.bytes_moved / 1e6:.2f}" + ("" if k.bytes_exact else "~"), f"{k.gb_per_s:.2f}",
            ))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = [f"triton_metal profile ({self.wall_ms:.1f} ms wall)"]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        lines.append("steady ms: mean without each variant's first launch (which builds the pipeline); "
                     "MB moved: elements addressed by every lane (masked lanes included); ~ marks loops "
                     "or branches the launch's scalars did not fix")
        return "\n".join(lines)


class Profiler:
    """The observer `start_profiling` installs (see the module docstring)."""

    def __init__(self, mx: Any = None) -> None:
        self.mx = load_mlx() if mx is None else mx
        self.report = ProfileReport()
        self._started = time.perf_counter()
        self._bytes: dict[tuple[int, tuple[int, int, int], tuple[object, ...]], Any] = {}

    def _profile(self, kernel: Any, compiled: Any) -> KernelProfile:
        name = kernel.__name__
        entry = self.report.kernels.get(name)
        if entry is None:
            entry = self.report.kernels[name] = KernelProfile(name, compiled.key.backend)
        return entry

    # -- the observer protocol (runtime.observer) -------------------------------------------------
    def compiled(self, kernel: Any, compiled: Any) -> None:
        entry = self._profile(kernel, compiled)
        entry.compiles += 1
        entry.compile_ms += compiled.compile_seconds * 1e3

    def launch(self, kernel: Any, compiled: Any, values: tuple[object, ...], grid: tuple[int, int, int]) -> None:
        wait_for(values, self.mx)
        start = time.perf_counter()
        compiled.launcher(values, grid)
        wait_for(values, self.mx)
        elapsed = (time.perf_counter() - start) * 1e3
        entry = self._profile(kernel, compiled)
        entry.launches += 1
        entry.run_ms += elapsed
        if compiled.launches == 0:  # the launch path counts it after this returns
            entry.first_launches += 1
            entry.first_run_ms += elapsed
        moved = self._launch_bytes(kernel, compiled, values, grid)
        if moved is not None:
            entry.bytes_moved += moved.total
            entry.bytes_exact &= moved.exact
        else:
            entry.bytes_exact = False

    def _launch_bytes(self, kernel: Any, compiled: Any, values: tuple[object, ...], grid: tuple[int, int, int]) -> Any:
        scalars = tuple(v if isinstance(v, (bool, int, float)) else None for v in values)
        key = (id(compiled), tuple(grid), scalars)
        if key not in self._bytes:
            from .memory_analysis import launch_bytes

            module = compiled.module
            if module is None and compiled.ir_text:
                from ..ir import parse_module

                module = parse_module(compiled.ir_text)
            result = None
            if module is not None:
                result = launch_bytes(module, dict(zip(kernel.arg_names, values)), tuple(grid))
            self._bytes[key] = result
        return self._bytes[key]

    def finish(self) -> ProfileReport:
        self.report.wall_ms = (time.perf_counter() - self._started) * 1e3
        return self.report


def start_profiling(mx: Any = None) -> Profiler:
    """Profile every compiled launch from now until `stop_profiling()`."""
    if OBSERVER.current is not None:
        raise RuntimeError("start_profiling: a profiler is already running; call stop_profiling() first")
    profiler = Profiler(mx)
    OBSERVER.current = profiler
    return profiler


def stop_profiling() -> ProfileReport:
    """Stop profiling and return the report (a table when printed; `to_dict()` for tools)."""
    profiler = OBSERVER.current
    if not isinstance(profiler, Profiler):
        raise RuntimeError("stop_profiling: no profiler is running; call start_profiling() first")
    OBSERVER.current = None
    return profiler.finish()
