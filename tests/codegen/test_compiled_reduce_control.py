"""Compiled 1-D kernels with reductions, scans, loops, branches and atomics against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from harness import C, compile_1d, run

import triton_metal as triton
import triton_metal.language as tl

RNG = np.random.default_rng(1)


@triton.jit
def sum_kernel(x_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if OP == "sum":
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        r = tl.sum(x, axis=0)
    elif OP == "max":
        x = tl.load(x_ptr + offs, mask=mask, other=-float("inf"))
        r = tl.max(x, axis=0)
    elif OP == "argmax":
        x = tl.load(x_ptr + offs, mask=mask, other=-float("inf"))
        r = tl.argmax(x, axis=0).to(tl.float32)
    else:
        x = tl.load(x_ptr + offs, mask=mask, other=1.0)
        r = tl.reduce(x, 0, _mul)
    tl.store(out_ptr + pid, r)


@triton.jit
def _mul(a, b):
    return a * b


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
@pytest.mark.parametrize("op", ["sum", "max", "argmax", "prod"])
def test_block_reductions(op: str, num_warps: int):
    n, block = 1000, 256
    x = RNG.standard_normal(n).astype(np.float32)
    if op == "prod":
        x = (1 + RNG.standard_normal(n) * 0.01).astype(np.float32)
    k = compile_1d(sum_kernel, "*fp32", "*fp32", "i32", C(op), C(block), num_warps=num_warps)
    grid = triton.cdiv(n, block)
    out = run(k, (grid,), x_ptr=x, out_ptr=np.zeros(grid, np.float32), n=n)["out_ptr"]
    chunks = [x[i * block:(i + 1) * block] for i in range(grid)]
    want = {
        "sum": [c.astype(np.float64).sum() for c in chunks],
        "max": [c.max() for c in chunks],
        "argmax": [float(np.argmax(c)) for c in chunks],
        "prod": [np.prod(c.astype(np.float64)) for c in chunks],
    }[op]
    np.testing.assert_allclose(out, np.array(want, np.float32), rtol=1e-5, atol=1e-5)


def test_sum_uses_simd_reduction_and_threadgroup_memory_across_warps():
    k = compile_1d(sum_kernel, "*fp32", "*fp32", "i32", C("sum"), C(256), num_warps=4)
    assert "simd_sum(" in k.source
    assert k.source.count("threadgroup_barrier") == 2
    one_warp = compile_1d(sum_kernel, "*fp32", "*fp32", "i32", C("sum"), C(256), num_warps=1)
    assert "threadgroup_barrier" not in one_warp.source and "threadgroup float4" not in one_warp.source


def test_generic_combine_uses_shuffles():
    k = compile_1d(sum_kernel, "*fp32", "*fp32", "i32", C("prod"), C(256), num_warps=2)
    assert "simd_shuffle_xor(" in k.source and "simd_sum(" not in k.source


@triton.jit
def _add_max(a, b, c, d):
    return a + c, tl.maximum(b, d)


@triton.jit
def _mul_add(a, b, c, d):
    return a * c, b + d


@triton.jit
def pair_kernel(x_ptr, y_ptr, r_ptr, q_ptr, n, MUL: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0 if MUL else 0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0 if MUL else -float("inf"))
    if MUL:
        r, q = tl.reduce((x, y), 0, _mul_add)
    else:
        r, q = tl.reduce((x, y), 0, _add_max)
    tl.store(r_ptr + pid, r)
    tl.store(q_ptr + pid, q)


@pytest.mark.parametrize("mul", [False, True])
def test_two_operand_reduction(mul: bool):
    # (a + c, max(b, d)): a simd_sum and a simd_max, one exchange across SIMD groups for both;
    # a product among the results keeps the butterflies for every operand
    n, block = 1000, 256
    x = RNG.standard_normal(n).astype(np.float32)
    if mul:
        x = (1 + x * 0.01).astype(np.float32)
    y = RNG.standard_normal(n).astype(np.float32)
    k = compile_1d(pair_kernel, "*fp32", "*fp32", "*fp32", "*fp32", "i32", C(mul), C(block), num_warps=4)
    assert ("simd_sum(" in k.source and "simd_max(" in k.source) != mul
    assert ("simd_shuffle_xor(" in k.source) == mul
    assert k.source.count("threadgroup_barrier") == 2
    grid = triton.cdiv(n, block)
    out = run(k, (grid,), x_ptr=x, y_ptr=y, r_ptr=np.zeros(grid, np.float32),
              q_ptr=np.zeros(grid, np.float32), n=n)
    xs = [x[i * block:(i + 1) * block].astype(np.float64) for i in range(grid)]
    ys = [y[i * block:(i + 1) * block].astype(np.float64) for i in range(grid)]
    want_r = [np.prod(a) if mul else a.sum() for a in xs]
    want_q = [b.sum() if mul else b.max() for b in ys]
    np.testing.assert_allclose(out["r_ptr"], want_r, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["q_ptr"], want_q, rtol=1e-5, atol=1e-5)


@triton.jit
def int_sum_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr, tl.sum(x, axis=0))
    tl.store(out_ptr + 1, tl.max(x, axis=0))
    tl.store(out_ptr + 2, tl.min(x, axis=0))
    tl.store(out_ptr + 3, tl.xor_sum(x, axis=0))


@pytest.mark.parametrize("dtype,block", [("int32", 64), ("int64", 128), ("int8", 32), ("uint32", 512)])
def test_integer_reductions_small_and_wide_types(dtype: str, block: int):
    """Blocks smaller than the program (replicated layouts) and types simd_* does not take."""
    np_t = np.dtype(dtype)
    lo, hi = (-50, 50) if np_t.kind == "i" else (0, 100)
    x = RNG.integers(lo, hi, block).astype(np_t)
    name = {"int32": "i32", "int64": "i64", "int8": "i8", "uint32": "u32"}[dtype]
    k = compile_1d(int_sum_kernel, f"*{name}", f"*{name}", C(block), num_warps=4)
    out = run(k, (1,), x_ptr=x, out_ptr=np.zeros(4, np_t))["out_ptr"]
    acc = np.int64 if np_t.kind == "i" else np.uint64
    want = [x.astype(acc).sum().astype(np_t) if np_t.itemsize >= 4 else x.sum().astype(np_t),
            x.max(), x.min(), np.bitwise_xor.reduce(x)]
    np.testing.assert_array_equal(out, np.array(want, np_t))


@triton.jit
def cumsum_kernel(x_ptr, out_ptr, n, REVERSE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    if REVERSE:
        y = tl.cumsum(x, axis=0, reverse=True)
    else:
        y = tl.cumsum(x, axis=0)
    tl.store(out_ptr + offs, y, mask=mask)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("num_warps", [1, 4])
def test_cumsum(reverse: bool, num_warps: int):
    n, block = 1000, 1024
    x = RNG.integers(-100, 100, n).astype(np.int32)
    k = compile_1d(cumsum_kernel, "*i32", "*i32", "i32", C(reverse), C(block), num_warps=num_warps)
    out = run(k, (1,), x_ptr=x, out_ptr=np.zeros(n, np.int32), n=n)["out_ptr"]
    want = np.cumsum(x[::-1])[::-1] if reverse else np.cumsum(x)
    np.testing.assert_array_equal(out, want.astype(np.int32))


@triton.jit
def loop_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    ptrs = x_ptr + offs
    for start in range(0, n, BLOCK):
        mask = start + offs < n
        acc += tl.load(ptrs, mask=mask, other=0.0)
        ptrs += BLOCK
    i = 0
    total = tl.sum(acc, axis=0)
    while total > 1.0:
        total = total / 2.0
        i += 1
    if i > 3:
        acc = acc * 2.0
    else:
        acc = acc - 1.0
    tl.store(out_ptr + offs, acc)
    tl.store(out_ptr + BLOCK + tl.arange(0, 1), tl.full((1,), 0, tl.float32) + i.to(tl.float32))


@pytest.mark.parametrize("n", [100, 1000, 5000])
def test_for_while_if(n: int):
    block = 128
    x = np.abs(RNG.standard_normal(n)).astype(np.float32)
    k = compile_1d(loop_kernel, "*fp32", "*fp32", "i32", C(block))
    out = run(k, (1,), x_ptr=x, out_ptr=np.zeros(block + 1, np.float32), n=n)["out_ptr"]
    padded = np.zeros(triton.cdiv(n, block) * block, np.float32)
    padded[:n] = x
    acc = padded.reshape(-1, block).sum(axis=0, dtype=np.float64)
    total, i = acc.sum(), 0
    while total > 1.0:
        total /= 2
        i += 1
    want = acc * 2 if i > 3 else acc - 1
    np.testing.assert_allclose(out[:block], want, rtol=1e-5)
    assert out[block] == i


@triton.jit
def atomic_kernel(x_ptr, sum_ptr, max_ptr, cnt_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.atomic_add(sum_ptr + offs % 4, x, mask=mask)
    tl.atomic_max(max_ptr + offs % 3, x, mask=mask)
    old = tl.atomic_add(cnt_ptr, 1)
    tl.atomic_add(cnt_ptr + 1, old * 0 + 1)


def test_atomics():
    n, block = 1000, 128
    x = RNG.standard_normal(n).astype(np.float32)
    k = compile_1d(atomic_kernel, "*fp32", "*fp32", "*fp32", "*i32", "i32", C(block))
    grid = triton.cdiv(n, block)
    outs = run(k, (grid,), x_ptr=x, sum_ptr=np.zeros(4, np.float32), max_ptr=np.zeros(3, np.float32),
               cnt_ptr=np.zeros(2, np.int32), n=n, init_value=0.0)
    idx = np.arange(n)
    np.testing.assert_allclose(outs["sum_ptr"], [x[idx % 4 == j].sum() for j in range(4)], rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(outs["max_ptr"], [max(0.0, x[idx % 3 == j].max()) for j in range(3)])
    np.testing.assert_array_equal(outs["cnt_ptr"], [grid, grid])


def test_atomic_dtype_refused_with_a_fix():
    @triton.jit
    def bad(p, BLOCK: tl.constexpr):
        tl.atomic_add(p + tl.arange(0, BLOCK), tl.full((BLOCK,), 1, tl.int64))  # error

    from triton_metal.errors import CompilationError

    with pytest.raises(CompilationError, match="32-bit int, uint and float") as e:
        compile_1d(bad, "*i64", C(128))
    assert "hint:" in str(e.value) and "# error" in str(e.value)


@triton.jit
def swap_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    rows = tl.arange(0, BLOCK)
    a = tl.load(x_ptr + rows)
    b = tl.load(x_ptr + BLOCK + rows)
    for _ in range(n):
        a, b = b, a + b
    tl.store(out_ptr + rows, a)
    tl.store(out_ptr + BLOCK + rows, b)


@pytest.mark.parametrize("n", [0, 1, 5])
def test_loop_carried_swap(n: int):
    block = 128
    x = RNG.integers(0, 10, 2 * block).astype(np.int32)
    k = compile_1d(swap_kernel, "*i32", "*i32", "i32", C(block))
    out = run(k, (1,), x_ptr=x, out_ptr=np.zeros(2 * block, np.int32), n=n)["out_ptr"]
    a, b = x[:block].copy(), x[block:].copy()
    for _ in range(n):
        a, b = b, a + b
    np.testing.assert_array_equal(out, np.concatenate([a, b]))


def test_reduce_scratch_bytes_match_the_declared_scratch():
    from triton_metal.codegen.distribution import distribution
    from triton_metal.codegen.lower_reduce import reduce_scratch_bytes
    from triton_metal.ir.layouts import CoalescedLayout
    from triton_metal.ir.types import f32

    k = compile_1d(sum_kernel, "*fp32", "*fp32", "i32", C("sum"), C(256), num_warps=4)
    dist = distribution(CoalescedLayout((1,), (32,), (4,), (0,)), (256,), 4)
    # one partial per SIMD group: 4 floats
    assert reduce_scratch_bytes(dist, 0, [f32], 4) == 16 == k.metadata["threadgroup_memory_bytes"]


@pytest.mark.parametrize("num_warps", [16, 32])
def test_reductions_and_scans_with_many_warps(num_warps: int):
    n = 2048
    x = RNG.integers(-100, 100, n).astype(np.int32)
    k = compile_1d(cumsum_kernel, "*i32", "*i32", "i32", C(False), C(n), num_warps=num_warps)
    out = run(k, (1,), x_ptr=x, out_ptr=np.zeros(n, np.int32), n=n)["out_ptr"]
    np.testing.assert_array_equal(out, np.cumsum(x).astype(np.int32))
    xf = RNG.standard_normal(n).astype(np.float32)
    k2 = compile_1d(sum_kernel, "*fp32", "*fp32", "i32", C("max"), C(n), num_warps=num_warps)
    out2 = run(k2, (1,), x_ptr=xf, out_ptr=np.zeros(1, np.float32), n=n)["out_ptr"]
    assert out2[0] == xf.max()
