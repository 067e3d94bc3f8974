"""The Metal driver against a recording stand-in of `mx.fast.metal_kernel` (fake_mlx.py).

The whole runtime runs with the backend "metal" (as on a Mac), and the stand-in runs each
`metal_kernel` call on the emulator, so these tests check both the calls the driver makes
(names, typed scalars, grid in threads, one factory per variant, `init_value`) and the results
(coverage proofs, merges of partly written outputs, atomics combined with old contents,
rebinding of MLX arrays, NumPy arrays copied back).
"""

from __future__ import annotations

import sys
from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.backends.metal import (
    ChipInfo,
    atomic_identity,
    chip_info,
    driver,
    launch_dims,
    parse_architecture,
)
from triton_metal.runtime import backend

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_mlx import FakeMx  # noqa: E402


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeMx:
    stand_in = FakeMx()
    monkeypatch.setattr(backend, "_metal", True)
    monkeypatch.setattr(driver, "_mlx", lambda: stand_in)
    return stand_in


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def strided_fill(out_ptr, n, value, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs * 2, value + offs.to(tl.float32), mask=offs * 2 < n)


@triton.jit
def scale_in_place(x_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


@triton.jit
def histogram_kernel(x_ptr, hist_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    bins = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.atomic_add(hist_ptr + bins, tl.full((BLOCK,), 1, tl.int32), mask=mask)


@triton.jit
def atomic_max_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.atomic_max(out_ptr + offs % 4, tl.load(x_ptr + offs, mask=mask, other=-1e30), mask=mask)


@triton.jit
def counter_kernel(count_ptr, out_ptr, BLOCK: tl.constexpr):
    old = tl.atomic_add(count_ptr, 1)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, old + offs * 0)


def test_covered_store_is_one_call_with_typed_scalars_and_rebinds(fake: FakeMx):
    rng = np.random.default_rng(0)
    x = mx.array(rng.standard_normal(1000).astype(np.float32))
    y = mx.array(rng.standard_normal(1000).astype(np.float32))
    out = mx.zeros((1000,), mx.float32)
    before = out
    add_kernel[(triton.cdiv(1000, 256),)](x, y, out, 1000, BLOCK=256)
    assert out is before  # the caller's object now holds the result
    np.testing.assert_array_equal(np.array(out), np.array(x) + np.array(y))
    assert triton.active_backend_name() == "metal"
    (factory,) = fake.fast.factory_calls
    assert factory["compile_options"] == {"math_mode": "safe"}
    assert factory["name"].startswith("add_kernel_") and factory["ensure_row_contiguous"] is True
    (launch,) = fake.fast.launches
    assert launch["grid"] == (4 * 128, 1, 1) and launch["threadgroup"] == (128, 1, 1)
    assert launch["init_value"] is None  # coverage proven: no merge
    scalar = launch["inputs"][2]
    assert scalar.ndim == 0 and scalar.dtype == mx.int32 and scalar.item() == 1000
    assert fake.evals == 0  # a launch never evaluates (np.array above evaluates directly)


def test_factory_is_built_once_per_variant(fake: FakeMx):
    x = mx.ones((64,), mx.float32)
    for _ in range(3):
        out = mx.zeros((64,), mx.float32)
        add_kernel[(1,)](x, x, out, 64, BLOCK=64)
        np.testing.assert_array_equal(np.array(out), np.full(64, 2, np.float32))
    assert len(fake.fast.factory_calls) == 1 and len(fake.fast.launches) == 3
    assert fake.evals == 0


def test_partial_store_merges_with_the_old_contents(fake: FakeMx):
    # n < out.size: elements past n are not written and must keep their values
    x = mx.arange(100, dtype=mx.float32)
    old = np.full(100, 7.0, np.float32)
    out = mx.array(old)
    add_kernel[(1,)](x, x, out, 60, BLOCK=64)
    want = old.copy()
    want[:60] = 2 * np.arange(60, dtype=np.float32)
    np.testing.assert_array_equal(np.array(out), want)
    (launch,) = fake.fast.launches  # one run, which also writes the written mask
    assert launch["init_value"] == 0.0
    assert launch["output_dtypes"] == [mx.float32, mx.bool_]
    assert fake.fast.factory_calls[-1]["output_names"] == ["out_ptr_out", "out_ptr_written"]


def test_strided_store_merges_and_nan_results_count_as_written(fake: FakeMx):
    out = mx.array(np.full(20, -1.0, np.float32))
    strided_fill[(1,)](out, 20, float("nan"), BLOCK=16)
    got = np.array(out)
    assert np.isnan(got[0:20:2]).all()
    np.testing.assert_array_equal(got[1:20:2], np.full(10, -1.0, np.float32))


def test_numpy_arrays_are_copied_in_and_back(fake: FakeMx):
    x = np.arange(50, dtype=np.float32)
    scale_in_place[(1,)](x, 40, 3.0, BLOCK=64)
    want = np.arange(50, dtype=np.float32)
    want[:40] *= 3
    np.testing.assert_array_equal(x, want)
    factor = fake.fast.launches[0]["inputs"][2]
    assert factor.dtype == mx.float32 and factor.ndim == 0


def test_atomic_add_starts_at_identity_and_adds_the_old_counts(fake: FakeMx):
    rng = np.random.default_rng(1)
    data = rng.integers(0, 16, 500).astype(np.int32)
    hist = mx.array(np.full(16, 5, np.int32))
    histogram_kernel[(triton.cdiv(500, 128),)](mx.array(data), hist, 500, BLOCK=128)
    np.testing.assert_array_equal(np.array(hist), np.bincount(data, minlength=16) + 5)
    (launch,) = fake.fast.launches
    assert launch["init_value"] == 0.0


def test_float_atomic_max_runs_relative_to_the_array(fake: FakeMx):
    x = np.array([1.0, -5.0, 3.0, 2.0, 9.0, -1.0, 0.5, 8.0], np.float32)
    out = mx.array(np.array([4.0, 0.0, 10.0, -3.0], np.float32))
    atomic_max_kernel[(1,)](mx.array(x), out, 8, BLOCK=8)
    np.testing.assert_array_equal(np.array(out), np.maximum([4.0, 0.0, 10.0, -3.0], x.reshape(2, 4).max(0)))
    # float: kept relative to the array (a compare-and-swap loop on the difference), so its
    # signed zeros and NaN payloads are not put through a host-side maximum
    assert fake.fast.launches[0]["init_value"] == 0.0


def test_counters_start_as_their_array_without_reading_it(fake: FakeMx):
    # the returned old values are used: the output must start as the array, which metal_kernel
    # cannot do; the twin keeps the counter relative to the array (wrapping difference), passed
    # as its last input, and one add on the bits decodes it
    count = mx.array(np.array([2**31 - 2, -7], np.int32))  # wraps past INT_MAX, as on the GPU
    out = mx.zeros((4 * 8,), mx.int32)
    counter_kernel[(4,)](count, out, BLOCK=8)
    olds = np.array(out).reshape(4, 8)[:, 0]
    want = (np.int64(2**31 - 2) + np.arange(4) + 2**31) % 2**32 - 2**31
    assert sorted(olds.tolist()) == sorted(want.tolist()) and (np.array(out).reshape(4, 8).T == olds).all()
    np.testing.assert_array_equal(np.array(count), np.array([2**31 - 2 + 4 - 2**32, -7]))
    (launch,) = fake.fast.launches
    assert launch["init_value"] == 0.0
    assert fake.fast.factory_calls[-1]["input_names"][-1] == "count_ptr_old"


@triton.jit
def max_ticket_kernel(m_ptr, out_ptr, BLOCK: tl.constexpr):
    old = tl.atomic_max(m_ptr, tl.program_id(0))  # its returned value: a loop on the difference
    tl.store(out_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.int32) + old)


