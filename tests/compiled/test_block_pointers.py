"""Block pointers (`tl.make_block_ptr`, `tl.advance`, `tl.load`/`tl.store` with
`boundary_check` and `padding_option`), in the interpreter and compiled (`run_both`), against
NumPy: ragged edges, a transposed view, NaN padding, a block pointer carried through a loop and
passed to a callee; and the refusals, the same on both backends."""

from __future__ import annotations

import linecache

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError

from differential import run_both


@triton.jit
def _scaled_tile(src, dst, BN: tl.constexpr):
    # a callee gets the block pointers, advances them in its loop and returns nothing
    for _ in range(0, 3):
        tile = tl.load(src, boundary_check=(0, 1), padding_option="zero")
        tl.store(dst, tile * 2.0 + 1.0, boundary_check=(0, 1))
        src = tl.advance(src, (0, BN))
        dst = dst.advance((0, BN))


@triton.jit
def scale_rows(x_ptr, out_ptr, M, N, stride_m, BM: tl.constexpr, BN: tl.constexpr):
    row0 = tl.program_id(0) * BM
    src = tl.make_block_ptr(x_ptr, shape=(M, N), strides=(stride_m, 1), offsets=(row0, 0),
                            block_shape=(BM, BN), order=(1, 0))
    dst = tl.make_block_ptr(out_ptr, shape=(M, N), strides=(stride_m, 1), offsets=(row0, 0),
                            block_shape=(BM, BN), order=(1, 0))
    _scaled_tile(src, dst, BN)


@pytest.mark.parametrize(("m", "n"), [(16, 48), (13, 37), (5, 40)])  # exact tiles, ragged, short
def test_loads_and_stores_checked_blocks_through_a_loop_and_a_call(m, n):
    rng = np.random.default_rng(m * n)
    x = rng.standard_normal((m, 48)).astype(np.float32)  # row stride 48, N columns used
    out = np.full((m, 48), -7.0, np.float32)
    run_both(scale_rows, (triton.cdiv(m, 8),), x_ptr=x, out_ptr=out, M=m, N=n, stride_m=48, BM=8, BN=16)
    expected = np.full((m, 48), -7.0, np.float32)
    expected[:, :n] = x[:, :n] * np.float32(2) + np.float32(1)
    np.testing.assert_array_equal(out, expected)  # nothing outside the shape is written


@triton.jit
def transposed_rows(x_ptr, out_ptr, M, N, K: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr):
    # the (K, N) view of a row-major (N, K) matrix, as tutorial 06 reads K; only dimension 1
    # (N, ragged) is checked, dimension 0 (K) is exact
    view = tl.make_block_ptr(x_ptr, shape=(K, N), strides=(1, K), offsets=(0, 0),
                             block_shape=(K, BN), order=(0, 1))
    tile = tl.load(view, boundary_check=(1,), padding_option=PAD)
    offs_k = tl.arange(0, K)[:, None]
    offs_n = tl.arange(0, BN)[None, :]
    tl.store(out_ptr + offs_k * BN + offs_n, tile)


@pytest.mark.parametrize("pad", ["zero", "nan", ""])
def test_a_transposed_view_pads_only_its_checked_dimension(pad):
    n, k, bn = 11, 8, 16
    x = np.arange(n * k, dtype=np.float32).reshape(n, k) + 1
    out = np.zeros((k, bn), np.float32)
    run_both(transposed_rows, (1,), x_ptr=x, out_ptr=out, M=n, N=n, K=k, BN=bn, PAD=pad)
    expected = np.full((k, bn), np.nan if pad == "nan" else 0.0, np.float32)
    expected[:, :n] = x.T
    np.testing.assert_array_equal(out, expected)


@triton.jit
def unchecked_row(x_ptr, out_ptr, N, B: tl.constexpr):
    row = tl.make_block_ptr(x_ptr, shape=(N,), strides=(1,), offsets=(0,), block_shape=(B,), order=(0,))
    tl.store(out_ptr + tl.arange(0, B), tl.load(row))  # no boundary_check: B must fit in N


