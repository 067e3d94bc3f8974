"""The runner's command line (package docstring): environment, pytest, counts."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from . import report

BACKENDS = ("interpreter", "emulator")
PLUGIN = "triton_metal.tools.triton_suite.plugin"


def backend_environment(base: dict[str, str], backend: str, target: str | None) -> dict[str, str]:
    """The environment pytest runs in: the interpreter flags set (ours and Triton's, which the
    test files read through `is_interpreter()`) or both removed, the target when given."""
    env = dict(base)
    for name in ("TRITON_METAL_INTERPRET", "TRITON_INTERPRET", "TRITON_METAL_BACKEND"):
        env.pop(name, None)
    if backend == "interpreter":
        env["TRITON_METAL_INTERPRET"] = env["TRITON_INTERPRET"] = "1"
    else:
        env["TRITON_METAL_BACKEND"] = "emulator"
    if target is not None:
        env["TRITON_METAL_TARGET"] = target
    return env


def pytest_command(test_file: Path, junit: Path, extra: Sequence[str], tests: Sequence[str] = ()) -> list[str]:
    """pytest on the one file (or on its test functions `tests`, every parametrization of
    each), with our plugin, Triton's conftest files left out (the plugin supplies their
    fixtures), no ini file of Triton's read, no cache written into its tree."""
    targets = [f"{test_file}::{name}" for name in tests] or [str(test_file)]
    return [
        sys.executable, "-m", "pytest", *targets,
        "-p", PLUGIN, "-p", "no:cacheprovider",
        "-c", os.devnull, "--rootdir", str(test_file.parent), "--confcutdir", str(test_file.parent),
        "--junitxml", str(junit), "-o", "junit_family=xunit1", "-q", "-rN", "--disable-warnings",
        *([] if any(a.startswith("--tb") for a in extra) else ["--tb=line"]),
        *extra,
    ]


def run_pytest(command: list[str], env: dict[str, str]) -> int:
    """pytest's exit status. An interrupt of the runner (Ctrl-C, `timeout -s INT`) is passed on
    to pytest, which then stops and still writes its report of the tests that ran."""
    child = subprocess.Popen(command, env=env)
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:
            child.send_signal(signal.SIGINT)


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        prog="python -m triton_metal.tools.triton_suite",
        description="Run one of Triton's test files with `import triton` resolving to triton_metal, "
        "and count the outcomes. Arguments not listed here go to pytest (-k, -n, -x, ...).",
    )
    parser.add_argument("test_file", type=Path, help="a test file of Triton's repository")
    parser.add_argument("--backend", choices=BACKENDS, default="interpreter")
    parser.add_argument("--target", help="TRITON_METAL_TARGET for the emulator (apple9:3.2, ...)")
    parser.add_argument("--test", action="append", default=[], metavar="NAME",
                        help="run only this test function of the file (repeatable)")
    parser.add_argument("--junitxml", type=Path, help="keep pytest's JUnit XML report here")
    parser.add_argument("--failures", type=Path, help="write the failing test ids and reasons here")
    return parser.parse_known_args(list(argv))


def main(argv: Sequence[str] | None = None) -> int:
    """Run pytest, print the summary; pytest's exit status (0: all passed or skipped)."""
    args, extra = parse_args(sys.argv[1:] if argv is None else argv)
    if not args.test_file.is_file():
        print(f"triton_suite: no test file at {args.test_file}", file=sys.stderr)
        return 2
    if extra[:1] == ["--"]:
        extra = extra[1:]
    env = backend_environment(dict(os.environ), args.backend, args.target)
    with tempfile.TemporaryDirectory() as scratch:
        junit = args.junitxml or Path(scratch) / "junit.xml"
        status = run_pytest(pytest_command(args.test_file.resolve(), junit, extra, args.test), env)
        if not junit.is_file():
            print("triton_suite: pytest wrote no report", file=sys.stderr)
            return status or 3
        found = report.outcomes(junit.read_text())
    title = f"{args.test_file.name} on the {args.backend}" + (f" ({args.target})" if args.target else "")
    print(report.summary(found, title))
    if args.failures is not None:
        args.failures.parent.mkdir(parents=True, exist_ok=True)
        args.failures.write_text(report.failure_list(found))
    return status
