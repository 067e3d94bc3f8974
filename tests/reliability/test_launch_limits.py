"""Launch errors name the kernel; Metal's 31-buffer limit is refused before launch with the
count; run-time faults name the Python kernel, line and parameter, not the MSL names."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType

import mlx.core as mx
import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from reliability_support import BACKENDS, on_backend
from triton_metal.backends.emulator import WatchdogTimeout
from triton_metal.errors import LaunchError, OutOfBoundsError


def _module(tmp_path: Path, name: str, arrays: int) -> ModuleType:
    """A kernel that reads and writes each of `arrays` arrays (two buffers each)."""
    params = ", ".join(f"p{i}" for i in range(arrays))
    body = "".join(f"    tl.store(p{i}, tl.load(p{i}) + 1)\n" for i in range(arrays))
    path = tmp_path / f"{name}.py"
    path.write_text(f"import triton_metal as triton\nimport triton_metal.language as tl\n\n\n"
                    f"@triton.jit\ndef {name}({params}):\n{body}")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_more_than_31_buffers_refused_with_the_count(tmp_path: Path) -> None:
    kernel = getattr(_module(tmp_path, "many_buffers", 16), "many_buffers")
    arrays = [np.zeros(1, np.float32) for _ in range(16)]
    with pytest.raises(LaunchError, match=r"kernel 'many_buffers'.* takes 32 buffers .*limit of 31"):
        kernel[(1,)](*arrays)
    assert all(a[0] == 0 for a in arrays)


def test_31_buffers_run(tmp_path: Path) -> None:
    kernel = getattr(_module(tmp_path, "fifteen_arrays", 15), "fifteen_arrays")
    arrays = [np.full(1, i, np.float32) for i in range(15)]
    kernel[(1,)](*arrays)  # 30 buffers
    assert [a[0] for a in arrays] == [i + 1 for i in range(15)]


@triton.jit
def _scale(x, out, factor, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs) * factor)


@pytest.mark.parametrize("backend", BACKENDS)
def test_argument_errors_name_the_kernel(backend: str) -> None:
    x = np.ones(8, np.float32)
    with on_backend(backend):
        with pytest.raises(LaunchError, match=r"kernel '_scale'.*'out'"):
            _scale[(1,)](x, np.ones(8, np.float64), 2.0, BLOCK=8)
        with pytest.raises(LaunchError, match=r"kernel '_scale'.*'factor'"):
            _scale[(1,)](x, x, 2j, BLOCK=8)


@triton.jit
def _spin(x, out, BLOCK: tl.constexpr):
    v = tl.load(x + tl.arange(0, BLOCK))
    s = tl.sum(v, axis=0)
    while s > 0:
        s = tl.sum(v, axis=0)  # the line the waiting threads report
    tl.store(out, s)


def test_watchdog_names_the_python_kernel_and_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_METAL_EMULATOR_WATCHDOG", "0.5")
    lines, start = inspect.getsourcelines(_spin.fn)
    line = start + next(i for i, text in enumerate(lines) if "the line the waiting" in text)
    with pytest.raises(WatchdogTimeout) as info:
        _spin[(1,)](np.ones(128, np.float32), np.zeros(1, np.float32), BLOCK=128)
    text = str(info.value)
    assert text.startswith("kernel '_spin'") and "custom_kernel" not in text, text
    assert f"{Path(__file__).name}:{line})" in text, text


@triton.jit
def _tail_store(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs, mask=offs < n, other=0.0))  # the store has no mask


def test_mlx_out_of_bounds_names_the_kernel() -> None:
    # the launches are lazy on the emulator, as on a Mac: the fault surfaces when they run
    x = mx.arange(100, dtype=mx.float32)
    out = mx.zeros((100,), dtype=mx.float32)
    with pytest.raises(OutOfBoundsError) as info:
        _scale[(1,)](x, out, 2.0, BLOCK=128)  # reads past x
        mx.eval(out)
    text = str(info.value)
    assert "kernel '_scale'" in text and "custom_kernel" not in text, text
    assert "'x' at index 100 (the buffer has 100 elements)" in text, text
    out = mx.zeros((100,), dtype=mx.float32)
    with pytest.raises(OutOfBoundsError, match=r"kernel '_tail_store'.*'out' at index 100 \(the buffer has 100"):
        _tail_store[(1,)](x, out, 100, BLOCK=128)  # writes past an MLX output
        mx.eval(out)
    assert (np.array(x) == np.arange(100)).all()  # the input is untouched
