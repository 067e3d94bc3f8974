"""The Metal path (fresh `metal_kernel` outputs, run through the sentinel-filling stand-in of
fake_mlx.py) gives, bit for bit, what in-place execution gives: the interpreter on NumPy
arrays, and the values Triton's in-place memory model implies, computed here with NumPy."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import mlx.core as mx
import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.runtime import backend

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_mlx import FakeMx  # noqa: E402


@pytest.fixture
def fake(metal_stand_in: FakeMx) -> FakeMx:
    return metal_stand_in


def _interpreted(monkeypatch: pytest.MonkeyPatch, kernel: Any, grid: tuple[int, ...], arrays: list[np.ndarray],
                 *rest: Any, **kwargs: Any) -> list[np.ndarray]:
    """The launch in the interpreter on copies of `arrays` (NumPy, updated in place)."""
    copies = [a.copy() for a in arrays]
    with monkeypatch.context() as m:
        m.setenv("TRITON_METAL_INTERPRET", "1")
        kernel[grid](*copies, *rest, **kwargs)
    return copies


def _on_metal(kernel: Any, grid: tuple[int, ...], arrays: list[np.ndarray], *rest: Any,
              **kwargs: Any) -> list[np.ndarray]:
    """The launch on the Metal path with MLX arrays of the same contents."""
    mlx_arrays = [mx.array(a) for a in arrays]
    kernel[grid](*mlx_arrays, *rest, **kwargs)
    return [np.array(a) for a in mlx_arrays]


def _same_bits(got: np.ndarray, want: np.ndarray) -> None:
    bits = np.dtype(f"u{got.dtype.itemsize}")
    np.testing.assert_array_equal(got.view(bits), np.asarray(want, got.dtype).view(bits))


@triton.jit
def rounds(x_ptr, n, ROUNDS: tl.constexpr, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    for _ in range(ROUNDS):
        tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n) + 1, mask=o < n)


def test_a_load_reads_what_an_earlier_iteration_stored(fake: FakeMx, monkeypatch: pytest.MonkeyPatch):
    old = np.arange(100, dtype=np.float32) * 0.5
    (got,) = _on_metal(rounds, (2,), [old], 90, ROUNDS=3, BLOCK=64)
    (want,) = _interpreted(monkeypatch, rounds, (2,), [old], 90, ROUNDS=3, BLOCK=64)
    _same_bits(got, np.concatenate([old[:90] + 3, old[90:]]))
    _same_bits(got, want)
    (launch,) = fake.fast.launches
    assert launch["init_value"] == 0.0 and len(launch["inputs"]) == 2  # its input is its old contents


@triton.jit
def store_then_atomic(x_ptr, KIND: tl.constexpr):
    tl.store(x_ptr, 20)
    if KIND == 0:
        tl.atomic_add(x_ptr, 8)
    else:
        tl.atomic_max(x_ptr, 8)


@pytest.mark.parametrize("kind, want", [(0, 28), (1, 20)])
def test_an_array_stored_to_and_updated_atomically(fake: FakeMx, monkeypatch: pytest.MonkeyPatch,
                                                   kind: int, want: int):
    old = np.array([100, -3], np.int32)
    (got,) = _on_metal(store_then_atomic, (1,), [old], KIND=kind)
    _same_bits(got, [want, -3])
    _same_bits(got, _interpreted(monkeypatch, store_then_atomic, (1,), [old], KIND=kind)[0])


@triton.jit
def add_in_order(x_ptr, v_ptr, N: tl.constexpr):
    for i in range(N):
        tl.atomic_add(x_ptr, tl.load(v_ptr + i))


@pytest.mark.parametrize("dtype, start, adds, want", [
    (np.float32, 1.0, [1e30, -1e30], 0.0),  # (1 + 1e30) - 1e30: the old value first
    (np.float16, 2048.0, [1.0, 1.0], 2048.0),  # 2049 rounds to 2048, twice
    (np.float32, -0.0, [-0.0], -0.0),
])
def test_float_atomic_adds_start_from_the_old_value(fake: FakeMx, monkeypatch: pytest.MonkeyPatch,
                                                     dtype: Any, start: float, adds: list[float], want: float):
    x = np.array([start, 7.0], dtype)
    v = np.array(adds, dtype)
    got, _ = _on_metal(add_in_order, (1,), [x, v], N=len(adds))
    _same_bits(got, np.array([want, 7.0], dtype))
    _same_bits(got, _interpreted(monkeypatch, add_in_order, (1,), [x, v], N=len(adds))[0])


@triton.jit
def add_some(x_ptr, v_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.atomic_add(x_ptr + o, tl.load(v_ptr + o), mask=o % 3 == 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_float_atomic_add_keeps_signed_zeros_and_nan_payloads(fake: FakeMx, monkeypatch: pytest.MonkeyPatch,
                                                              dtype: Any):
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    if dtype == np.float32:
        specials = np.array([0x80000000, 0x7F800001, 0x7FC01234, 0xFFA00001, 0x00000001, 0x80000000], np.uint32)
    else:
        specials = np.array([0x8000, 0x7C01, 0x7E12, 0xFD01, 0x0001, 0x8000], np.uint16)
    x = np.resize(specials.view(dtype), 32)
    v = np.full(32, -0.0, dtype)
    got, _ = _on_metal(add_some, (1,), [x, v], BLOCK=32)
    want = _interpreted(monkeypatch, add_some, (1,), [x, v], BLOCK=32)[0]
    _same_bits(got, want)
    untouched = np.arange(32) % 3 != 0
    np.testing.assert_array_equal(got.view(bits)[untouched], x.view(bits)[untouched])
    assert np.signbit(got[0]) and np.signbit(got[15])  # -0.0 + -0.0 is -0.0


@triton.jit
def max_and_keep(x_ptr, seen_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(seen_ptr + o, tl.atomic_max(x_ptr + o, -1.0, mask=o < BLOCK - 2))


def test_an_atomic_array_of_mixed_signed_zeros_is_not_uniform(fake: FakeMx, monkeypatch: pytest.MonkeyPatch):
    x = np.array([0.0, -0.0, 0.0, -0.0, -0.0, 0.0, -0.0, 0.0], np.float32)
    seen = np.zeros(8, np.float32)
    got_x, got_seen = _on_metal(max_and_keep, (1,), [x, seen], BLOCK=8)
    _same_bits(got_x, x)  # -1.0 changes no zero, and each keeps its sign
    _same_bits(got_seen[:6], x[:6])
    want_x, want_seen = _interpreted(monkeypatch, max_and_keep, (1,), [x, seen], BLOCK=8)
    _same_bits(got_x, want_x)
    _same_bits(got_seen, want_seen)


@triton.jit
def two_outputs(a_ptr, b_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(a_ptr + o, o, mask=o % 2 == 0)
    tl.store(b_ptr + o, -o, mask=o % 2 == 1)


def test_one_array_as_two_written_arguments_is_one_buffer(fake: FakeMx, monkeypatch: pytest.MonkeyPatch):
    # the same object twice: the variant compiles both parameters as one (PointerArg.same_as)
    x = mx.zeros((16,), mx.int32)
    two_outputs[(1,)](x, x, BLOCK=16)
    want = np.zeros(16, np.int32)
    _interpreted(monkeypatch, two_outputs, (1,), [], want, want, BLOCK=16)
    np.testing.assert_array_equal(np.array(x), want)
    (factory,) = fake.fast.factory_calls
    assert not any(name.startswith("b_ptr") for name in factory["output_names"])  # one buffer for both


def test_two_views_of_one_array_as_two_written_arguments_are_refused(fake: FakeMx):
    base = np.zeros(16, np.int32)
    with pytest.raises(triton.LaunchError, match="arguments 'a_ptr' and 'b_ptr' are the same array"):
        two_outputs[(1,)](base[:], base[:], BLOCK=16)  # two objects: not known to be one
    assert not fake.fast.launches and not base.any()


def test_overlapping_numpy_views_are_refused_on_the_metal_path(fake: FakeMx):
    base = np.zeros(24, np.int32)
    with pytest.raises(triton.LaunchError, match="'a_ptr' and 'b_ptr'"):
        two_outputs[(1,)](base[:16], base[8:], BLOCK=16)
    assert not base.any() and not fake.fast.launches
    # disjoint views of one buffer are separate arrays: both sets of stores land
    two_outputs[(1,)](base[:8], base[16:], BLOCK=8)
    np.testing.assert_array_equal(base[:8], np.where(np.arange(8) % 2 == 0, np.arange(8), 0))
    np.testing.assert_array_equal(base[16:], np.where(np.arange(8) % 2 == 1, -np.arange(8), 0))


def test_in_place_numpy_views_behave_as_one_buffer_on_the_emulator(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(backend, "_metal", False)
    two_outputs.cache.clear()
    base = np.zeros(24, np.int32)
    two_outputs[(1,)](base[:16], base[8:], BLOCK=16)
    want = np.zeros(24, np.int32)
    _interpreted(monkeypatch, two_outputs, (1,), [], want[:16], want[8:], BLOCK=16)
    np.testing.assert_array_equal(base, want)


@triton.jit
def add_twice(src_ptr, dst_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(dst_ptr + o, tl.load(src_ptr + o) + 1)
    tl.store(dst_ptr + o, tl.load(src_ptr + o) * 2)  # reads 'src' after writing 'dst'


@triton.jit
def add_into(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(out_ptr + o, tl.load(x_ptr + o) + tl.load(y_ptr + o))


def test_reading_an_argument_after_writing_its_alias_is_refused(fake: FakeMx, monkeypatch: pytest.MonkeyPatch):
    base = np.arange(16, dtype=np.int32)
    with pytest.raises(triton.LaunchError, match="'src_ptr' and 'dst_ptr' are the same array"):
        add_twice[(1,)](base[:], base[:], BLOCK=16)
    assert not fake.fast.launches
    np.testing.assert_array_equal(base, np.arange(16))
    # one object passed as both: compiled as one buffer, it reads its own writes, as in place
    x = mx.arange(16, dtype=mx.int32)
    add_twice[(1,)](x, x, BLOCK=16)
    np.testing.assert_array_equal(np.array(x), (np.arange(16) + 1) * 2)
    # every load before every write: the usual in-place form runs, as in place
    old = np.arange(16, dtype=np.int32)
    x, y = mx.array(old), mx.array(old * 10)
    add_into[(1,)](x, y, x, BLOCK=16)
    np.testing.assert_array_equal(np.array(x), old * 11)
    numpy_x = old.copy()
    _interpreted(monkeypatch, add_into, (1,), [], numpy_x, old * 10, numpy_x, BLOCK=16)
    np.testing.assert_array_equal(numpy_x, old * 11)


@triton.jit
def flip_rounds(x_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    for _ in range(3):
        tl.store(x_ptr + o, tl.load(x_ptr + o) == 0)


@triton.jit
def bump_rounds(x_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    for _ in range(3):
        tl.store(x_ptr + o, tl.load(x_ptr + o) + 1)


@pytest.mark.parametrize("dtype", [mx.uint8, mx.int16, mx.int64, mx.bfloat16, mx.float16])
def test_arrays_of_every_width_are_kept_relative(fake: FakeMx, dtype: Any):
    start = np.arange(32) - 7
    x = mx.array(start).astype(dtype)
    bump_rounds[(1,)](x, BLOCK=32)
    want = mx.array(start + 3).astype(dtype).astype(mx.float32)
    np.testing.assert_array_equal(np.array(x.astype(mx.float32)), np.array(want))
    (launch,) = fake.fast.launches
    assert launch["init_value"] == 0.0


def test_a_bool_array_is_kept_relative(fake: FakeMx, monkeypatch: pytest.MonkeyPatch):
    old = np.arange(32) % 3 == 0
    (got,) = _on_metal(flip_rounds, (1,), [old], BLOCK=32)
    np.testing.assert_array_equal(got, ~old)
    np.testing.assert_array_equal(got, _interpreted(monkeypatch, flip_rounds, (1,), [old], BLOCK=32)[0])


@triton.jit
def store_or_read(x_ptr, out_ptr, flag, BLOCK: tl.constexpr):
    # the shape of Liger-Kernel's cross entropy: its one store is in a branch that returns
    o = tl.arange(0, BLOCK)
    if flag > 0:
        tl.store(x_ptr + o, tl.zeros((BLOCK,), tl.float32) - 1.0)
        return
    tl.store(out_ptr + o, tl.load(x_ptr + o) * 2)


@pytest.mark.parametrize("flag", [0, 1])
def test_a_store_in_a_returning_branch_beside_a_load(fake: FakeMx, monkeypatch: pytest.MonkeyPatch, flag: int):
    x, out = np.arange(16, dtype=np.float32), np.full(16, 5.0, np.float32)
    got = _on_metal(store_or_read, (1,), [x, out], flag, BLOCK=16)
    want = _interpreted(monkeypatch, store_or_read, (1,), [x, out], flag, BLOCK=16)
    for g, w in zip(got, want):
        _same_bits(g, w)
    _same_bits(got[0], np.full(16, -1.0) if flag else x)


@triton.jit
def max_beside_rounds(top_ptr, x_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    for _ in range(2):
        x = tl.load(x_ptr + o) + 1
        tl.store(x_ptr + o, x)
        tl.atomic_max(top_ptr + o % 4, x)


def test_an_atomic_of_another_identity_beside_a_relative_output_is_kept_relative(fake: FakeMx,
                                                                                 monkeypatch: pytest.MonkeyPatch):
    # int32 max would start at -2**31, the relative array at 0: metal_kernel has one init_value
    top, x = np.array([5, -9, 100, -2**31], np.int32), np.arange(32, dtype=np.int32) - 20
    got = _on_metal(max_beside_rounds, (1,), [top, x], BLOCK=32)
    want = _interpreted(monkeypatch, max_beside_rounds, (1,), [top, x], BLOCK=32)
    for g, w in zip(got, want):
        _same_bits(g, w)
    _same_bits(got[0], np.maximum(top, (x + 2).reshape(8, 4).max(0)))
    (launch,) = fake.fast.launches
    assert launch["init_value"] == 0.0


@triton.jit
def half_atomic_beside_store(a_ptr, b_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(b_ptr + o, tl.zeros((BLOCK,), tl.float16) + 2.0)
    tl.atomic_add(a_ptr + o, tl.zeros((BLOCK,), tl.float16) + 1.0)


def test_an_alias_of_a_16_bit_atomic_array_is_refused_in_place(monkeypatch: pytest.MonkeyPatch):
    # the emulator runs 16-bit atomics on a word-aligned copy, which an alias would not see
    monkeypatch.setattr(backend, "_metal", False)
    half_atomic_beside_store.cache.clear()
    x = np.zeros(16, np.float16)
    with pytest.raises(triton.LaunchError, match="'a_ptr' and 'b_ptr' are the same array"):
        half_atomic_beside_store[(1,)](x, x, BLOCK=16)
    assert not x.any()
    y = np.zeros(16, np.float16)
    half_atomic_beside_store[(1,)](x, y, BLOCK=16)  # separate arrays run
    np.testing.assert_array_equal(x, 1.0)
    np.testing.assert_array_equal(y, 2.0)


# -- float atomic adds held with the untouched mark (codegen.kernel.marks_untouched) ------------

UNTOUCHED = 0x7FD5A5A5


def _twin_sources(fake: FakeMx) -> str:
    return "\n".join(c["header"] + c["source"] for c in fake.fast.factory_calls)


@triton.jit
def scatter_returning(x_ptr, idx_ptr, out_ptr, seen_ptr, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    seen = tl.atomic_add(out_ptr + tl.load(idx_ptr + o, mask=m), tl.load(x_ptr + o, mask=m), mask=m)
    tl.store(seen_ptr + o, seen, mask=m)


def test_float_adds_alone_start_at_the_mark_and_run_as_hardware_adds(fake: FakeMx,
                                                                     monkeypatch: pytest.MonkeyPatch):
    # each element is added to once: the values returned and left are exact, bit for bit
    specials = np.array([0x80000000, 0x7FC01234, 0xFFC00001, 0x00000001, 0x7F800000, UNTOUCHED,
                         0x3F800000, 0x80000000], np.uint32).view(np.float32)
    old = np.resize(specials, 40)
    idx = np.arange(32, dtype=np.int32)[::-1].copy()
    x = np.resize(np.array([-0.0, 1.5, -2.0, 0.0], np.float32), 32)
    seen = np.zeros(32, np.float32)
    got, got_seen = _on_metal(scatter_returning, (1,), [x, idx, old, seen], 32, BLOCK=32)[2:]
    want, want_seen = _interpreted(monkeypatch, scatter_returning, (1,), [x, idx, old, seen], 32, BLOCK=32)[2:]
    _same_bits(got, want)
    _same_bits(got_seen, want_seen)
    _same_bits(got_seen, old[idx])  # each add returns the element's old value
    _same_bits(got[32:], old[32:])  # untouched, the mark's own bits among them
    (launch,) = fake.fast.launches
    assert np.float32(launch["init_value"]).view(np.uint32) == UNTOUCHED
    assert "km_rel_add_float_mark" in _twin_sources(fake)


def test_contended_float_adds_through_the_mark_match_a_float64_sum(fake: FakeMx):
    rng = np.random.default_rng(5)
    n = 3000
    x = rng.standard_normal(n).astype(np.float32)
    idx = rng.integers(0, 16, n).astype(np.int32)
    old = rng.standard_normal(20).astype(np.float32)
    seen = np.zeros(n, np.float32)
    got = _on_metal(scatter_returning, (triton.cdiv(n, 128),), [x, idx, old, seen], n, BLOCK=128)[2]
    want = old.astype(np.float64)
    np.add.at(want, idx, x)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4)
    _same_bits(got[16:], old[16:])


def test_an_operand_with_the_marks_bits_leaves_another_quiet_nan(fake: FakeMx):
    # the one departure from in place: a sum whose bits would be the mark (only an operand NaN
    # carrying the mark's payload makes one) is stored as the neighbouring quiet NaN
    old = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    x = np.array([UNTOUCHED, UNTOUCHED, 0, 0], np.uint32).view(np.float32)
    idx = np.arange(4, dtype=np.int32)
    got = _on_metal(scatter_returning, (1,), [x, idx, old, np.zeros(4, np.float32)], 2, BLOCK=4)[2]
    np.testing.assert_array_equal(got.view(np.uint32)[:2], [UNTOUCHED ^ 1] * 2)
    _same_bits(got[2:], old[2:])


@triton.jit
def add_beside_rounds(acc_ptr, x_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    for _ in range(2):
        tl.store(x_ptr + o, tl.load(x_ptr + o) + 1)
    tl.atomic_add(acc_ptr + o % 4, tl.load(x_ptr + o))


def test_the_mark_gives_way_to_another_relative_output(fake: FakeMx, monkeypatch: pytest.MonkeyPatch):
    # metal_kernel has one init_value: beside an output that starts at 0, the adds run on the
    # held difference instead
    acc, x = np.array([0.5, -0.0, 3.0, 7.0], np.float32), np.arange(32, dtype=np.float32)
    got = _on_metal(add_beside_rounds, (1,), [acc, x], BLOCK=32)
    want = _interpreted(monkeypatch, add_beside_rounds, (1,), [acc, x], BLOCK=32)
    _same_bits(got[1], want[1])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    (launch,) = fake.fast.launches
    assert launch["init_value"] == 0.0
    sources = _twin_sources(fake)
    assert "km_rel_add_float_xor" in sources and "km_rel_add_float_mark" not in sources


@triton.jit
def store_some_then_read(x_ptr, src_ptr, out_ptr, ticket_ptr, n, BLOCK: tl.constexpr):
    # x is stored where o % 3 != 0 and then read everywhere, in a kernel whose programs take
    # tickets (an atomic whose value is used): x is exchanged between programs and kept
    # relative to its contents with the key (loads and stores only)
    o = tl.arange(0, BLOCK)
    m = (o < n) & (o % 3 != 0)
    ticket = tl.atomic_add(ticket_ptr, 1)
    tl.store(x_ptr + o, tl.load(src_ptr + o, mask=m), mask=m)
    tl.store(out_ptr + o, tl.load(x_ptr + o, mask=o < n), mask=(o < n) & (ticket >= 0))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16, np.uint16])
def test_a_keyed_array_keeps_every_value_the_key_included(fake: FakeMx, monkeypatch: pytest.MonkeyPatch,
                                                          dtype: Any):
    from triton_metal.codegen.kernel import KEY_BITS

    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    key = KEY_BITS[8 * bits.itemsize]
    n = 45
    rng = np.random.default_rng(3)
    pattern = np.array([key, 0, key ^ 1, 1 << (8 * bits.itemsize - 1), key], bits)  # the key, +0, -0
    old = np.where(rng.random(n) < 0.5, pattern[rng.integers(0, 5, n)], rng.integers(0, 2**15, n)).astype(bits)
    src = np.where(rng.random(n) < 0.5, pattern[rng.integers(0, 5, n)], rng.integers(0, 2**15, n)).astype(bits)
    old[:6], src[:6] = key, key  # stored and untouched elements that hold the key
    arrays = [old.view(dtype), src.view(dtype), np.zeros(n, dtype), np.zeros(1, np.int32)]
    got = _on_metal(store_some_then_read, (1,), arrays, n, BLOCK=64)
    stored = np.arange(n) % 3 != 0
    want = np.where(stored, src, old)  # in place, bit for bit
    for g in (got[0], got[2]):
        np.testing.assert_array_equal(g.view(bits), want)
    interpreted = _interpreted(monkeypatch, store_some_then_read, (1,), arrays, n, BLOCK=64)
    np.testing.assert_array_equal(got[0].view(bits), interpreted[0].view(bits))
    (twin,) = [c["source"] for c in fake.fast.factory_calls if "x_ptr_esc" in c["output_names"]]
    assert "km_rel_unkey(" in twin and "km_rel_escape(" in twin
    assert "x_ptr_old[" not in twin  # the old contents are read only in km_rel_unkey, where x holds 0
    (launch,) = fake.fast.launches
    assert launch["init_value"] == 0.0
    assert launch["output_dtypes"][-1] == mx.uint8 and launch["output_shapes"][-1] == (48,)  # 45, whole words
    assert int(got[3][0]) == 1
