"""One kernel run per launch on the Metal path (recording stand-in of `metal_kernel`, fake_mlx.py):
every example's launch is proven covered (one call, no merge op), and a launch that is not proven
runs the kernel's written-mask twin once and merges with one `mx.where`."""

from __future__ import annotations

import importlib
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import mlx.core as mx
import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.backends.metal import driver
from triton_metal.runtime import backend, disk_cache

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_mlx import FakeMx  # noqa: E402

_MERGE_OPS = ("where", "not_equal", "equal", "select")


class CountingMx(FakeMx):
    """FakeMx that also counts the MLX ops a merge would use."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        op = getattr(mx, name)
        if name not in _MERGE_OPS:
            return op

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.ops[name] += 1
            return op(*args, **kwargs)

        return counted


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> CountingMx:
    stand_in = CountingMx()
    monkeypatch.setattr(backend, "_metal", True)
    monkeypatch.setattr(driver, "_mlx", lambda: stand_in)
    return stand_in


@pytest.fixture
def launches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of every launch the Metal driver runs."""
    seen: list[str] = []
    original = driver.MetalLauncher.__call__

    def call(self: driver.MetalLauncher, values: Any, grid: Any) -> None:
        seen.append(self.msl.name)
        original(self, values, grid)

    monkeypatch.setattr(driver.MetalLauncher, "__call__", call)
    return seen


@pytest.mark.parametrize("name", ["vector_add", "softmax", "layer_norm", "matmul", "flash_attention", "dropout",
                                  "cumsum", "histogram"])
