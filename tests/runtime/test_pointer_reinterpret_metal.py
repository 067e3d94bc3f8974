"""Arrays written through pointers of another element type on the Metal path (fresh
`metal_kernel` outputs, run by the sentinel-filling stand-in of fake_mlx.py) keep, bit for bit,
what in-place execution gives: the interpreter on NumPy arrays, and NumPy's views of the same
bytes. A store through a pointer of the array's own element size is merged through the
written mask like any store (the mask counts whole elements alike); a store of another size, or
an atomic through another type, keeps the array relative to its contents with the bytewise
"xor" encoding (docs/runtime.md, "Exact in-place memory")."""

from __future__ import annotations

from typing import Any

import mlx.core as mx
import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl

from fake_mlx import FakeMx


@pytest.fixture
def fake(metal_stand_in: FakeMx) -> FakeMx:
    return metal_stand_in


@triton.jit
def store_as(src_ptr, dst_ptr, n, VIEW: tl.constexpr, BLOCK: tl.constexpr):
    """dst seen as VIEW gets src's elements (of VIEW) + 1 where o < n."""
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    v = tl.load(src_ptr.to(tl.pointer_type(VIEW)) + o, mask=m)
    tl.store(dst_ptr.to(tl.pointer_type(VIEW)) + o, v + 1, mask=m)


def _interpreted(monkeypatch: pytest.MonkeyPatch, kernel: Any, grid: tuple[int, ...], arrays: list[np.ndarray],
                 **kwargs: Any) -> list[np.ndarray]:
    copies = [a.copy() for a in arrays]
    with monkeypatch.context() as m:
        m.setenv("TRITON_METAL_INTERPRET", "1")
        kernel[grid](*copies, **kwargs)
    return copies


def _on_metal(kernel: Any, grid: tuple[int, ...], arrays: list[np.ndarray], **kwargs: Any) -> list[np.ndarray]:
    mlx_arrays = [mx.array(a) for a in arrays]
    kernel[grid](*mlx_arrays, **kwargs)
    return [np.array(a) for a in mlx_arrays]


def _bytes(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)


@pytest.mark.parametrize("dtype, view, relative", [
    (np.float32, "int32", False),  # same size: merged through the written mask
    (np.uint32, "uint8", True),  # bytes of words: partial elements
    (np.uint8, "uint32", True),  # words over bytes: four elements per store
    (np.float16, "int16", False),
])
def test_stores_through_another_type_leave_the_other_bytes(fake: FakeMx, monkeypatch: pytest.MonkeyPatch,
                                                          dtype: Any, view: str, relative: bool):
    rng = np.random.default_rng(5)
    nbytes = 256
    src = rng.integers(0, 256, nbytes, dtype=np.uint8).view(dtype)
    dst = rng.integers(0, 256, nbytes, dtype=np.uint8).view(dtype)
    count = nbytes // np.dtype(view).itemsize
    n = count * 5 // 8 + 1  # a partial block, not a whole number of the array's elements
    want = dst.copy()
    want.view(view)[:n] = src.view(view)[:n] + np.asarray(1, view)
    args = dict(n=n, VIEW=getattr(tl, view), BLOCK=32)
    grid = (triton.cdiv(count, 32),)
    _, got = _on_metal(store_as, grid, [src, dst], **args)
    _, interpreted = _interpreted(monkeypatch, store_as, grid, [src, dst], **args)
    np.testing.assert_array_equal(_bytes(got), _bytes(want))
    np.testing.assert_array_equal(_bytes(got), _bytes(interpreted))
    (launch,) = fake.fast.launches
    # relative: the output starts at 0 and the array's contents come in as one more input
    assert (len(launch["inputs"]) == 3) is relative


def test_a_same_size_store_covering_the_array_is_proven(fake: FakeMx, monkeypatch: pytest.MonkeyPatch):
    """The coverage proof follows a cast to a type of the array's element size: a launch that
    stores every element through it runs plain (one output, no written mask, no old contents)."""
    src = np.arange(64, dtype=np.int32) * 77
    dst = np.full(64, np.nan, np.float32)
    args = dict(n=64, VIEW=tl.int32, BLOCK=32)
    _, got = _on_metal(store_as, (2,), [src, dst], **args)
    np.testing.assert_array_equal(got.view(np.int32), src + 1)
    (launch,) = fake.fast.launches
    assert len(launch["output_shapes"]) == 1 and len(launch["inputs"]) == 2


@triton.jit
def or_bits(x_ptr, bits_ptr, BLOCK: tl.constexpr):
    """Float array updated by integer atomics on its bits (sign set where bits says)."""
    o = tl.arange(0, BLOCK)
    tl.atomic_or(x_ptr.to(tl.pointer_type(tl.uint32)) + o, tl.load(bits_ptr + o), mask=o % 3 != 1)
    tl.atomic_add(x_ptr.to(tl.pointer_type(tl.int32)) + o, 1, mask=o % 3 == 0)


