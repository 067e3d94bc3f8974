"""What a cached launch reuses, and that changing anything it depends on gives a fresh, correct
launch: the Metal driver's launch recipe (grid, output arguments' types and shapes, the scalars
the coverage proof reads, atomic starting values), its scalar input arrays, the variant lookup
and the environment read on every launch. The recording stand-in (fake_mlx.py) runs each
`metal_kernel` call on the emulator, so every result is checked against NumPy."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import mlx.core as mx
import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.backends.metal import driver, recipe
from triton_metal.runtime import backend
from triton_metal.runtime.specialization import specialize_arg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_mlx import FakeMx, LazyMx  # noqa: E402


def _use(monkeypatch: pytest.MonkeyPatch, stand_in: Any) -> Any:
    """Launch on the Metal path through `stand_in`, with fresh launchers (a launcher keeps the
    `mx` it was built with, and its memos)."""
    monkeypatch.setattr(backend, "_metal", True)
    monkeypatch.setattr(driver, "_mlx", lambda: stand_in)
    for value in list(globals().values()):
        if isinstance(value, triton.JITFunction):
            value.cache.clear()
    return stand_in


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeMx:
    return _use(monkeypatch, FakeMx())


@pytest.fixture
def recipes_made(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every recipe the driver makes (a memo hit makes none)."""
    made: list[Any] = []
    original = driver.MetalLauncher._make_recipe

    def spy(self: Any, *args: Any) -> Any:
        made.append(original(self, *args))
        return made[-1]

    monkeypatch.setattr(driver.MetalLauncher, "_make_recipe", spy)
    return made


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def fill_kernel(out_ptr, n, value, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, value * tl.full((BLOCK,), 1.0, tl.float32), mask=offs < n)  # keeps -0.0


@triton.jit
def max_and_read(x_ptr, seen_ptr, out_ptr, BLOCK: tl.constexpr):
    # the values atomic_max returns are used: the output stands for the array (kept relative)
    offs = tl.arange(0, BLOCK)
    old = tl.atomic_max(x_ptr + offs, tl.full((BLOCK,), -1.0, tl.float32))
    tl.store(seen_ptr + offs, old)
    tl.store(out_ptr + offs, old * 2.0)


@triton.jit
def count_programs(count_ptr):
    tl.atomic_add(count_ptr, 1)


def _launch_add(x: Any, y: Any, out: Any, n: int, grid: int, block: int = 64) -> None:
    add_kernel[(grid,)](x, y, out, n, BLOCK=block)


def _arange(n: int) -> Any:
    return mx.array(np.arange(n, dtype=np.float32))


def test_a_repeated_launch_reuses_its_recipe(fake: FakeMx, recipes_made: list[Any]):
    x, y = _arange(256), _arange(256)  # two objects: one passed twice would be one parameter
    for _ in range(3):
        out = mx.zeros((256,))
        _launch_add(x, y, out, 256, 4)
        np.testing.assert_array_equal(np.array(out), 2 * np.arange(256, dtype=np.float32))
    assert len(recipes_made) == 1 and len(fake.fast.launches) == 3
    (scalar,) = {id(call["inputs"][2]) for call in fake.fast.launches}  # one array for n
    assert fake.evals == 0


def test_a_new_grid_gets_a_new_recipe_and_its_own_coverage(fake: FakeMx, recipes_made: list[Any]):
    x = _arange(256)
    out = mx.zeros((256,))
    _launch_add(x, x, out, 256, 4)  # covers all 256: no merge
    old = np.full(256, 5.0, np.float32)
    out = mx.array(old)
    _launch_add(x, x, out, 256, 2)  # the same arrays and n, half the programs: not covered
    want = old.copy()
    want[:128] = 2 * np.arange(128, dtype=np.float32)
    np.testing.assert_array_equal(np.array(out), want)
    first, second = fake.fast.launches
    assert first["grid"] == (4 * 128, 1, 1) and second["grid"] == (2 * 128, 1, 1)
    assert first["init_value"] is None and second["init_value"] == 0.0  # the written-mask twin
    assert [r.grid for r in recipes_made] == [(512, 1, 1), (256, 1, 1)]


