"""Row-wise inclusive prefix sum with `tl.cumsum`: one program scans one row in registers."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

import triton_metal as triton
import triton_metal.language as tl

from ._common import empty, report, strides, to_numpy


@triton.jit
def cumsum_kernel(x_ptr, y_ptr, stride_x, stride_y, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    # padding lanes read 0 and come after the real ones, so they change no real prefix
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0)
    y = tl.cumsum(x, axis=0)
    tl.store(y_ptr + row * stride_y + cols, y, mask=mask)


def cumsum(x: Any, num_warps: int = 4) -> Any:
    """Inclusive prefix sums along the last axis of a 2-D array (fp32 or int32)."""
    n_rows, n_cols = x.shape
    y = empty(x.shape, x.dtype, like=x)
    BLOCK_SIZE = max(triton.next_power_of_2(n_cols), 16)
    cumsum_kernel[(n_rows,)](x, y, strides(x)[0], strides(y)[0], n_cols,
                             BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)
    return y


def reference(x: np.ndarray) -> np.ndarray:
    return np.cumsum(x, axis=1, dtype=x.dtype)


def main() -> int:
    rng = np.random.default_rng(0)
    x = rng.integers(-1000, 1000, size=(123, 300)).astype(np.int32)
    error = float(np.max(np.abs(to_numpy(cumsum(x)) - reference(x))))
    return 0 if report("cumsum", error, 0.0) else 1


if __name__ == "__main__":
    sys.exit(main())
