"""Program ids and counts, plain (threadgroup positions) and spread over a launch grid of another
shape (`CodegenOptions.spread_programs`)."""

from __future__ import annotations

import numpy as np
import pytest
from harness import compile_1d, run

import triton_metal as triton
import triton_metal.language as tl


@triton.jit
def ids_kernel_simple(out_ptr):
    x = tl.program_id(0)
    y = tl.program_id(1)
    z = tl.program_id(2)
    nx = tl.num_programs(0)
    ny = tl.num_programs(1)
    nz = tl.num_programs(2)
    linear = (z * ny + y) * nx + x
    tl.store(out_ptr + linear * 4, x)
    tl.store(out_ptr + linear * 4 + 1, y)
    tl.store(out_ptr + linear * 4 + 2, z)
    tl.store(out_ptr + linear * 4 + 3, nx * ny * nz)


def _want(grid: tuple[int, int, int]) -> np.ndarray:
    gx, gy, gz = grid
    out = np.zeros((gz, gy, gx, 4), np.int32)
    for z in range(gz):
        for y in range(gy):
            for x in range(gx):
                out[z, y, x] = (x, y, z, gx * gy * gz)
    return out.reshape(-1)


@pytest.mark.parametrize("grid", [(5, 1, 1), (3, 4, 2)])
def test_program_ids(grid: tuple[int, int, int]):
    k = compile_1d(ids_kernel_simple, "*i32")
    n = int(np.prod(grid)) * 4
    out = run(k, grid, out_ptr=np.full(n, -1, np.int32), init_value=-1)["out_ptr"]
    np.testing.assert_array_equal(out, _want(grid))


@pytest.mark.parametrize("grid,launch", [((7, 3, 2), (5, 9, 1)), ((40, 1, 1), (4, 4, 4))])
def test_spread_programs(grid: tuple[int, int, int], launch: tuple[int, int, int]):
    k = compile_1d(ids_kernel_simple, "*i32", spread_programs=True)
    assert k.input_names[-1] == "km_grid" and k.metadata["grid_input"] == "km_grid"
    n = int(np.prod(grid)) * 4
    out = run(k, grid, out_ptr=np.full(n, -1, np.int32), init_value=-1, launch=launch)["out_ptr"]
    np.testing.assert_array_equal(out, _want(grid))
