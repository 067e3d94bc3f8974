"""Off a GPU, `@autotune` does not time configs by default (`runtime/autotuner.py`): it takes the
stored choice for the chip (the user's, else the shipped one), else the first config that
compiles, and says so once; `TRITON_METAL_AUTOTUNE=measure` times them.

`fill_block` writes its BLOCK into every element, so the output names the config that ran."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from autotune_kernels import ScriptedBench, fill_block, grid_of, needs_big_block

import triton_metal as triton
from triton_metal import testing
from triton_metal.runtime import autotune_cache
from triton_metal.runtime.autotuner import AutotunerError

CONFIGS = [triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})]


@pytest.fixture(autouse=True)
def _default_mode(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The default (conftest.py sets measure); any call of the library's benchmark fails."""
    monkeypatch.delenv("TRITON_METAL_AUTOTUNE", raising=False)
    timed: list[int] = []

    def no_bench(*args: object, **kwargs: object) -> list[float]:
        timed.append(1)
        raise AssertionError("a config was timed")

    monkeypatch.setattr(testing, "do_bench", no_bench)
    return timed


def _tuned(kernel=fill_block, configs=CONFIGS, **options):  # type: ignore[no-untyped-def]
    return triton.autotune(configs=configs, key=["n"], **options)(kernel)


def _launch(tuned, n: int = 200) -> np.ndarray:  # type: ignore[no-untyped-def]
    out = np.zeros(n, np.int32)
    tuned[grid_of(n)](out, n)
    return out


@pytest.mark.parametrize("backend", ["emulator", "interpreter"])
def test_the_first_config_runs_untimed_and_is_announced_once(backend, monkeypatch, capfd):
    if backend == "interpreter":
        monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    else:
        monkeypatch.setenv("TRITON_METAL_BACKEND", "emulator")
    tuned = _tuned()
    np.testing.assert_array_equal(_launch(tuned), np.full(200, 32))
    assert tuned.last_origin == "first" and tuned.best_config is CONFIGS[0]
    assert tuned.configs_timings == {} and tuned.bench_time == 0.0
    np.testing.assert_array_equal(_launch(tuned, 300), np.full(300, 32))  # a second key
    lines = [line for line in capfd.readouterr().err.splitlines() if "autotune of" in line]
    assert len(lines) == 1, lines
    assert "'fill_block'" in lines[0] and "not timed" in lines[0]
    assert "TRITON_METAL_AUTOTUNE=measure" in lines[0] and "BLOCK: 32" in lines[0]


def test_a_config_that_cannot_compile_is_passed_over(monkeypatch):
    monkeypatch.setenv("TRITON_METAL_BACKEND", "emulator")
    tuned = _tuned(needs_big_block)
    np.testing.assert_array_equal(_launch(tuned), np.full(200, 64))
    assert tuned.last_origin == "first" and tuned.best_config is CONFIGS[1]
    assert list(tuned.skipped) == [CONFIGS[0]] and "at least 64" in tuned.skipped[CONFIGS[0]]


def test_every_config_failing_is_one_error(monkeypatch):
    monkeypatch.setenv("TRITON_METAL_BACKEND", "emulator")
    tuned = _tuned(needs_big_block, configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})])
    with pytest.raises(AutotunerError, match="every config failed"):
        _launch(tuned)


def test_an_untimed_choice_is_not_saved(monkeypatch):
    monkeypatch.setenv("TRITON_METAL_BACKEND", "emulator")
    _launch(_tuned())
    assert autotune_cache.user_entries() == []


def test_the_stored_choice_for_the_chip_comes_first(monkeypatch, shipped_dir, capfd):
    """A choice measured once (here: scripted timings that make BLOCK=128 win) and shipped is
    what a later untimed process runs."""
    monkeypatch.setenv("TRITON_METAL_BACKEND", "emulator")
    monkeypatch.setenv("TRITON_METAL_AUTOTUNE", "measure")
    bench = ScriptedBench([[3.0, 3.0, 3.0], [2.0, 2.0, 2.0], [1.0, 1.0, 1.0]])
    _launch(_tuned(do_bench=bench))
    assert bench.calls == 3
    ((path, data),) = autotune_cache.user_entries()
    relative = path.relative_to(autotune_cache.user_root())
    (shipped_dir / relative).parent.mkdir(parents=True)
    shutil.move(str(path), shipped_dir / relative)
    monkeypatch.delenv("TRITON_METAL_AUTOTUNE")
    capfd.readouterr()
    tuned = _tuned()
    np.testing.assert_array_equal(_launch(tuned), np.full(200, 128))
    assert tuned.last_origin == "shipped" and tuned.best_config is CONFIGS[2]
    err = capfd.readouterr().err
    assert "using the shipped choice for chip" in err and data["chip"] in err


def test_measure_times_every_config(monkeypatch, _default_mode):
    monkeypatch.setenv("TRITON_METAL_BACKEND", "emulator")
    monkeypatch.setenv("TRITON_METAL_AUTOTUNE", "measure")
    bench = ScriptedBench([[3.0, 3.0, 3.0], [1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    tuned = _tuned(do_bench=bench)
    np.testing.assert_array_equal(_launch(tuned), np.full(200, 64))
    assert tuned.last_origin == "benchmark" and bench.calls == 3 and len(tuned.configs_timings) == 3
    timed = triton.autotune(configs=CONFIGS, key=["n"], warmup=1, rep=1)(fill_block)
    with pytest.raises(AssertionError, match="a config was timed"):  # the library's benchmark runs
        _launch(timed, 300)  # a key with no stored choice
    assert _default_mode


def test_a_custom_benchmark_is_always_used(monkeypatch):
    monkeypatch.setenv("TRITON_METAL_BACKEND", "emulator")
    bench = ScriptedBench([[2.0, 2.0, 2.0], [1.0, 1.0, 1.0], [3.0, 3.0, 3.0]])
    tuned = _tuned(do_bench=bench)
    np.testing.assert_array_equal(_launch(tuned), np.full(200, 64))
    assert tuned.last_origin == "benchmark" and bench.calls == 3


def test_an_unknown_mode_is_refused(monkeypatch):
    monkeypatch.setenv("TRITON_METAL_BACKEND", "emulator")
    monkeypatch.setenv("TRITON_METAL_AUTOTUNE", "fastest")
    with pytest.raises(AutotunerError, match="TRITON_METAL_AUTOTUNE='fastest' is not a mode"):
        _launch(_tuned())
