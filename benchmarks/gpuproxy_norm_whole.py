"""The norms' backward through the GPU proxy as one pass: `_norm_bwd` and `_sum_partials` back to back.

`replay.py` times every launch alone, the L2 flushed before each, so a capture's `_sum_partials`
reads its partials from memory, where the textbook Triton reference's "whole" (its kernel then its
sum, `benchmarks/gpuproxy_refs.py`) finds them in the L2 its kernel just wrote them to. `time`
times ours the same way, as `gpuproxy_whole.py` times any chain of launches: a captured
`_norm_bwd` launch, then the captured `_sum_partials` launch reading that launch's own partial
buffers, the L2 flushed once before the pair; it checks `dx`, the partials and their sums against
float64 (`benchmarks/gpuproxy_rowops_refs.py`).

`widen` is a what-if of a capture folder's MSL (run it on a copy): each thread's two 8-byte
`half4`/`bfloat4` loads or stores of 8 consecutive elements of one array become one 16-byte `uint4`
access, the width of Triton's accesses for 16-bit types. Valid only where every run of 8 is wholly
in or out of the mask (rows a multiple of 8 elements, as in the cases here).

From the project's root, the proxy copied to `.gpuproxy/gpuproxy` (its README):

    python3 benchmarks/gpuproxy_norm_whole.py time OUT.json CAPTURE:rms:4,11:14 ...   # GPU machine
    python benchmarks/gpuproxy_norm_whole.py widen CAPTURE ...                         # anywhere

`CAPTURE:NORM:BWD:SUM`: a capture of `benchmarks/gpuproxy_rowops.py`'s norm cases, the norm
(`rms` or `layer`), the `_norm_bwd` launch indices to time and the `_sum_partials` launch index.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

_LOAD = re.compile(r"^(\s*)(half4|bfloat4) (km_\d+) = \((km_\d+\[\d+\]) \? "
                   r"\(\(const device \2\*\)\((\w+) \+ (km_\d+)\[(\d+)\]\)\)\[0\] : [^;]*\);$")
_STORE = re.compile(r"^(\s*)\(\(device (half4|bfloat4)\*\)\((\w+) \+ (km_\d+)\[(\d+)\]\)\)\[0\] = (\2\(.*\));$")


def _pair_loads(first: re.Match[str], second: re.Match[str]) -> list[str] | None:
    """One 16-byte load for two 8-byte loads of elements i..i+3 and i+4..i+7 of one array."""
    same = first[2] == second[2] and first[5] == second[5] and first[6] == second[6]
    if not same or int(second[7]) != int(first[7]) + 4:
        return None
    indent, ty, name = first[1], first[2], first[3]
    wide = f"{name}_w"
    return [f"{indent}uint4 {wide} = ({first[4]} ? ((const device uint4*)({first[5]} + {first[6]}[{first[7]}]))[0]"
            f" : uint4(0u, 0u, 0u, 0u));",
            f"{indent}{ty} {name} = as_type<{ty}>(uint2({wide}.x, {wide}.y)); "
            f"{ty} {second[3]} = as_type<{ty}>(uint2({wide}.z, {wide}.w));"]


def _pair_stores(lines: list[str], i: int, n: int) -> list[str] | None:
    """`if (m) { store i..i+3 } if (m') { store i+4..i+7 }` as one 16-byte store under `m`."""
    if i + 5 >= len(lines) or lines[i + 2].strip() != "}" or lines[i + 5].strip() != "}":
        return None
    if not (lines[i].strip().startswith("if (") and lines[i + 3].strip().startswith("if (")):
        return None
    a, b = _STORE.match(lines[i + 1]), _STORE.match(lines[i + 4])
    if not (a and b and a[3] == b[3] and a[4] == b[4] and int(b[5]) == int(a[5]) + 4):
        return None
    lo, hi = f"km_lo_{n}", f"km_hi_{n}"
    return [lines[i],
            f"{a[1]}uint2 {lo} = as_type<uint2>({a[6]}); uint2 {hi} = as_type<uint2>({b[6]});",
            f"{a[1]}((device uint4*)({a[3]} + {a[4]}[{a[5]}]))[0] = uint4({lo}.x, {lo}.y, {hi}.x, {hi}.y);",
            lines[i + 2]]


def widen(msl: str) -> tuple[str, int, int]:
    """The MSL with paired 8-byte accesses made 16-byte ones; the loads and stores rewritten."""
    lines = msl.split("\n")
    out: list[str] = []
    loads = stores = 0
    i = 0
    while i < len(lines):
        first = _LOAD.match(lines[i])
        second = _LOAD.match(lines[i + 1]) if first and i + 1 < len(lines) else None
        paired = _pair_loads(first, second) if first and second else None
        if paired:
            out += paired
            loads += 1
            i += 2
            continue
        paired = _pair_stores(lines, i, stores)
        if paired:
            out += paired
            stores += 1
            i += 6
            continue
        out.append(lines[i])
        i += 1
    return "\n".join(out), loads, stores


def widen_capture(folder: Path) -> None:
    meta = json.loads((folder / "capture.json").read_text())
    for factory in sorted({launch["factory"] for launch in meta["launches"] if launch["kernel"] == "_norm_bwd"}):
        path = folder / "kernels" / f"{factory}.body.metal"
        text, loads, stores = widen(path.read_text())
        path.write_text(text)
        print(f"{folder} {factory}: {loads} 16-byte load(s), {stores} store(s)")


class NormRefs:
    """The refs `gpuproxy_whole.run` takes, for one norm's `_norm_bwd` and `_sum_partials`."""

    def __init__(self, refs: Any, norm: str) -> None:
        self.inputs = getattr(refs, f"inputs_{norm}_norm_backward")
        self._checks = (getattr(refs, f"check_{norm}_norm_backward"), refs.check_sum_partials)

    def check(self, launch: dict[str, Any], names: dict[str, Any]) -> dict[str, Any] | None:
        return next((want for check in self._checks if (want := check(launch, names)) is not None), None)


