"""`autotune` on the emulator: choice, pruning, skipped configs, hooks, the key, conflicts."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
from triton_metal.runtime.autotuner import AutotunerError

from autotune_kernels import (
    ScriptedBench, accumulate, fill_block, grid_of, histogram_tile, increment, needs_big_block,
)

N = 300


def configs(*blocks: int, num_warps: int = 1) -> list[triton.Config]:
    return [triton.Config({"BLOCK": b}, num_warps=num_warps) for b in blocks]


def launch(kernel, n: int = N, dtype=np.int32) -> np.ndarray:
    out = np.zeros(n, dtype=dtype)
    kernel[grid_of(n)](out, n)
    return out


def test_best_is_least_p50_then_p20_then_p80_and_the_final_launch_uses_it():
    bench = ScriptedBench([[1.0, 0.5, 2.0], [1.0, 0.4, 3.0], [2.0, 0.1, 0.1]])
    tuned = triton.autotune(configs(32, 64, 128), key=["n"], do_bench=bench)(fill_block)
    out = launch(tuned)
    assert bench.calls == 3
    assert tuned.best_config == triton.Config({"BLOCK": 64}, num_warps=1)
    assert tuned.last_origin == "benchmark"
    np.testing.assert_array_equal(out, np.full(N, 64))
    assert tuned.configs_timings[triton.Config({"BLOCK": 128}, num_warps=1)] == [2.0, 0.1, 0.1]


def test_p80_breaks_a_tie_of_p50_and_p20():
    bench = ScriptedBench([[1.0, 0.5, 2.0], [1.0, 0.5, 1.5]])
    tuned = triton.autotune(configs(32, 64), key=["n"], do_bench=bench)(fill_block)
    np.testing.assert_array_equal(launch(tuned), np.full(N, 64))


def test_real_benchmark_picks_one_config_and_runs_it():
    tuned = triton.autotune(configs(64, 128), key=["n"], warmup=1, rep=3)(fill_block)
    out = launch(tuned)
    assert tuned.last_origin == "benchmark"
    assert set(tuned.configs_timings) == set(configs(64, 128))
    for timing in tuned.configs_timings.values():
        p50, p20, p80 = timing
        assert 0 < p20 <= p50 <= p80
    np.testing.assert_array_equal(out, np.full(N, tuned.best_config.kwargs["BLOCK"]))


def test_key_values_and_dtypes_select_the_tuning():
    bench = ScriptedBench()
    tuned = triton.autotune(configs(32, 64), key=["n"], do_bench=bench)(fill_block)
    launch(tuned)
    assert bench.calls == 2
    launch(tuned)  # same n, same dtype: remembered
    assert bench.calls == 2 and tuned.last_origin == "memory"
    launch(tuned, n=N + 1)  # another n
    assert bench.calls == 4
    launch(tuned, dtype=np.float32)  # another dtype, same n: dtypes are always in the key
    assert bench.calls == 6
    assert set(tuned.cache) == {(N, "int32"), (N + 1, "int32"), (N, "float32")}


def test_mlx_and_numpy_dtypes_are_named_alike():
    import mlx.core as mx

    from triton_metal.runtime.autotuner import dtype_name

    assert dtype_name(mx.float16) == dtype_name(np.dtype(np.float16)) == "float16"


def test_single_config_after_pruning_is_chosen_without_benchmarking():
    bench = ScriptedBench()
    seen = {}

    def early(cfgs, named, **kwargs):
        seen["named"] = dict(named)
        return [c for c in cfgs if c.kwargs["BLOCK"] == 128]

    tuned = triton.autotune(configs(32, 64, 128), key=["n"], do_bench=bench,
                            prune_configs_by={"early_config_prune": early})(fill_block)
    np.testing.assert_array_equal(launch(tuned), np.full(N, 128))
    assert bench.calls == 0 and tuned.last_origin == "single"
    assert seen["named"]["n"] == N


def test_perf_model_keeps_top_k_best_estimates():
    bench = ScriptedBench()
    estimates = {32: 3.0, 64: 1.0, 128: 2.0, 256: 4.0}

    def model(**meta):
        assert meta["n"] == N and meta["num_warps"] == 1
        return estimates[meta["BLOCK"]]

    tuned = triton.autotune(configs(32, 64, 128, 256), key=["n"], do_bench=bench,
                            prune_configs_by={"perf_model": model, "top_k": 2})(fill_block)
    launch(tuned)
    assert set(tuned.configs_timings) == set(configs(64, 128))
    # a float top_k is a fraction of the list, and at least one config stays
    tuned = triton.autotune(configs(32, 64, 128, 256), key=["n"], do_bench=bench,
                            prune_configs_by={"perf_model": model, "top_k": 0.1})(fill_block)
    np.testing.assert_array_equal(launch(tuned), np.full(N, 64))
    assert tuned.last_origin == "single"


def test_pruning_to_nothing_is_an_error():
    tuned = triton.autotune(configs(32, 64), key=["n"], do_bench=ScriptedBench(),
                            prune_configs_by={"early_config_prune": lambda c, a, **k: []})(fill_block)
    with pytest.raises(AutotunerError, match="at least one config"):
        launch(tuned)


def test_configs_that_cannot_compile_are_skipped_with_the_reason(capsys):
    cfgs = [triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64}, num_warps=64),
            triton.Config({"BLOCK": 128})]
    bench = ScriptedBench()
    tuned = triton.autotune(cfgs, key=["n"], do_bench=bench)(needs_big_block)
    np.testing.assert_array_equal(launch(tuned), np.full(N, 128))
    assert bench.calls == 1
    assert "BLOCK must be at least 64" in tuned.skipped[cfgs[0]]
    assert "num_warps=64" in tuned.skipped[cfgs[1]]
    err = capsys.readouterr().err
    assert "skipped config {BLOCK: 32" in err and "skipped config {BLOCK: 64" in err


def test_a_config_over_the_threadgroup_memory_limit_is_skipped():
    cfgs = [triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 32})]
    bench = ScriptedBench()
    tuned = triton.autotune(cfgs, key=[], do_bench=bench)(histogram_tile)
    x = (np.arange(128, dtype=np.int32) * 7) % 1024
    y = np.zeros(128 * 128, np.int32)
    tuned[(1,)](x, y)
    assert tuned.best_config == cfgs[1] and bench.calls == 1
    reason = tuned.skipped[cfgs[0]]
    assert reason.startswith("OutOfResources") and "threadgroup memory" in reason and "32768" in reason
    np.testing.assert_array_equal(y[:1024], np.bincount(x[:32], minlength=1024))
    assert not y[1024:].any()


def test_when_every_config_fails_the_error_lists_each_reason():
    cfgs = [triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64}, num_warps=64)]
    tuned = triton.autotune(cfgs, key=["n"], do_bench=ScriptedBench())(needs_big_block)
    with pytest.raises(AutotunerError) as info:
        launch(tuned)
    text = str(info.value)
    assert "every config failed" in text
    assert "{BLOCK: 32" in text and "BLOCK must be at least 64" in text
    assert "{BLOCK: 64" in text and "num_warps=64" in text


def test_reset_to_zero_lets_the_real_launch_start_from_zero():
    x = np.arange(N, dtype=np.float32)
    total = np.zeros(1, dtype=np.float32)
    bench = ScriptedBench()
    tuned = triton.autotune(configs(64, 128), key=["n"], do_bench=bench,
                            reset_to_zero=["total_ptr"])(accumulate)
    tuned[grid_of(N)](x, total, N)
    assert bench.calls == 2  # each benchmark ran the kernel once, adding to `total`
    assert total[0] == pytest.approx(x.sum())
    # without the reset, the two benchmark runs and the real launch pile up
    total[...] = 0
    plain = triton.autotune(configs(64, 128), key=["n"], do_bench=ScriptedBench(),
                            cache_results=False)(accumulate)
    plain[grid_of(N)](x, total, N)
    assert total[0] == pytest.approx(3 * x.sum())


def test_reset_to_zero_on_mlx_arrays():
    import mlx.core as mx

    x = mx.arange(N).astype(mx.float32)
    total = mx.zeros((1,), mx.float32)
    tuned = triton.autotune(configs(64, 128), key=["n"], do_bench=ScriptedBench(),
                            reset_to_zero=["total_ptr"])(accumulate)
    tuned[grid_of(N)](x, total, N)
    assert float(np.array(total)[0]) == pytest.approx(float(np.arange(N).sum()))


def test_restore_value_undoes_the_benchmark_runs():
    x0 = np.linspace(-1, 1, N).astype(np.float32)
    x = x0.copy()
    tuned = triton.autotune(configs(64, 128), key=["n"], do_bench=ScriptedBench(),
                            restore_value=["x_ptr"])(increment)
    tuned[grid_of(N)](x, N)
    np.testing.assert_array_equal(x, x0 + 1)


def test_restore_value_on_mlx_arrays():
    import mlx.core as mx

    x0 = np.linspace(-1, 1, N).astype(np.float32)
    x = mx.array(x0)
    tuned = triton.autotune(configs(64, 128), key=["n"], do_bench=ScriptedBench(),
                            restore_value=["x_ptr"])(increment)
    tuned[grid_of(N)](x, N)
    np.testing.assert_array_equal(np.array(x), x0 + 1)


def test_hooks_are_called_around_every_benchmark_run():
    events = []

    def config_hook(args):
        events.append(("config", args["BLOCK"]))

    def pre(args, reset_only=False):
        events.append(("pre", reset_only))

    def post(args, exception):
        events.append(("post", exception))

    cfgs = [triton.Config({"BLOCK": 64}, pre_hook=config_hook), triton.Config({"BLOCK": 128})]
    tuned = triton.autotune(cfgs, key=["n"], do_bench=ScriptedBench(), pre_hook=pre,
                            post_hook=post)(fill_block)
    launch(tuned)
    assert events[:3] == [("config", 64), ("pre", False), ("post", None)]
    assert events[3:5] == [("pre", False), ("post", None)]
    assert events[5] == ("pre", True)  # the reset before the real launch
    assert len(events) == 6 + (tuned.best_config.pre_hook is not None)


def test_conflicting_meta_parameters():
    tuned = triton.autotune(configs(32, 64), key=["n"], do_bench=ScriptedBench())(fill_block)
    out = np.zeros(N, np.int32)
    with pytest.raises(ValueError, match="Conflicting meta-parameters: BLOCK"):
        tuned[grid_of(N)](out, N, BLOCK=32)
    with pytest.raises(ValueError, match="Conflicting meta-parameters: num_warps"):
        tuned[grid_of(N)](out, N, num_warps=4)
    assert not out.any()


@pytest.mark.parametrize("option", ["key", "reset_to_zero", "restore_value"])
def test_names_that_are_not_parameters_are_refused(option):
    kwargs = {"key": ["n"], option: ["n", "nope"]}
    with pytest.raises(ValueError, match="'nope' is not a parameter of kernel 'fill_block'"):
        triton.autotune(configs(32), **kwargs)(fill_block)


def test_bad_decorator_arguments():
    with pytest.raises(TypeError, match="key is a list"):
        triton.autotune(configs(32), key="n")(fill_block)
    with pytest.raises(TypeError, match="Config"):
        triton.autotune([{"BLOCK": 32}], key=["n"])(fill_block)
    with pytest.raises(ValueError, match="unknown entries"):
        triton.autotune(configs(32), key=["n"], prune_configs_by={"topk": 2})(fill_block)
    with pytest.raises(TypeError, match="@jit kernel"):
        triton.autotune(configs(32), key=["n"])(lambda x: x)


def test_no_configs_means_the_default_config():
    tuned = triton.autotune([], key=[])(fill_block)
    assert tuned.configs == [triton.Config({}, num_warps=4, num_stages=3, num_ctas=1)]


def test_print_autotuning(monkeypatch, capsys):
    monkeypatch.setenv("TRITON_METAL_PRINT_AUTOTUNING", "1")
    tuned = triton.autotune(configs(32, 64), key=["n"], do_bench=ScriptedBench([[2, 2, 2], [1, 1, 1]]))(fill_block)
    launch(tuned)
    out = capsys.readouterr().out
    assert "autotuning of fill_block for key (300, 'int32') finished after" in out
    assert "best config selected: BLOCK: 64" in out


def test_warmup_compiles_every_config_and_runs_nothing():
    tuned = triton.autotune(configs(32, 64), key=["n"])(fill_block)
    out = np.zeros(N, np.int32)
    compiled = tuned.warmup(out, N, grid=grid_of(N))
    assert len(compiled) == 2 and all(c is not None for c in compiled)
    assert not out.any()


def test_interpret_mode_tunes_but_saves_nothing(monkeypatch, session_cache):
    monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    bench = ScriptedBench()
    tuned = triton.autotune(configs(32, 64), key=["n"], do_bench=bench)(fill_block)
    np.testing.assert_array_equal(launch(tuned), np.full(N, tuned.best_config.kwargs["BLOCK"]))
    assert bench.calls == 2
    assert not (session_cache / "autotune").exists()
