"""A histogram with `tl.atomic_add`: programs bin their block and add ones into shared counts.

Values in [0, 1) fall into `NUM_BINS` equal bins; the scale is a power of two, so the bin of a
value is exact and the NumPy reference computes the same bins.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

import triton_metal as triton
import triton_metal.language as tl

from ._common import empty, report, to_numpy


@triton.jit
def histogram_kernel(x_ptr, hist_ptr, n_elements, NUM_BINS: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    bins = (x * NUM_BINS).to(tl.int32)
    # keep out-of-range values in the edge bins
    bins = tl.minimum(tl.maximum(bins, 0), NUM_BINS - 1)
    # many programs (and many lanes of one program) hit the same bin: add atomically
    tl.atomic_add(hist_ptr + bins, 1, mask=mask)


def histogram(x: Any, num_bins: int = 64, BLOCK_SIZE: int = 1024, num_warps: int = 4) -> Any:
    """Counts of `x`'s values (fp32, in [0, 1)) in `num_bins` equal bins (a power of two)."""
    assert num_bins & (num_bins - 1) == 0, "num_bins must be a power of two"
    hist = empty((num_bins,), np.int32, like=x)
    n_elements = x.size
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    histogram_kernel[grid](x, hist, n_elements, NUM_BINS=num_bins, BLOCK_SIZE=BLOCK_SIZE,
                           num_warps=num_warps)
    return hist


def reference(x: np.ndarray, num_bins: int) -> np.ndarray:
    bins = np.clip((x * np.float32(num_bins)).astype(np.int32), 0, num_bins - 1)
    return np.bincount(bins, minlength=num_bins).astype(np.int32)


def main() -> int:
    rng = np.random.default_rng(0)
    x = rng.random(50_000).astype(np.float32)
    error = float(np.max(np.abs(to_numpy(histogram(x, 64)) - reference(x, 64))))
    return 0 if report("histogram", error, 0.0) else 1


if __name__ == "__main__":
    sys.exit(main())
