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
    assert len(calls) >= 1 + 5 + 1 + 1  # first call, estimate, warm-up, repetition
    low, high = testing.do_bench(sleepy, warmup=1, rep=10, quantiles=[0.0, 1.0])
    assert 1.9 <= low <= high
    times = testing.do_bench(sleepy, warmup=1, rep=10, return_mode="all")
    assert isinstance(times, list) and min(times) >= 1.9


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
