"""`tl.dot_scaled` on the emulator and in the interpreter against a float64 reference built here
from the formats' definitions: e2m1 (two per byte), e4m3, e5m2, bf16 and fp16 operands, e8m0
scales (one per 32 elements along K), the accumulator carried over a K loop, out_dtype,
fast_math, packing along M or N, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest
from test_fp8 import MODELS

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError

E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
E2M1 = np.concatenate([E2M1, -E2M1])
"""The 16 e2m1 values by code: sign bit 3, exponent bits 2-1 (bias 1), mantissa bit 0."""
FP8_MODEL = {"e4m3": MODELS["e4nv"], "e5m2": MODELS["e5"]}


@triton.jit
def scaled_matmul(a_ptr, sa_ptr, b_ptr, sb_ptr, c_ptr, K,
                  M: tl.constexpr, N: tl.constexpr, BLOCK_K: tl.constexpr, FA: tl.constexpr, FB: tl.constexpr,
                  SCALED: tl.constexpr, FAST: tl.constexpr, PACK_B_ALONG_K: tl.constexpr, OUT: tl.constexpr):
    # the bytes of e2m1 operands hold two values: A along K, B along K or along N
    DA: tl.constexpr = 2 if FA == "e2m1" else 1
    DBK: tl.constexpr = 2 if FB == "e2m1" and PACK_B_ALONG_K else 1
    DBN: tl.constexpr = 2 if FB == "e2m1" and not PACK_B_ALONG_K else 1
    rm = tl.arange(0, M)
    rn = tl.arange(0, N // DBN)
    rs = tl.arange(0, N)
    acc = tl.full((M, N), 1.0, OUT)
    for k0 in range(0, K, BLOCK_K):
        ka = k0 // DA + tl.arange(0, BLOCK_K // DA)
        kb = k0 // DBK + tl.arange(0, BLOCK_K // DBK)
        ks = k0 // 32 + tl.arange(0, BLOCK_K // 32)
        a = tl.load(a_ptr + rm[:, None] * (K // DA) + ka[None, :])
        b = tl.load(b_ptr + kb[:, None] * (N // DBN) + rn[None, :])
        if SCALED:
            sa = tl.load(sa_ptr + rm[:, None] * (K // 32) + ks[None, :])
            sb = tl.load(sb_ptr + rs[:, None] * (K // 32) + ks[None, :])
            acc = tl.dot_scaled(a, sa, FA, b, sb, FB, acc, fast_math=FAST, rhs_k_pack=PACK_B_ALONG_K, out_dtype=OUT)
        else:
            acc = tl.dot_scaled(a, None, FA, b, None, FB, acc, fast_math=FAST, rhs_k_pack=PACK_B_ALONG_K,
                                out_dtype=OUT)
    tl.store(c_ptr + rm[:, None] * N + rs[None, :], acc)


def _operand(fmt: str, rows: int, cols: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(the array the kernel loads, its float64 values [rows, cols]); e2m1 packed along cols."""
    if fmt == "e2m1":
        codes = rng.integers(0, 16, (rows, cols))
        packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
        return packed, E2M1[codes]
    if fmt in FP8_MODEL:
        values = FP8_MODEL[fmt].values()
        finite = np.flatnonzero(np.isfinite(values)).astype(np.uint8)
        codes = rng.choice(finite, (rows, cols))
        return codes, values[codes]
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float16 if fmt == "fp16" else np.float32)
    if fmt == "fp16":
        return x.view(np.uint16), x.astype(np.float64)
    bits = (x.view(np.uint32) >> 16).astype(np.uint16)
    return bits, (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def _scale_values(codes: np.ndarray) -> np.ndarray:
    """e8m0: 2^(code - 127), 255 is NaN; repeated over the 32 elements along K each covers."""
    values = np.where(codes == 255, np.nan, np.exp2(codes.astype(np.float64) - 127))
    return np.repeat(values, 32, axis=1)


def _run(fa: str, fb: str, *, k: int = 128, scaled: bool = True, fast: bool = False, pack_b_along_k: bool = True,
         out: tl.dtype = tl.float32, seed: int = 0, scale_fix: tuple[int, int] | None = None, m: int = 32,
         n: int = 32, block_k: int = 64, warps: int = 4) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kernel result, float64 reference, float64 bound on the accumulation error)."""
    rng = np.random.default_rng(seed)
    a, av = _operand(fa, m, k, rng)
    if fb == "e2m1" and not pack_b_along_k:
        b, bv = _operand(fb, k, n, rng)  # packed along N (its columns)
    else:
        bt, btv = _operand(fb, n, k, rng)  # packed along K: make it as B^T, then transpose
        b, bv = np.ascontiguousarray(bt.T), btv.T  # e2m1: byte (j, n) holds k = 2j, 2j + 1
    sa = rng.integers(118, 137, (m, k // 32)).astype(np.uint8)
    sb = rng.integers(118, 137, (n, k // 32)).astype(np.uint8)
    if scale_fix is not None:
        sa[scale_fix] = 255
    if scaled:
        av, bv = av * _scale_values(sa), bv * _scale_values(sb).T
    ref = 1.0 + av @ bv
    bound = 4 * k * 2.0 ** -24 * (1.0 + np.abs(av) @ np.abs(bv))
    np_out = {tl.float32: np.float32, tl.float16: np.float16}[out]
    c = np.zeros((m, n), np_out)
    sa_arg, sb_arg = (sa, sb) if scaled else (np.zeros(1, np.uint8), np.zeros(1, np.uint8))
    scaled_matmul[(1,)](_typed(a, fa), sa_arg, _typed(b, fb), sb_arg, c, k, M=m, N=n, BLOCK_K=block_k, FA=fa, FB=fb,
                        SCALED=scaled, FAST=fast, PACK_B_ALONG_K=pack_b_along_k, OUT=out, num_warps=warps)
    return c.astype(np.float64), ref, bound


def _typed(x: np.ndarray, fmt: str) -> object:
    """fp16 operands as float16 blocks and e4m3 ones as fp8 blocks (the others as raw bits):
    both ways Triton accepts."""
    if fmt == "fp16":
        return x.view(np.float16)
    if fmt == "e4m3":
        return triton.reinterpret(x, tl.float8e4nv)
    return x


@pytest.mark.parametrize("fa, fb", [("e2m1", "e2m1"), ("e4m3", "e4m3"), ("e5m2", "e5m2"), ("e2m1", "e4m3"),
                                    ("e5m2", "bf16"), ("fp16", "e2m1")])
def test_matches_float64(each_backend: str, fa: str, fb: str):
    got, ref, bound = _run(fa, fb)
    assert np.all(np.abs(got - ref) <= bound), np.max(np.abs(got - ref) - bound)


def test_unscaled_operands_under_fast_math(each_backend: str):
    got, ref, bound = _run("e2m1", "e5m2", scaled=False, fast=True, seed=3)
    assert np.all(np.abs(got - ref) <= bound)


def test_rhs_packed_along_n_and_float16_result(each_backend: str):
    got, ref, bound = _run("e4m3", "e2m1", scaled=False, pack_b_along_k=False, out=tl.float16, seed=4)
    # the accumulator is rounded to half after each of the two K blocks: a half ulp of at most
    # the sum of the products' magnitudes (the bound's scale) each time
    assert np.all(np.abs(got - ref) <= bound * (1 + 2.0 ** -11 / (4 * 128 * 2.0 ** -24)))


def test_scale_255_is_nan(each_backend: str):
    got, ref, _ = _run("e2m1", "e2m1", scale_fix=(5, 1), seed=5)
    assert np.all(np.isnan(got[5])) and not np.isnan(np.delete(got, 5, axis=0)).any()
    assert np.isnan(ref[5]).all()


@triton.jit
def bad_scaled(a_ptr, s_ptr, out_ptr, FMT: tl.constexpr, SCALE_ROWS: tl.constexpr, PACK: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :])
    s = tl.load(s_ptr + tl.arange(0, SCALE_ROWS)[:, None] + tl.arange(0, 1)[None, :])
    c = tl.dot_scaled(a, s, FMT, a, s, "e4m3", lhs_k_pack=PACK)  # error
    tl.store(out_ptr + tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :], c)


@pytest.mark.parametrize("fmt, rows, pack, message", [
    ("e3m3", 32, True, "NYI: lhs_format e3m3"),
    ("e4m3", 16, True, r"lhs_scale must be uint8 or int8 \(e8m0 bits\) of shape \[32, 1\]"),
    ("e4m3", 32, False, "only mxfp4 inputs can be packed along a dimension different than K"),
    ("e2m1", 32, True, "Reduction dimension should pack the same number of elements"),
])
def test_refusals_name_the_line(each_backend: str, fmt: str, rows: int, pack: bool, message: str):
    a = np.zeros((32, 32), np.uint8)
    with pytest.raises(CompilationError, match=message) as info:
        bad_scaled[(1,)](a, np.zeros(32, np.uint8), np.zeros((32, 32), np.float32), FMT=fmt, SCALE_ROWS=rows,
                         PACK=pack)
    assert "tl.dot_scaled(a, s, FMT" in str(info.value)


@triton.jit
def fp8_dot(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    tl.store(c_ptr + r[:, None] * N + r[None, :], tl.dot(a, b))


@pytest.mark.parametrize("fa, fb", [("e4nv", "e5"), ("e4b8", "e5b16")])
def test_tl_dot_of_fp8_operands(each_backend: str, fa: str, fb: str):
    rng = np.random.default_rng(6)
    ma, mb = MODELS[fa], MODELS[fb]
    a = rng.choice(np.flatnonzero(np.isfinite(ma.values())).astype(np.uint8), (32, 32))
    b = rng.choice(np.flatnonzero(np.isfinite(mb.values())).astype(np.uint8), (32, 32))
    c = np.zeros((32, 32), np.float32)
    fp8_dot[(1,)](triton.reinterpret(a, ma.dtype), triton.reinterpret(b, mb.dtype), c, N=32)
    av, bv = ma.values()[a], mb.values()[b]
    assert np.all(np.abs(c - av @ bv) <= 4 * 32 * 2.0 ** -24 * (np.abs(av) @ np.abs(bv)))


@triton.jit
def lhs_along_m(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # A's bytes pack rows 2i (low nibble) and 2i + 1 (high): [M // 2, K]
    a = tl.load(a_ptr + tl.arange(0, M // 2)[:, None] * K + tl.arange(0, K)[None, :])
    b = tl.load(b_ptr + tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :])
    c = tl.dot_scaled(a, None, "e2m1", b, None, "e5m2", lhs_k_pack=False)
    tl.store(c_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


def test_lhs_packed_along_m(each_backend: str):
    rng = np.random.default_rng(7)
    at, atv = _operand("e2m1", 32, 32, rng)  # A^T packed along its columns = A's rows
    b, bv = _operand("e5m2", 32, 32, rng)
    c = np.zeros((32, 32), np.float32)
    lhs_along_m[(1,)](np.ascontiguousarray(at.T), b, c, M=32, N=32, K=32)
    av = atv.T
    assert np.all(np.abs(c - av @ bv) <= 4 * 32 * 2.0 ** -24 * (np.abs(av) @ np.abs(bv)))


@triton.jit
def batched_scaled(a_ptr, sa_ptr, b_ptr, sb_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                   K: tl.constexpr, FA: tl.constexpr, FB: tl.constexpr, PACK_B_ALONG_K: tl.constexpr):
    # 3-D blocks: batch b of A is [M, K] (e2m1: two per byte along K), of B [K, N] packed along
    # K or N; scales [B, M, K // 32] and [B, N, K // 32]
    DA: tl.constexpr = 2 if FA == "e2m1" else 1
    DBK: tl.constexpr = 2 if FB == "e2m1" and PACK_B_ALONG_K else 1
    DBN: tl.constexpr = 2 if FB == "e2m1" and not PACK_B_ALONG_K else 1
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rs = tl.arange(0, N)[None, :, None]
    ks = tl.arange(0, K // 32)[None, None, :]
    a = tl.load(a_ptr + rb * (M * (K // DA)) + rm * (K // DA) + tl.arange(0, K // DA)[None, None, :])
    b = tl.load(b_ptr + rb * ((K // DBK) * (N // DBN)) + tl.arange(0, K // DBK)[None, :, None] * (N // DBN)
                + tl.arange(0, N // DBN)[None, None, :])
    sa = tl.load(sa_ptr + rb * (M * (K // 32)) + rm * (K // 32) + ks)
    sb = tl.load(sb_ptr + rb * (N * (K // 32)) + rs * (K // 32) + ks)
    acc = tl.full((B, M, N), 1.0, tl.float32)
    c = tl.dot_scaled(a, sa, FA, b, sb, FB, acc, rhs_k_pack=PACK_B_ALONG_K)
    tl.store(c_ptr + rb * (M * N) + rm * N + tl.arange(0, N)[None, None, :], c)


@pytest.mark.parametrize("fa, fb, pack_b_along_k", [("e2m1", "e4m3", True), ("e5m2", "e2m1", False)])
def test_batched_3d_blocks(each_backend: str, fa: str, fb: str, pack_b_along_k: bool):
    # every batch element against its own float64 product (two batch elements of 32 x 32 x 64:
    # one 2-D dot per batch element when compiled)
    nb, m, n, k = 2, 32, 32, 64
    rng = np.random.default_rng(8)
    parts = []
    for _ in range(nb):
        a, av = _operand(fa, m, k, rng)
        if pack_b_along_k:
            bt, btv = _operand(fb, n, k, rng)
            b, bv = np.ascontiguousarray(bt.T), btv.T
        else:
            b, bv = _operand(fb, k, n, rng)
        sa = rng.integers(118, 137, (m, k // 32)).astype(np.uint8)
        sb = rng.integers(118, 137, (n, k // 32)).astype(np.uint8)
        parts.append((a, b, sa, sb, av * _scale_values(sa), bv * _scale_values(sb).T))
    a, b, sa, sb = (np.stack([p[i] for p in parts]) for i in range(4))
    c = np.zeros((nb, m, n), np.float32)
    batched_scaled[(1,)](_typed(a, fa), sa, _typed(b, fb), sb, c, B=nb, M=m, N=n, K=k, FA=fa, FB=fb,
                         PACK_B_ALONG_K=pack_b_along_k)
    for i, (*_, av, bv) in enumerate(parts):
        bound = 4 * k * 2.0 ** -24 * (1.0 + np.abs(av) @ np.abs(bv))
        assert np.all(np.abs(c[i] - (1.0 + av @ bv)) <= bound), i


@triton.jit
def mixed_rank_scaled(a_ptr, b_ptr, c_ptr):
    a = tl.load(a_ptr + tl.arange(0, 2)[:, None, None] * 1024 + tl.arange(0, 32)[None, :, None] * 32
                + tl.arange(0, 32)[None, None, :])
    b = tl.load(b_ptr + tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :])
    c = tl.dot_scaled(a, None, "e4m3", b, None, "e4m3")  # error
    tl.store(c_ptr + tl.arange(0, 32)[:, None] * 32 + tl.arange(0, 32)[None, :], tl.sum(c, 0))


def test_mixed_ranks_are_refused(each_backend: str):
    with pytest.raises(CompilationError, match=r"Both inputs must be either 2D or 3D") as info:
        mixed_rank_scaled[(1,)](np.zeros(2048, np.uint8), np.zeros(1024, np.uint8), np.zeros((32, 32), np.float32))
    assert "tl.dot_scaled(a, None" in str(info.value)


@triton.jit
def int8_scaled(a_ptr, b_ptr, sb_ptr, c_ptr, s, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # lhs scales: one code for the whole block, made as Triton's test_matmul makes a constant
    # scale (`tl.full` of the code cast to int8); rhs scales loaded as int8
    rm, rn, rk, ks = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K), tl.arange(0, K // 32)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    sa = tl.full((M, K // 32), s.to(tl.int8), dtype=tl.int8)
    sb = tl.load(sb_ptr + rn[:, None] * (K // 32) + ks[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot_scaled(a, sa, "e5m2", b, sb, "e4m3"))


@pytest.mark.parametrize("code", [128, 120])
def test_int8_scales_hold_e8m0_bits(each_backend: str, code: int):
    # int8 scales are the same 8 bits as uint8 ones (Triton's interpreter reads either): code 128
    # arrives as -128 and still scales by 2; codes above 127 on the right too
    m, n, k = 32, 32, 64
    rng = np.random.default_rng(9 + code)
    a, av = _operand("e5m2", m, k, rng)
    bt, btv = _operand("e4m3", n, k, rng)
    sb = rng.integers(120, 136, (n, k // 32)).astype(np.uint8)
    c = np.zeros((m, n), np.float32)
    int8_scaled[(1,)](a, np.ascontiguousarray(bt.T), sb.view(np.int8), c, code, M=m, N=n, K=k)
    av, bv = av * 2.0 ** (code - 127), btv.T * _scale_values(sb).T
    assert np.all(np.abs(c - av @ bv) <= 4 * k * 2.0 ** -24 * (np.abs(av) @ np.abs(bv)))


@triton.jit
def nvfp4_scaled(a_ptr, sa_ptr, b_ptr, sb_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                 GROUP: tl.constexpr):
    # e2m1 A packed along K, B packed along N; float8e4nv scales, one per GROUP elements along K
    rm, rn, ks = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K // GROUP)
    a = tl.load(a_ptr + rm[:, None] * (K // 2) + tl.arange(0, K // 2)[None, :])
    b = tl.load(b_ptr + tl.arange(0, K)[:, None] * (N // 2) + tl.arange(0, N // 2)[None, :])
    sa = tl.load(sa_ptr + rm[:, None] * (K // GROUP) + ks[None, :])
    sb = tl.load(sb_ptr + rn[:, None] * (K // GROUP) + ks[None, :])
    c = tl.dot_scaled(a, sa, "e2m1", b, sb, "e2m1", rhs_k_pack=False)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


def _nvfp4_run(group: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    m, n, k = 32, 32, 64
    rng = np.random.default_rng(seed)
    a, av = _operand("e2m1", m, k, rng)
    b, bv = _operand("e2m1", k, n, rng)  # packed along N
    e4m3 = FP8_MODEL["e4m3"].values()
    finite = np.flatnonzero(np.isfinite(e4m3)).astype(np.uint8)  # negative and subnormal scales too
    sa, sb = rng.choice(finite, (m, k // group)), rng.choice(finite, (n, k // group))
    c = np.zeros((m, n), np.float32)
    nvfp4_scaled[(1,)](a, triton.reinterpret(sa, tl.float8e4nv), b, triton.reinterpret(sb, tl.float8e4nv), c,
                       M=m, N=n, K=k, GROUP=group)
    av, bv = av * np.repeat(e4m3[sa], group, axis=1), bv * np.repeat(e4m3[sb], group, axis=1).T
    return c, av, bv


@pytest.mark.parametrize("seed", [10, 11])
def test_nvfp4_float8e4nv_scales_per_16(each_backend: str, seed: int):
    # NVFP4 (Triton's test_block_scale_fp4 "nvfp4"): e2m1 values times e4m3 scales, one per 16
    c, av, bv = _nvfp4_run(16, seed)
    assert np.all(np.abs(c - av @ bv) <= 4 * 64 * 2.0 ** -24 * (np.abs(av) @ np.abs(bv)))


def test_nvfp4_group_of_8_is_refused(each_backend: str):
    message = r"lhs_scale of float8e4nv \(NVFP4\) must be of shape \[32, 4\] or \[32, 2\], got \[32, 8\]"
    with pytest.raises(CompilationError, match=message) as info:
        _nvfp4_run(8, 12)
    assert "tl.dot_scaled(a, sa" in str(info.value)


def test_float8e4nv_scales_need_e2m1(each_backend: str):
    # float8e4nv scales are NVFP4's: with an e4m3 operand they are refused, not read as e8m0
    with pytest.raises(CompilationError, match=r"lhs_scale of float8e4nv \(NVFP4\) needs an e2m1 lhs, not e4m3"):
        bad_scaled[(1,)](np.zeros((32, 32), np.uint8), triton.reinterpret(np.zeros(32, np.uint8), tl.float8e4nv),
                         np.zeros((32, 32), np.float32), FMT="e4m3", SCALE_ROWS=32, PACK=True)


# -- the compiled form: operands staged as loaded, dequantized into the fragments ----------------


def test_tiles_stage_the_loaded_bytes_and_scales(monkeypatch):
    # a 32 x 32 tile with K steps of 64 (e2m1 x e4m3, e8m0 scales) on simdgroup matrices: one
    # tt.dot_scaled whose K step writes the bytes as loaded (A: 32 rows of 32 bytes of e2m1 pairs;
    # B: 64 x 32 e4m3 bytes) and the scale bytes (2 per row of A and per column of B), behind one
    # barrier, and reads them behind a second; the fragments hold bfloat16 values
    monkeypatch.setenv("TRITON_METAL_TARGET", "apple9:3.2")
    m = n = 32
    k_step = 64
    rng = np.random.default_rng(6)
    a, _ = _operand("e2m1", m, 128, rng)
    b = np.ascontiguousarray(_operand("e4m3", n, 128, rng)[0].T)
    scales = np.full((m, 4), 127, np.uint8)
    compiled = scaled_matmul.warmup(a, scales, _typed(b, "e4m3"), scales, np.zeros((m, n), np.float32), 128,
                                    M=m, N=n, BLOCK_K=k_step, FA="e2m1", FB="e4m3", SCALED=True, FAST=False,
                                    PACK_B_ALONG_K=True, OUT=tl.float32, grid=(1,))
    [report] = compiled.msl.metadata["dot_reports"]
    assert report["dtypes"] == "e2m1 x e4m3 -> f32" and report["shape"] == (m, n, k_step)
    assert report["fragments"] == "bfloat x bfloat -> float" and report["in_loop"]
    assert report["barriers_per_k_step"] == 2
    assert report["threadgroup_bytes_per_k_step"] == m * k_step // 2 + k_step * n + (m + n) * k_step // 32
    # every K step of 8 reads one A fragment per row block and one B fragment per column block
    assert report["fragment_products"] == (k_step // 8) * report["fragments_per_simdgroup"]


@pytest.mark.parametrize("fa, fb, pack_b_along_k", [("e2m1", "e4m3", True), ("e5m2", "bf16", True),
                                                    ("fp16", "e2m1", True), ("e4m3", "e2m1", False)])
def test_a_k_loop_carries_its_accumulator_on_input_cooperative_tensors(monkeypatch, fa: str, fb: str,
                                                                       pack_b_along_k: bool):
    # on apple10:4.0, a 32 x 32 tile on 4 SIMD groups is one 16 x 16 block a SIMD group: each
    # runs its own op (execution_simdgroup), its accumulator carried across the loop, its left
    # and right input cooperative tensors filled from the staged bytes, each element dequantized
    # on the way in (docs/fp8.md): two barriers a K step as the fragments take, and threadgroup
    # memory for the bytes as loaded alone. Against float64, with the scales, a NaN scale and
    # fast math's infinite one
    monkeypatch.setenv("TRITON_METAL_TARGET", "apple10:4.0")
    got, ref, bound = _run(fa, fb, pack_b_along_k=pack_b_along_k, seed=7)
    assert np.all(np.abs(got - ref) <= bound), np.max(np.abs(got - ref) - bound)
    got, ref, _ = _run(fa, fb, pack_b_along_k=pack_b_along_k, scale_fix=(3, 2), seed=8)
    assert np.isnan(got[3]).all() and not np.isnan(np.delete(got, 3, axis=0)).any()
    report, src, raw = _carried_report(fa, fb, pack_b_along_k, 32, 4)
    assert report["barriers_per_k_step"] == 2
    assert report["threadgroup_bytes_per_k_step"] == raw
    assert src.count("km_sg_run<16, 16>(") == 1 and "km_tensor_run" not in src
    assert (report["warps"], report["warp_tile"], report["input_tensors"]) == ((2, 2), (16, 16), (16, 16))
    assert "simdgroup_multiply_accumulate" not in src
    # the fragments stay on apple9:3.2 and for a dot that no loop carries
    monkeypatch.setenv("TRITON_METAL_TARGET", "apple9:3.2")
    got, ref, bound = _run(fa, fb, pack_b_along_k=pack_b_along_k, seed=7)
    assert np.all(np.abs(got - ref) <= bound)


@pytest.mark.parametrize("fa, fb", [("e2m1", "e4m3"), ("fp16", "e2m1")])
def test_a_tile_of_other_blocks_dequantizes_into_tiles_for_one_op(monkeypatch, fa: str, fb: str):
    # 32 x 32 on 8 SIMD groups is no whole number of 16 x 16 blocks a SIMD group: the operands
    # are dequantized into bfloat16 tiles (float32 with fp16) for one op over the tile
    # (execution_simdgroups<8>), at the same two barriers a K step and the tiles' bytes besides
    monkeypatch.setenv("TRITON_METAL_TARGET", "apple10:4.0")
    got, ref, bound = _run(fa, fb, seed=7, warps=8)
    assert np.all(np.abs(got - ref) <= bound), np.max(np.abs(got - ref) - bound)
    report, src, raw = _carried_report(fa, fb, True, 32, 8)
    compute = 4 if "fp16" in (fa, fb) else 2
    assert report["barriers_per_k_step"] == 2
    assert report["threadgroup_bytes_per_k_step"] == raw + 2 * 32 * 64 * compute
    assert src.count("km_tensor_run<32, 32, 64, 32, 8>") == 1 and "km_sg_run" not in src
    assert (report["warps"], report["warp_tile"], report["input_tensors"]) == ((8, 1), (32, 32), None)


@pytest.mark.parametrize("warps, grid, runs", [(4, (2, 2), 1), (2, (1, 2), 2), (1, (1, 1), 4)])
def test_mx_tiles_with_k_steps_of_128_take_tensor_ops(monkeypatch, warps: int, grid: tuple[int, int], runs: int):
    # a 64 x 64 tile with K steps of 128, which the dequantized tiles could not hold (two
    # bfloat16 tiles of K = 128 beside the staged bytes): on input cooperative tensors, 32 x 32
    # blocks, K in 4 parts. On 2 SIMD groups (side by side along N) each holds 2 x 1 blocks (two
    # accumulators, two left inputs and one right a part, two runs); on 1, 2 x 2 blocks
    monkeypatch.setenv("TRITON_METAL_TARGET", "apple10:4.0")
    got, ref, bound = _run("e2m1", "e2m1", k=256, m=64, n=64, block_k=128, seed=12, warps=warps)
    assert np.all(np.abs(got - ref) <= bound), np.max(np.abs(got - ref) - bound)
    report, src, raw = _carried_report("e2m1", "e2m1", True, 64, warps, block_k=128)
    assert (report["path"], report["shape"]) == ("tensor_ops", (64, 64, 128))
    assert report["barriers_per_k_step"] == 2 and report["threadgroup_bytes_per_k_step"] == raw
    assert src.count("km_sg_run<32, 32>(") == runs and src.count("= km_sg_acc<32, 32, bfloat, float>()") == runs
    region = (64 // grid[0], 64 // grid[1])
    assert (report["warps"], report["warp_tile"], report["input_tensors"]) == (grid, region, (32, 32))


def test_a_k_step_too_large_to_stage_whole_goes_in_two_chunks(monkeypatch):
    # e4m3 x e5m2 at 128 x 128 x 128 with both scales: a K step as loaded is 33,792 bytes, over
    # threadgroup memory; on input cooperative tensors it is staged 64 of K at a time (two
    # barriers a chunk), where before it kept the fragments
    monkeypatch.setenv("TRITON_METAL_TARGET", "apple10:4.0")
    got, ref, bound = _run("e4m3", "e5m2", k=256, m=128, n=128, block_k=128, seed=15)
    assert np.all(np.abs(got - ref) <= bound), np.max(np.abs(got - ref) - bound)
    report, src, raw = _carried_report("e4m3", "e5m2", True, 128, 4, block_k=128)
    assert raw > 32768 and report["threadgroup_bytes_per_k_step"] == raw
    assert (report["path"], report["barriers_per_k_step"], report["input_tensors"]) == ("tensor_ops", 4, (32, 32))
    assert src.count("km_sg_run<32, 32>(") == 2 * 4  # four blocks a SIMD group, in each chunk's loop


def test_a_tile_of_more_than_four_blocks_a_simdgroup_says_why_it_keeps_fragments(monkeypatch):
    # 128 x 256 on 4 SIMD groups would be eight 32 x 32 blocks each (eight accumulators): the
    # report names that and the dequantized tiles' staging
    monkeypatch.setenv("TRITON_METAL_TARGET", "apple10:4.0")
    rng = np.random.default_rng(16)
    a = _operand("e2m1", 128, 256, rng)[0]
    b = np.ascontiguousarray(_operand("e5m2", 256, 256, rng)[0].T)
    sa, sb = np.full((128, 8), 127, np.uint8), np.full((256, 8), 127, np.uint8)
    compiled = scaled_matmul.warmup(a, sa, b, sb, np.zeros((128, 256), np.float32), 256, M=128, N=256, BLOCK_K=128,
                                    FA="e2m1", FB="e5m2", SCALED=True, FAST=False, PACK_B_ALONG_K=True,
                                    OUT=tl.float32, grid=(1,), num_warps=4)
    [report] = compiled.msl.metadata["dot_reports"]
    assert report["path"] == "simdgroup"
    assert report["path_reason"].startswith("tl.dot_scaled on simdgroup matrices: no split into at most 4 blocks of "
                                            "16 or 32 a SIMD group (input cooperative tensors), and for dequantized "
                                            "tiles its staging (")


@triton.jit
def scaled_gemm_onto_c(a_ptr, sa_ptr, b_ptr, sb_ptr, c_ptr, K, M: tl.constexpr, N: tl.constexpr, BK: tl.constexpr):
    # C += A @ B, e2m1 x e4m3 with e8m0 scales, the accumulator starting from C's loaded values
    rm, rn = tl.arange(0, M), tl.arange(0, N)
    acc = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    for k0 in range(0, K, BK):
        ka, kb, ks = k0 // 2 + tl.arange(0, BK // 2), k0 + tl.arange(0, BK), k0 // 32 + tl.arange(0, BK // 32)
        a = tl.load(a_ptr + rm[:, None] * (K // 2) + ka[None, :])
        b = tl.load(b_ptr + kb[:, None] * N + rn[None, :])
        sa = tl.load(sa_ptr + rm[:, None] * (K // 32) + ks[None, :])
        sb = tl.load(sb_ptr + rn[:, None] * (K // 32) + ks[None, :])
        acc = tl.dot_scaled(a, sa, "e2m1", b, sb, "e4m3", acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@pytest.mark.parametrize("warps, grid", [(4, (2, 2)), (8, (2, 4))])
@pytest.mark.parametrize("tested", [False, True])
def test_a_128_by_128_accumulator_goes_through_threadgroup_memory_a_block_at_a_time(monkeypatch, tmp_path,
                                                                                   warps: int,
                                                                                   grid: tuple[int, int],
                                                                                   tested: bool):
    # a 128 x 128 float32 accumulator (64 KiB) does not fit in threadgroup memory whole: before
    # and after the loop it goes through a tile of one 32 x 32 block a SIMD group at a time (a
    # round a block, its registers' places in it known from their coordinates' register bits).
    # `tested`: every register's block tested at run time instead, as where a lane's or a SIMD
    # group's coordinate bits reach the block index. C starts from loaded values, against float64
    from triton_metal.codegen import lower_tensor_dot_scaled

    monkeypatch.setenv("TRITON_METAL_TARGET", "apple10:4.0")
    if tested:  # (compiled afresh: the caches do not know the patched code generator)
        monkeypatch.setattr(lower_tensor_dot_scaled.SimdgroupBlocks, "place", lambda self, dist, reg: None)
        monkeypatch.setenv("TRITON_METAL_CACHE_DIR", str(tmp_path))
        monkeypatch.setattr(scaled_gemm_onto_c, "cache", type(scaled_gemm_onto_c.cache)())
    m = n = k = 128
    rng = np.random.default_rng(14)
    a, av = _operand("e2m1", m, k, rng)
    bt, btv = _operand("e4m3", n, k, rng)
    sa, sb = (rng.integers(120, 134, (r, k // 32)).astype(np.uint8) for r in (m, n))
    c = rng.standard_normal((m, n)).astype(np.float32)
    av, bv = av * _scale_values(sa), (btv * _scale_values(sb)).T
    want = c + av @ bv
    args = (a, sa, np.ascontiguousarray(bt.T), sb, c, k)
    compiled = scaled_gemm_onto_c.warmup(*args, M=m, N=n, BK=64, num_warps=warps, grid=(1,))
    scaled_gemm_onto_c[(1,)](*args, M=m, N=n, BK=64, num_warps=warps)
    bound = 4 * k * 2.0 ** -24 * (np.abs(c) + np.abs(av) @ np.abs(bv))
    assert np.all(np.abs(c - want) <= bound), np.max(np.abs(c - want) - bound)
    [report] = compiled.msl.metadata["dot_reports"]
    assert (report["path"], report["warps"], report["input_tensors"]) == ("tensor_ops", grid, (32, 32))
    src = compiled.msl.source
    compact = f"<{32 * grid[0]}, {32 * grid[1]}>("
    rounds = 128 * 128 // (32 * 32 * warps)
    assert src.count("km_sg_load" + compact) == rounds and src.count("km_sg_store" + compact) == rounds
    assert ("if (((" in src) == tested


def _carried_report(fa: str, fb: str, pack_b_along_k: bool, size: int, warps: int,
                    block_k: int = 64) -> tuple[dict, str, int]:
    """The carried dot's report and the MSL of a size x size tile (K 256, steps of block_k) on
    `warps` SIMD groups, and the bytes of a K step as loaded."""
    rng = np.random.default_rng(9)
    a = _operand(fa, size, 256, rng)[0]
    b = _operand(fb, 256, size, rng)[0] if not pack_b_along_k else np.ascontiguousarray(_operand(fb, size, 256, rng)[0].T)
    scales = np.full((size, 8), 127, np.uint8)
    compiled = scaled_matmul.warmup(_typed(a, fa), scales, _typed(b, fb), scales, np.zeros((size, size), np.float32),
                                    256, M=size, N=size, BLOCK_K=block_k, FA=fa, FB=fb, SCALED=True, FAST=False,
                                    PACK_B_ALONG_K=pack_b_along_k, OUT=tl.float32, grid=(1,), num_warps=warps)
    [report] = compiled.msl.metadata["dot_reports"]
    assert (report["path"], report["form"]) == ("tensor_ops", "carried")
    assert report["dtypes"] == f"{fa} x {fb} -> f32" and report["shape"] == (size, size, block_k)
    assert report["path_reason"] == "the K loop carries its accumulator: tensor ops"
    # as loaded: the operands' K step, and a scale byte per 32 of K a row of A and a column of B
    raw = sum(x.itemsize * x.size * block_k // 256 for x in (a, b)) + 2 * size * block_k // 32
    return report, compiled.msl.source, raw


def test_a_scaled_dot_no_loop_carries_keeps_its_fragments(monkeypatch):
    monkeypatch.setenv("TRITON_METAL_TARGET", "apple10:4.0")
    rng = np.random.default_rng(10)
    m = n = k = 32
    a, av = _operand("e4m3", m, k, rng)
    bt, btv = _operand("e5m2", n, k, rng)
    sa, sb = (rng.integers(120, 134, (r, 1)).astype(np.uint8) for r in (m, n))
    c = np.zeros((m, n), np.float32)
    compiled = one_scaled_dot.warmup(_typed(a, "e4m3"), sa, np.ascontiguousarray(bt.T), sb, c, M=m, N=n, K=k,
                                     grid=(1,))
    [report] = compiled.msl.metadata["dot_reports"]
    assert report["path"] == "simdgroup"
    assert report["path_reason"] == ("tl.dot_scaled on simdgroup matrices: tensor ops take only a K loop's carried "
                                     "accumulator")
    one_scaled_dot[(1,)](_typed(a, "e4m3"), sa, np.ascontiguousarray(bt.T), sb, c, M=m, N=n, K=k)
    ref = (av * _scale_values(sa)[:, :k]) @ (btv * _scale_values(sb)[:, :k]).T
    np.testing.assert_allclose(c, ref, rtol=1e-6, atol=1e-6 * np.abs(ref).max())


@triton.jit
def one_scaled_dot(a_ptr, sa_ptr, b_ptr, sb_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk, rs = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K), tl.arange(0, K // 32)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    sa = tl.load(sa_ptr + rm[:, None] * (K // 32) + rs[None, :])
    sb = tl.load(sb_ptr + rn[:, None] * (K // 32) + rs[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot_scaled(a, sa, "e4m3", b, sb, "e5m2"))


def test_operands_larger_than_threadgroup_memory_go_in_k_chunks(each_backend: str):
    # 64 x 128 x 256 e4m3 x e5m2: 48 KiB of operand bytes, more than threadgroup memory holds, so
    # the dot stages K in two chunks of 128 (each thread writes the registers of a chunk, tested
    # where its layout spreads K over the threads); the values stay the float64 products'
    m, n, k = 64, 128, 256
    rng = np.random.default_rng(7)
    a, av = _operand("e4m3", m, k, rng)
    bt, btv = _operand("e5m2", n, k, rng)
    sa = rng.integers(118, 137, (m, k // 32)).astype(np.uint8)
    sb = rng.integers(118, 137, (n, k // 32)).astype(np.uint8)
    av, bv = av * _scale_values(sa), btv.T * _scale_values(sb).T
    c = np.zeros((m, n), np.float32)
    args = (_typed(a, "e4m3"), sa, np.ascontiguousarray(bt.T), sb, c)
    one_scaled_dot[(1,)](*args, M=m, N=n, K=k)
    assert np.all(np.abs(c - av @ bv) <= 4 * k * 2.0 ** -24 * (np.abs(av) @ np.abs(bv)))
    if each_backend == "emulator":
        [report] = one_scaled_dot.warmup(*args, M=m, N=n, K=k, grid=(1,)).msl.metadata["dot_reports"]
        assert report["barriers_per_k_step"] == 4  # two chunks, each behind its writes and before the next
        assert report["threadgroup_bytes_per_k_step"] == m * k + k * n + (m + n) * k // 32


@triton.jit
def bf16_block_scaled(a_ptr, sa_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # A as a bfloat16 block (bitcast from its bits), B e2m1 packed along N, no B scales
    rm, rn, rk, rs = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K), tl.arange(0, K // 32)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :]).to(tl.bfloat16, bitcast=True)
    b = tl.load(b_ptr + rk[:, None] * (N // 2) + tl.arange(0, N // 2)[None, :])
    sa = tl.load(sa_ptr + rm[:, None] * (K // 32) + rs[None, :])
    c = tl.dot_scaled(a, sa, "bf16", b, None, "e2m1", rhs_k_pack=False)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@pytest.mark.parametrize("m, n", [(128, 16), (16, 32)])
def test_bfloat16_blocks_and_narrow_tiles(each_backend: str, m: int, n: int):
    # tiles narrower than the 4 warps' fragments (SIMD groups holding copies) on the compiled path
    k = 64
    rng = np.random.default_rng(8)
    a, av = _operand("bf16", m, k, rng)
    b, bv = _operand("e2m1", k, n, rng)  # packed along N
    sa = rng.integers(118, 137, (m, k // 32)).astype(np.uint8)
    av = av * _scale_values(sa)
    c = np.zeros((m, n), np.float32)
    bf16_block_scaled[(1,)](a, sa, b, c, M=m, N=n, K=k)
    assert np.all(np.abs(c - av @ bv) <= 4 * k * 2.0 ** -24 * (np.abs(av) @ np.abs(bv)))