@pytest.mark.parametrize("start", [[2, 2], [0, 7], [-9, 3]])
def test_atomics_whose_results_are_used_run_relative_to_any_contents(fake: FakeMx, start: list[int]):
    # an atomic max whose returned value is used: a compare-and-swap loop on the difference from
    # the array, whatever it holds; nothing reads the array on the launch path
    m = mx.array(np.array(start, np.int32))
    out = mx.zeros((4 * 8,), mx.int32)
    max_ticket_kernel[(4,)](m, out, BLOCK=8)
    assert np.array(m).tolist() == [max(start[0], 3), start[1]]
    seen = np.array(out).reshape(4, 8)
    # programs may run in any order: the first to run sees the array's contents, each later
    # one what the max left, never more than the largest program id
    olds = seen[:, 0].tolist()
    assert (seen == seen[:, :1]).all() and start[0] in olds and max(olds) <= max(start[0], 3)
    assert all(o == start[0] or 0 <= o <= 3 for o in olds)
    assert fake.evals == 0 and {launch["init_value"] for launch in fake.fast.launches} == {0.0}


def test_a_kernel_launched_under_another_mx_runs_through_the_one_in_use(monkeypatch: pytest.MonkeyPatch):
    # a launcher kept from an earlier launch must not run through the module it was built with:
    # each stand-in sees exactly its own launches, whatever ran before (in any test order)
    x = mx.arange(64, dtype=mx.float32)
    stand_ins = [FakeMx(), FakeMx()]
    monkeypatch.setattr(backend, "_metal", True)
    for stand_in in (*stand_ins, stand_ins[0]):
        monkeypatch.setattr(driver, "_mlx", lambda stand_in=stand_in: stand_in)
        out = mx.zeros((64,), mx.float32)
        add_kernel[(1,)](x, x, out, 64, BLOCK=64)
        np.testing.assert_array_equal(np.array(out), 2 * np.arange(64, dtype=np.float32))
    assert [len(s.fast.launches) for s in stand_ins] == [2, 1]
    assert [len(s.fast.factory_calls) for s in stand_ins] == [2, 1]  # each rebinding builds its own