def test_a_scalar_the_coverage_proof_reads_is_part_of_the_key(fake: FakeMx, recipes_made: list[Any]):
    x = _arange(256)
    out = mx.zeros((256,))
    _launch_add(x, x, out, 256, 4)
    old = np.full(256, -3.0, np.float32)
    out = mx.array(old)
    _launch_add(x, x, out, 100, 4)  # same grid and shapes; n=100 leaves the rest unwritten
    want = old.copy()
    want[:100] = 2 * np.arange(100, dtype=np.float32)
    np.testing.assert_array_equal(np.array(out), want)
    assert [r.masked for r in recipes_made] == [(), ("out_ptr_out",)]


def test_a_scalar_the_coverage_proof_does_not_read_keeps_the_recipe(fake: FakeMx, recipes_made: list[Any]):
    for value in (1.5, 2.5, -7.0):
        out = mx.zeros((64,))
        fill_kernel[(1,)](out, 64, value, BLOCK=64)
        np.testing.assert_array_equal(np.array(out), np.full(64, value, np.float32))
    assert len(recipes_made) == 1  # `value` changes the inputs, not the recipe


@pytest.mark.parametrize("second", [(2, 128), (512,), (16, 16)])
def test_an_output_of_another_shape_or_size_gets_its_own_recipe(fake: FakeMx, recipes_made: list[Any], second):
    n = 256
    _launch_add(_arange(n), _arange(n), mx.zeros((n,)), n, 4)
    size = int(np.prod(second))
    x = _arange(size).reshape(second)
    out = mx.full(second, 9.0)
    _launch_add(x, x, out, size, -(-size // 64))
    assert out.shape == second
    np.testing.assert_array_equal(np.array(out), 2 * np.arange(size, dtype=np.float32).reshape(second))
    assert len(recipes_made) == 2 and fake.fast.launches[-1]["output_shapes"][0] == second


def test_a_numpy_output_after_an_mlx_one_of_the_same_shape_is_copied_back(fake: FakeMx, recipes_made: list[Any]):
    x = np.arange(128, dtype=np.float32)
    mlx_out = mx.zeros((128,))
    _launch_add(mx.array(x), mx.array(x), mlx_out, 128, 2)
    np_out = np.zeros(128, np.float32)
    _launch_add(x, x, np_out, 128, 2)  # the same facts, so the same variant and launcher
    np.testing.assert_array_equal(np_out, 2 * x)
    np.testing.assert_array_equal(np.array(mlx_out), 2 * x)
    assert len(recipes_made) == 2 and recipes_made[0].rebound == ((0, None),) and recipes_made[1].copied == (0,)


@pytest.mark.parametrize("first, second", [(0.0, -0.0), (-0.0, 0.0), (1.0, float("nan")), (float("nan"), 2.0)])
def test_scalar_arrays_tell_signed_zeros_and_nans_apart(fake: FakeMx, first: float, second: float):
    results = []
    for value in (first, second, first):
        out = mx.ones((64,))
        fill_kernel[(1,)](out, 64, value, BLOCK=64)
        results.append(np.array(out))
    for got, value in zip(results, (first, second, first)):
        want = np.full(64, value, np.float32)
        np.testing.assert_array_equal(got, want)  # NaNs compare equal here
        assert (np.signbit(got) == np.signbit(want)).all()


def test_scalar_arrays_follow_every_value(fake: FakeMx):
    x, y = _arange(200), _arange(200)  # two objects: one passed twice would be one parameter
    for n in (200, 130, 64, 200):
        out = mx.zeros((200,))
        _launch_add(x, y, out, n, 4)
        want = np.zeros(200, np.float32)
        want[:n] = 2 * np.arange(n, dtype=np.float32)
        np.testing.assert_array_equal(np.array(out), want)
    assert [call["inputs"][2].item() for call in fake.fast.launches] == [200, 130, 64, 200]


def test_scalar_memos_are_bounded():
    arrays = recipe.ScalarArrays(mx, limit=4)
    got = [arrays.get(v, mx.int32) for v in range(10)]
    assert [int(a.item()) for a in got] == list(range(10)) and len(arrays.arrays) <= 4
    assert arrays.get(3, mx.int32) is arrays.get(3, mx.int32)
    assert arrays.get(3, mx.int32) is not arrays.get(3, mx.int64)
    assert arrays.get(True, mx.int32) is not arrays.get(1, mx.int32)  # equal keys, other types


def test_recipes_are_bounded(fake: FakeMx, monkeypatch: pytest.MonkeyPatch, recipes_made: list[Any]):
    monkeypatch.setattr(driver, "RECIPE_LIMIT", 3)
    x = _arange(64)
    for n in range(50, 58):
        out = mx.zeros((64,))
        _launch_add(x, x, out, n, 1)
        want = np.zeros(64, np.float32)
        want[:n] = 2 * np.arange(n, dtype=np.float32)
        np.testing.assert_array_equal(np.array(out), want)
    (launcher,) = {c.launcher.launcher for c in add_kernel.cache.entries.values()
                   if c.key.backend == "metal"}
    assert len(recipes_made) == 8 and len(launcher._recipes) <= 3


def test_an_atomic_output_needs_no_key_for_the_array_contents(fake: FakeMx, recipes_made: list[Any]):
    # kept relative to the array, whatever it holds (uniform, signed zeros mixed, NaN payloads):
    # one recipe for every launch, nothing read, and every bit as in place
    nan = np.array([0x7FC01234], np.uint32).view(np.float32)[0]
    for start in ([3.0] * 8, [5.0] * 8, [0.0, -0.0] * 4, [-0.0] * 8, [nan, -2.0, 0.0, 7.0] * 2):
        old = np.array(start, np.float32)
        x = mx.array(old)
        seen, out = mx.zeros((8,)), mx.zeros((8,))
        max_and_read[(1,)](x, seen, out, BLOCK=8)
        np.testing.assert_array_equal(np.array(seen).view(np.uint32), old.view(np.uint32))
        # atomic_max keeps the old value where it is >= -1.0 or a positive NaN (its bits included)
        keep = (old >= -1.0) | (np.isnan(old) & ~np.signbit(old))
        want = np.where(keep, old, np.float32(-1.0))
        np.testing.assert_array_equal(np.array(x).view(np.uint32), want.view(np.uint32))
    assert {call["init_value"] for call in fake.fast.launches} == {0.0}
    assert len(recipes_made) == 1 and fake.evals == 0


def test_a_spread_grid_input_follows_the_grid(monkeypatch: pytest.MonkeyPatch):
    lazy = _use(monkeypatch, LazyMx())  # nothing runs: 2**24 programs are only numbered
    count = mx.zeros((1,), mx.int32)
    for programs in (2**24, 2**24 + 3, 2**24):
        count_programs[(programs,)](count, num_warps=4)
    grids = [tuple(np.array(call["inputs"][-1]).tolist()) for call in lazy.fast.launches]
    assert grids == [(2**24, 1, 1), (2**24 + 3, 1, 1), (2**24, 1, 1)]


def test_environment_changes_between_launches_are_seen(fake: FakeMx, monkeypatch: pytest.MonkeyPatch,
                                                       capfd: pytest.CaptureFixture[str]):
    x = _arange(128)
    out = mx.zeros((128,))
    _launch_add(x, x, out, 128, 2)
    monkeypatch.setenv("TRITON_METAL_DEBUG", "1")  # a debug variant, and the launch log
    out = mx.zeros((128,))
    _launch_add(x, x, out, 128, 2)
    np.testing.assert_array_equal(np.array(out), 2 * np.arange(128, dtype=np.float32))
    assert "launch add_kernel" in capfd.readouterr().err
    monkeypatch.setenv("TRITON_METAL_BACKEND", "emulator")  # no metal_kernel call at all
    out = mx.zeros((128,))
    _launch_add(x, x, out, 128, 2)
    np.testing.assert_array_equal(np.array(out), 2 * np.arange(128, dtype=np.float32))
    assert "backend=emulator" in capfd.readouterr().err
    monkeypatch.delenv("TRITON_METAL_BACKEND")
    monkeypatch.setenv("TRITON_METAL_DEBUG", "0")
    out = mx.zeros((128,))
    _launch_add(x, x, out, 128, 2)
    np.testing.assert_array_equal(np.array(out), 2 * np.arange(128, dtype=np.float32))
    assert len(fake.fast.launches) == 3  # plain, debug, plain again (the emulator's is not one)
    variants = {(c.key.backend, c.key.debug): c.launches for c in add_kernel.cache.entries.values()}
    assert variants == {("metal", False): 2, ("metal", True): 1, ("emulator", True): 1}
    assert "launch add_kernel" not in capfd.readouterr().err


def test_alternating_variants_each_find_their_own(fake: FakeMx):
    for dtype in (mx.float32, mx.float16, mx.float32, mx.float16):
        x = _arange(64).astype(dtype)
        out = mx.zeros((64,), dtype)
        _launch_add(x, x, out, 64, 1)
        assert out.dtype == dtype
        np.testing.assert_array_equal(np.array(out.astype(mx.float32)), 2 * np.arange(64, dtype=np.float32))
    assert add_kernel.cache.hits >= 2


_VALUES = [0, 1, -1, 2, 15, 16, 32, -16, 2**31 - 16, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**40,
           2**63, 2**64 - 16, True, False, np.int32(16), np.int64(1), 1.0, -0.0, float("nan"), None,
           np.float32(2.5),
           mx.zeros((3,)), mx.zeros((2, 2), mx.bfloat16), mx.zeros((4,), mx.bool_), mx.zeros((), mx.int8),
           np.zeros(3, np.float32)]


@pytest.mark.parametrize("options", [{}, {"do_not_specialize": ["a"]},
                                     {"do_not_specialize_on_alignment": ["a"]}])
def test_the_binders_inlined_facts_are_specialize_args(options: dict[str, Any]):
    @triton.jit(**options)
    def k(a, B: tl.constexpr):
        pass

    specialize = "do_not_specialize" not in options
    align = "do_not_specialize_on_alignment" not in options
    for value in _VALUES:
        got = k._binder(value, B=1)[1][0]
        want = specialize_arg(value, "a", specialize, align)
        assert got == want and type(got) is type(want), value
    for bad in (mx.zeros((2,), mx.complex64), 2**64, 1j):
        with pytest.raises(triton.LaunchError) as binder_error:
            k._binder(bad, B=1)
        with pytest.raises(triton.LaunchError) as direct_error:
            specialize_arg(bad, "a", specialize, align)
        assert str(binder_error.value) == str(direct_error.value)


def test_an_array_of_2_to_the_31_elements_after_small_ones_takes_64_bit_offsets(monkeypatch: pytest.MonkeyPatch):
    lazy = _use(monkeypatch, LazyMx())  # nothing runs: the huge arrays are never materialised
    small = mx.zeros((64,), mx.uint8)
    huge = mx.zeros((2**16, 2**15), mx.uint8)
    for x in (small, small, huge, small):
        add_kernel[(1,)](x, x, x, 64, BLOCK=64)
    bits = [c.key.index_bits for c in add_kernel.cache.entries.values()]
    assert sorted(bits) == [32, 64]
    names = [call["name"] for call in lazy.fast.launches]
    assert names[0] == names[1] == names[3] != names[2]


@triton.jit
def scaled_copy(n, scale, x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * scale, mask=offs < n)


def test_inputs_keep_the_kernels_order_when_scalars_come_first(fake: FakeMx):
    x = _arange(64)
    for scale in (2.0, 3.0):
        out = mx.zeros((64,))
        scaled_copy[(1,)](64, scale, x, out, BLOCK=64)
        np.testing.assert_array_equal(np.array(out), scale * np.arange(64, dtype=np.float32))
    inputs = fake.fast.launches[-1]["inputs"]
    assert [a.ndim for a in inputs] == [0, 0, 1] and inputs[1].item() == 3.0


def test_a_launcher_is_built_before_its_mx_is_used():
    # tools build launchers to study them (benchmarks/coverage.py) without any mx
    compiled = add_kernel.warmup(np.float32, np.float32, np.float32, 64, BLOCK=64, grid=(1,))
    assert compiled is not None
    launcher = driver.MetalLauncher(compiled.msl, driver.LaunchPlan.of(compiled.msl, add_kernel.arg_names),
                                    add_kernel.arg_names, mx=object())
    assert launcher.plan.inputs and not launcher._recipes