@pytest.mark.parametrize("interpret", ["1", "0"])
def test_an_unchecked_dimension_is_not_masked_and_overrunning_it_is_reported(monkeypatch, interpret):
    from triton_metal.errors import OutOfBoundsError

    monkeypatch.setenv("TRITON_METAL_INTERPRET", interpret)
    x, out = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    unchecked_row[(1,)](x, out, 16, B=16)
    np.testing.assert_array_equal(out, x)
    with pytest.raises(OutOfBoundsError, match="out-of-bounds access to 'x_ptr' at index 10"):
        unchecked_row[(1,)](x[:10], out, 10, B=16)


@triton.jit
def _bump(acc, offs: tl.constexpr):
    return acc + offs


@triton.jit
def constexpr_param_takes_a_tensor(out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, _bump(offs.to(tl.float32), offs))


def test_a_tensor_passed_to_a_constexpr_parameter_stays_a_run_time_value():
    # Triton binds a callee's arguments by value (tutorial 06: `offs_m: tl.constexpr`)
    out = np.zeros(16, np.float32)
    run_both(constexpr_param_takes_a_tensor, (1,), out_ptr=out, N=16)
    np.testing.assert_array_equal(out, np.arange(16, dtype=np.float32) * 2)


def _refusal_kernel(body: str):
    namespace = {"tl": tl}
    source = (
        "def kernel(x_ptr, i_ptr):\n"
        "    bp = tl.make_block_ptr(x_ptr, shape=(8, 8), strides=(8, 1), offsets=(0, 0), block_shape=(8, 8), order=(1, 0))\n"
        "    ibp = tl.make_block_ptr(i_ptr, shape=(8,), strides=(1,), offsets=(0,), block_shape=(8,), order=(0,))\n"
        f"    {body}\n"
    )
    filename = f"<block pointer refusal {body}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # the compiler reads it
    exec(compile(source, filename, "exec"), namespace)
    return namespace["kernel"]


REFUSED = [
    ("tl.load(bp, mask=True)", "`mask` and `other` arguments cannot be specified for loading block pointers"),
    ("tl.store(bp, 1.0, mask=True)", "`mask` argument cannot be specified for storing block pointers"),
    ("tl.load(bp, boundary_check=(2,))", "boundary_check entries must be dimensions of the block"),
    ("tl.load(bp, boundary_check=(0, 0))", "duplicate dimension in boundary_check"),
    ("tl.load(ibp, boundary_check=(0,), padding_option='nan')", "Padding option `nan` is not supported for integer"),
    ("tl.load(bp, padding_option='inf')", "padding_option must be one of"),
    ("tl.store(bp, tl.zeros((4, 8), tl.float32))", "block shape [8, 8] and value shape [4, 8] mismatch"),
    ("bp = tl.advance(x_ptr, (0,))", "expected a block pointer"),
    ("bp = tl.advance(bp, (0,))", "has 2 dimensions but 1 offsets were given"),
    ("bp = tl.advance(bp, (0, tl.program_id(0) * 0.5))", "block pointer offsets must be integer scalars"),
    ("tl.make_block_ptr(x_ptr, (8,), (1,), (0,), (6,), (0,))", "compile-time powers of two"),
    ("tl.make_block_ptr(x_ptr, (8, 8), (8, 1), (0, 0), (8, 8), (1, 1))", "expected a permutation"),
    ("tl.make_block_ptr(x_ptr, (8,), (1, 1), (0,), (8,), (0,))", "to have the same length"),
]


@pytest.mark.parametrize(("body", "match"), REFUSED, ids=[r[0] for r in REFUSED])
def test_refusals_are_the_same_on_both_backends(body, match):
    x = np.zeros(64, np.float32)
    i = np.zeros(8, np.int32)
    with pytest.raises(CompilationError, match=match.replace("[", r"\[").replace("]", r"\]")):
        run_both(_refusal_kernel(body), (1,), x_ptr=x, i_ptr=i)
    assert not x.any() and not i.any()
