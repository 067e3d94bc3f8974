"""`testing.do_bench`: Triton's budgets and statistics, and the Metal timing path checked against a
fake of exactly the MLX calls it makes (`mx.metal.is_available`, `mx.eval`, `mx.synchronize`,
`isinstance(x, mx.array)`), with a fake clock, since no Metal device is available here."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from triton_metal import testing


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class FakeArray:
    """A lazy result: its GPU work runs when MLX evaluates it or synchronizes."""


class FakeMLX:
    """GPU work is queued by the kernel call and takes simulated time only when MLX waits for it."""

    array = FakeArray

    def __init__(self, clock: Clock, metal: bool) -> None:
        self.clock = clock
        self.metal = SimpleNamespace(is_available=lambda: metal)
        self.queued = 0.0
        self.log: list[str] = []

    def _drain(self) -> None:
        self.clock.t += self.queued
        self.queued = 0.0

    def eval(self, *arrays: object) -> None:
        assert arrays and all(isinstance(a, FakeArray) for a in arrays)
        self.log.append("eval")
        self._drain()

    def synchronize(self, stream: object = None) -> None:
        self.log.append("synchronize")
        self._drain()


@pytest.fixture
def fake(monkeypatch):
    def make(metal: bool) -> tuple[FakeMLX, Clock]:
        clock = Clock()
        mx = FakeMLX(clock, metal)
        monkeypatch.setattr(testing, "_mx", mx)
        monkeypatch.setattr(testing, "_now", clock)
        return mx, clock

    return make


def gpu_kernel(mx: FakeMLX, seconds: float, host_seconds: float = 0.0):
    calls = []

    def call() -> FakeArray:
        calls.append(1)
        mx.log.append("call")
        mx.clock.t += host_seconds  # encoding on the host
        mx.queued += seconds  # the GPU part runs later
        return FakeArray()

    return call, calls


def test_metal_path_waits_for_the_gpu_and_excludes_earlier_work(fake):
    mx, clock = fake(metal=True)
    mx.queued = 5.0  # work queued before the benchmark started must not be counted
    call, calls = gpu_kernel(mx, 0.003, host_seconds=0.001)
    assert testing.timing_path() == "metal"
    p50, p20, p80 = testing.do_bench(call, warmup=41, rep=81, quantiles=[0.5, 0.2, 0.8])
    assert p50 == pytest.approx(4.0) and p20 == pytest.approx(4.0) and p80 == pytest.approx(4.0)
    # 1 first call, 5 for the estimate, 41/4 warm-up and 81/4 timed calls (rounded down)
    assert len(calls) == 1 + 5 + 10 + 20
    # every call sits between a synchronize before the clock starts and eval + synchronize after
    assert mx.log[:4] == ["synchronize", "call", "eval", "synchronize"]
    assert mx.log.count("call") * 4 == len(mx.log)


def test_metal_path_return_modes(fake):
    mx, _ = fake(metal=True)
    durations = iter([0.002] * 7 + [0.001, 0.002, 0.003, 0.004] * 100)

    def call() -> FakeArray:
        mx.queued += next(durations)
        return FakeArray()

    # 1 first call and 5 for the estimate (2 ms), 1 warm-up call, then 8/2 timed calls
    times = testing.do_bench(call, warmup=1, rep=8, return_mode="all")
    assert times == pytest.approx([1.0, 2.0, 3.0, 4.0])
    durations = iter([0.002] * 7 + [0.001, 0.002, 0.003, 0.004] * 100)
    assert testing.do_bench(call, warmup=1, rep=8, return_mode="median") == pytest.approx(2.5)


def test_host_path_when_metal_is_missing_or_another_backend_is_forced(fake, monkeypatch):
    mx, _ = fake(metal=False)
    call, _ = gpu_kernel(mx, 0.0, host_seconds=0.002)
    assert testing.timing_path() == "host"
    assert testing.do_bench(call, warmup=2, rep=10) == pytest.approx(2.0)
    assert "synchronize" not in mx.log and "eval" in mx.log  # returned arrays are still finished
    mx, _ = fake(metal=True)
    monkeypatch.setenv("TRITON_METAL_BACKEND", "emulator")
    assert testing.timing_path() == "host"
    monkeypatch.delenv("TRITON_METAL_BACKEND")
    monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    assert testing.timing_path() == "host"


def test_real_clock_on_the_emulator_times_a_kernel():
    """No fakes: a compiled kernel launched on this machine's backend takes measurable time."""
    import triton_metal as triton

    from autotune_kernels import fill_block, grid_of

    out = np.zeros(4096, np.int32)
    ms = testing.do_bench(lambda: fill_block[grid_of(4096)](out, 4096, BLOCK=256), warmup=2, rep=10)
    assert 0 < ms < 1000
    np.testing.assert_array_equal(out, np.full(4096, 256))
    assert triton.active_backend_name() == "emulator"