def time_pairs(spec: str, rp: Any, mc: Any, refs: Any, gen: Any, args: argparse.Namespace) -> list[Any]:
    """Every `_norm_bwd` launch of `spec` with its capture's `_sum_partials` launch, timed as one
    (`gpuproxy_whole.Chain`s)."""
    import gpuproxy_whole as whole

    folder, norm, bwd, summed = spec.split(":")
    norm_refs = NormRefs(refs, norm)
    return [whole.run(f"{folder}:{index},{summed}", rp, mc, norm_refs, gen, args) for index in bwd.split(",")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    timing = sub.add_parser("time", help="GPU machine: time each pair")
    timing.add_argument("out", help="JSON file of the results")
    timing.add_argument("specs", nargs="+", metavar="CAPTURE:NORM:BWD:SUM")
    timing.add_argument("--gpuproxy", default=".gpuproxy/gpuproxy")
    timing.add_argument("--reps", type=int, default=30)
    timing.add_argument("--rounds", type=int, default=2)
    timing.add_argument("--warmup", type=int, default=5)
    timing.add_argument("--dry-run", action="store_true", help="bind the pairs on the CPU; time nothing")
    wide = sub.add_parser("widen", help="rewrite a capture's _norm_bwd MSL with 16-byte accesses")
    wide.add_argument("captures", nargs="+")
    args = parser.parse_args(argv)
    if args.command == "widen":
        for folder in args.captures:
            widen_capture(Path(folder))
        return 0
    sys.path[:0] = [args.gpuproxy, str(ROOT / "benchmarks")]
    import gpuproxy_rowops_refs as refs  # float64 references and the saved statistics
    import mslcuda as mc  # the proxy's modules
    import replay as rp
    import torch

    gen = torch.Generator(device="cpu" if args.dry_run else "cuda").manual_seed(0)
    pairs = [pair for spec in args.specs for pair in time_pairs(spec, rp, mc, refs, gen, args)]
    Path(args.out).write_text(json.dumps([{**asdict(p), "pct_copy": p.pct_copy} for p in pairs], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
