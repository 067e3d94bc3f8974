"""Differential tests: kernels using many builtins run compiled (MSL on the emulator) and in the
NumPy interpreter on the same inputs; the outputs must agree (exactly for integers, to a few
ulps for float math)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from harness import C, compile_source, run

import triton_metal.language as tl
from triton_metal.backends.interpreter import launch
from triton_metal.language import JITCallable

RNG = np.random.default_rng(9)


def interpret(fn: Any, grid: tuple[int, ...], **args: Any) -> dict[str, np.ndarray]:
    copies = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    g = tuple(grid) + (1,) * (3 - len(grid))
    launch(JITCallable(fn), (g[0], g[1], g[2]), copies)
    return {k: v for k, v in copies.items() if isinstance(v, np.ndarray)}


def float_mix(x_ptr, i_ptr, out_ptr, seed, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    i = tl.load(i_ptr + r)
    a = (tl.argmax(x, 0) + tl.argmin(x, 0)).to(tl.float32)
    cp = tl.cumprod(tl.minimum(tl.abs(x), 1.5) + 0.25, 0)
    fl = tl.flip(x, 0)
    cl = tl.clamp(x, -0.5, 0.5)
    sm = tl.softmax(x)
    rn = tl.rand(seed, r)
    fd = tl.fdiv(x, x + 3.0) + tl.div_rn(x, 7.0)
    h = x.to(tl.float16, fp_downcast_rounding="rtz").to(tl.float32) + x.to(tl.bfloat16).to(tl.float32)
    e = tl.exp2(x) + tl.log2(tl.abs(x) + 1.0) + tl.sqrt_rn(tl.abs(x)) + tl.erf(x)
    mn = tl.minimum(x, fl, propagate_nan=tl.PropagateNan.ALL) + tl.maximum(x, 0.0)
    bits = (x.to(tl.int32, bitcast=True) & 0xFF).to(tl.float32)
    q = tl.umulhi(i.to(tl.uint32), (i * 7).to(tl.uint32)).to(tl.float32)
    out = a + cp + fl + cl + sm + rn + fd + h + e + mn + bits + q
    tl.store(out_ptr + r, out)


def int_mix(i_ptr, j_ptr, out_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    i = tl.load(i_ptr + r)
    j = tl.load(j_ptr + r)
    xs = tl.xor_sum(i, 0)
    ro = tl.reduce_or(i, 0)
    cs = tl.cumsum(j, 0)
    d = i // j + i % j + (i >> 3) + (i << 2) + (i.to(tl.uint32) >> 29).to(tl.int32)
    w = tl.where(i > j, i - j, j - i)
    m = tl.maximum(i, j) * tl.minimum(i, j)
    s = tl.sum(tl.broadcast_to(i[None, :], (4, N)), axis=0)
    tl.store(out_ptr + r, xs + ro + cs + d + w + m + s + r % 3)


@pytest.mark.parametrize("num_warps", [1, 4])
def test_float_builtins_agree(num_warps: int):
    n = 64
    x = (RNG.standard_normal(n) * 2).astype(np.float32)
    i = RNG.integers(1, 1000, n).astype(np.int32)
    want = interpret(float_mix, (1,), x_ptr=x, i_ptr=i, out_ptr=np.zeros(n, np.float32), seed=77, N=n)["out_ptr"]
    k = compile_source(JITCallable(float_mix), "*fp32", "*i32", "*fp32", "i32", C(n), num_warps=num_warps)
    got = run(k, (1,), x_ptr=x, i_ptr=i, out_ptr=np.zeros(n, np.float32), seed=77)["out_ptr"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("num_warps", [1, 2, 8])
def test_integer_builtins_agree(num_warps: int):
    n = 128
    i = RNG.integers(-5000, 5000, n).astype(np.int32)
    j = RNG.integers(-30, 30, n).astype(np.int32)
    j[::5] = 0
    want = interpret(int_mix, (1,), i_ptr=i, j_ptr=j, out_ptr=np.zeros(n, np.int32), N=n)["out_ptr"]
    k = compile_source(JITCallable(int_mix), "*i32", "*i32", "*i32", C(n), num_warps=num_warps)
    got = run(k, (1,), i_ptr=i, j_ptr=j, out_ptr=np.zeros(n, np.int32))["out_ptr"]
    np.testing.assert_array_equal(got, want)


def test_rtz_narrowing_matches_the_interpreter():
    def rtz(x_ptr, h_ptr, b_ptr, N: tl.constexpr):
        r = tl.arange(0, N)
        x = tl.load(x_ptr + r)
        tl.store(h_ptr + r, x.to(tl.float16, fp_downcast_rounding="rtz"))
        tl.store(b_ptr + r, x.to(tl.bfloat16, fp_downcast_rounding="rtz").to(tl.float32))

    n = 256
    x = (RNG.standard_normal(n) * 1000).astype(np.float32)
    x[:4] = [70000.0, -70000.0, 1e-6, -3e-8]
    want = interpret(rtz, (1,), x_ptr=x, h_ptr=np.zeros(n, np.float16), b_ptr=np.zeros(n, np.float32), N=n)
    k = compile_source(JITCallable(rtz), "*fp32", "*fp16", "*fp32", C(n))
    got = run(k, (1,), x_ptr=x, h_ptr=np.zeros(n, np.float16), b_ptr=np.zeros(n, np.float32))
    np.testing.assert_array_equal(got["h_ptr"], want["h_ptr"])
    np.testing.assert_array_equal(got["b_ptr"], want["b_ptr"])
    assert np.all(np.abs(got["h_ptr"].astype(np.float32)) <= np.abs(x))


def tile_mix(x_ptr, i_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    i = tl.load(i_ptr + rm[:, None] * N + rn[None, :])
    am0 = tl.argmax(x, 0).to(tl.float32)
    am1 = tl.argmin(x, 1).to(tl.float32)
    mx1 = tl.max(x, 1)
    cs0 = tl.cumsum(i, 0)
    cs1 = tl.cumsum(i, 1, reverse=True)
    sx = tl.sum(x * x, 0)
    y = x - mx1[:, None] + am0[None, :] + am1[:, None] + sx[None, :] + (cs0 + cs1).to(tl.float32)
    acc = tl.zeros((M, N), dtype=tl.float32)
    k = 0
    while k < 3:
        if k % 2 == 0:
            acc += tl.trans(tl.trans(y))
        else:
            acc -= y * 0.5
        k += 1
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc)


@pytest.mark.parametrize("shape", [(8, 16), (16, 64), (4, 8), (32, 32)])
@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_tile_reductions_scans_and_control_flow_agree(shape: tuple[int, int], num_warps: int):
    m, n = shape
    x = RNG.standard_normal((m, n)).astype(np.float32)
    i = RNG.integers(-100, 100, (m, n)).astype(np.int32)
    want = interpret(tile_mix, (1,), x_ptr=x, i_ptr=i, out_ptr=np.zeros((m, n), np.float32), M=m, N=n)["out_ptr"]
    k = compile_source(JITCallable(tile_mix), "*fp32", "*i32", "*fp32", C(m), C(n), num_warps=num_warps)
    got = run(k, (1,), x_ptr=x, i_ptr=i, out_ptr=np.zeros((m, n), np.float32))["out_ptr"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def atomic_mix(x_ptr, cnt_ptr, hist_ptr, idx_ptr, out_ptr, N: tl.constexpr, BINS: tl.constexpr):
    pid = tl.program_id(0)
    r = tl.arange(0, N)
    x = tl.load(x_ptr + pid * N + r)
    b = (tl.abs(x) * 4).to(tl.int32) % BINS
    tl.atomic_add(hist_ptr + b, 1)
    h = tl.histogram(b, BINS)
    ticket = tl.atomic_add(cnt_ptr, 1)
    g = tl.gather(x, tl.load(idx_ptr + r), 0)
    tl.store(out_ptr + pid * N + r, g + h.to(tl.float32).sum() * 0.0 + (ticket >= 0).to(tl.float32))


@pytest.mark.parametrize("num_warps", [1, 4])
def test_atomics_histogram_gather_agree(num_warps: int):
    n, bins, grid = 64, 16, 5
    x = RNG.standard_normal(grid * n).astype(np.float32)
    idx = RNG.integers(0, n, n).astype(np.int32)
    args = dict(x_ptr=x, cnt_ptr=np.zeros(1, np.int32), hist_ptr=np.zeros(bins, np.int32), idx_ptr=idx,
                out_ptr=np.zeros(grid * n, np.float32))
    want = interpret(atomic_mix, (grid,), **args, N=n, BINS=bins)
    k = compile_source(JITCallable(atomic_mix), "*fp32", "*i32", "*i32", "*i32", "*fp32", C(n), C(bins),
                       num_warps=num_warps)
    got = run(k, (grid,), **args)
    for name in ("cnt_ptr", "hist_ptr", "out_ptr"):
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