def test_atomics_on_a_float_arrays_bits(fake: FakeMx, monkeypatch: pytest.MonkeyPatch):
    """Combined on the host these would be float ops; kept relative they are the bits'."""
    x = np.array([0.0, -0.0, 1.5, np.nan, -2.0, np.inf, 3.0, 1e-40] * 4, np.float32)
    bits = np.tile(np.array([0x80000000, 0, 0x1, 0x00400000], np.uint32), 8)
    want = x.copy().view(np.uint32)
    o = np.arange(32)
    want[o % 3 != 1] |= bits[o % 3 != 1]
    want[o % 3 == 0] += np.uint32(1)
    got, _ = _on_metal(or_bits, (1,), [x, bits], BLOCK=32)
    np.testing.assert_array_equal(got.view(np.uint32), want)
    np.testing.assert_array_equal(got.view(np.uint32),
                                  _interpreted(monkeypatch, or_bits, (1,), [x, bits], BLOCK=32)[0].view(np.uint32))


@triton.jit
def add_as(x_ptr, v_ptr, VIEW: tl.constexpr, BLOCK: tl.constexpr):
    """One atomic add per element through VIEW, nothing else: alone, the array's own type would
    be combined on the host (integers) or marked (float32)."""
    o = tl.arange(0, BLOCK)
    tl.atomic_add(x_ptr.to(tl.pointer_type(VIEW)) + o, tl.load(v_ptr + o), mask=o % 4 != 3)


@pytest.mark.parametrize("dtype, view", [(np.float32, "int32"), (np.int32, "float32")])
def test_an_atomic_add_of_another_type(fake: FakeMx, monkeypatch: pytest.MonkeyPatch, dtype: Any, view: str):
    rng = np.random.default_rng(9)
    x = rng.integers(0, 2**31, 32, dtype=np.uint32).view(dtype)
    v = (rng.integers(1, 1000, 32) * (1 if view == "int32" else 0.25)).astype(view)
    want = x.copy()
    o = np.arange(32) % 4 != 3
    want.view(view)[o] = want.view(view)[o] + v[o]
    got, _ = _on_metal(add_as, (1,), [x, v], VIEW=getattr(tl, view), BLOCK=32)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    interpreted = _interpreted(monkeypatch, add_as, (1,), [x, v], VIEW=getattr(tl, view), BLOCK=32)[0]
    np.testing.assert_array_equal(got.view(np.uint32), interpreted.view(np.uint32))


@triton.jit
def store_wide(out_ptr, VALUE: tl.constexpr):
    val = tl.full([], VALUE, tl.int64)
    tl.store(out_ptr.to(tl.pointer_type(val.dtype)), val)


def test_a_64_bit_store_into_a_float32_array(fake: FakeMx, monkeypatch: pytest.MonkeyPatch):
    """Triton's test_constexpr stores a 64-bit constant through a float32 output's pointer."""
    out = np.array([1.0, -0.0, np.nan, 2.0], np.float32)
    want = out.copy()
    want.view(np.int64)[0] = 2**40 + 3
    (got,) = _on_metal(store_wide, (1,), [out], VALUE=2**40 + 3)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    np.testing.assert_array_equal(got.view(np.uint32),
                                  _interpreted(monkeypatch, store_wide, (1,), [out], VALUE=2**40 + 3)[0].view(np.uint32))


@triton.jit
def add_then_read_halves(cnt_ptr, out_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.atomic_add(cnt_ptr + o, 0xFFFF)
    tl.store(out_ptr + tl.arange(0, 2 * N), tl.load(cnt_ptr.to(tl.pointer_type(tl.uint16)) + tl.arange(0, 2 * N)))


def test_a_narrower_load_of_an_atomic_counter_sees_its_carries(fake: FakeMx, monkeypatch: pytest.MonkeyPatch):
    """An atomic `add` array read through 16-bit halves: the halves of each counter carry into
    one another (1 + 0xFFFF = 0x10000), which only the bytewise encoding keeps."""
    counters = np.array([1, 0x1FFFF, -65535, 7], np.int32)
    want = (counters.astype(np.int64) + 0xFFFF).astype(np.int32).view(np.uint16)
    got, halves = _on_metal(add_then_read_halves, (1,), [counters, np.zeros(8, np.uint16)], N=4)
    np.testing.assert_array_equal(halves, want)
    np.testing.assert_array_equal(got.view(np.uint16), want)
    interpreted = _interpreted(monkeypatch, add_then_read_halves, (1,), [counters, np.zeros(8, np.uint16)], N=4)
    np.testing.assert_array_equal(halves, interpreted[1])
