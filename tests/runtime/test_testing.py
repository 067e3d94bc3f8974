"""`triton_metal.testing`: do_bench and assert_close."""

from __future__ import annotations

import time

import mlx.core as mx
import numpy as np
import pytest

from triton_metal import testing


def test_do_bench_measures_in_milliseconds():
    calls = []

    def sleepy():
        calls.append(1)
        time.sleep(0.002)

    ms = testing.do_bench(sleepy, warmup=5, rep=20)
    assert 1.9 <= ms < 50  # sleep(0.002) is at least 2 ms
    assert len(calls) >= 1 + 1 + 1  # first call, estimate (the warm-up off a GPU), repetition
    low, high = testing.do_bench(sleepy, warmup=1, rep=10, quantiles=[0.0, 1.0])
    assert 1.9 <= low <= high
    times = testing.do_bench(sleepy, warmup=1, rep=10, return_mode="all")
    assert isinstance(times, list) and min(times) >= 1.9


def _fake_clock(monkeypatch, path: str, call_ms: float) -> tuple[list[int], object]:
    """A do_bench timing path whose calls each take `call_ms` on a fake clock."""
    clock = [0.0]
    calls: list[int] = []
    monkeypatch.setattr(testing, "_now", lambda: clock[0])
    monkeypatch.setattr(testing, "timing_path", lambda: path)

    def call():
        calls.append(1)
        clock[0] += call_ms / 1e3

    return calls, call


def test_do_bench_off_a_gpu_runs_a_slow_call_three_times(monkeypatch):
    calls, slow = _fake_clock(monkeypatch, "host", call_ms=200.0)
    assert testing.do_bench(slow, warmup=25, rep=100) == pytest.approx(200.0)
    assert len(calls) == 3  # the compiling call, one estimating call (the warm-up), one timed


def test_do_bench_off_a_gpu_spends_the_warmup_budget_left_by_the_estimate(monkeypatch):
    calls, fast = _fake_clock(monkeypatch, "host", call_ms=2.0)
    times = testing.do_bench(fast, warmup=25, rep=100, return_mode="all")
    assert len(times) == 50 and times[0] == pytest.approx(2.0)
    # 1 compiling call, 5 estimating (10 ms), (25 - 10) / 2 = 7 warm-up, 100 / 2 = 50 timed
    assert len(calls) == 1 + 5 + 7 + 50


def test_do_bench_on_a_gpu_keeps_tritons_counts(monkeypatch):
    calls, slow = _fake_clock(monkeypatch, "metal", call_ms=200.0)
    testing.do_bench(slow, warmup=25, rep=100)
    assert len(calls) == 1 + 5 + 1 + 1  # estimate from five calls, at least one warm-up call


def _counting_benchmark(seen: list[int]):
    bench = testing.Benchmark(x_names=["n"], x_vals=[1, 2, 3, 4], line_arg="p", line_vals=["a"],
                              line_names=["A"], plot_name="counting")
    return testing.perf_report(bench)(lambda n, p: seen.append(n) or 10.0 * n)


def test_bench_points_limits_every_table_and_says_so(monkeypatch, capsys):
    seen: list[int] = []
    mark = _counting_benchmark(seen)
    monkeypatch.setenv("TRITON_METAL_BENCH_POINTS", "2")
    header, rows = mark.run(return_df=True)
    assert seen == [1, 2] and header == ["n", "A"] and rows == [[1, 10.0], [2, 20.0]]
    err = capsys.readouterr().err
    assert "counting: measuring the first 2 of 4 x values" in err and "left out: 3, 4" in err
    long = testing.Benchmark(x_names=["n"], x_vals=list(range(1, 11)), line_arg="p", line_vals=["a"],
                             line_names=["A"], plot_name="long")
    testing.perf_report(long)(lambda n, p: 1.0).run()
    assert "long: measuring the first 2 of 10 x values" in capsys.readouterr().err.replace("\n", " ")
    monkeypatch.setenv("TRITON_METAL_BENCH_POINTS", "9")
    seen.clear()
    mark.run()
    assert seen == [1, 2, 3, 4] and "measuring" not in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_bench_points_refuses_what_is_not_a_count(monkeypatch, value):
    monkeypatch.setenv("TRITON_METAL_BENCH_POINTS", value)
    with pytest.raises(ValueError, match="TRITON_METAL_BENCH_POINTS must be a whole number"):
        _counting_benchmark([]).run()


def test_perf_report_says_it_draws_no_plot(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("TRITON_METAL_BENCH_POINTS", raising=False)
    mark = _counting_benchmark([])
    mark.run(print_data=True)
    captured = capsys.readouterr()
    assert "counting:\nn,A\n1,10.0" in captured.out and "plot" not in captured.err
    mark.run(show_plots=True, save_path=str(tmp_path))
    assert "perf_report draws no plots" in capsys.readouterr().err
    assert (tmp_path / "counting.csv").read_text().splitlines()[:2] == ["n,A", "1,10.0"]


def test_do_bench_waits_for_lazy_mlx_work():
    a = mx.ones((64, 64))
    assert testing.do_bench(lambda: a @ a, warmup=1, rep=5, return_mode="median") > 0


def test_do_bench_rejects_bad_options():
    with pytest.raises(ValueError, match="return_mode"):
        testing.do_bench(lambda: None, return_mode="p99")
    with pytest.raises(ValueError, match="grad_to_none"):
        testing.do_bench(lambda: None, grad_to_none=[np.zeros(1)])


def test_assert_close():
    testing.assert_close(np.array([1.0, 2.0]), np.array([1.005, 2.0]))
    testing.assert_close(mx.array([1.0, 2.0]).astype(mx.bfloat16), np.array([1.0, 2.0]))
    with pytest.raises(AssertionError):
        testing.assert_close(np.array([1.0]), np.array([1.1]))
    testing.assert_close(np.array([100.0]), np.array([101.0]), atol=0, rtol=0.02)
    with pytest.raises(AssertionError):
        testing.assert_close(np.array([True]), np.array([False]))
