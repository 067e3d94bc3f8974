"""A wheel install works: the wheel holds the whole package (data files included) and nothing
else at top level, and an example runs against the installed package, not the source tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # build from a copy of the tracked files: an in-tree build would write build/ into the
    # checkout, and parallel test workers could race on it
    src = tmp_path_factory.mktemp("src")
    for path in _tracked():
        (src / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, src / path)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-q", "-w", str(out)],
        check=True,
        cwd=out,
    )
    (built,) = out.glob("triton_metal_mlx-*.whl")
    return built


def _tracked() -> list[str]:
    """The files git tracks (what a fresh checkout has), as paths relative to the root."""
    listing = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    return [path for path in listing if (ROOT / path).is_file()]


def test_wheel_contains_every_package_file(wheel: Path):
    names = set(zipfile.ZipFile(wheel).namelist())
    top_level = {name.split("/")[0] for name in names}
    assert {t for t in top_level if not t.endswith(".dist-info")} == {"triton_metal"}
    expected = [path for path in _tracked() if path.startswith("triton_metal/")]
    # the top-level code generator, templates and shipped tuning results install inside the
    # package (DESIGN section 8)
    expected += [
        "triton_metal/" + path
        for path in _tracked()
        if path.startswith(("codegen/", "templates/", "autotune_cache/"))
    ]
    missing = [path for path in expected if path not in names]
    assert not missing, f"package files missing from the wheel: {missing}"


def test_example_runs_against_the_installed_wheel(wheel: Path, tmp_path: Path):
    env_dir = tmp_path / "env"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
        check=True,
    )
    # the dependencies come from this environment's site-packages, added as a plain path: its
    # .pth files (among them the editable install's finder) are not processed there
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work = tmp_path / "work"
    shutil.copytree(ROOT / "examples", work / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    result = subprocess.run(
        [str(python), "-c",
         "import triton_metal, sys; print(triton_metal.__file__); "
         "from triton_metal.runtime.autotune_cache import shipped_root; print(shipped_root()); "
         "from examples import vector_add; sys.exit(vector_add.main())"],
        cwd=work, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr
    location, shipped, line = result.stdout.splitlines()[:3]
    assert location.startswith(str(site)), location
    # the shipped tuning results are found inside the installed package
    assert shipped == str(site / "triton_metal" / "autotune_cache"), shipped
    assert "max abs error vs NumPy: 0 OK (backend: emulator)" in line
