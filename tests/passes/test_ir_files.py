"""Runs the `// RUN:` lines of every `*.ir` file under tests/passes (the pass tests are files).

`%s` is the file's path; `triton-metal-opt` and `filecheck` run from this interpreter's
environment (`python -m ...`), so the tests work without the console scripts on PATH. A RUN line
may continue on the next `// RUN:` line with a trailing backslash.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
IR_FILES = sorted(HERE.rglob("*.ir"))
TOOLS = {
    "triton-metal-opt": f"{shlex.quote(sys.executable)} -m triton_metal.tools.opt",
    "filecheck": f"{shlex.quote(sys.executable)} -m filecheck",
}


def run_lines(path: Path) -> list[str]:
    lines: list[str] = []
    pending = ""
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if not stripped.startswith("// RUN:"):
            continue
        body = stripped[len("// RUN:"):].strip()
        if body.endswith("\\"):
            pending += body[:-1] + " "
            continue
        lines.append(pending + body)
        pending = ""
    return lines


def expand(command: str, path: Path) -> str:
    for tool, replacement in TOOLS.items():
        command = re.sub(rf"(?<![\w-]){re.escape(tool)}(?![\w-])", lambda _m, r=replacement: r, command)
    return re.sub(r"%s(?!\w)", lambda _m: shlex.quote(str(path)), command)


def test_every_ir_file_has_a_run_line() -> None:
    assert IR_FILES, "no .ir test files found"
    for path in IR_FILES:
        assert run_lines(path), f"{path.name} has no // RUN: line"


@pytest.mark.parametrize("path", IR_FILES, ids=[p.relative_to(HERE).as_posix() for p in IR_FILES])
def test_ir_file(path: Path) -> None:
    for command in run_lines(path):
        full = expand(command, path)
        proc = subprocess.run(["bash", "-o", "pipefail", "-c", full], capture_output=True, text=True, cwd=HERE)
        assert proc.returncode == 0, f"RUN: {command}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
