"""Out-of-bounds accesses are caught by default, on the emulator (bounds checks compiled into
its copy of the kernel) and in the interpreter alike: one error class, naming the kernel, the
line, the argument and the index; memory outside the arrays stays untouched."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from conftest import BACKENDS, on_backend
from triton_metal.errors import OutOfBoundsError


@triton.jit
def _double(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + offs, mask=offs < n)
    tl.store(out + offs, v * 2)  # no mask: the tail of the last program is out of bounds


@triton.jit
def _gather(x, idx, out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + tl.load(idx + offs)))


def _line_of(fn: object, text: str) -> int:
    lines, start = inspect.getsourcelines(fn.fn)  # type: ignore[attr-defined]
    return start + next(i for i, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("backend", BACKENDS)
def test_mask_less_tail_store_inside_a_larger_base(backend: str) -> None:
    base = np.full(200, -1.0, np.float32)
    out = base[:100]  # a view: the memory past its end belongs to the base array
    x = np.arange(100, dtype=np.float32)
    line = _line_of(_double, "tl.store(out + offs")
    with on_backend(backend), pytest.raises(OutOfBoundsError) as info:
        _double[(2,)](x, out, 100, BLOCK=64)
    text = str(info.value)
    assert "'_double'" in text and "'out'" in text, text
    assert "at index 100 (the buffer has 100 elements)" in text, text
    assert f":{line}" in text and "tl.store(out + offs, v * 2)" in text, text
    assert (base[100:] == -1.0).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_mask_bound_larger_than_the_array(backend: str) -> None:
    x = np.arange(100, dtype=np.float32)
    out = np.zeros(128, np.float32)
    with on_backend(backend), pytest.raises(OutOfBoundsError, match=r"'x' at index 100 \(the buffer has 100"):
        _double[(1,)](x, out, 128, BLOCK=128)


@pytest.mark.parametrize("backend", BACKENDS)
def test_wild_gather_index(backend: str) -> None:
    x = np.arange(64, dtype=np.float32)
    idx = np.arange(64, dtype=np.int32)
    idx[5] = -3
    out = np.zeros(64, np.float32)
    with on_backend(backend), pytest.raises(OutOfBoundsError, match=r"'x' at index -3 \(the buffer has 64"):
        _gather[(1,)](x, idx, out, BLOCK=64)


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_bounds_kernels_still_run(backend: str) -> None:
    x = np.arange(100, dtype=np.float32)
    out = np.zeros(128, np.float32)
    with on_backend(backend):
        _double[(1,)](x, out, 100, BLOCK=128)
    np.testing.assert_array_equal(out[:100], x * 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_writable_stride_0_output(backend: str) -> None:
    """A writable stride-0 view has one element, whatever its shape says."""
    cell = np.zeros(1, np.float32)
    out = np.lib.stride_tricks.as_strided(cell, shape=(100,), strides=(0,))
    x = np.arange(100, dtype=np.float32)
    with on_backend(backend), pytest.raises(OutOfBoundsError, match=r"'out' at index 1 \(the buffer has 1 element"):
        _double[(1,)](x, out, 100, BLOCK=128)


def test_checks_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_METAL_EMULATOR_CHECKS", "0")
    base = np.full(200, -1.0, np.float32)
    x = np.arange(100, dtype=np.float32)
    _double[(2,)](x, base[:100], 100, BLOCK=64)  # lands in the base array: no error, no check
    np.testing.assert_array_equal(base[:100], x * 2)
    assert (base[100:128] == 0.0).all() and (base[128:] == -1.0).all()
