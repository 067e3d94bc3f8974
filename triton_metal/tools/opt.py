"""`triton-metal-opt`: read IR text, run named passes, print IR (the driver of file-based tests).

    triton-metal-opt FILE [-p pass1,pass2{opt=val}] [--split-input-file] [--verify-diagnostics]
                     [--no-verify] [--print-locs] [--list-passes] [--dot-report [--target T]]

With no passes the output is the input re-printed (parse -> verify -> print), the round trip the
tests rely on. Passes come from `triton_metal.passes.PASS_REGISTRY` (name -> pass class, each a
frozen dataclass with `apply(ctx, module)`) when that registry exists. `--split-input-file` treats
`// -----` lines as separators between independent cases and prints the results joined the same
way. `--verify-diagnostics` expects every case to fail: the error goes to stdout (for CHECK
lines) and the exit status is 0 only if each case failed. `--dot-report` compiles each case after
its passes (the module must have its layouts: run the layout passes, or give laid-out IR) and
prints, instead of the IR, one line per `tt.dot` with the figures of `codegen.dot_report`,
compiled for `--target` (`apple10:4.0`: tensor ops where the cost rule takes them; default: the
code generator's default target, docs/targets.md).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import CompilationError
from ..ir import Module, parse_module, print_module

SPLIT_MARKER = "// -----"


def available_passes() -> dict[str, Any]:
    """Registered passes by name (empty until the passes package provides a registry)."""
    try:
        passes = importlib.import_module("triton_metal.passes")
    except ImportError:
        return {}
    return dict(getattr(passes, "PASS_REGISTRY", {}))


def _pipeline(names: Sequence[str]) -> list[Callable[[Module], None]]:
    registry = available_passes()
    passes = importlib.import_module("triton_metal.passes") if registry else None
    steps: list[Callable[[Module], None]] = []
    for name in names:
        base = name.split("{", 1)[0].strip()
        if base not in registry:
            known = ", ".join(sorted(registry)) or "none registered"
            raise SystemExit(f"triton-metal-opt: unknown pass '{base}' (known: {known})")
        if "{" in name and passes is not None:
            try:
                pass_obj = passes.parse_pass_spec(name)  # options: name{opt=val,...}
            except ValueError as e:
                raise SystemExit(f"triton-metal-opt: {e}") from None
        else:
            pass_obj = registry[name]() if isinstance(registry[name], type) else registry[name]
        steps.append(lambda m, p=pass_obj: p.apply(None, m))
    return steps


def split_pass_list(text: str) -> list[str]:
    """`a,b{x=1,y=2},c` split at the commas outside braces."""
    out, depth, current = [], 0, ""
    for ch in text:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(current)
            current = ""
        else:
            current += ch
    out.append(current)
    return [s.strip() for s in out if s.strip()]


def split_cases(text: str) -> list[tuple[str, int]]:
    """The `// -----`-separated cases with the line each starts on (1-based)."""
    cases: list[tuple[str, int]] = []
    current: list[str] = []
    start = 1
    for i, line in enumerate(text.splitlines(keepends=True), start=1):
        if line.strip() == SPLIT_MARKER:
            cases.append(("".join(current), start))
            current, start = [], i + 1
        else:
            current.append(line)
    cases.append(("".join(current), start))
    return cases


def run_case(text: str, filename: str, steps: Sequence[Callable[[Module], None]], verify: bool, locs: bool,
             dot_report: bool = False, target: str | None = None) -> str:
    module = parse_module(text, filename)
    if verify:
        module.verify()
    for step in steps:
        step(module)
        if verify:
            module.verify()
    if dot_report:
        return dot_report_text(module, target)
    return print_module(module, print_locs=locs)


def dot_report_text(module: Module, target: str | None = None) -> str:
    """One line per dot of the laid-out `module`, from its lowered program (`codegen.dot_report`),
    compiled for `target` ("apple10:4.0"; None: the default)."""
    from ..codegen import CodegenOptions, compile_module
    from ..codegen.target import DEFAULT_TARGET, parse_target
    from ..passes import analyze_axis_info

    options = CodegenOptions(num_warps=int(module.attributes.get("num_warps", 4)),
                             target=parse_target(target) if target else DEFAULT_TARGET)
    kernel = compile_module(module, options, analyze_axis_info(module))
    reports = kernel.metadata.get("dot_reports", [])
    lines = [_report_line(r) for r in reports]  # type: ignore[union-attr]
    return "".join(line + "\n" for line in lines) or "no tl.dot on simdgroup matrices\n"


def _report_line(report: dict[str, Any]) -> str:
    from ..codegen.dot_report import DotReport

    return DotReport(**report).text()


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="triton-metal-opt", description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?", default="-", help="IR file ('-' for stdin)")
    ap.add_argument("-p", "--passes", default="", help="comma-separated pass names")
    ap.add_argument("--split-input-file", action="store_true")
    ap.add_argument("--verify-diagnostics", action="store_true")
    ap.add_argument("--no-verify", action="store_true")
    ap.add_argument("--print-locs", action="store_true")
    ap.add_argument("--list-passes", action="store_true")
    ap.add_argument("--dot-report", action="store_true", help="print the dot report of each case")
    ap.add_argument("--target", help="with --dot-report: the target to compile for (e.g. apple10:4.0)")
    args = ap.parse_args(argv)

    if args.list_passes:
        for name in sorted(available_passes()):
            print(name)
        return 0
    text = sys.stdin.read() if args.file == "-" else open(args.file, encoding="utf-8").read()
    filename = "<stdin>" if args.file == "-" else args.file
    steps = _pipeline(split_pass_list(args.passes))
    cases = split_cases(text) if args.split_input_file else [(text, 1)]
    outputs: list[str] = []
    status = 0
    for case, first_line in cases:
        # Pad with newlines so reported line numbers are those of the whole file.
        padded = "\n" * (first_line - 1) + case
        try:
            out = run_case(padded, filename, steps, not args.no_verify, args.print_locs, args.dot_report, args.target)
        except CompilationError as e:
            if not args.verify_diagnostics:
                print(str(e), file=sys.stderr)
                return 1
            outputs.append(str(e) + "\n")
            continue
        if args.verify_diagnostics:
            print(f"{filename}:{first_line}: error: expected a diagnostic, but the case verified", file=sys.stderr)
            status = 1
        outputs.append(out)
    sys.stdout.write((SPLIT_MARKER + "\n").join(outputs))
    return status


if __name__ == "__main__":
    sys.exit(main())
