"""No kernel hangs the process: the watchdog stops loops that never end (with barriers inside or
not), Ctrl-C interrupts a waiting launch, and a hung launch blocks no other thread's launch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.backends.emulator import WatchdogTimeout


@triton.jit
def _sum_forever(x, out, BLOCK: tl.constexpr):
    v = tl.load(x + tl.arange(0, BLOCK))
    s = tl.sum(v, axis=0)
    while s > 0:  # s never changes: every iteration passes the reduction's barriers
        s = tl.sum(v, axis=0)
    tl.store(out, s)


@triton.jit
def _never_released(lock, out):
    while tl.atomic_cas(lock, 0, 1) != 0:  # the lock starts taken and nobody releases it
        pass
    tl.store(out, 1.0)


@triton.jit
def _add_one(x, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x + offs, tl.load(x + offs) + 1)


def test_loop_around_a_reduction_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_METAL_EMULATOR_WATCHDOG", "0.5")
    out = np.zeros(1, np.float32)
    with pytest.raises(WatchdogTimeout, match=r"kernel '_sum_forever'.*did not finish within 0.5 s"):
        _sum_forever[(1,)](np.ones(128, np.float32), out, BLOCK=128)
    assert out[0] == 0.0


def test_spin_lock_never_released_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_METAL_EMULATOR_WATCHDOG", "0.5")
    with pytest.raises(WatchdogTimeout, match=r"kernel '_never_released'"):
        _never_released[(2,)](np.ones(1, np.int32), np.zeros(1, np.float32))


def test_a_hung_launch_blocks_no_other_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_METAL_EMULATOR_WATCHDOG", "6")
    x = np.zeros(64, np.int32)
    _add_one[(1,)](x, BLOCK=64)  # compiled before the clock starts
    _sum_forever.warmup(np.float32, np.float32, BLOCK=128, grid=(1,))
    errors: list[BaseException] = []

    def hang() -> None:
        try:
            _sum_forever[(1,)](np.ones(128, np.float32), np.zeros(1, np.float32), BLOCK=128)
        except WatchdogTimeout as e:
            errors.append(e)

    t = threading.Thread(target=hang)
    t.start()
    time.sleep(0.5)
    start = time.perf_counter()
    for _ in range(20):
        _add_one[(1,)](x, BLOCK=64)
    elapsed = time.perf_counter() - start
    t.join()
    assert elapsed < 3.0, f"launches waited {elapsed:.1f} s behind the hung one"
    assert (x == 21).all()
    assert len(errors) == 1


def test_ctrl_c_interrupts_a_hung_launch(tmp_path: Path) -> None:
    script = tmp_path / "hang.py"
    script.write_text(textwrap.dedent("""
        import sys, time
        import numpy as np
        import triton_metal as triton
        import triton_metal.language as tl

        @triton.jit
        def spin(lock, out):
            while tl.atomic_cas(lock, 0, 1) != 0:
                pass
            tl.store(out, 1.0)

        spin.warmup(np.int32, np.float32, grid=(1,))
        print("ready", flush=True)
        try:
            spin[(1,)](np.ones(1, np.int32), np.zeros(1, np.float32))
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            spin[(1,)](np.zeros(1, np.int32), np.zeros(1, np.float32))  # usable afterwards
            print("usable", flush=True)
    """))
    env = dict(os.environ, TRITON_METAL_EMULATOR_WATCHDOG="0", TRITON_METAL_BACKEND="emulator")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert out.split() == ["interrupted", "usable"]
    assert proc.returncode == 0
