"""Two or more versions of the generated MSL through the GPU proxy in one call: the same cases replayed side by side.

Capture the cases once per version, each into `ROOT/LABEL/cases/<case>` (`gpuproxy_cases.py`,
through the proxy's `capture.py`) and `ROOT/LABEL/rowops/<case>` (`gpuproxy_rowops.py --out`),
with that version's code generator. The editable install maps `triton_metal.codegen` to one
checkout's `codegen/` whatever the current folder or `PYTHONPATH` says, so capture another
version from the same checkout with its files swapped in (or from its own environment), and give
each version its own `TRITON_METAL_CACHE_DIR`. Then, on the GPU machine, from the project's root:

    python3 benchmarks/gpuproxy_ab.py replay ROOT main branch [--cases NAME ...] [--launches LABEL:CASE=0,2-5]

replays every case of every label in one process (torch imported and the device set up once,
the copy timed per replay), label after label within a case, so each ratio has its baseline
from the same minute; the Triton and torch references are timed beside the last label only.
Each replay writes `$RESULTS/<label>_<case>.json` and its printout `.log`. Anywhere:

    python benchmarks/gpuproxy_ab.py table RESULTS [LABEL ...]

prints, launch by launch, each label's kernel µs, share of a copy of the same bytes, registers
and largest check error, the ratio to the first label, and the references; then per kernel the
default config (config 0: the pruners put the default first) and the best config of each label.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def case_args() -> dict[str, tuple[str, list[str], list[str]]]:
    """case -> (its folder under a label, the replay's checks and inputs, its timed references),
    from the registries of `gpuproxy_cases.py` and `gpuproxy_rowops.py`."""
    import gpuproxy_cases as gc
    import gpuproxy_rowops as gr

    out: dict[str, tuple[str, list[str], list[str]]] = {}
    for name, c in gc.CASES.items():
        own = [a for check in c.checks for a in ("--check", check)]
        refs = [a for t in c.time_refs for a in ("--time-ref", t)]
        refs += [a for f in c.ref_fns for a in ("--time-ref-fn", f"{gc.REFS}:{f}")]
        out[name] = ("cases", own, refs)
    for r in gr.CASES:
        own = [a for f in r.checks for a in ("--check-fn", f"{gr.REFS}:{f}")]
        own += [a for f in r.inputs for a in ("--inputs", f"{gr.REFS}:{f}")]
        refs = [a for t in r.time_refs for a in ("--time-ref", t)]
        refs += [a for f in r.time_fns for a in ("--time-ref-fn", f"{gr.TRITON_REFS}:{f}")]
        out[r.name] = ("rowops", own, refs)
    return out


def replay_all(root: str, labels: list[str], names: list[str], launches: dict[tuple[str, str], str],
               results: str, proxy: str, limit: float) -> int:
    sys.path.insert(0, proxy)
    import replay  # the proxy's module

    start = time.time()
    registry = case_args()
    failed = 0
    for name in names:
        folder, own, refs = registry[name]
        for i, label in enumerate(labels):
            capture = Path(root) / label / folder / name
            if not (capture / "capture.json").is_file():
                continue
            if time.time() - start > limit:
                print(f"{label} {name}: skipped (past {limit:.0f} s)", file=sys.stderr, flush=True)
                continue
            argv = [str(capture), *own, *(refs if i == len(labels) - 1 else [])]
            if (label, name) in launches:
                argv += ["--launches", launches[label, name]]
            argv += ["--json", f"{results}/{label}_{name}.json"]
            for state in (replay.PRODUCED, replay.NEEDED, replay.USED, replay._KERNELS):
                state.clear()  # one replay's launches and kernels are not the next one's
            began = time.time()
            with open(f"{results}/{label}_{name}.log", "w") as log, contextlib.redirect_stdout(log):
                try:
                    rc: Any = replay.main(argv)
                except BaseException:  # noqa: BLE001 - one failed replay: logged, the others go on
                    traceback.print_exc(file=log)
                    rc = "exception"
            failed += rc != 0
            print(f"{label} {name}: rc {rc}, {time.time() - began:.1f} s", file=sys.stderr, flush=True)
    return 1 if failed else 0


def _config(launch: dict[str, Any]) -> str:
    text = (launch.get("config") or "-").split(": ", 1)[-1]
    return re.sub(r", num_ctas.*", "", text).replace("num_warps: ", "w").replace(": ", "=")


def _error(launch: dict[str, Any]) -> float:
    return max((c["err"] for c in launch.get("checks", [])), default=float("nan"))


def table(results: str, labels: list[str]) -> str:
    files = sorted(Path(results).glob("*.json"))
    labels = labels or sorted({f.stem.split("_", 1)[0] for f in files})
    names = sorted({f.stem.split("_", 1)[1] for f in files if f.stem.split("_", 1)[0] in labels})
    lines: list[str] = []
    for name in names:
        runs = {lab: json.loads(p.read_text()) for lab in labels if (p := Path(results) / f"{lab}_{name}.json").is_file()}
        if labels[0] not in runs:
            continue
        by_label = {lab: {x["index"]: x for x in run["launches"]} for lab, run in runs.items()}
        lines.append(f"== {name}")
        for base in runs[labels[0]]["launches"]:
            if "kernel_us" not in base:
                continue
            cells = []
            for lab in labels:
                got = by_label.get(lab, {}).get(base["index"])
                if got is None or "kernel_us" not in got:
                    continue
                ratio = "" if lab == labels[0] else f" x{got['kernel_us'] / base['kernel_us']:.3f}"
                ok = "" if got.get("ok", False) else " WRONG"
                cells.append(f"{lab} {got['kernel_us']:.1f} ({got['pct_copy']:.1f}%, {got.get('registers')}r, "
                             f"err {_error(got):.1e}{ok}){ratio}")
            refs = {r["label"]: r.get("us") for run in by_label.values() for r in run.get(base["index"], {}).get("refs", [])}
            ref_text = "; ".join(f"{k} {v:.1f}" if v is not None else f"{k} failed" for k, v in refs.items())
            lines.append(f"[{base['index']}] {base['kernel']} {_config(base)}: " + " | ".join(cells)
                         + (f" || {ref_text}" if ref_text else ""))
        for kernel in dict.fromkeys(x["kernel"] for x in runs[labels[0]]["launches"]):
            summary = []
            for lab, run in runs.items():
                timed = [x for x in run["launches"] if x["kernel"] == kernel and "kernel_us" in x]
                if not timed:
                    continue
                best = min(timed, key=lambda x: x["kernel_us"])
                default = next((x for x in timed if str(x.get("config") or "0/").startswith("0/")), timed[0])
                summary.append(f"{lab} default {default['kernel_us']:.1f}, best {best['kernel_us']:.1f} ({_config(best)})")
            lines.append(f"   {kernel}: " + "; ".join(summary))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rp = sub.add_parser("replay", help="on the GPU machine: replay every label's captures of the cases")
    rp.add_argument("root", help="the folder holding one folder of captures per label")
    rp.add_argument("labels", nargs="+", help="the versions, the baseline first (no '_' in a label: it "
                                              "separates the label from the case in the results' names)")
    rp.add_argument("--cases", nargs="*", default=None, help="case names, in the order to run (default: all captured)")
    rp.add_argument("--launches", nargs="*", default=[], metavar="LABEL:CASE=SPEC",
                    help="replay only these launch indices of one label's case (replay.py --launches)")
    rp.add_argument("--gpuproxy", default=".gpuproxy/gpuproxy", help="the proxy's folder")
    rp.add_argument("--limit", type=float, default=float("inf"), help="start no replay after this many seconds")
    tb = sub.add_parser("table", help="the results side by side")
    tb.add_argument("results")
    tb.add_argument("labels", nargs="*", help="the labels to show, the baseline first (default: all, sorted)")
    args = parser.parse_args(argv)
    if args.command == "table":
        print(table(args.results, args.labels))
        return 0
    results = os.environ.get("RESULTS", ".gpuproxy/results")
    os.makedirs(results, exist_ok=True)
    names = args.cases or list(case_args())
    launches = {}
    for spec in args.launches:
        where, _, indices = spec.partition("=")
        label, _, name = where.partition(":")
        launches[label, name] = indices
    return replay_all(args.root, args.labels, names, launches, results, args.gpuproxy, args.limit)


if __name__ == "__main__":
    sys.exit(main())
