"""Dot operands staged together behind one barrier per K step, double-buffered
(`stage-dot-operands`), and the dot report read off the lowered program, compiled to MSL and run
on the emulator against NumPy. The emulator runs each thread until it waits, so a buffer
written while another thread still reads it shows as a wrong value.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from harness import C, compile_source, run
from test_dot_kernels import TARGETS, _spec, launch, matmul_kernel, quarters

import triton_metal as triton
import triton_metal.language as tl

def test_steel_like_tile_report_and_values():
    """A 64 x 64 tile on 2 x 2 SIMD groups of 32 x 32 (MLX steel's shape): the dot report read off
    the lowered program, and the values over three K steps (an odd count: the double-buffered
    staging alternates its buffers from one step to the next)."""
    M, N, K, bm, bn, bk = 128, 64, 96, 64, 64, 32
    a, b = quarters((M, K)).astype(np.float16), quarters((K, N)).astype(np.float16)
    args = dict(a_ptr=a, b_ptr=b, c_ptr=np.zeros((M, N), np.float32), M=M, N=N, K=K, stride_am=K, stride_ak=1,
                stride_bk=N, stride_bn=1, stride_cm=N, stride_cn=1)
    consts = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, OUT_F16=False, INT=False)
    specs = [C(consts[n]) if n in consts else _spec(args[n]) for n in inspect.signature(matmul_kernel.fn).parameters]
    kernel = compile_source(matmul_kernel, *specs, num_warps=4)
    [report] = kernel.metadata["dot_reports"]
    # 4 x 4 accumulator fragments per SIMD group; per dot 4 K steps of 8, each loading 4 A and 4
    # B fragments and running 16 products; A and B staged behind one barrier per loop iteration
    assert report["warps"] == (2, 2) and report["warp_tile"] == (32, 32)
    assert report["fragments_per_simdgroup"] == 16
    assert (report["fragment_loads"], report["fragment_products"]) == (32, 64)
    assert report["products_per_load"] == 2.0
    assert report["in_loop"] and report["barriers_per_k_step"] == 1
    assert report["threadgroup_bytes_per_k_step"] == (bm * bk + bk * bn) * 2
    out = run(kernel, (M // bm, N // bn), **args)["c_ptr"]
    np.testing.assert_array_equal(out, a.astype(np.float32) @ b.astype(np.float32))


@triton.jit
def persistent_matmul_kernel(a_ptr, b_ptr, c_ptr, TILES_M: tl.constexpr, TILES_N: tl.constexpr, K: tl.constexpr,
                             BLOCK: tl.constexpr, BLOCK_K: tl.constexpr):
    # one program walks every output tile: the K loop's double-buffered operands sit inside an
    # outer loop whose epilogue (the result's conversion for its store) also uses scratch
    N = TILES_N * BLOCK
    r = tl.arange(0, BLOCK)
    rk = tl.arange(0, BLOCK_K)
    for t in range(0, TILES_M * TILES_N):
        rows = (t // TILES_N) * BLOCK + r
        cols = (t % TILES_N) * BLOCK + r
        acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            a = tl.load(a_ptr + rows[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * N + cols[None, :])
            acc += tl.dot(a, b)
        tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc)


@pytest.mark.parametrize("target", TARGETS)
def test_persistent_matmul_double_buffers_across_tiles(target):
    # on tensor ops the inner loop carries the cooperative accumulator: made and loaded before
    # it and stored after it in every iteration of the outer loop
    tm, tn, K, bs, bk = 2, 2, 96, 32, 32
    a = quarters((tm * bs, K)).astype(np.float16)
    b = quarters((K, tn * bs)).astype(np.float16)
    c = np.zeros((tm * bs, tn * bs), np.float32)
    out = launch(persistent_matmul_kernel)[(1,)](a, b, c, TILES_M=tm, TILES_N=tn, K=K, BLOCK=bs, BLOCK_K=bk,
                                                  target=target)
    np.testing.assert_array_equal(out["c_ptr"], a.astype(np.float32) @ b.astype(np.float32))
