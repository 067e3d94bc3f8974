"""Compile progress (`runtime/progress.py`): one stderr line per kernel compiled, only once the
call compiling it has taken more than a second."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.runtime import progress


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(progress.ENV, raising=False)
    progress.reset()
    yield
    progress.reset()


def _lines(capfd: pytest.CaptureFixture[str]) -> list[str]:
    return [line for line in capfd.readouterr().err.splitlines() if "compiling" in line]


def test_a_short_call_prints_nothing_and_a_long_one_a_line_per_kernel(capfd):
    assert progress.compiled("a", 0.3, now=100.3) is None  # the call began at 100.0
    assert progress.compiled("b", 0.4, now=100.9) is None
    assert progress.compiled("c", 0.5, now=101.6) == "compiling c (kernel 3 of this call, 1.6 s so far)"
    assert progress.compiled("d", 0.2, now=102.0) == "compiling d (kernel 4 of this call, 2.0 s so far)"
    assert _lines(capfd) == [
        "[triton_metal] compiling c (kernel 3 of this call, 1.6 s so far)",
        "[triton_metal] compiling d (kernel 4 of this call, 2.0 s so far)",
    ]


def test_a_pause_starts_a_new_call_unless_a_build_filled_it(capfd):
    progress.compiled("a", 0.5, now=10.5)
    progress.compiled("b", 0.1, now=10.6 + progress.IDLE_SECONDS + 1)  # a pause: a new call
    assert progress.compiled("c", 0.1, now=10.8 + progress.IDLE_SECONDS + 1) is None
    progress.touch(now=30.0 + progress.IDLE_SECONDS)  # a long C++ build of the last kernel
    text = progress.compiled("d", 0.1, now=31.0 + progress.IDLE_SECONDS)
    assert text is not None and "kernel 3 of this call" in text
    assert len(_lines(capfd)) == 1


@pytest.mark.parametrize("env", [("TRITON_METAL_DEBUG", "1"), (progress.ENV, "0")])
def test_the_debug_log_or_the_switch_silence_it(env, monkeypatch, capfd):
    monkeypatch.setenv(*env)
    progress.compiled("a", 2.0, now=2.0)
    assert progress.compiled("b", 0.1, now=2.5) is None
    assert _lines(capfd) == []


@triton.jit
def _triple(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)


def test_a_compile_reports_its_kernel_by_name_and_an_interpreted_launch_none(monkeypatch, capfd):
    """A real compile on the emulator prints its line. The interpreter's legality compile of a
    new variant prints none: an interpreted launch leaves stderr to the kernel, as Triton's
    interpreter does (Triton's own `test_print` asserts an empty stderr)."""
    monkeypatch.setattr(progress, "QUIET_SECONDS", -1.0)  # every call counts as long
    x = np.arange(5, dtype=np.float32)
    out = np.zeros_like(x)
    monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    triton.jit(_triple.fn)[(1,)](x, out, 5, BLOCK=8)
    np.testing.assert_array_equal(out, x * 3)
    assert _lines(capfd) == []
    monkeypatch.delenv("TRITON_METAL_INTERPRET")
    out[:] = 0
    triton.jit(_triple.fn)[(1,)](x, out, 5, BLOCK=16)  # a new variant, compiled for the emulator
    np.testing.assert_array_equal(out, x * 3)
    (line,) = _lines(capfd)
    assert line.startswith("[triton_metal] compiling _triple (kernel 1 of this call")
    triton.jit(_triple.fn)[(1,)](x, out, 5, BLOCK=16)  # read back from the disk cache: no line
    assert _lines(capfd) == []
