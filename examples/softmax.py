"""Fused row softmax (Triton tutorial 02): each program normalises whole rows in one pass.

A row is loaded once, its maximum subtracted for numerical stability, exponentiated, summed and
divided, all in registers. Programs stride over the rows (`tl.range` from the program id by the
number of programs), so the grid can be smaller than the number of rows; by default it has one
program per row.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

import triton_metal as triton
import triton_metal.language as tl

from ._common import empty, report, strides, to_numpy


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        # BLOCK_SIZE is the next power of two >= n_cols: pad the tail with -inf, which exp maps to 0
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float("inf")).to(tl.float32)
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


def softmax(x: Any, num_warps: int | None = None, max_programs: int | None = None) -> Any:
    """Softmax over the last axis of a 2-D array (NumPy or MLX; fp32, fp16 or bf16).

    By default one program per row, the launch shape Triton's tutorial reaches whenever the rows
    fit the GPU at once; `max_programs` caps the grid, and the programs then stride over the
    rows (a persistent grid; size it from the chip as the tutorial does from the SM count:
    `triton.get_hardware_capabilities().gpu_cores` times the programs a core holds at once)."""
    n_rows, n_cols = x.shape
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    if num_warps is None:
        # more warps for wider rows, as the tutorial does
        num_warps = 8 if BLOCK_SIZE >= 2048 else 4
    num_stages = 2
    y = empty(x.shape, x.dtype, like=x)
    # never more programs than rows; a smaller cap makes the grid persistent
    num_programs = n_rows if max_programs is None else max(1, min(max_programs, n_rows))
    softmax_kernel[(num_programs, 1, 1)](
        y, x, strides(x)[0], strides(y)[0], n_rows, n_cols,
        BLOCK_SIZE=BLOCK_SIZE, num_stages=num_stages, num_warps=num_warps,
    )
    return y


def reference(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    z = x - x.max(axis=1, keepdims=True)
    num = np.exp(z)
    return num / num.sum(axis=1, keepdims=True)


def main() -> int:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((257, 781)).astype(np.float32)
    error = float(np.max(np.abs(to_numpy(softmax(x)) - reference(x))))
    return 0 if report("softmax", error, 1e-6) else 1


if __name__ == "__main__":
    sys.exit(main())
