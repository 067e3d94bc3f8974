"""Vector addition (Triton tutorial 01): one program adds one block of `BLOCK_SIZE` elements."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

import triton_metal as triton
import triton_metal.language as tl

from ._common import empty, numel, report, to_numpy


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    # the last block may run past the end of the vectors: mask those lanes off
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


def add(x: Any, y: Any, BLOCK_SIZE: int = 1024, num_warps: int = 4) -> Any:
    """`x + y` for two vectors of the same shape and dtype (NumPy or MLX)."""
    assert x.shape == y.shape and x.dtype == y.dtype
    output = empty(x.shape, x.dtype, like=x)
    n_elements = numel(x)
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)
    return output


def reference(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x + y


def main() -> int:
    rng = np.random.default_rng(0)
    size = 98_432  # not a multiple of the block size: the last program is masked
    x = rng.standard_normal(size).astype(np.float32)
    y = rng.standard_normal(size).astype(np.float32)
    out = to_numpy(add(x, y))
    error = float(np.max(np.abs(out - reference(x, y))))
    return 0 if report("vector_add", error, 0.0) else 1


if __name__ == "__main__":
    sys.exit(main())