def test_mlx_without_compile_options_gets_the_plain_factory(monkeypatch: pytest.MonkeyPatch):
    stand_in = FakeMx(accepts_compile_options=False)
    monkeypatch.setattr(backend, "_metal", True)
    monkeypatch.setattr(driver, "_mlx", lambda: stand_in)
    out = mx.zeros((32,), mx.float32)
    add_kernel[(1,)](mx.ones((32,)), mx.ones((32,)), out, 32, BLOCK=32, num_warps=1)
    np.testing.assert_array_equal(np.array(out), np.full(32, 2, np.float32))
    (factory,) = stand_in.fast.factory_calls
    assert "compile_options" not in factory


def test_metal_compile_error_maps_to_the_kernel_line(monkeypatch: pytest.MonkeyPatch):
    line = add_kernel.starting_line + 3
    message = (
        "[metal::Device] Unable to build metal library from source\n"
        f"{__file__}:{line}:5: error: use of undeclared identifier 'tm_9'\n"
    )
    stand_in = FakeMx(eval_error=RuntimeError(message))
    monkeypatch.setattr(backend, "_metal", True)
    monkeypatch.setattr(driver, "_mlx", lambda: stand_in)
    out = mx.zeros((16,))
    add_kernel[(1,)](mx.ones((16,)), mx.ones((16,)), out, 16, BLOCK=16, num_warps=2)  # lazy: no error yet
    with pytest.raises(RuntimeError, match="undeclared identifier"):
        stand_in.eval(out)  # MLX's own error, where the graph is evaluated
    with pytest.raises(triton.CompilationError) as info, triton.metal_errors():
        stand_in.eval(out)
    text = str(info.value)
    assert f"{__file__}:{line}" in text and "undeclared identifier" in text
    assert "tl.store(out_ptr + offs" in text  # the kernel's own source line is quoted


