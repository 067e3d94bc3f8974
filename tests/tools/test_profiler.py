"""The profiler on the emulator (real launches), and its Metal timing path against a fake of the
MLX calls it makes (`mx.eval`, `mx.synchronize`)."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.runtime.observer import OBSERVER
from triton_metal.tools.profiler import Profiler

from diag_fake_mlx import FakeArray, FakeMX
from diag_kernels import copy_rows, k_loop


def test_profile_counts_launches_compiles_and_bytes():
    @triton.jit
    def scale(src, dst, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(dst + offs, tl.load(src + offs, mask=m) * 2.0, mask=m)

    x = np.arange(3000, dtype=np.float32)
    y = np.zeros_like(x)
    triton.start_profiling()
    for _ in range(3):
        scale[(triton.cdiv(3000, 512),)](x, y, 3000, BLOCK=512)
    copy_rows[(2,)](x, y, 2048, BLOCK=1024)
    report = triton.stop_profiling()
    np.testing.assert_array_equal(y[:2048], x[:2048])  # the profiled launches really ran
    s = report["scale"]
    assert s.launches == 3 and s.compiles == 1 and s.backend == "emulator"
    assert s.compile_ms > 0 and s.run_ms > 0
    assert s.bytes_moved == 3 * 6 * 2 * 512 * 4 and s.bytes_exact
    assert s.gb_per_s == pytest.approx(s.bytes_moved / (s.run_ms * 1e-3) / 1e9)
    assert s.mean_ms == pytest.approx(s.run_ms / 3)
    # the first launch of the variant is reported apart from the steady ones
    assert s.first_launches == 1 and 0 < s.first_run_ms < s.run_ms
    assert s.steady_mean_ms == pytest.approx((s.run_ms - s.first_run_ms) / 2)
    c = report["copy_rows"]
    assert c.launches == 1 and c.bytes_moved == 2 * 2 * 1024 * 4
    text = str(report)
    assert "scale" in text and "copy_rows" in text and "GB/s" in text
    d = report.to_dict()
    assert {k["name"] for k in d["kernels"]} == {"scale", "copy_rows"}
    assert d["kernels"][0]["launches"] == 3


def test_cached_kernel_counts_no_compile():
    x = np.ones(1024, np.float32)
    y = np.zeros_like(x)
    copy_rows[(1,)](x, y, 1024, BLOCK=1024)  # compiled before profiling
    triton.start_profiling()
    copy_rows[(1,)](x, y, 1024, BLOCK=1024)
    report = triton.stop_profiling()
    assert report["copy_rows"].compiles == 0 and report["copy_rows"].launches == 1


def test_loop_bytes_use_the_launch_scalars():
    x = np.ones(4096, np.float32)
    y = np.zeros(128, np.float32)
    triton.start_profiling()
    k_loop[(1,)](x, y, 1024, BLOCK=128)
    report = triton.stop_profiling()
    # K = 1024 is a launch scalar: 8 trips of a 512-byte load, one 512-byte store
    assert report["k_loop"].bytes_moved == 9 * 128 * 4 and report["k_loop"].bytes_exact
    np.testing.assert_allclose(y, 8.0)


def test_start_and_stop_are_paired():
    assert OBSERVER.current is None
    with pytest.raises(RuntimeError, match="no profiler"):
        triton.stop_profiling()
    triton.start_profiling()
    with pytest.raises(RuntimeError, match="already running"):
        triton.start_profiling()
    triton.stop_profiling()
    assert OBSERVER.current is None


class _Compiled:
    """A compiled variant whose launcher records when it runs."""

    def __init__(self, log: list) -> None:
        self.log = log
        self.module = None
        self.ir_text = ""
        self.compile_seconds = 0.001
        self.launches = 0

        class Key:
            backend = "metal"

        self.key = Key()

    def launcher(self, values, grid) -> None:
        self.log.append(("launch", grid))


def test_metal_launch_is_waited_for_before_and_after():
    mx = FakeMX()
    profiler = Profiler(mx)
    a, b = FakeArray("a"), FakeArray("b")
    compiled = _Compiled(mx.calls)
    profiler.launch(copy_rows, compiled, (a, b, 7), (3, 1, 1))
    # earlier queued work finishes before the clock starts; the kernel's work before it stops
    assert mx.calls == [
        ("eval", a, b), ("synchronize",), ("launch", (3, 1, 1)), ("eval", a, b), ("synchronize",),
    ]
    entry = profiler.finish()["copy_rows"]
    assert entry.launches == 1 and entry.backend == "metal"
    assert not entry.bytes_exact  # no IR to analyse: bytes unknown, said so


def test_no_mlx_arrays_means_only_a_stream_sync():
    mx = FakeMX()
    profiler = Profiler(mx)
    compiled = _Compiled(mx.calls)
    profiler.launch(copy_rows, compiled, (np.zeros(4), 1), (1, 1, 1))
    assert mx.calls == [("synchronize",), ("launch", (1, 1, 1)), ("synchronize",)]
