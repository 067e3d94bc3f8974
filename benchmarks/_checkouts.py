"""What the benchmarks that compare checkouts share: this checkout and a `--baseline` one, and a
script's `--child` run in a checkout (the checkout on `PYTHONPATH`, its own environment), whose
last output line is a JSON record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def checkouts(baseline: Path | None) -> list[tuple[str, Path]]:
    """("this", this checkout), then ("baseline", `baseline`) when one is given."""
    here = Path(__file__).resolve().parent.parent
    return [("this", here)] + ([("baseline", baseline.resolve())] if baseline else [])


def run_child(script: str, checkout: Path, args: list[str], **env: str) -> dict[str, Any]:
    """`script --child ARGS` in `checkout` with `env` added; its JSON record."""
    full = dict(os.environ, PYTHONPATH=str(checkout), PYTHONDONTWRITEBYTECODE="1", **env)
    proc = subprocess.run([sys.executable, script, "--child", *args], env=full, capture_output=True,
                          text=True, cwd=checkout)
    if proc.returncode != 0:
        raise RuntimeError(f"{checkout}: {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]
