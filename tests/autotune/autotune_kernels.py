"""Small kernels whose result shows which config ran, and helpers the autotuning tests share."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import triton_metal as triton
import triton_metal.language as tl


@triton.jit
def fill_block(out_ptr, n, BLOCK: tl.constexpr):
    """out[i] = BLOCK: the output names the config of the launch that wrote it."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.full((BLOCK,), BLOCK, tl.int32), mask=offs < n)


@triton.jit
def needs_big_block(out_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK >= 64, "BLOCK must be at least 64")
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.full((BLOCK,), BLOCK, tl.int32), mask=offs < n)


@triton.jit
def accumulate(x_ptr, total_ptr, n, BLOCK: tl.constexpr):
    """total[0] += sum(x) atomically: repeated launches keep adding."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(total_ptr, tl.sum(x, axis=0))


@triton.jit
def increment(x_ptr, n, BLOCK: tl.constexpr):
    """x += 1 in place: repeated launches keep incrementing."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


def grid_of(n: int) -> Callable[[dict[str, Any]], tuple[int]]:
    return lambda META: (triton.cdiv(n, META["BLOCK"]),)


class ScriptedBench:
    """A `do_bench` stand-in: runs the call once (so the launch really happens) and returns the
    next scripted timing; counts its calls."""

    def __init__(self, timings: Sequence[Sequence[float]] = ()) -> None:
        self.timings = list(timings)
        self.calls = 0

    def __call__(self, fn: Callable[[], object], quantiles: Sequence[float] = (0.5,)) -> list[float]:
        assert tuple(quantiles) == (0.5, 0.2, 0.8)
        fn()
        self.calls += 1
        if self.timings:
            return list(self.timings.pop(0))
        return [1.0, 1.0, 1.0]


@triton.jit
def histogram_tile(x_ptr, y_ptr, BLOCK: tl.constexpr):
    """y = the histogram of BLOCK values over BLOCK * BLOCK bins, counted in threadgroup memory
    (4 bytes a bin), so BLOCK = 128 needs 64 KiB, over Apple's 32 KiB."""
    r = tl.arange(0, BLOCK)
    bins = tl.arange(0, BLOCK * BLOCK)
    tl.store(y_ptr + bins, tl.histogram(tl.load(x_ptr + r), BLOCK * BLOCK))
