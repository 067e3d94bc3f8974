"""Bandwidth and FMA throughput kernels on the emulator, and the timing helper against a fake of
the MLX calls it makes."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
from triton_metal.tools import throughput
from triton_metal.tools.timing import time_ms

from diag_fake_mlx import FakeArray, FakeMX


def test_memory_bandwidth_on_the_emulator():
    result = triton.test_memory_bandwidth(1, iters=3, warmup=1)
    assert result.backend == "emulator"
    n = 1_000_000 // 4
    assert result.bytes_moved == 2 * n * 4
    assert result.ms > 0 and result.iters == 3
    assert result.gb_per_s == pytest.approx(result.bytes_moved / (result.ms * 1e-3) / 1e9)
    assert "GB/s" in str(result) and "emulator" in str(result)


def test_copy_kernel_copies_an_uneven_tail():
    n = 4096 + 37
    src = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    dst = np.zeros_like(src)
    throughput._copy_kernel[(triton.cdiv(n, 1024),)](src, dst, n, BLOCK=1024)
    np.testing.assert_array_equal(dst, src)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_compute_throughput_on_the_emulator(dtype):
    result = triton.test_compute_throughput(dtype, n_elements=2048, n_iter=16, iters=2, warmup=0)
    assert result.backend == "emulator" and result.dtype == dtype
    assert result.flops == 2 * 8 * 16 * 2048
    assert result.tflops == pytest.approx(result.flops / (result.ms * 1e-3) / 1e12)


def test_fma_kernel_matches_numpy():
    x = (np.arange(2048) % 7).astype(np.float32) * np.float32(0.125)
    out = np.zeros_like(x)
    throughput._fma_kernel[(2,)](x, out, 40, BLOCK=1024)
    np.testing.assert_allclose(out, throughput._fma_reference(x, 40), rtol=1e-5)


@pytest.mark.parametrize("call,match", [
    (lambda: triton.test_memory_bandwidth(0), "size_mb"),
    (lambda: triton.test_compute_throughput("int8"), "not supported"),
    (lambda: triton.test_compute_throughput("float32", n_elements=1000), "multiple of"),
])
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_time_ms_waits_for_each_call():
    mx = FakeMX()
    out = FakeArray("out")
    count = []

    def fn():
        count.append(1)
        mx.calls.append(("call",))
        return out

    times = time_ms(fn, warmup=1, iters=2, mx=mx)
    assert len(times) == 2 and all(t >= 0 for t in times)
    assert len(count) == 3
    # every call is followed by an evaluation of its result and a stream synchronisation
    assert mx.calls == [("call",), ("eval", out), ("synchronize",)] * 3


def test_time_ms_refuses_zero_iterations():
    with pytest.raises(ValueError, match="iters"):
        time_ms(lambda: None, iters=0, mx=None)
