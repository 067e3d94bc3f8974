"""The store-coverage proof (the code generator's coverage program, run at launch by
`runtime.coverage.check_coverage`) against what the kernel really writes on the emulator: outputs
start as NaN, and a launch declared covered must leave none.

* the store patterns of real kernels are proven for their exact launches;
* near misses (a row, a column block, a tile, the last partial block, a loop one step short, a
  branch, a diagonal, a stride) are never declared covered, and the emulator confirms the hole;
* a property test draws grids and scalars and checks every "covered" verdict.
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import C, compile_1d, compile_source, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.codegen import MSLKernel
from triton_metal.runtime.coverage import check_coverage


def proven(k: MSLKernel, output: str, grid: tuple[int, ...], scalars: dict[str, int], size: int) -> bool:
    g = tuple(grid) + (1,) * (3 - len(grid))
    return check_coverage(k.coverage_program, g, scalars, {output: size})[output].proven  # type: ignore[index]


def holes(out: np.ndarray) -> int:
    return int(np.isnan(out).sum())


def agree(k: MSLKernel, grid: tuple[int, ...], outputs: dict[str, int], scalars: dict[str, int],
          inputs: dict[str, object] | None = None) -> dict[str, bool]:
    """Run on the emulator with NaN outputs; per output, the verdict, asserting soundness."""
    arrays = {name: np.zeros(size, np.float32) for name, size in outputs.items()}
    got = run(k, grid, init_value=float("nan"), **arrays, **scalars, **(inputs or {}))
    verdicts = {}
    for name, size in outputs.items():
        v = proven(k, f"{name}_out", grid, scalars, size)
        if v:
            assert holes(got[name]) == 0, f"'{name}' declared covered with {holes(got[name])} elements unwritten"
        verdicts[name] = v
        verdicts[name + "_full"] = holes(got[name]) == 0
    return verdicts


# -- kernels ---------------------------------------------------------------------------------------


@triton.jit
def rows_cols(Y, n_rows, N, stride, row0, col0, BLOCK: tl.constexpr):
    # persistent rows (grid-stride) x column blocks, as softmax and layer norm store
    for row in tl.range(tl.program_id(0) + row0, n_rows, tl.num_programs(0)):
        for off in range(col0, N, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            tl.store(Y + row * stride + cols, cols.to(tl.float32), mask=cols < N)


@triton.jit
def grouped_tiles(Y, M, N, stride_m, GROUP, BM: tl.constexpr, BN: tl.constexpr):
    # the matmul tutorial's grouped ordering, then a 2-D tile with both masks
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_pid_in_group = GROUP * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP
    group_size_m = min(num_pid_m - first_pid_m, GROUP)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(Y + offs_m[:, None] * stride_m + offs_n[None, :], tl.zeros((BM, BN), tl.float32), mask=mask)


@triton.jit
def swizzled_tiles(Y, M, N, GROUP, BM: tl.constexpr, BN: tl.constexpr):
    i, j = tl.swizzle2d(tl.program_id(0), tl.program_id(1), tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP)
    offs_m = i * BM + tl.arange(0, BM)
    offs_n = j * BN + tl.arange(0, BN)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(Y + offs_m[:, None] * N + offs_n[None, :], tl.zeros((BM, BN), tl.float32), mask=mask)


@triton.jit
def heads(Out, Lse, H, N_CTX, s_z, s_h, s_m, BM: tl.constexpr, D: tl.constexpr):
    # flash attention's epilogue: off_hz // H, off_hz % H, 64-bit head offsets, no masks
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    o_offset = off_z.to(tl.int64) * s_z + off_h.to(tl.int64) * s_h
    offs_m = start_m * BM + tl.arange(0, BM)
    offs_d = tl.arange(0, D)
    tl.store(Lse + off_hz * N_CTX + offs_m, offs_m.to(tl.float32))
    tl.store(Out + o_offset + offs_m[:, None] * s_m + offs_d[None, :], tl.zeros((BM, D), tl.float32))


@triton.jit
def stats(Mean, Rstd, Y, n_rows, N, split, BLOCK: tl.constexpr):
    # one thread's scalar stores (Mean, Rstd), and stores under run-time ifs that do not depend
    # on loaded data, two of them to one output
    row = tl.program_id(0)
    if row < n_rows:
        tl.store(Mean + row, 1.0)
        tl.store(Rstd + row, 2.0)
    cols = tl.arange(0, BLOCK)
    if row < split:
        tl.store(Y + row * N + cols, cols.to(tl.float32), mask=cols < N)
    else:
        tl.store(Y + row * N + cols, cols.to(tl.float32) + 1, mask=cols < N)


@triton.jit
def blocks(Y, n, start, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK) + start
    tl.store(Y + offs, offs.to(tl.float32), mask=offs < n)


@triton.jit
def strided(Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs * 2, offs.to(tl.float32), mask=offs * 2 < n)


@triton.jit
def diagonal(Y, N, BLOCK: tl.constexpr):
    # the row and the column block both follow one program id: only diagonal blocks
    pid = tl.program_id(0)
    cols = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + pid * N + cols, cols.to(tl.float32))


@triton.jit
def causal(Y, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs[:, None] >= offs[None, :]
    tl.store(Y + offs[:, None] * N + offs[None, :], tl.zeros((BLOCK, BLOCK), tl.float32), mask=mask)


@triton.jit
def data_dependent(Y, X, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if tl.load(X) > 0:
        tl.store(Y + offs, offs.to(tl.float32), mask=offs < n)


@pytest.fixture(scope="module")
def k_rows() -> MSLKernel:
    return compile_1d(rows_cols, "*fp32", "i32", "i32", "i32", "i32", "i32", C(32))


@pytest.fixture(scope="module")
def k_grouped() -> MSLKernel:
    return compile_source(grouped_tiles, "*fp32", "i32", "i32", "i32", "i32", C(16), C(32))


@pytest.fixture(scope="module")
def k_blocks() -> MSLKernel:
    return compile_1d(blocks, "*fp32", "i32", "i32", C(64))


# -- real patterns are proven ----------------------------------------------------------------------


@pytest.mark.parametrize("n_rows,N,grid", [(7, 100, 3), (5, 32, 8), (1, 1, 1), (12, 65, 12)])
def test_persistent_rows_and_column_blocks(k_rows: MSLKernel, n_rows: int, N: int, grid: int):
    v = agree(k_rows, (grid,), {"Y": n_rows * N}, dict(n_rows=n_rows, N=N, stride=N, row0=0, col0=0))
    assert v["Y"] and v["Y_full"]


@pytest.mark.parametrize("M,N,group", [(40, 70, 2), (16, 32, 1), (50, 33, 3), (64, 64, 8)])
def test_grouped_ordering_2d_tiles(k_grouped: MSLKernel, M: int, N: int, group: int):
    grid = (triton.cdiv(M, 16) * triton.cdiv(N, 32),)
    v = agree(k_grouped, grid, {"Y": M * N}, dict(M=M, N=N, stride_m=N, GROUP=group))
    assert v["Y"] and v["Y_full"]


def test_swizzle2d():
    k = compile_source(swizzled_tiles, "*fp32", "i32", "i32", "i32", C(16), C(16))
    M, N = 50, 70
    v = agree(k, (triton.cdiv(M, 16), triton.cdiv(N, 16)), {"Y": M * N}, dict(M=M, N=N, GROUP=2))
    assert v["Y"] and v["Y_full"]
    # one column of programs short
    v = agree(k, (triton.cdiv(M, 16), triton.cdiv(N, 16) - 1), {"Y": M * N}, dict(M=M, N=N, GROUP=2))
    assert not v["Y"] and not v["Y_full"]


def test_flash_attention_heads():
    k = compile_source(heads, "*fp32", "*fp32", "i32", "i32", "i32", "i32", "i32", C(16), C(16))
    Z, H, n_ctx, D = 2, 3, 32, 16
    scal = dict(H=H, N_CTX=n_ctx, s_z=H * n_ctx * D, s_h=n_ctx * D, s_m=D)
    v = agree(k, (n_ctx // 16, Z * H), {"Out": Z * H * n_ctx * D, "Lse": Z * H * n_ctx}, scal)
    assert v["Out"] and v["Lse"]
    v = agree(k, (n_ctx // 16, Z * H - 1), {"Out": Z * H * n_ctx * D, "Lse": Z * H * n_ctx}, scal)
    assert not v["Out"] and not v["Lse"] and not v["Out_full"]


def test_scalar_stores_and_branches_on_scalars():
    k = compile_1d(stats, "*fp32", "*fp32", "*fp32", "i32", "i32", "i32", C(64))
    for split in (0, 3, 9):
        v = agree(k, (6,), {"Mean": 6, "Rstd": 6, "Y": 6 * 50}, dict(n_rows=6, N=50, split=split))
        assert v["Mean"] and v["Rstd"] and v["Y"]
    v = agree(k, (6,), {"Mean": 6, "Rstd": 6, "Y": 6 * 50}, dict(n_rows=5, N=50, split=3))
    assert not v["Mean"] and not v["Rstd"] and not v["Mean_full"] and v["Y"]


# -- near misses are never covered -----------------------------------------------------------------

NEAR_MISSES = [
    # (what, grid, rows in the output, launch scalars)
    ("one row: the grid-stride loop starts a row late", (3,), 7, dict(n_rows=7, N=100, stride=100, row0=1, col0=0)),
    ("one column block: the column loop starts a block late", (3,), 7,
     dict(n_rows=7, N=100, stride=100, row0=0, col0=32)),
    ("the persistent loop one step short", (3,), 7, dict(n_rows=6, N=100, stride=100, row0=0, col0=0)),
    ("rows with gaps: the stride passes the row", (3,), 7, dict(n_rows=7, N=100, stride=101, row0=0, col0=0)),
    ("the last partial column block: N one short", (3,), 7, dict(n_rows=7, N=99, stride=100, row0=0, col0=0)),
]


@pytest.mark.parametrize("what,grid,rows,scalars", NEAR_MISSES, ids=[m[0] for m in NEAR_MISSES])
def test_near_misses_of_rows_and_columns(k_rows: MSLKernel, what: str, grid: tuple[int], rows: int,
                                         scalars: dict[str, int]):
    v = agree(k_rows, grid, {"Y": rows * scalars["stride"]}, scalars)
    assert not v["Y"] and not v["Y_full"], what


def test_near_misses_of_tiles(k_grouped: MSLKernel):
    M, N = 40, 70
    tiles = triton.cdiv(M, 16) * triton.cdiv(N, 32)
    v = agree(k_grouped, (tiles - 1,), {"Y": M * N}, dict(M=M, N=N, stride_m=N, GROUP=2))  # one tile
    assert not v["Y"] and not v["Y_full"]
    v = agree(k_grouped, (tiles,), {"Y": M * N + 1}, dict(M=M, N=N, stride_m=N, GROUP=2))  # one element
    assert not v["Y"] and not v["Y_full"]


def test_near_misses_of_blocks(k_blocks: MSLKernel):
    n = 1000
    v = agree(k_blocks, (n // 64,), {"Y": n}, dict(n=n, start=0))  # the last partial block
    assert not v["Y"] and not v["Y_full"]
    v = agree(k_blocks, (triton.cdiv(n, 64),), {"Y": n}, dict(n=n, start=1))  # shifted by one
    assert not v["Y"] and not v["Y_full"]
    v = agree(k_blocks, (triton.cdiv(n, 64),), {"Y": n}, dict(n=n, start=0))
    assert v["Y"] and v["Y_full"]


@pytest.mark.parametrize("fn,params,grid,size,scalars", [
    (strided, ("*fp32", "i32", C(64)), (4,), 256, dict(n=256)),
    (diagonal, ("*fp32", "i32", C(32)), (2,), 128, dict(N=64)),
    (causal, ("*fp32", "i32", C(16)), (1,), 256, dict(N=16)),
], ids=["strided", "diagonal", "causal"])
def test_patterns_that_leave_holes(fn, params, grid, size, scalars):  # noqa: ANN001
    k = compile_source(fn, *params)
    v = agree(k, grid, {"Y": size}, scalars)
    assert not v["Y"] and not v["Y_full"]


@triton.jit
def mask_as_index(Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs * (offs < n).to(tl.int32), offs.to(tl.float32))  # past n: element 0


def test_a_mask_cast_into_an_index_is_not_proven():
    k = compile_source(mask_as_index, "*fp32", "i32", C(64))
    v = agree(k, (2,), {"Y": 128}, dict(n=100))
    assert not v["Y"] and not v["Y_full"]
    v = agree(k, (2,), {"Y": 128}, dict(n=128))  # writes every element, but no proof is claimed
    assert not v["Y"] and v["Y_full"]


def test_stores_under_branches_on_loaded_data_are_not_modelled():
    k = compile_1d(data_dependent, "*fp32", "*fp32", "i32", C(64))
    (cov,) = k.stored_coverage
    assert not cov.checkable and "loaded data" in cov.reason and "test_coverage.py" in cov.reason
    got = run(k, (2,), init_value=float("nan"), Y=np.zeros(128, np.float32), X=np.ones(1, np.float32), n=128)
    assert holes(got["Y"]) == 0  # the kernel writes it all, but nothing proves it


# -- property: a covered verdict is never wrong ------------------------------------------------------

_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_SETTINGS
@given(grid=st.integers(1, 6), n_rows=st.integers(1, 9), N=st.integers(1, 80), extra_stride=st.integers(0, 2),
       row0=st.integers(0, 1), col0=st.sampled_from([0, 32]), extra_rows=st.integers(0, 1))
def test_rows_verdicts_are_sound(k_rows: MSLKernel, grid: int, n_rows: int, N: int, extra_stride: int, row0: int,
                                 col0: int, extra_rows: int):
    stride = N + extra_stride
    v = agree(k_rows, (grid,), {"Y": (n_rows + extra_rows) * stride},
              dict(n_rows=n_rows, N=N, stride=stride, row0=row0, col0=col0))
    assert v["Y"] == v["Y_full"]  # this family is exact: every written launch is proven


@_SETTINGS
@given(M=st.integers(1, 60), N=st.integers(1, 80), group=st.integers(1, 4), short=st.integers(0, 2),
       extra=st.integers(0, 3))
def test_tile_verdicts_are_sound(k_grouped: MSLKernel, M: int, N: int, group: int, short: int, extra: int):
    tiles = triton.cdiv(M, 16) * triton.cdiv(N, 32)
    v = agree(k_grouped, (max(1, tiles - short),), {"Y": M * N + extra}, dict(M=M, N=N, stride_m=N, GROUP=group))
    assert v["Y"] == v["Y_full"]


@pytest.fixture(scope="module")
def k_swizzled() -> MSLKernel:
    return compile_source(swizzled_tiles, "*fp32", "i32", "i32", "i32", C(16), C(16))


@pytest.fixture(scope="module")
def k_stats() -> MSLKernel:
    return compile_1d(stats, "*fp32", "*fp32", "*fp32", "i32", "i32", "i32", C(64))


@_SETTINGS
@given(M=st.integers(1, 50), N=st.integers(1, 50), group=st.integers(1, 4), short_i=st.integers(0, 1),
       short_j=st.integers(0, 1))
def test_swizzle_verdicts_are_sound(k_swizzled: MSLKernel, M: int, N: int, group: int, short_i: int, short_j: int):
    grid = (max(1, triton.cdiv(M, 16) - short_i), max(1, triton.cdiv(N, 16) - short_j))
    v = agree(k_swizzled, grid, {"Y": M * N}, dict(M=M, N=N, GROUP=group))
    assert v["Y"] == v["Y_full"]


@_SETTINGS
@given(grid=st.integers(1, 8), n_rows=st.integers(0, 9), split=st.integers(-1, 9), N=st.integers(1, 64))
def test_branch_verdicts_are_sound(k_stats: MSLKernel, grid: int, n_rows: int, split: int, N: int):
    v = agree(k_stats, (grid,), {"Mean": grid, "Rstd": grid, "Y": grid * N}, dict(n_rows=n_rows, N=N, split=split))
    assert v["Mean"] == v["Mean_full"] and v["Rstd"] == v["Rstd_full"] and v["Y"] == v["Y_full"]


def _program(mask_const: int, bits: int = 32):  # noqa: ANN202
    """`tl.store(Y + offs, ..., mask=offs + mask_const > 0)`, offs = arange(0, 64), as a program."""
    from triton_metal.codegen.kernel import CoverageProgram

    return CoverageProgram((
        ("ptr", 1, "Y"), ("splat", 2, 1, (64,)), ("range", 3, 0, 64), ("addptr", 4, 2, 3, 32, False),
        ("const", 5, mask_const), ("splat", 6, 5, (64,)), ("bin", 7, "add", 3, 6, bits, True),
        ("const", 8, 0), ("splat", 9, 8, (64,)), ("cmp", 10, "sgt", 7, 9, bits, True),
        ("store", "Y_out", 4, 10, "here"),
    ))


def test_index_arithmetic_that_wraps_is_not_proven():
    # offs + (2**31 - 10) > 0 holds exactly for every offs, but wraps negative in int32 from
    # offs = 10 on: the kernel would skip those elements, so no proof
    size = {"Y_out": 64}
    assert check_coverage(_program(5), (1, 1, 1), {}, size)["Y_out"].proven
    wrapped = check_coverage(_program(2**31 - 10), (1, 1, 1), {}, size)["Y_out"]
    assert not wrapped.proven and "wrap" in wrapped.reason
    assert check_coverage(_program(2**31 - 10, bits=64), (1, 1, 1), {}, size)["Y_out"].proven


@triton.jit
def bumped(Y, N, stride, bump, BLOCK: tl.constexpr):
    # pointers carried by the loop and bumped by a loop-invariant step, as kernels walk columns
    ptrs = Y + tl.program_id(0) * stride + tl.arange(0, BLOCK)
    cols = tl.arange(0, BLOCK)
    for off in range(0, N, BLOCK):
        tl.store(ptrs, cols.to(tl.float32), mask=cols < N - off)
        ptrs += bump


@_SETTINGS
@given(rows=st.integers(1, 5), N=st.integers(1, 100), bump=st.integers(30, 34), gap=st.integers(0, 1))
def test_carried_pointer_verdicts_are_sound(rows: int, N: int, bump: int, gap: int):
    # 32 (the block): exact; less: overlapping blocks that stop short; more: holes between them
    stride = N + gap
    v = agree(_bumped(), (rows,), {"Y": rows * stride + 2 * N}, dict(N=N, stride=stride, bump=bump))
    if bump == 32 and gap == 0:
        assert not v["Y"] and not v["Y_full"]  # the tail past the last row stays
    if bump <= 32:  # (a larger bump writes past the row, and past the last row's end)
        v = agree(_bumped(), (rows,), {"Y": rows * stride}, dict(N=N, stride=stride, bump=bump))
        assert v["Y"] == v["Y_full"]


def test_carried_pointers_are_proven():
    k = _bumped()
    for rows, N in ((3, 100), (1, 32), (4, 7)):
        v = agree(k, (rows,), {"Y": rows * N}, dict(N=N, stride=N, bump=32))
        assert v["Y"] and v["Y_full"]
    v = agree(k, (3,), {"Y": 308}, dict(N=100, stride=100, bump=33))  # a hole after each block
    assert not v["Y"] and not v["Y_full"]


_BUMPED: list[MSLKernel] = []


def _bumped() -> MSLKernel:
    if not _BUMPED:
        _BUMPED.append(compile_1d(bumped, "*fp32", "i32", "i32", "i32", C(32)))
    return _BUMPED[0]