def test_launch_dims_count_threads_and_spread_huge_grids():
    assert launch_dims((10, 3, 2), 128, False) == ((1280, 3, 2), (128, 1, 1))
    with pytest.raises(triton.LaunchError, match="program spreading"):
        launch_dims((2**24, 1, 1), 256, False)
    grid, group = launch_dims((2**24, 1, 1), 256, True)
    assert group == (256, 1, 1) and all(g < 2**31 for g in grid)
    assert (grid[0] // 256) * grid[1] * grid[2] >= 2**24


def test_atomic_identities():
    assert atomic_identity("add", "float") == 0.0
    assert atomic_identity("max", "float") == -np.inf
    assert atomic_identity("max", "int32_t") == -(2.0**31)
    assert atomic_identity("max", "uint32_t") == 0.0
    assert atomic_identity("min", "float") == np.inf
    assert atomic_identity("min", "int32_t") is None  # 2**31 - 1 is not a float32
    assert atomic_identity("xchg", "int32_t") is None


def test_chip_parsing_and_the_cpu_build():
    assert parse_architecture("applegpu_g15s") == (15, "s")
    assert parse_architecture("x86_64") == (None, None)
    assert ChipInfo("applegpu_g16s", "Apple M4 Max", 16, "s").family == "M4"
    assert ChipInfo("applegpu_g18p", "Apple A19", 18, "p").family is None
    info = chip_info()  # MLX's CPU build: the host architecture, no GPU generation
    assert info.generation is None and info.threadgroup_memory_bytes == 32768


@pytest.mark.parametrize("name", ["vector_add", "softmax", "matmul", "dropout", "cumsum", "histogram",
                                  "flash_attention"])
def test_examples_run_through_the_metal_driver(fake: FakeMx, name: str, capsys: pytest.CaptureFixture[str]):
    import importlib

    example = importlib.import_module(f"examples.{name}")
    assert example.main() == 0  # NumPy arrays: copied in, results copied back
    assert "(backend: metal)" in capsys.readouterr().out
    assert fake.fast.launches and all(launch["threadgroup"][0] % 32 == 0 for launch in fake.fast.launches)


def test_layer_norm_backward_runs_through_the_metal_driver(fake: FakeMx):
    from examples import layer_norm

    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 40)).astype(np.float32)
    w = rng.random(40).astype(np.float32)
    dy = rng.standard_normal((6, 40)).astype(np.float32)
    y, mean, rstd = layer_norm.layer_norm_forward(x, w, w)
    np.testing.assert_allclose(y, layer_norm.reference_forward(x, w, w, 1e-5)[0], atol=1e-5)
    # the partial buffers are loaded and stored under the lock: their loads read the output,
    # which starts at their one value (zeros); DX's row-strided stores are proven to cover it
    fake.fast.launches.clear()
    dx, dw, db = layer_norm.layer_norm_backward(dy, x, w, mean, rstd)
    for got, want in zip((dx, dw, db), layer_norm.reference_backward(dy, x, w, 1e-5)):
        np.testing.assert_allclose(got, want, atol=1e-4)
    assert all(launch["init_value"] in (None, 0.0) for launch in fake.fast.launches)
    assert len(fake.fast.launches) == 2  # one run per kernel: nothing merged


@triton.jit
def locked_accumulate(acc_ptr, lock_ptr, x_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(acc_ptr + offs, tl.load(acc_ptr + offs) + tl.load(x_ptr + offs))
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr, 0)


def test_arrays_loaded_and_stored_under_a_lock_start_as_their_contents(fake: FakeMx):
    x = np.arange(8, dtype=np.float32)
    acc = np.zeros(8, np.float32)
    locked_accumulate[(3,)](acc, np.zeros(1, np.int32), x, N=8)
    np.testing.assert_array_equal(acc, 3 * x)
    # any contents: the accumulator and the lock are kept relative to their arrays (bitwise
    # difference for the float array, exact for every bit pattern)
    start = np.array([1.5, -0.0, np.inf, -3.0, 1e-45, 7.0, 0.25, -2.0], np.float32)
    acc = mx.array(start)
    lock = mx.array(np.array([0], np.int32))
    locked_accumulate[(3,)](acc, lock, mx.array(x), N=8)
    np.testing.assert_array_equal(np.array(acc), start + 3 * x)
    assert np.array(lock).tolist() == [0]
    launch = fake.fast.launches[-1]
    assert launch["init_value"] == 0.0
    assert fake.fast.factory_calls[-1]["input_names"][-2:] == ["acc_ptr_old", "lock_ptr_old"]


