"""`python -m triton_metal.runtime.autotune_export`: share tuning results in the shipped format.

    python -m triton_metal.runtime.autotune_export list             # the user's results, per chip
    python -m triton_metal.runtime.autotune_export export [--chip CHIP | --all] [--out DIR]

`export` copies the user's tuning results (`$TRITON_METAL_CACHE_DIR/autotune/`) for the chip this
machine tunes on (Metal when MLX has it, else the emulator), for `--chip CHIP`, or for every chip
(`--all`), into `DIR/<chip slug>/` (default `./autotune_cache`), the layout of the repository's
`autotune_cache/` folder, adding the export date. Only complete entries are exported: each states
its chip, the date and how it was measured (`measured.backend`, `measured.how`), so a result read
as a default always says where it came from. A copy of the repository's folder after an export is
a contribution: commit the new files.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import autotune_cache
from .backend import active_backend_name

REQUIRED_MEASURED = ("date", "backend", "how")


def problems(data: dict[str, Any]) -> list[str]:
    """What an entry lacks to be shipped (empty when complete)."""
    missing = [f for f in ("chip", "kernel", "kernel_cache_key", "key", "configs", "best") if f not in data]
    measured = data.get("measured")
    if not isinstance(measured, dict):
        missing.append("measured")
    else:
        missing += [f"measured.{f}" for f in REQUIRED_MEASURED if not measured.get(f)]
    return missing


def export(out: Path, chip: str | None) -> list[Path]:
    """Copy the user's complete entries for `chip` (None: every chip) under `out`; returns the
    files written. Incomplete entries are reported on stderr and left out."""
    written: list[Path] = []
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    for path, data in autotune_cache.user_entries(chip):
        missing = problems(data)
        if missing:
            print(f"skipped {path}: missing {', '.join(missing)}", file=sys.stderr)
            continue
        target = out / path.parent.name / path.name
        if autotune_cache.write_entry(target, {**data, "exported": stamp}) is None:
            raise OSError(f"cannot write {target}")
        written.append(target)
    return written


def _list() -> int:
    entries = autotune_cache.user_entries()
    if not entries:
        print(f"no tuning results in {autotune_cache.user_root()}")
    for path, data in entries:
        measured = data.get("measured", {})
        print(f"{data.get('chip')}: {data.get('kernel')} key={data.get('key')} "
              f"measured {measured.get('date')} on {measured.get('backend')} ({path})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m triton_metal.runtime.autotune_export",
                                     description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the user's tuning results")
    ex = sub.add_parser("export", help="copy tuning results into the shipped layout")
    which = ex.add_mutually_exclusive_group()
    which.add_argument("--chip", help="the chip to export (default: the one this machine tunes on)")
    which.add_argument("--all", action="store_true", help="every chip")
    ex.add_argument("--out", type=Path, default=Path("autotune_cache"), help="default ./autotune_cache")
    args = parser.parse_args(argv)
    if args.command == "list":
        return _list()
    chip = None if args.all else (args.chip or autotune_cache.current_chip(active_backend_name()))
    if not args.all and chip is None:
        print("the interpreter has no chip; pass --chip or --all", file=sys.stderr)
        return 2
    written = export(args.out, chip)
    for path in written:
        print(f"wrote {path}")
    if not written:
        print(f"nothing to export for {'every chip' if chip is None else chip} "
              f"from {autotune_cache.user_root()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
