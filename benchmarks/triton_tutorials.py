"""Triton's tutorials, unmodified, on triton_metal:
`python benchmarks/triton_tutorials.py --triton-src PATH [--backend NAME ...] [--only 01 ...]`.

PATH is a Triton checkout (or any folder holding `python/tutorials/`). Each tutorial file
`01-*.py` .. `06-*.py` runs in a fresh process as `python -m triton_metal.as_triton FILE`
(`import triton` resolves to triton_metal; torch tensors live on
`triton.runtime.driver.active.get_active_torch_device()`, the CPU off a Mac), once per backend:

* `interpreter`: `TRITON_METAL_INTERPRET=1` (NumPy);
* `compiled`: the default backend (Metal on a Mac, the emulator elsewhere).

Each run gets its own empty working folder (tutorials 05 and 06 write their CSV tables to `.`),
and the tutorial's own checks decide: a run passes when the process exits with status 0 and
prints no "❌" (tutorial 03 reports a mismatch by printing "❌ Triton and Torch differ" rather
than raising). Printed per run: the outcome, the wall time in seconds and, for a failure, the
last line of its error output. `--log-dir DIR` keeps each run's full output.

The benchmark sweeps (`perf_report(...).run()`) are part of each tutorial and run too, in full
by default as in Triton. `--bench-points N` sets `TRITON_METAL_BENCH_POINTS=N` for the runs, so
each table measures only its first N x values (and says which it left out): full sweeps take
hours in the interpreter (docs/tutorials.md has the measured times).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = ("01", "02", "03", "04", "05", "06")
BACKENDS: dict[str, dict[str, str]] = {
    "interpreter": {"TRITON_METAL_INTERPRET": "1"},
    "compiled": {"TRITON_METAL_INTERPRET": "0"},
}
MISMATCH = "❌"


@dataclass(frozen=True)
class Outcome:
    tutorial: str
    backend: str
    status: str  # "passed", "failed", "timeout"
    seconds: float
    detail: str  # the last error line of a failure, else ""


def find_tutorials(triton_src: Path, only: list[str]) -> list[Path]:
    """The tutorial files `NN-*.py` of the checkout, in order (one per number asked for)."""
    folder = triton_src / "python" / "tutorials"
    if not folder.is_dir():
        raise SystemExit(f"no tutorials folder at {folder}")
    found = []
    for number in only:
        matches = sorted(folder.glob(f"{number}-*.py"))
        if not matches:
            raise SystemExit(f"no tutorial {number}-*.py in {folder}")
        found.append(matches[0])
    return found


def last_error_line(output: str) -> str:
    """The line that says why a run failed: the exception line of a traceback, else the last
    non-empty line."""
    lines = [line for line in output.splitlines() if line.strip()]
    for line in reversed(lines):
        if MISMATCH in line:
            return line.strip()
    for line in reversed(lines):
        if not line.startswith((" ", "\t")) and ("Error" in line or "Exception" in line):
            return line.strip()
    return lines[-1].strip() if lines else ""


def run_one(path: Path, backend: str, timeout: float, log_dir: Path | None,
            bench_points: int | None) -> Outcome:
    env = dict(os.environ, PYTHONUNBUFFERED="1", **BACKENDS[backend])
    if bench_points is not None:
        env["TRITON_METAL_BENCH_POINTS"] = str(bench_points)
    command = [sys.executable, "-m", "triton_metal.as_triton", str(path)]
    with tempfile.TemporaryDirectory(prefix="tutorial-") as workdir:
        start = time.perf_counter()
        try:
            done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True,
                                  timeout=timeout)
            output, code = done.stdout + done.stderr, done.returncode
        except subprocess.TimeoutExpired as expired:
            output = _text(expired.stdout) + _text(expired.stderr)
            code = None
        seconds = time.perf_counter() - start
    tutorial = path.name[:2]
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        (log_dir / f"{path.stem}.{backend}.log").write_text(output)
    if code is None:
        return Outcome(tutorial, backend, "timeout", seconds, f"over {timeout:.0f} s")
    if code != 0 or MISMATCH in output:
        return Outcome(tutorial, backend, "failed", seconds, last_error_line(output))
    return Outcome(tutorial, backend, "passed", seconds, "")


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode(errors="replace")


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a whole number of x values, at least 1, not {text!r}")
    return int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--triton-src", type=Path, required=True, help="a Triton checkout")
    parser.add_argument("--backend", action="append", choices=sorted(BACKENDS),
                        help="repeatable; default: both")
    parser.add_argument("--only", action="append", choices=TUTORIALS, help="repeatable; default: all six")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per run (default 3600)")
    parser.add_argument("--log-dir", type=Path, help="keep each run's output here")
    parser.add_argument("--bench-points", type=_count, help="measure the first N x values of each benchmark table")
    args = parser.parse_args()
    backends = args.backend or list(BACKENDS)
    paths = find_tutorials(args.triton_src.resolve(), args.only or list(TUTORIALS))
    print(f"{'tutorial':<34} {'backend':<12} {'outcome':<8} {'seconds':>8}  detail", flush=True)
    failures = 0
    for path in paths:
        for backend in backends:
            outcome = run_one(path, backend, args.timeout, args.log_dir, args.bench_points)
            failures += outcome.status != "passed"
            print(f"{path.name:<34} {backend:<12} {outcome.status:<8} {outcome.seconds:>8.1f}  "
                  f"{outcome.detail}", flush=True)
    runs = len(paths) * len(backends)
    print(f"passed: {runs - failures} of {runs} runs")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