def test_every_example_launch_is_one_call_without_merge(fake: CountingMx, launches: list[str], name: str,
                                                        capsys: pytest.CaptureFixture[str]):
    example = importlib.import_module(f"examples.{name}")
    assert example.main() == 0
    assert "(backend: metal)" in capsys.readouterr().out
    assert launches and len(fake.fast.launches) == len(launches)  # one metal_kernel call each
    # no merge: every output proven written in full (a `where` decodes each output held with
    # the key, the layer-norm backward's partial buffers)
    keyed = sum(o.endswith("_esc") for f in fake.fast.factory_calls for o in f["output_names"])
    assert fake.ops == Counter({"where": keyed} if keyed else {})
    for factory in fake.fast.factory_calls:
        assert not any(o.endswith("_written") for o in factory["output_names"])


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def two_outputs(x_ptr, even_ptr, all_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(all_ptr + offs, x, mask=offs < n)
    tl.store(even_ptr + offs * 2, x, mask=offs * 2 < n)


@triton.jit
def count_and_store(x_ptr, hist_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.atomic_add(hist_ptr + x, tl.full((BLOCK,), 1, tl.int32), mask=offs < n)
    tl.store(out_ptr + offs, x, mask=offs < n)


@triton.jit
def max_and_store(x_ptr, top_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.atomic_max(top_ptr + offs % 2, x, mask=offs < n)
    tl.store(out_ptr + offs, x, mask=offs < n)


def test_unproven_launch_is_one_run_and_one_select(fake: CountingMx):
    x = mx.arange(100, dtype=mx.float32)
    old = np.full(100, 7.0, np.float32)
    out = mx.array(old)
    add_kernel[(1,)](x, x, out, 60, BLOCK=64)  # n < size: elements 60.. are not written
    want = old.copy()
    want[:60] = 2 * np.arange(60, dtype=np.float32)
    np.testing.assert_array_equal(np.array(out), want)
    (launch,) = fake.fast.launches
    assert launch["init_value"] == 0.0 and launch["output_dtypes"] == [mx.float32, mx.bool_]
    assert fake.ops == Counter(where=1)
    # the proven launch of the same variant uses the plain kernel again, with no select
    out2 = mx.array(old)
    add_kernel[(2,)](x, x, out2, 100, BLOCK=64)
    np.testing.assert_array_equal(np.array(out2), 2 * np.arange(100, dtype=np.float32))
    assert fake.ops == Counter(where=1) and fake.fast.launches[-1]["init_value"] is None
    # and the written-mask twin is built once
    add_kernel[(1,)](x, x, mx.array(old), 60, BLOCK=64)
    names = [f["output_names"] for f in fake.fast.factory_calls]
    assert names == [["out_ptr_out", "out_ptr_written"], ["out_ptr_out"]]


def test_written_mask_keeps_old_values_where_nan_and_garbage_are_written(fake: CountingMx):
    # NaN results count as written; elements not written keep the old values exactly
    x = mx.array(np.array([np.nan, 1.0, -0.0, 3.0] * 8, np.float32))
    old = np.arange(32, dtype=np.float32) + 0.5
    even, every = mx.array(old), mx.array(old)
    two_outputs[(1,)](x, even, every, 32, BLOCK=32)
    got_even, got_all = np.array(even), np.array(every)
    np.testing.assert_array_equal(got_all, np.array(x))  # proven: written in full
    want = old.copy()
    want[0::2] = np.array(x)[:16]
    np.testing.assert_array_equal(got_even, want)
    assert np.signbit(got_even[4]) and np.isnan(got_even[0])
    (launch,) = fake.fast.launches
    assert launch["output_dtypes"] == [mx.float32, mx.float32, mx.bool_]  # a mask for 'even' only
    assert fake.ops == Counter(where=1)


def test_written_mask_beside_an_atomic_starting_at_zero(fake: CountingMx):
    x = mx.array(np.array([0, 1, 1, 3] * 10, np.int32))
    hist = mx.array(np.array([5, 0, 0, 1], np.int32))
    out = mx.array(np.full(50, -1, np.int32))
    count_and_store[(1,)](x, hist, out, 40, BLOCK=64)
    np.testing.assert_array_equal(np.array(hist), [15, 20, 0, 11])
    np.testing.assert_array_equal(np.array(out), np.concatenate([np.array(x), np.full(10, -1, np.int32)]))
    (launch,) = fake.fast.launches
    assert launch["init_value"] == 0.0


def test_written_mask_beside_an_atomic_starting_elsewhere_marks_what_was_not_written(fake: CountingMx):
    # init_value starts every output: -2**31 for an int32 max, which starts the bool masks true,
    # so the twin's stores clear them and the select keeps the old values where they stayed true
    x = mx.array(np.arange(40, dtype=np.int32) * 7 - 250)
    top = mx.array(np.array([3, 100], np.int32))
    start = np.full(50, -5, np.int32)
    out = mx.array(start)
    max_and_store[(1,)](x, top, out, 40, BLOCK=64)
    xs = np.array(x)
    np.testing.assert_array_equal(np.array(top), [max(3, xs[0::2].max()), max(100, xs[1::2].max())])
    got = np.array(out)
    np.testing.assert_array_equal(got[:40], xs)
    np.testing.assert_array_equal(got[40:], start[40:])
    (launch,) = fake.fast.launches
    assert launch["init_value"] == -2.0**31 and launch["output_dtypes"][-1] == mx.bool_
    assert fake.ops == Counter(where=1)
    max_and_store[(1,)](x, top, mx.zeros((40,), mx.int32), 40, BLOCK=64)  # proven: no mask
    assert fake.fast.launches[-1]["output_dtypes"] == [mx.int32, mx.int32]


@triton.jit
def masked_pair(x_ptr, first_ptr, second_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(first_ptr + offs, x, mask=offs < n)  # modelled: not proven for n < BLOCK
    tl.store(second_ptr + offs, -x, mask=x > 0)  # on loaded data: never modelled


def test_each_written_mask_merges_its_own_output(fake: CountingMx):
    # the second output's verdict is known before the first's is checked; the masks still
    # follow the outputs' order, as the twin writes them
    x = np.arange(16, dtype=np.float32) - 5
    first, second = mx.full((16,), 9.0), mx.full((16,), 9.0)
    masked_pair[(1,)](mx.array(x), first, second, 10, BLOCK=16)
    np.testing.assert_array_equal(np.array(first), np.where(np.arange(16) < 10, x, 9.0))
    np.testing.assert_array_equal(np.array(second), np.where(x > 0, -x, 9.0))
    assert fake.ops == Counter(where=2)


def test_debug_log_names_the_store_line_not_proven(fake: CountingMx, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]):
    monkeypatch.setenv("TRITON_METAL_DEBUG", "1")
    out = mx.zeros((100,), mx.float32)
    add_kernel[(1,)](mx.ones((100,)), mx.ones((100,)), out, 100, BLOCK=64)
    err = capsys.readouterr().err
    assert "'out_ptr' is not proven to be written in full" in err
    assert "element 64 of 100" in err and "test_one_run_launch.py:" in err and "tl.store(out_ptr + offs" in err


def test_coverage_is_checked_once_per_grid_and_scalars(fake: CountingMx, monkeypatch: pytest.MonkeyPatch):
    from triton_metal.runtime import coverage

    calls: list[tuple[int, int, int]] = []
    original = coverage.check_coverage

    def counted(program: Any, grid: Any, scalars: Any, sizes: Any) -> Any:
        calls.append(grid)
        return original(program, grid, scalars, sizes)

    monkeypatch.setattr(coverage, "check_coverage", counted)
    x = mx.ones((256,), mx.float32)
    for _ in range(3):
        add_kernel[(4,)](x, x, mx.zeros((256,), mx.float32), 256, BLOCK=64)
    add_kernel[(4,)](x, x, mx.zeros((200,), mx.float32), 200, BLOCK=64)
    assert calls == [(4, 1, 1), (4, 1, 1)]


def test_coverage_program_survives_the_disk_cache():
    compiled = add_kernel.warmup(np.float32, np.float32, np.float32, 100, BLOCK=64, grid=(2,))
    data = json.loads(json.dumps(disk_cache.dump_msl_kernel(compiled.msl)))
    back = disk_cache.load_msl_kernel(data)
    assert back.coverage_program == compiled.msl.coverage_program
    assert back.stored_coverage == compiled.msl.stored_coverage


def test_launch_json_records_each_verdict(fake: CountingMx, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("TRITON_METAL_DUMP_DIR", str(tmp_path))
    add_kernel.cache.clear()  # the variant's dump folder is made when it compiles
    x = mx.ones((100,), mx.float32)
    add_kernel[(2,)](x, x, mx.zeros((100,), mx.float32), 100, BLOCK=64)
    add_kernel[(1,)](x, x, mx.zeros((100,), mx.float32), 100, BLOCK=64)
    (name,) = {launch["name"] for launch in fake.fast.launches[:1]}
    data = json.loads((tmp_path / name / "launch.json").read_text())
    assert [c["checkable"] for c in data["stored_coverage"]] == [True]
    first, second = data["coverage_verdicts"]
    assert first["grid"] == [2, 1, 1] and first["scalars"] == {"n": 100}
    assert first["outputs"]["out_ptr_out"] == {"proven": True, "reason": ""}
    assert not second["outputs"]["out_ptr_out"]["proven"]
    assert "element 64 of 100" in second["outputs"]["out_ptr_out"]["reason"]


@triton.jit
def seeded(out_ptr, n, seed, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.rand(seed, offs) * scale, mask=offs < n)


def test_scalars_the_proof_does_not_read_do_not_defeat_the_memo(fake: CountingMx, monkeypatch: pytest.MonkeyPatch):
    from triton_metal.runtime import coverage

    calls: list[object] = []
    original = coverage.check_coverage
    monkeypatch.setattr(coverage, "check_coverage", lambda *a: calls.append(a) or original(*a))
    seeded.cache.clear()
    for seed in (5, 7, 9, 11):  # one variant (1 and multiples of 16 specialize)
        out = mx.zeros((100,), mx.float32)
        seeded[(2,)](out, 100, seed, 1.0 + seed, BLOCK=64)
        assert np.all(np.array(out) < 1.0 + seed)
    assert len(calls) == 1 and len(fake.fast.launches) == 4 and not fake.ops


@triton.jit
def rows_of_dot(a_ptr, b_ptr, c_ptr, rows, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b), mask=rm[:, None] < rows)


def test_written_mask_twin_of_a_direct_fragment_variant(fake: CountingMx):
    # 128x128x64 fp32 tiles exceed threadgroup memory: the variant loads and stores fragments
    # directly, and its twin (generated from the same laid-out IR) keeps that mode
    rows_of_dot.cache.clear()
    rng = np.random.default_rng(3)
    a = rng.standard_normal((128, 64)).astype(np.float32)
    b = rng.standard_normal((64, 128)).astype(np.float32)
    old = np.full((128, 128), -3.0, np.float32)
    c = mx.array(old)
    rows_of_dot[(1,)](mx.array(a), mx.array(b), c, 50, M=128, N=128, K=64)
    want = old.copy()
    want[:50] = (a.astype(np.float64) @ b.astype(np.float64))[:50]
    np.testing.assert_allclose(np.array(c), want, rtol=1e-5, atol=1e-4)
    (launch,) = fake.fast.launches
    assert launch["output_dtypes"] == [mx.float32, mx.bool_] and fake.ops == Counter(where=1)
    (factory,) = fake.fast.factory_calls
    assert factory["output_names"] == ["c_ptr_out", "c_ptr_written"]
    compiled = rows_of_dot.warmup(a, b, np.float32, 50, M=128, N=128, K=64, grid=(1,))
    assert "direct_fragment_io" in compiled.asm["ir"] and "ttg.convert_layout" not in compiled.asm["ir"]


@triton.jit
def store_free(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    if tl.sum(x) > 0:
        return


def test_store_free_kernel_with_mlx_arrays_is_one_lazy_call_and_changes_nothing(fake: CountingMx):
    store_free.cache.clear()
    x = mx.arange(10, dtype=mx.float32)
    store_free[(2,)](x, 10, BLOCK=16)
    np.testing.assert_array_equal(np.array(x), np.arange(10, dtype=np.float32))
    (factory,) = fake.fast.factory_calls
    assert factory["output_names"] == ["unused_out"]
    (launch,) = fake.fast.launches
    assert launch["output_shapes"] == [(1,)] and launch["init_value"] is None
    assert fake.evals == 0 and not fake.ops


def test_written_mask_variant_of_a_store_free_kernel_compiles():
    from triton_metal.runtime.compiler import compile_twin

    compiled = store_free.warmup(np.float32, 10, BLOCK=16, grid=(1,))
    twin = compile_twin(compiled, ())
    assert list(twin.output_names) == ["unused_out"] and twin.source == compiled.msl.source
