"""`python -m triton_metal.selftest [--bench]`: does every example kernel run right here?

Each example kernel (`cases.py`) runs on the active backend (Metal on a Mac with MLX arrays; the
CPU emulator elsewhere, with NumPy arrays) and again in the NumPy interpreter
(`TRITON_METAL_INTERPRET=1`) on the same inputs; the outputs must agree within the case's
tolerance. `--bench` also times the softmax, layer norm, matmul and attention kernels beside
MLX's built-ins (`mx.softmax`, `mx.fast.layer_norm`, `mx.matmul`,
`mx.fast.scaled_dot_product_attention`) and every `triton_metal.ops` op beside its MLX twin
(`ops_cases.py`) in the same run, and reports GB/s and TFLOPS. On Linux the
kernels run on the emulator and MLX's built-ins on MLX's CPU backend: the report says so, and the
figures compare two CPU implementations, not GPUs.

The printed report (chip, OS, MLX and triton_metal versions, backend, results) is Markdown fit
to paste into an issue. `run_selftest(...)` returns it as a `SelftestReport`.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np

from .cases import Case, ExamplesNotFound, bench_cases, correctness_cases, load_examples


@dataclass
class CaseResult:
    name: str
    passed: bool
    max_error: float | None
    detail: str = ""


@dataclass
class BenchResult:
    name: str
    kernel_ms: float
    builtin_name: str
    builtin_ms: float
    bytes_moved: int
    flops: int

    def rate(self, ms: float) -> str:
        if self.flops:
            tflops = self.flops / (ms * 1e-3) / 1e12
            return f"{tflops:.3f} TFLOPS" if tflops >= 0.1 else f"{tflops * 1e3:.2f} GFLOPS"
        return f"{self.bytes_moved / (ms * 1e-3) / 1e9:.2f} GB/s"


@dataclass
class SelftestReport:
    backend: str
    environment: dict[str, str] = field(default_factory=dict)
    cases: list[CaseResult] = field(default_factory=list)
    bench: list[BenchResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.cases) and all(c.passed for c in self.cases)

    def __str__(self) -> str:
        lines = ["### triton_metal self-test", ""]
        lines += [f"- {k}: {v}" for k, v in self.environment.items()]
        lines += ["", "| kernel | result | max abs diff vs interpreter |", "|---|---|---|"]
        for c in self.cases:
            err = "-" if c.max_error is None else f"{c.max_error:.3g}"
            verdict = "pass" if c.passed else f"FAIL {c.detail}".strip()
            lines.append(f"| {c.name} | {verdict} | {err} |")
        if self.bench:
            lines += ["", f"| benchmark | triton_metal ({self.backend}) | MLX built-in | MLX |", "|---|---|---|---|"]
            for b in self.bench:
                lines.append(f"| {b.name} | {b.kernel_ms:.3f} ms, {b.rate(b.kernel_ms)} | {b.builtin_name} | "
                             f"{b.builtin_ms:.3f} ms, {b.rate(b.builtin_ms)} |")
        if self.notes:
            lines += [""] + [f"> {n}" for n in self.notes]
        passed = sum(c.passed for c in self.cases)
        lines += ["", f"{passed}/{len(self.cases)} kernels agree with the interpreter"]
        return "\n".join(lines)


@contextmanager
def _interpreting() -> Iterator[None]:
    previous = os.environ.get("TRITON_METAL_INTERPRET")
    os.environ["TRITON_METAL_INTERPRET"] = "1"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("TRITON_METAL_INTERPRET", None)
        else:
            os.environ["TRITON_METAL_INTERPRET"] = previous


def _numpy(a: Any) -> np.ndarray:
    if isinstance(a, np.ndarray):
        return a
    try:
        import mlx.core as mx

        if isinstance(a, mx.array):
            if a.dtype == mx.bfloat16:
                a = a.astype(mx.float32)
            return np.array(a)
    except ImportError:  # pragma: no cover
        pass
    return np.asarray(a)


def check_case(case: Case, lib: Any) -> CaseResult:
    """Run `case` on the active backend and in the interpreter; compare the outputs."""
    try:
        got = [_numpy(o) for o in case.run(lib)]
    except Exception as error:  # noqa: BLE001 - a failing kernel is a result, not a crash
        return CaseResult(case.name, False, None, f"{type(error).__name__}: {str(error).splitlines()[0][:200]}")
    with _interpreting():
        want = [_numpy(o) for o in case.run(lambda a: a)]
    worst = 0.0
    for g, w in zip(got, want):
        if g.shape != w.shape:
            return CaseResult(case.name, False, None, f"shape {g.shape} != {w.shape}")
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        both_nan = np.isnan(g64) & np.isnan(w64)
        diff = np.where(both_nan, 0.0, np.abs(g64 - w64))
        worst = max(worst, float(np.max(diff)) if diff.size else 0.0)
        limit = case.atol + case.rtol * float(np.max(np.abs(w64))) if w64.size else case.atol
        if not (diff <= limit).all():
            return CaseResult(case.name, False, worst, f"differs by more than {limit:.3g}")
    return CaseResult(case.name, True, worst)


def _environment(backend: str, mx: Any) -> dict[str, str]:
    from .. import __version__
    from ..tools.hardware import get_hardware_capabilities

    caps = get_hardware_capabilities(mx)
    system = platform.system()
    os_text = f"macOS {platform.mac_ver()[0]}" if system == "Darwin" else f"{system} {platform.release()}"
    return {
        "triton_metal": __version__,
        "backend": backend,
        "device": f"{caps.device_name} ({caps.architecture})",
        "GPU family": caps.gpu_family or "n/a (no Apple GPU)",
        "OS": f"{os_text} ({platform.machine()})",
        "Python": platform.python_version(),
        "MLX": str(getattr(mx, "__version__", "not installed")) if mx is not None else "not installed",
    }


def run_selftest(bench: bool = False, stream: TextIO | None = sys.stdout, mx: Any = None,
                 only: list[str] | None = None) -> SelftestReport:
    """Run the self-test (module docstring); print the report to `stream` unless None."""
    from ..runtime import active_backend_name
    from ..tools.timing import load_mlx, time_ms

    mx = load_mlx() if mx is None else mx
    backend = active_backend_name()
    report = SelftestReport(backend, _environment(backend, mx))
    if backend == "interpreter":
        report.notes.append("TRITON_METAL_INTERPRET=1 is set: the kernels are compared with themselves; "
                            "unset it to test the compiler")
    if backend == "emulator":
        report.notes.append("no Metal device: kernels ran on the CPU emulator (the generated MSL compiled as "
                            "C++); GPU figures need a Mac")
    try:
        examples = load_examples()
    except ExamplesNotFound as error:
        report.notes.append(str(error))
        if stream is not None:
            print(report, file=stream)
        return report
    lib = (lambda a: mx.array(a)) if backend == "metal" and mx is not None else (lambda a: a)
    for case in correctness_cases(examples):
        if only and case.name not in only:
            continue
        report.cases.append(check_case(case, lib))
    if bench and mx is not None and backend != "interpreter":
        if backend != "metal":
            report.notes.append("benchmarks: triton_metal on the CPU emulator against MLX's CPU built-ins; "
                                "neither figure says anything about an Apple GPU")
        from .ops_cases import op_bench_cases

        cases = list(bench_cases(examples, mx, large=backend == "metal"))
        cases += op_bench_cases(mx, large=backend == "metal")
        for b in cases:
            if only and b.name.split()[0] not in only:
                continue
            try:
                k_ms = sorted(time_ms(b.kernel, warmup=1, iters=5, mx=mx))[2]
                m_ms = sorted(time_ms(b.builtin, warmup=1, iters=5, mx=mx))[2]
            except Exception as error:  # noqa: BLE001 - report and continue with the others
                report.notes.append(f"benchmark {b.name} failed: {type(error).__name__}: {error}")
                continue
            report.bench.append(BenchResult(b.name, k_ms, b.builtin_name, m_ms, b.bytes_moved, b.flops))
    if stream is not None:
        print(report, file=stream)
    return report


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m triton_metal.selftest",
                                     description="Run every example kernel on this machine against the interpreter.")
    parser.add_argument("--bench", action="store_true", help="also time kernels beside MLX's built-ins")
    parser.add_argument("--only", nargs="*", help="run only these kernels")
    args = parser.parse_args(argv)
    report = run_selftest(bench=args.bench, only=args.only)
    return 0 if report.ok else 1


__all__ = ["BenchResult", "CaseResult", "SelftestReport", "check_case", "main", "run_selftest"]
