"""Tuning results per chip on disk: written after benchmarking, reused without benchmarking,
the user's before the shipped defaults, and never mistaken for another kernel's, key's or list's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import triton_metal as triton
from triton_metal.runtime import autotune_cache

from autotune_kernels import ScriptedBench, fill_block, grid_of, increment

N = 300


def tuner(bench, blocks=(32, 64, 128), **options):
    cfgs = [triton.Config({"BLOCK": b}, num_warps=1) for b in blocks]
    return triton.autotune(cfgs, key=["n"], do_bench=bench, **options)(fill_block)


def launch(kernel, n: int = N) -> np.ndarray:
    out = np.zeros(n, dtype=np.int32)
    kernel[grid_of(n)](out, n)
    return out


def stored(session_cache: Path) -> list[Path]:
    return sorted((session_cache / "autotune").glob("*/*.json"))


def test_a_benchmarked_choice_is_saved_for_this_chip(session_cache):
    first = tuner(ScriptedBench([[3, 3, 3], [1, 1, 1], [2, 2, 2]]))
    launch(first)
    [path] = stored(session_cache)
    chip = autotune_cache.emulator_chip()
    assert path.parent.name == autotune_cache.chip_slug(chip)
    data = json.loads(path.read_text())
    assert data["chip"] == chip and data["kernel"] == "fill_block"
    assert data["kernel_cache_key"] == fill_block.cache_key
    assert data["key"] == repr((N, "int32"))
    assert data["best"] == triton.Config({"BLOCK": 64}, num_warps=1).to_dict()
    assert [t["p50_p20_p80"] for t in data["timings_ms"]] == [[3, 3, 3], [1, 1, 1], [2, 2, 2]]
    measured = data["measured"]
    assert measured["backend"] == "emulator" and "not on a GPU" in measured["note"]
    assert measured["date"].endswith("Z") and "custom do_bench" in measured["how"]


def test_a_later_autotuner_reuses_it_without_benchmarking():
    launch(tuner(ScriptedBench([[3, 3, 3], [1, 1, 1], [2, 2, 2]])))
    bench = ScriptedBench()
    again = tuner(bench)
    np.testing.assert_array_equal(launch(again), np.full(N, 64))
    assert bench.calls == 0 and again.last_origin == "user"


def test_another_key_or_config_list_is_tuned_afresh():
    launch(tuner(ScriptedBench()))
    bench = ScriptedBench()
    launch(tuner(bench), n=N + 5)
    assert bench.calls == 3
    bench = ScriptedBench()
    launch(tuner(bench, blocks=(32, 64)))
    assert bench.calls == 2


def test_another_kernel_with_the_same_configs_does_not_share_results(session_cache):
    launch(tuner(ScriptedBench()))
    bench = ScriptedBench()
    cfgs = [triton.Config({"BLOCK": b}, num_warps=1) for b in (32, 64, 128)]
    other = triton.autotune(cfgs, key=["n"], do_bench=bench, cache_results=True)(increment)
    x = np.zeros(N, np.float32)
    other[grid_of(N)](x, N)
    assert bench.calls == 3
    assert len(stored(session_cache)) == 2


def test_cache_results_false_and_pre_hooks_save_nothing(session_cache):
    launch(tuner(ScriptedBench(), cache_results=False))
    cfgs = [triton.Config({"BLOCK": 32}, pre_hook=lambda args: None), triton.Config({"BLOCK": 64})]
    launch(triton.autotune(cfgs, key=["n"], do_bench=ScriptedBench())(fill_block))
    assert stored(session_cache) == []


def test_shipped_results_are_defaults_and_the_users_win(session_cache, shipped_dir):
    launch(tuner(ScriptedBench([[3, 3, 3], [1, 1, 1], [2, 2, 2]])))
    [path] = stored(session_cache)
    # ship the result, with BLOCK=128 as the winner, and remove the user's
    data = json.loads(path.read_text())
    data["best"] = triton.Config({"BLOCK": 128}, num_warps=1).to_dict()
    target = shipped_dir / path.parent.name / path.name
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(data))
    shutil.rmtree(session_cache / "autotune")
    bench = ScriptedBench()
    shipped = tuner(bench)
    np.testing.assert_array_equal(launch(shipped), np.full(N, 128))
    assert bench.calls == 0 and shipped.last_origin == "shipped"
    # a user result for the same kernel, key and configs takes precedence
    user_path = session_cache / "autotune" / path.parent.name / path.name
    user_path.parent.mkdir(parents=True)
    user_path.write_text(json.dumps({**data, "best": triton.Config({"BLOCK": 32}, num_warps=1).to_dict()}))
    bench = ScriptedBench()
    user = tuner(bench)
    np.testing.assert_array_equal(launch(user), np.full(N, 32))
    assert bench.calls == 0 and user.last_origin == "user"


def test_unreadable_or_mismatching_entries_are_misses(session_cache):
    launch(tuner(ScriptedBench()))
    [path] = stored(session_cache)
    data = json.loads(path.read_text())
    for broken in ("{not json", json.dumps({**data, "key": "(1, 'int32')"}),
                   json.dumps({**data, "best": {"kwargs": {"BLOCK": 7}}}),
                   json.dumps({**data, "format": 99})):
        path.write_text(broken)
        bench = ScriptedBench()
        launch(tuner(bench))
        assert bench.calls == 3, broken[:40]


def test_print_autotuning_says_where_a_reused_choice_came_from(monkeypatch, capsys):
    launch(tuner(ScriptedBench()))
    monkeypatch.setenv("TRITON_METAL_PRINT_AUTOTUNING", "1")
    launch(tuner(ScriptedBench()))
    out = capsys.readouterr().out
    assert "reused the user result" in out and f"chip {autotune_cache.emulator_chip()}" in out


class FakeMX:
    """The MLX calls chip identification makes: `mx.device_info(mx.gpu)` and `mx.gpu`."""

    gpu = "gpu"

    def __init__(self, info):
        self.info = info
        self.calls = []

    def device_info(self, device=None):
        self.calls.append(device)
        return dict(self.info)


def test_metal_chip_is_architecture_and_device_name():
    mx = FakeMX({"architecture": "applegpu_g15s", "device_name": "Apple M3 Max",
                 "memory_size": 1 << 36})
    chip = autotune_cache.current_chip("metal", mx)
    assert chip == "applegpu_g15s-Apple M3 Max"
    assert mx.calls == ["gpu"]
    assert autotune_cache.chip_slug(chip) == "applegpu_g15s-Apple_M3_Max"


def test_emulator_is_its_own_chip_and_the_interpreter_none():
    assert autotune_cache.current_chip("emulator").startswith("emulator-")
    assert autotune_cache.current_chip("interpreter") is None


def test_a_tuning_result_on_metal_is_filed_under_the_gpu(monkeypatch, session_cache):
    """The Metal path of persistence, with the chip from a fake of MLX's device information
    (the launch itself runs on the emulator)."""
    mx = FakeMX({"architecture": "applegpu_g16s", "device_name": "Apple M4 Pro"})
    real = autotune_cache.current_chip
    monkeypatch.setattr(autotune_cache, "current_chip",
                        lambda backend, _mx=None: real("metal", mx))
    launch(tuner(ScriptedBench()))
    [path] = stored(session_cache)
    assert path.parent.name == "applegpu_g16s-Apple_M4_Pro"
    assert json.loads(path.read_text())["chip"] == "applegpu_g16s-Apple M4 Pro"


@pytest.mark.parametrize("chip,slug", [("a/b c", "a_b_c"), ("..", "unknown"), ("../x", "_x"), ("", "unknown")])
def test_chip_slug(chip, slug):
    assert autotune_cache.chip_slug(chip) == slug
