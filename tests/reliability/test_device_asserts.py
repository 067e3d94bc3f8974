"""Assertions and prints that run: with `debug=True` (or `TRITON_METAL_DEBUG`), compiled kernels
evaluate `tl.device_assert` and report a failure after the launch as `DeviceAssertionError`
naming the kernel, the line and the program, on the emulator and on the Metal path (through the
recording stand-in of `mx.fast.metal_kernel`); the interpreter refuses the same launches. A
kernel whose only effect is an assert is not refused; `tl.device_print`, which Metal cannot do,
is reported once per kernel instead of vanishing."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import mlx.core as mx
import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.backends.metal import driver
from triton_metal.errors import DeviceAssertionError, InterpreterError
from triton_metal.runtime import backend, device_asserts

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from fake_mlx import FakeMx  # noqa: E402



@triton.jit(debug=True)
def bounded(x_ptr, out_ptr, n, limit, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.device_assert(x < limit, "x must stay below the limit")
    tl.store(out_ptr + offs, x * 2, mask=offs < n)


ASSERT_LINE = next(i for i, line in enumerate(Path(__file__).read_text().splitlines(), 1)
                   if "tl.device_assert(x < limit" in line)  # the one in `bounded`


@triton.jit(debug=True)
def bounded_sparse(x_ptr, out_ptr, n, limit, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.device_assert(x < limit, "x must stay below the limit")
    tl.store(out_ptr + offs, x * 2, mask=(offs < n) & (x > 10))  # not provably written in full


@triton.jit
def plain(x_ptr, out_ptr, n, limit, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.device_assert(x < limit, "x must stay below the limit")
    tl.store(out_ptr + offs, x * 2, mask=offs < n)


@triton.jit
def only_asserts(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.device_assert(tl.load(x_ptr + offs, mask=offs < n, other=1) > 0, "positive")


@triton.jit
def printing(x_ptr, out_ptr, BLOCK: tl.constexpr):
    v = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_print("v = ", v)
    tl.store(out_ptr + tl.arange(0, BLOCK), v + 1)


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TRITON_METAL_INTERPRET", "TRITON_METAL_DEBUG", "TRITON_METAL_BACKEND"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeMx:
    stand_in = FakeMx()
    monkeypatch.setattr(backend, "_metal", True)
    monkeypatch.setattr(driver, "_mlx", lambda: stand_in)
    return stand_in


def _data(bad_at: int | None) -> np.ndarray:
    x = np.arange(256, dtype=np.int32) % 50
    if bad_at is not None:
        x[bad_at] = 1000
    return x


def _check(error: BaseException, program: int) -> None:
    text = str(error)
    assert "in kernel 'bounded'" in text
    assert f"program ({program}, 0, 0)" in text
    assert "tl.device_assert(x < limit" in text and "x must stay below the limit" in text
    assert f":{ASSERT_LINE}:" in text


def test_a_failing_assert_names_kernel_line_and_program_on_the_emulator():
    x = _data(bad_at=130)  # element 130: program 2 of BLOCK 64
    out = np.zeros_like(x)
    with pytest.raises(DeviceAssertionError) as error:
        bounded[(4,)](x, out, x.size, 100, BLOCK=64)
    _check(error.value, 2)
    assert isinstance(error.value, AssertionError)


def test_a_passing_assert_runs_and_computes():
    x = _data(bad_at=None)
    out = np.zeros_like(x)
    bounded[(4,)](x, out, x.size, 100, BLOCK=64)
    np.testing.assert_array_equal(out, x * 2)


def test_the_interpreter_refuses_the_same_launch(monkeypatch):
    monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    x = _data(bad_at=130)
    out = np.full_like(x, -1)
    with pytest.raises(InterpreterError) as error:
        bounded[(4,)](x, out, x.size, 100, BLOCK=64)
    text = str(error.value)
    assert "program (2, 0, 0)" in text and "device_assert failed" in text
    np.testing.assert_array_equal(out, -1)  # the launch's writes are undone


def test_a_failing_assert_on_the_metal_path_through_the_stand_in(fake):
    x = mx.array(_data(bad_at=200))  # program 3
    out = mx.zeros((256,), dtype=mx.int32)
    with pytest.raises(DeviceAssertionError) as error:
        bounded[(4,)](x, out, 256, 100, BLOCK=64)
    _check(error.value, 3)
    (factory,) = fake.fast.factory_calls
    assert factory["output_names"][-1] == "km_assert"  # the status output, after the kernel's
    (launch,) = fake.fast.launches
    assert launch["output_shapes"][-1] == (4,) and launch["init_value"] == 0.0
    np.testing.assert_array_equal(np.array(out), 0)  # not rebound: the launch failed
    good = mx.array(_data(bad_at=None))
    bounded[(4,)](good, out, 256, 100, BLOCK=64)
    np.testing.assert_array_equal(np.array(out), np.array(good) * 2)


def test_the_written_mask_twin_carries_the_status_output(fake):
    # The output is not proven to be written in full, so the twin with a written mask runs: its
    # status output comes after the mask, and its asserts fail and pass as the plain kernel's.
    x = mx.array(_data(bad_at=70))  # program 1
    out = mx.full((256,), -1, dtype=mx.int32)
    with pytest.raises(DeviceAssertionError, match=r"in kernel 'bounded_sparse', program \(1, 0, 0\)"):
        bounded_sparse[(4,)](x, out, 256, 100, BLOCK=64)
    (factory,) = fake.fast.factory_calls
    assert factory["output_names"] == ["out_ptr_out", "out_ptr_written", "km_assert"]
    (launch,) = fake.fast.launches
    assert launch["output_shapes"][-1] == (4,) and launch["init_value"] == 0.0
    assert launch["output_dtypes"][-2] == mx.bool_
    np.testing.assert_array_equal(np.array(out), -1)  # not rebound: the launch failed
    good = _data(bad_at=None)
    bounded_sparse[(4,)](mx.array(good), out, 256, 100, BLOCK=64)
    assert len(fake.fast.launches) == 2  # one kernel run per launch
    np.testing.assert_array_equal(np.array(out), np.where(good > 10, good * 2, -1))


def test_without_debug_asserts_are_compiled_out_and_debug_env_compiles_them_in(monkeypatch):
    x = _data(bad_at=5)
    out = np.zeros_like(x)
    plain[(4,)](x, out, x.size, 100, BLOCK=64)  # debug off: no check, as in Triton
    np.testing.assert_array_equal(out, x * 2)
    monkeypatch.setenv("TRITON_METAL_DEBUG", "1")
    with pytest.raises(DeviceAssertionError, match=r"in kernel 'plain', program \(0, 0, 0\)"):
        plain[(4,)](x, out, x.size, 100, BLOCK=64)


def test_a_kernel_whose_only_effect_is_an_assert_is_not_refused(monkeypatch):
    x = np.arange(1, 101, dtype=np.float32)
    only_asserts[(2,)](x, x.size, BLOCK=64)  # debug off: a launch that does nothing
    x[77] = -1.0
    only_asserts[(2,)](x, x.size, BLOCK=64)
    monkeypatch.setenv("TRITON_METAL_DEBUG", "1")
    with pytest.raises(DeviceAssertionError, match=r"program \(1, 0, 0\)"):
        only_asserts[(2,)](x, x.size, BLOCK=64)


def test_device_print_is_reported_once_as_unavailable_on_the_metal_path(fake, capfd):
    x = mx.array(np.arange(8, dtype=np.int32))
    out = mx.zeros((8,), dtype=mx.int32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        printing[(1,)](x, out, BLOCK=8)
        printing[(1,)](x, out, BLOCK=8)
    np.testing.assert_array_equal(np.array(out), np.arange(8) + 1)
    said = [w for w in caught if "tl.device_print is not available" in str(w.message)]
    assert len(said) == 1 and "printing" in str(said[0].message) and "Metal" in str(said[0].message)
    assert "v =" not in capfd.readouterr().out  # Metal prints nothing (the guarded code is not built)


def test_device_print_prints_on_the_emulator_and_in_the_interpreter_without_a_warning(monkeypatch, capfd):
    x = np.arange(8, dtype=np.int32)
    out = np.zeros_like(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        printing[(1,)](x, out, BLOCK=8)
    np.testing.assert_array_equal(out, x + 1)
    compiled = capfd.readouterr().out
    monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    printing[(1,)](x, out, BLOCK=8)
    interpreted = capfd.readouterr().out
    assert compiled == interpreted
    assert compiled.splitlines()[3] == "pid (0, 0, 0) idx (3) v =: 3"  # Triton's prefix rule


@triton.jit(debug=True)
def checked_double(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_assert(x < 100, "x below 100")
    tl.store(out_ptr + offs, x * 2)


def _lazy(monkeypatch: pytest.MonkeyPatch) -> Any:
    from fake_mlx import LazyMx

    stand_in = LazyMx()
    monkeypatch.setattr(backend, "_metal", True)
    monkeypatch.setattr(driver, "_mlx", lambda: stand_in)
    monkeypatch.setattr(device_asserts, "_warned", set())  # "once per kernel" starts afresh
    checked_double.cache.clear()
    return stand_in


def test_asserts_inside_mx_compile_warn_once_and_the_launch_traces(monkeypatch):
    lazy = _lazy(monkeypatch)

    def step(x):
        out = mx.zeros((64,), dtype=mx.int32)
        checked_double[(1,)](x, out, BLOCK=64)
        return out

    x = mx.arange(64, dtype=mx.int32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs = [mx.compile(step)(x), mx.compile(step)(x + 1)]  # MLX's bare eval error otherwise
    said = [w for w in caught if "not checked" in str(w.message)]
    assert len(said) == 1  # once per kernel
    text = str(said[0].message)
    assert "'checked_double'" in text and "transformation" in text and "mx.compile" in text
    assert len(lazy.fast.launches) == 2 and all(o.shape == (64,) for o in outs)


class _RealMx:
    """`mlx.core` itself: its `fast.metal_kernel` builds a `CustomKernel` node inside an export
    trace even without Metal (tests/runtime/test_lazy_launch.py)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(mx, name)


def test_asserts_inside_export_function_warn_and_the_graph_is_exported(monkeypatch, tmp_path):
    monkeypatch.setattr(backend, "_metal", True)
    monkeypatch.setattr(driver, "_mlx", lambda: _RealMx())
    monkeypatch.setattr(device_asserts, "_warned", set())
    checked_double.cache.clear()

    def traced(x):
        out = mx.zeros((64,), dtype=mx.int32)
        checked_double[(1,)](x, out, BLOCK=64)
        return out

    path = tmp_path / "f.mlxfn"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mx.export_function(str(path), traced, mx.arange(64, dtype=mx.int32))
    assert [w for w in caught if "'checked_double'" in str(w.message) and "not checked" in str(w.message)]
    assert path.stat().st_size > 0


def test_asserts_outside_a_transformation_are_still_checked_on_the_metal_path(fake):
    x = mx.array(np.arange(64, dtype=np.int32) * 3)  # 3 * 34 = 102: program 0 fails
    out = mx.zeros((64,), dtype=mx.int32)
    checked_double.cache.clear()
    with pytest.raises(DeviceAssertionError, match=r"in kernel 'checked_double', program \(0, 0, 0\)"):
        checked_double[(1,)](x, out, BLOCK=64)
