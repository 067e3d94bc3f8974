"""The full-coverage facts the code generator gives the runtime, checked against what the kernel
actually writes on the emulator (an output starting at a sentinel keeps it where unwritten)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from harness import C, compile_1d, compile_source, run

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.backends.metal.driver import output_covered
from triton_metal.codegen import CoveredDim, MSLKernel

SENTINEL = -12345


def covered(kernel: MSLKernel, output: str, grid: tuple[int, ...], scalars: dict[str, int], size: int) -> bool:
    """The runtime's check: the proof's conditions hold and its index set is the whole array."""
    cov = kernel.coverage(output)
    if cov is None or not cov.tile:
        return False
    g = tuple(grid) + (1,) * (3 - len(grid))
    bounds, strides = [], []
    for d in cov.tile:
        bound = scalars[d.bound_param] if d.bound_param else d.bound_value
        reach = d.block if d.grid_axis < 0 else g[d.grid_axis] * d.block
        if bound is None:
            bound = reach
        if reach < bound:
            return False
        bounds.append(bound)
        strides.append(scalars[d.stride_param] if d.stride_param else d.stride_value)
    expect = 1
    for b, s in sorted(zip(bounds, strides), key=lambda x: x[1]):
        if s != expect:
            return False
        expect *= b
    return expect == size


@triton.jit
def copy1d(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.jit
def copy1d_same_block(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.jit
def copy2d(x_ptr, y_ptr, M, N, stride_m, BM: tl.constexpr, BN: tl.constexpr):
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(1) * BN + tl.arange(0, BN)
    p = offs_m[:, None] * stride_m + offs_n[None, :]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(y_ptr + p, tl.load(x_ptr + p, mask=mask), mask=mask)


@triton.jit
def copy_strided(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs * 2, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def _written(out: np.ndarray) -> bool:
    return bool((out != SENTINEL).all())


@pytest.mark.parametrize("n,grid", [(1000, 8), (1000, 7), (1024, 8), (900, 9)])
def test_1d_proof_matches_what_is_written(n: int, grid: int):
    k = compile_1d(copy1d, "*i32", "*i32", "i32", C(128))
    cov = k.coverage("y_ptr_out")
    assert cov.proven and (cov.grid_axis, cov.block, cov.bound_param) == (0, 128, "n")
    assert cov.tile == (CoveredDim(0, 128, "n"),)
    x = np.arange(n, dtype=np.int32)
    out = run(k, (grid,), x_ptr=x, y_ptr=np.zeros(n, np.int32), n=n, init_value=SENTINEL)["y_ptr"]
    assert covered(k, "y_ptr_out", (grid,), {"n": n}, n) == _written(out)


@pytest.mark.parametrize("n,grid", [(300, 3), (128, 3), (100, 1), (129, 2)])
def test_single_block_proof_does_not_grow_with_the_grid(n: int, grid: int):
    k = compile_1d(copy1d_same_block, "*i32", "*i32", "i32", C(128))
    # every program writes [0, min(n, 128)): the proof's axis -1 says the grid does not extend it
    assert k.coverage("y_ptr_out").tile == (CoveredDim(-1, 128, "n"),)
    x = np.arange(n, dtype=np.int32)
    out = run(k, (grid,), x_ptr=x, y_ptr=np.zeros(n, np.int32), n=n, init_value=SENTINEL)["y_ptr"]
    assert covered(k, "y_ptr_out", (grid,), {"n": n}, n) == _written(out) == (n <= 128)


@pytest.mark.parametrize("shape,grid,stride", [((40, 70), (3, 3), 70), ((40, 70), (2, 3), 70), ((32, 64), (2, 2), 64),
                                               ((40, 70), (3, 3), 80)])
def test_2d_tile_proof_matches_what_is_written(shape: tuple[int, int], grid: tuple[int, int], stride: int):
    m, n = shape
    k = compile_source(copy2d, "*i32", "*i32", "i32", "i32", "i32", C(16), C(32))
    cov = k.coverage("y_ptr_out")
    assert not cov.proven and len(cov.tile) == 2
    assert cov.tile[0] == CoveredDim(0, 16, "M", None, "stride_m", 1)
    assert cov.tile[1] == CoveredDim(1, 32, "N", None, None, 1)
    x = np.arange(m * stride, dtype=np.int32)
    out = run(k, grid, x_ptr=x, y_ptr=np.zeros(m * stride, np.int32), M=m, N=n, stride_m=stride,
              init_value=SENTINEL)["y_ptr"]
    assert covered(k, "y_ptr_out", grid, {"M": m, "N": n, "stride_m": stride}, m * stride) == _written(out)


def test_strided_store_is_not_full_coverage():
    k = compile_1d(copy_strided, "*i32", "*i32", "i32", C(128))
    cov = k.coverage("y_ptr_out")
    assert not cov.proven and cov.tile == (CoveredDim(0, 128, "n", None, None, 2),)
    n = 256
    assert not covered(k, "y_ptr_out", (2,), {"n": n}, 2 * n)
    out = run(k, (2,), x_ptr=np.arange(n, dtype=np.int32), y_ptr=np.zeros(2 * n, np.int32), n=n,
              init_value=SENTINEL)["y_ptr"]
    assert not _written(out)


@triton.jit
def copy_rows(x_ptr, y_ptr, stride, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x_ptr += row * stride
    y_ptr += row * stride
    tl.store(y_ptr + cols, tl.load(x_ptr + cols, mask=cols < N), mask=cols < N)


@triton.jit
def copy_rows_diagonal(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    # the row and the column block both follow program 0's id: only diagonal blocks are written
    pid = tl.program_id(0)
    cols = pid * BLOCK + tl.arange(0, BLOCK)
    y_ptr += pid * N
    tl.store(y_ptr + cols, tl.load(x_ptr + cols))


@pytest.mark.parametrize("m,n,stride,grid", [(5, 100, 100, 5), (5, 100, 100, 4), (5, 100, 120, 5), (3, 128, 128, 3),
                                             (3, 130, 130, 3), (1, 7, 7, 1)])
def test_row_strided_proof_matches_what_is_written(m: int, n: int, stride: int, grid: int):
    k = compile_1d(copy_rows, "*i32", "*i32", "i32", "i32", C(128))
    cov = k.coverage("y_ptr_out")
    assert cov.tile == (CoveredDim(0, 1, None, None, "stride", 1), CoveredDim(-1, 128, "N", None, None, 1))
    size = m * stride
    x = np.arange(size, dtype=np.int32)
    out = run(k, (grid,), x_ptr=x, y_ptr=np.zeros(size, np.int32), stride=stride, N=n,
              init_value=SENTINEL)["y_ptr"]
    full = grid >= m and stride == n and n <= 128
    assert covered(k, "y_ptr_out", (grid,), {"stride": stride, "N": n}, size) == _written(out) == full
    # the Metal driver's own check agrees
    slot = SimpleNamespace(name="y_ptr_out")
    names = ("x_ptr", "y_ptr", "stride", "N")
    assert output_covered(k, slot, (x, x, stride, n), names, (grid, 1, 1), size) == full


def test_one_program_id_in_two_dims_is_not_a_proof():
    k = compile_1d(copy_rows_diagonal, "*i32", "*i32", "i32", C(32))
    assert not k.coverage("y_ptr_out").tile
    n = 64  # 2 x 2 blocks of 32: the grid of 2 writes blocks (0, 0) and (1, 1) only
    out = run(k, (2,), x_ptr=np.arange(n, dtype=np.int32), y_ptr=np.zeros(2 * n, np.int32), N=n,
              init_value=SENTINEL)["y_ptr"]
    assert not _written(out)
