"""The wheel holds the whole package, its data files included, and nothing else at top level."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_contains_every_package_file(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(tmp_path)],
        check=True,
        cwd=tmp_path,
    )
    (wheel,) = tmp_path.glob("triton_metal_mlx-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    top_level = {name.split("/")[0] for name in names}
    assert {t for t in top_level if not t.endswith(".dist-info")} == {"triton_metal"}
    tracked = subprocess.run(
        ["git", "ls-files", "triton_metal"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    missing = [path for path in tracked if path not in names]
    assert not missing, f"package files missing from the wheel: {missing}"
    assert not any(n.startswith(("codegen/", "templates/", "examples/", "tests/")) for n in names)
