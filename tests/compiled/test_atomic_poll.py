"""`tl.atomic_poll`: the value read and the answer given on both backends (`run_both`) against
the flag's own contents, 16-bit elements in either half of their 32-bit word, MLX arrays (whose
polled output the Metal launch path holds relative to the array), a program waiting
for another's release on the emulator (whose threadgroups run concurrently), the interpreter's
refusal to wait for a value no program can write while it waits, and the shared refusals."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError, TritonError

from differential import run_both


@triton.jit
def poll_within(flag, out, i, expected, timeout_ns, SEM: tl.constexpr):
    matched = tl.atomic_poll(flag + i, expected, sem=SEM, timeout_ns=timeout_ns)
    tl.store(out + i, matched.to(tl.int32) + 10)


@triton.jit
def poll_then_store(flag, out, i, expected):
    tl.atomic_poll(flag + i, expected, scope="sys")
    tl.store(out + i, tl.load(flag + i) + 1)


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.uint16])
@pytest.mark.parametrize("i", [0, 1, 4])  # an odd length puts element 4 of a 16-bit array alone in its word
def test_timed_poll_answers_whether_the_value_matched(dtype: type, i: int) -> None:
    start = np.array([7, -3, 0, 5, 1]).astype(dtype)  # -3 wraps in uint16: the high bits set
    flag = start.copy()
    for expected, timeout in ((flag[i], 0), (flag[i] + 1, 0), (flag[i] + 2, 5000)):
        out = np.zeros(5, np.int32)
        run_both(poll_within, (1,), flag=flag, out=out, i=i, expected=int(expected), timeout_ns=timeout,
                 SEM="relaxed" if timeout else "acquire")
        want = np.zeros(5, np.int32)
        want[i] = 10 + int(flag[i] == dtype(expected))
        np.testing.assert_array_equal(out, want)
        np.testing.assert_array_equal(flag, start)  # read, never written


@pytest.mark.parametrize("dtype", [mx.int32, mx.int16])
def test_mlx_arrays_through_the_metal_launch_path(dtype: mx.Dtype) -> None:
    # the polled output is held relative to the array there: the poll waits for the encoding
    flag = mx.array([7, -3, 0, 5, 1], dtype)
    for expected, want in ((5, 11), (6, 10)):
        out = mx.zeros((5,), mx.int32)
        poll_within[(1,)](flag, out, 3, expected, 0, SEM="acquire")
        assert np.array(out).tolist() == [0, 0, 0, want, 0]
    assert np.array(flag).tolist() == [7, -3, 0, 5, 1]


@pytest.mark.parametrize("i", [1, 3])
def test_untimed_poll_returns_once_matched(i: int) -> None:
    flag = np.array([4, 9, -1, 2], np.int32)
    out = np.zeros(4, np.int32)
    run_both(poll_then_store, (1,), num_warps=2, flag=flag, out=out, i=i, expected=int(flag[i]))
    want = np.zeros(4, np.int32)
    want[i] = flag[i] + 1
    np.testing.assert_array_equal(out, want)


@triton.jit
def wait_for_other_program(flag, payload, out):
    if tl.program_id(0) == 0:
        tl.atomic_poll(flag, 1, sem="acquire", scope="gpu")
        tl.store(out, tl.load(payload))
    else:
        tl.store(payload, 42)
        tl.atomic_xchg(flag, 1, sem="release", scope="gpu")


def test_compiled_poll_waits_for_another_programs_release(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_METAL_EMULATOR_THREADS", "2")  # the two programs run at once
    monkeypatch.setenv("TRITON_METAL_EMULATOR_WATCHDOG", "20")
    flag, payload, out = np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
    wait_for_other_program[(2,)](flag, payload, out)
    assert (flag[0], payload[0], out[0]) == (1, 42, 42)


def test_interpreter_refuses_to_wait_for_a_later_program(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    flag, payload, out = np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
    with pytest.raises(TritonError, match="waits for 1 and reads 0, which nothing can change"):
        wait_for_other_program[(2,)](flag, payload, out)
    assert (flag[0], payload[0], out[0]) == (0, 0, 0)


@triton.jit
def poll_block(flag, out, BLOCK: tl.constexpr):
    tl.store(out, tl.atomic_poll(flag + tl.arange(0, BLOCK), 1))


@triton.jit
def poll_releasing(flag, out):
    tl.store(out, tl.atomic_poll(flag, 1, sem="release"))


@triton.jit
def poll_negative_timeout(flag, out):
    tl.store(out, tl.atomic_poll(flag, 1, timeout_ns=-1))


@pytest.mark.parametrize("kernel, args, reason", [
    (poll_block, {"BLOCK": 4}, "it takes a scalar pointer"),
    (poll_releasing, {}, "sem must be one of ['acquire', 'relaxed'], got 'release'"),
    (poll_negative_timeout, {}, "timeout_ns must not be negative, got -1"),
])
def test_refusals_are_shared(kernel: object, args: dict, reason: str) -> None:
    with pytest.raises(CompilationError, match=reason.replace("[", r"\[").replace("]", r"\]")):
        run_both(kernel, (1,), flag=np.ones(4, np.int32), out=np.zeros(4, np.int8), **args)


def test_64_bit_flags_are_refused_with_the_reason() -> None:
    with pytest.raises(CompilationError, match="Metal has no 64-bit atomic load"):
        run_both(poll_then_store, (1,), flag=np.ones(2, np.int64),
                 out=np.zeros(2, np.int64), i=0, expected=1)
