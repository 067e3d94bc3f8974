"""check_environment on this Linux machine, on a faked Mac (exactly the MLX calls it makes:
`mx.metal.is_available()`, `mx.device_info(mx.gpu)`, `mx.__version__`), and as a command."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import triton_metal.backends.metal as metal
from triton_metal.tools.environment import MISSING, OK, check_environment

from diag_fake_mlx import FakeMX


def test_linux_machine_is_ready_for_the_emulator():
    out = io.StringIO()
    report = metal.check_environment(stream=out)
    assert report.ok and report.backend == "emulator"
    names = [c.name for c in report.checks]
    for name in ("python", "os", "mlx", "metal", "emulator compiler", "cache dir", "dump dir", "backend"):
        assert name in names
    assert report.get("emulator compiler").status == OK
    text = out.getvalue()
    assert "emulator" in text and "ready" in text and "fix:" in text
    assert report.to_dict()["ok"] is True


def test_requesting_metal_without_it_is_not_ready(monkeypatch):
    monkeypatch.setenv("TRITON_METAL_BACKEND", "metal")
    report = check_environment(stream=None)
    assert not report.ok and report.get("backend").status == MISSING


def test_unknown_backend_is_not_ready(monkeypatch):
    monkeypatch.setenv("TRITON_METAL_BACKEND", "cuda")
    report = check_environment(stream=None)
    assert not report.ok and "unknown backend" in report.get("backend").detail


def test_faked_mac_reports_the_gpu():
    mx = FakeMX("applegpu_g16s", "Apple M4 Max", version="0.32.4")
    report = check_environment(mx=mx, stream=None)
    gpu = report.get("gpu")
    assert gpu.status == OK and "Apple M4 Max" in gpu.detail and "applegpu_g16s" in gpu.detail and "M4" in gpu.detail
    assert report.get("metal").status == OK
    assert report.get("mlx").detail == "mlx 0.32.4"
    assert ("device_info", "gpu") in mx.calls and ("metal.is_available",) in mx.calls


def test_old_mlx_is_flagged():
    report = check_environment(mx=FakeMX(version="0.29.0"), stream=None)
    assert report.get("mlx").status == MISSING and "0.32.1" in report.get("mlx").fix


def test_unwritable_cache_dir_is_not_ready(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("TRITON_METAL_CACHE_DIR", str(blocker / "cache"))
    report = check_environment(stream=None)
    assert not report.ok and report.get("cache dir").status == MISSING


def _run(env_extra):
    env = dict(os.environ, **env_extra)
    return subprocess.run([sys.executable, "-m", "triton_metal.backends.metal.check_environment"],
                          capture_output=True, text=True, env=env, timeout=120)


def test_command_exit_status():
    ok = _run({})
    assert ok.returncode == 0, ok.stderr
    assert "emulator compiler" in ok.stdout and "RuntimeWarning" not in ok.stderr
    no_compiler = _run({"CXX": "/nonexistent/c++"})
    assert no_compiler.returncode == 1
    assert "MISSING" in no_compiler.stdout and "install g++" in no_compiler.stdout
    metal_asked = _run({"TRITON_METAL_BACKEND": "metal"})
    assert metal_asked.returncode == 1
