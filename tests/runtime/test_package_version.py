"""The package version read without importlib.metadata agrees with importlib.metadata."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest

from triton_metal.runtime import cache


def _dist_info(folder, name: str, version: str) -> None:
    info = folder / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: triton-metal-mlx\nVersion: {version}\n\nbody\n")


def _egg_info(folder, version: str) -> None:
    info = folder / "triton_metal_mlx.egg-info"
    info.mkdir(parents=True)
    (info / "PKG-INFO").write_text(f"Metadata-Version: 2.1\nName: triton-metal-mlx\nversion: {version}\n")


def test_installed_version_matches_importlib_metadata():
    assert cache._version_from_path() == metadata.version("triton-metal-mlx")
    assert cache.COMPILER_VERSION == metadata.version("triton-metal-mlx")


@pytest.mark.parametrize(
    "layout",
    ["dist-info", "egg-info", "first-entry-wins", "normalized-name", "absent"],
)
def test_search_order_matches_importlib_metadata(tmp_path, monkeypatch, layout):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    if layout == "dist-info":
        _dist_info(two, "triton_metal_mlx", "9.1.0")
    elif layout == "egg-info":
        _egg_info(two, "9.2.0")
    elif layout == "first-entry-wins":
        _egg_info(one, "9.3.0")
        _dist_info(two, "triton_metal_mlx", "9.4.0")
    elif layout == "normalized-name":
        _dist_info(two, "Triton.Metal-MLX", "9.5.0")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(one), str(two)])
    try:
        expected: str | None = metadata.version("triton-metal-mlx")
    except metadata.PackageNotFoundError:
        expected = None
    assert cache._version_from_path() == expected


def test_import_does_not_load_importlib_metadata():
    """`import triton_metal` leaves importlib.metadata unimported (it costs tens of ms)."""
    code = "import sys, triton_metal; print('importlib.metadata' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