@triton.jit
def locked_region(acc_ptr, lock_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(acc_ptr + offs, tl.load(acc_ptr + offs) * 2.0, mask=offs < N // 2)
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr, 0)


def test_elements_a_locked_kernel_leaves_keep_their_exact_bits(fake: FakeMx):
    bits = np.array([0x7FC01234, 0x80000000, 0x3F800000, 0xFF800001, 0x00000001, 0x7F7FFFFF,
                     0x7FA00000, 0x80000001], np.uint32)  # NaN payloads, -0.0, denormals
    acc = mx.array(bits.view(np.float32))
    locked_region[(2,)](acc, mx.array(np.array([0], np.int32)), N=8)
    got = np.array(acc).view(np.uint32)
    np.testing.assert_array_equal(got[4:], bits[4:])
    with np.errstate(invalid="ignore"):  # a signalling NaN among them
        np.testing.assert_array_equal(np.array(acc)[:4], bits[:4].view(np.float32) * 4)


def test_relative_encodings_are_chosen_where_they_are_exact():
    from triton_metal.codegen.kernel import keeps_key, relative_encoding

    assert relative_encoding("float", ()) == "xor"  # loaded and stored under a lock
    assert relative_encoding("float16_t", ()) == "xor"
    assert relative_encoding("float", ("cas", "xchg")) == "xor"
    assert relative_encoding("int32_t", ("add", "cas")) == "sub"  # adds carried by a difference
    assert relative_encoding("uint32_t", ("add",)) == "sub"
    # every other atomic runs as a compare-and-swap loop on the bitwise difference
    assert relative_encoding("float", ("add",)) == "xor"
    assert relative_encoding("int32_t", ("max",)) == "xor"
    assert relative_encoding("int32_t", ("add", "max")) == "xor"
    assert relative_encoding("float16_t", ("xchg",)) == "xor"
    assert relative_encoding("int64_t", ()) == "xor"  # only loaded and stored
    assert relative_encoding("uint64_t", ("max",)) is None  # no 64-bit compare-and-swap
    # loaded and stored only, 16 or 32 bits an element: the key may hold it instead
    assert keeps_key("float", (), False) and keeps_key("float16_t", (), False) and keeps_key("uint16_t", (), False)
    assert not keeps_key("int8_t", (), False) and not keeps_key("int64_t", (), False)
    assert not keeps_key("float", ("xchg",), False)  # an atomic: the bitwise difference
    assert not keeps_key("int32_t", (), True)  # a poll compares the bits held


def test_layer_norm_backward_in_half_precision_keeps_its_partial_buffers_relative(fake: FakeMx):
    from examples import layer_norm

    rng = np.random.default_rng(3)
    x = rng.standard_normal((9, 24)).astype(np.float16)
    w = rng.random(24).astype(np.float16)
    dy = rng.standard_normal((9, 24)).astype(np.float16)
    _, mean, rstd = layer_norm.layer_norm_forward(mx.array(x), mx.array(w), mx.array(w))
    fake.fast.launches.clear()
    dx, dw, db = layer_norm.layer_norm_backward(mx.array(dy), mx.array(x), mx.array(w), mean, rstd)
    want = layer_norm.reference_backward(dy, x, w, 1e-5)
    for got, ref in zip((dx, dw, db), want):
        np.testing.assert_allclose(np.array(got).astype(np.float32), ref, rtol=2e-2, atol=2e-2)
    names = fake.fast.factory_calls[-2]["input_names"]
    assert names[-3:] == ["DW_old", "DB_old", "Lock_old"] and fake.evals == 0
