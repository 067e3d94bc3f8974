"""`tl.dot` kernels compiled to MSL and run on the emulator, against NumPy.

Every test goes through the whole compiler (front end, passes, layout assignment, code
generator) and runs the MSL on the emulator through `metal_kernel`, launched the way the runtime
does (`harness.run`). Inputs are small integers (or quarters) where the comparison is exact,
random normals where it is toleranced.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import mlx.core as mx
import numpy as np
import pytest
from harness import C, compile_source, run

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.codegen.target import parse_target
from triton_metal.errors import CompilationError, TritonError

RNG = np.random.default_rng(11)

SIMDGROUP, TENSOR_OPS = "apple9:3.2", "apple10:4.0"
"""The two dot paths: simdgroup matrices (MSL 3.x) and Metal 4 tensor ops (MSL 4.0, docs/dot.md)."""
TARGETS = (SIMDGROUP, TENSOR_OPS)


def path_options(target: str) -> dict[str, Any]:
    """The code generator's options for `target`'s path: on MSL 4.0 every dot with whole
    tensor-op tiles takes tensor ops, single dots too, without the cost rule (docs/dot.md, "Which
    path, by cost"; tests/passes/dot_path.ir and tests/codegen/test_dot_path.py test the rule itself)."""
    return {"target": parse_target(target), **({"dot_path": "tensor_ops"} if target == TENSOR_OPS else {})}


def tensor_forms(kernel: Any) -> tuple[int, int]:
    """How many tensor-op dots the kernel runs as single dots (`km_tensor_dot`) and as
    accumulations into a cooperative tensor a loop carries (`km_tensor_run`)."""
    return kernel.source.count("km_tensor_dot<"), kernel.source.count("km_tensor_run<")


def takes_path(kernel: Any, target: str) -> None:
    """The kernel's dots were lowered on `target`'s path (tensor ops only on MSL 4.0)."""
    if target == TENSOR_OPS:
        assert any(tensor_forms(kernel)) and "mpp::tensor_ops::matmul2d<" in kernel.header
        assert "simdgroup_multiply_accumulate(" not in kernel.source
    else:
        assert "simdgroup_multiply_accumulate(" in kernel.source  # int8 too: half fragments
        assert "matmul2d" not in kernel.header + kernel.source


_SPECS = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "int8": "i8", "int32": "i32", "float64": "fp64"}


def _spec(value: Any) -> Any:
    if isinstance(value, (bool, int)) and not isinstance(value, bool):
        return "i32"
    if isinstance(value, float):
        return "fp32"
    return "*" + _SPECS[str(value.dtype).rsplit(".", 1)[-1]] + "/16"


class Launcher:
    """`launch(fn)[grid](*args, num_warps=..., **constexprs)`: compile and run on the emulator;
    returns the written arrays by parameter name (NumPy; bfloat16 as float32)."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.names = list(inspect.signature(fn.fn).parameters)

    def __getitem__(self, grid: tuple[int, ...]) -> Any:
        def call(*args: Any, num_warps: int = 4, target: str | None = None,
                 **constexprs: Any) -> dict[str, np.ndarray]:
            values = dict(zip(self.names, args))
            specs = [C(constexprs[n]) if n in constexprs else _spec(values[n]) for n in self.names]
            opts = {} if target is None else path_options(target)
            kernel = compile_source(self.fn, *specs, num_warps=num_warps, **opts)
            if target is not None:
                takes_path(kernel, target)
            return run(kernel, grid, **values)

        return call


def launch(fn: Any) -> Launcher:
    return Launcher(fn)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, OUT_F16: tl.constexpr,
                  INT: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    if OUT_F16:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float16)
    elif INT:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a_mask = (offs_m[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_K)
        b_mask = (offs_k[:, None] < K - k * BLOCK_K) & (offs_n[None, :] < N)
        a = tl.load(a_ptrs, mask=a_mask, other=0)
        b = tl.load(b_ptrs, mask=b_mask, other=0)
        if OUT_F16:
            acc = tl.dot(a, b, acc, out_dtype=tl.float16)
        else:
            acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def bf16(x: np.ndarray) -> mx.array:
    return mx.array(x.astype(np.float32)).astype(mx.bfloat16)


def run_matmul(a, b, c, bm: int, bn: int, bk: int, num_warps: int, out_f16: bool = False,
               target: str | None = None) -> np.ndarray:
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, bm), triton.cdiv(N, bn))
    out = launch(matmul_kernel)[grid](a, b, c, M, N, K, K, 1, N, 1, N, 1, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                      OUT_F16=out_f16, INT=a.dtype == np.int8, num_warps=num_warps,
                                      target=target)
    return out["c_ptr"]


def quarters(shape: tuple[int, int]) -> np.ndarray:
    return RNG.integers(-4, 5, shape).astype(np.float32) / 4


@pytest.mark.parametrize("bm,bn,bk,num_warps", [
    (16, 16, 16, 1), (32, 32, 16, 4), (32, 32, 32, 2), (64, 32, 16, 4), (32, 64, 32, 8), (64, 64, 16, 8),
    (16, 16, 16, 4), (16, 128, 16, 4), (128, 16, 32, 8),
])
def test_matmul_fp32(bm, bn, bk, num_warps):
    M, N, K = 96, 80, 48
    a, b = quarters((M, K)), quarters((K, N))
    c = np.zeros((M, N), np.float32)
    c = run_matmul(a, b, c, bm, bn, bk, num_warps)
    np.testing.assert_array_equal(c, a @ b)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("bm,bn,bk,num_warps", [(32, 32, 32, 2)])
def test_matmul_fp32_on_both_paths(bm, bn, bk, num_warps, target):
    M, N, K = 96, 80, 48
    a, b = quarters((M, K)), quarters((K, N))
    c = np.zeros((M, N), np.float32)
    c = run_matmul(a, b, c, bm, bn, bk, num_warps, target=target)
    np.testing.assert_array_equal(c, a @ b)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("num_warps", [1, 4])
def test_matmul_fp16(num_warps, target):
    M, N, K = 64, 64, 64
    a, b = quarters((M, K)).astype(np.float16), quarters((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    c = run_matmul(a, b, c, 32, 32, 32, num_warps, target=target)
    np.testing.assert_array_equal(c.astype(np.float32), (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16))


@pytest.mark.parametrize("target", TARGETS)
def test_matmul_fp16_random_normals(target):
    M, N, K = 64, 96, 128
    a = RNG.standard_normal((M, K)).astype(np.float16)
    b = RNG.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    c = run_matmul(a, b, c, 32, 32, 32, 4, target=target)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("target,bk", [(SIMDGROUP, 16), (TENSOR_OPS, 32)])
def test_matmul_bf16(target, bk):
    M, N, K = 64, 64, 32
    a, b = quarters((M, K)), quarters((K, N))
    c = mx.zeros((M, N), mx.bfloat16)
    out = run_matmul(bf16(a), bf16(b), c, 32, 32, bk, 4, target=target)
    np.testing.assert_array_equal(out, (a @ b).astype(np.float32))


@pytest.mark.parametrize("target,bk", [(SIMDGROUP, 16), (TENSOR_OPS, 32)])
def test_matmul_out_dtype_fp16(target, bk):
    M, N, K = 32, 32, 64
    a, b = quarters((M, K)).astype(np.float16), quarters((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    c = run_matmul(a, b, c, 32, 32, bk, 4, out_f16=True, target=target)
    np.testing.assert_array_equal(c, (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("num_warps", [2, 4])
def test_matmul_int8(num_warps, target):
    M, N, K = 64, 32, 96
    a = RNG.integers(-128, 128, (M, K)).astype(np.int8)
    b = RNG.integers(-128, 128, (K, N)).astype(np.int8)
    c = np.zeros((M, N), np.int32)
    c = run_matmul(a, b, c, 32, 32, 32, num_warps, target=target)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))


@pytest.mark.parametrize("target,bk", [(SIMDGROUP, 16), (TENSOR_OPS, 32)])
def test_masked_tails_in_m_n_and_k(target, bk):
    M, N, K = 37, 45, 53  # K tail in the last step; partial tiles in M and N
    a, b = quarters((M, K)), quarters((K, N))
    c = np.full((M, N), 7.0, np.float32)
    c = run_matmul(a, b, c, 32, 32, bk, 4, target=target)
    np.testing.assert_array_equal(c, a @ b)


@triton.jit
def dot_acc_kernel(a_ptr, b_ptr, c_ptr, out_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
    c = tl.load(c_ptr + rm[:, None] * BN + rn[None, :])
    d = tl.dot(a, b, acc=c)
    tl.store(out_ptr + rm[:, None] * BN + rn[None, :], d)


@pytest.mark.parametrize("bm,bn,bk,num_warps,target", [
    (16, 32, 16, 1, None), (32, 16, 64, 2, None), (64, 64, 32, 4, SIMDGROUP), (32, 32, 32, 4, TENSOR_OPS),
    (16, 32, 64, 1, TENSOR_OPS),
])
def test_dot_with_acc_argument(bm, bn, bk, num_warps, target):
    a, b = quarters((bm, bk)), quarters((bk, bn))
    c = RNG.integers(-8, 9, (bm, bn)).astype(np.float32)
    out = np.zeros((bm, bn), np.float32)
    out = launch(dot_acc_kernel)[(1,)](a, b, c, out, BM=bm, BN=bn, BK=bk, num_warps=num_warps,
                                       target=target)["out_ptr"]
    np.testing.assert_array_equal(out, a @ b + c)


@pytest.mark.parametrize("target", TARGETS)
def test_dot_with_fp16_acc_argument(target):
    # `tl.dot(a, b, acc=c)` with a float16 `c` and no out_dtype accumulates in float16 (Triton's
    # rule): a float partial of half fragments, rounded to half once and added in half, or a half
    # destination of matmul2d. Quarters keep every partial sum exact in half, so any order of
    # additions gives NumPy's answer.
    a, b = quarters((32, 32)).astype(np.float16), quarters((32, 32)).astype(np.float16)
    c = RNG.integers(-8, 9, (32, 32)).astype(np.float16)
    out = np.zeros((32, 32), np.float16)
    out = launch(dot_acc_kernel)[(1,)](a, b, c, out, BM=32, BN=32, BK=32, target=target)["out_ptr"]
    np.testing.assert_array_equal(out, a.astype(np.float64) @ b.astype(np.float64) + c)


@triton.jit
def dot_transposed_kernel(a_ptr, b_ptr, out_ptr, S: tl.constexpr):
    r = tl.arange(0, S)
    offs = r[:, None] * S + r[None, :]
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    d = tl.dot(a, tl.trans(b))  # a @ b.T, as attention computes q @ k.T
    e = tl.dot(tl.trans(a), d.to(a.dtype))  # a.T @ (a @ b.T)
    tl.store(out_ptr + offs, e)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("num_warps", [1, 4])
def test_dot_of_transposed_operands(num_warps, target):
    a, b = quarters((32, 32)).astype(np.float16), quarters((32, 32)).astype(np.float16)
    out = launch(dot_transposed_kernel)[(1,)](a, b, np.zeros((32, 32), np.float32), S=32,
                                              num_warps=num_warps, target=target)["out_ptr"]
    a32, b32 = a.astype(np.float64), b.astype(np.float64)
    d = (a32 @ b32.T).astype(np.float16).astype(np.float64)
    np.testing.assert_array_equal(out, a32.T @ d)


@triton.jit
def dot_precision_kernel(a_ptr, b_ptr, out_ptr, S: tl.constexpr, PRECISION: tl.constexpr):
    r = tl.arange(0, S)
    offs = r[:, None] * S + r[None, :]
    d = tl.dot(tl.load(a_ptr + offs), tl.load(b_ptr + offs), input_precision=PRECISION)
    tl.store(out_ptr + offs, d)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("precision", ["ieee", "tf32", "bf16x3"])
def test_fp32_dot_is_full_precision(precision, target):
    # tf32 would keep 10 mantissa bits (errors near 1e-3 here), bf16x3 about 16 (near 1e-5);
    # Apple GPUs compute in fp32
    # (the tensor-op path runs with relaxed_precision off)
    a = RNG.standard_normal((32, 32)).astype(np.float32)
    b = RNG.standard_normal((32, 32)).astype(np.float32)
    out = launch(dot_precision_kernel)[(1,)](a, b, np.zeros_like(a), S=32, PRECISION=precision,
                                             target=target)["out_ptr"]
    np.testing.assert_allclose(out, a.astype(np.float64) @ b.astype(np.float64), rtol=0, atol=2e-5)


def test_mismatched_operand_dtypes_are_refused():
    a = np.zeros((16, 16), np.float16)
    b = np.zeros((16, 16), np.float32)
    c = np.zeros((16, 16), np.float32)
    out = np.zeros((16, 16), np.float32)
    with pytest.raises(CompilationError, match="one dtype") as info:
        launch(dot_acc_kernel)[(1,)](a, b, c, out, BM=16, BN=16, BK=16)
    assert "d = tl.dot(a, b, acc=c)" in str(info.value)


def test_fp64_operands_are_refused():
    a = np.zeros((16, 16), np.float64)
    out = np.zeros((16, 16), np.float64)
    with pytest.raises(CompilationError, match="float64") as info:
        launch(dot_acc_kernel)[(1,)](a, a, out, out, BM=16, BN=16, BK=16)
    assert "d = tl.dot(a, b, acc=c)" in str(info.value)


@triton.jit
def batched_dot_kernel(a_ptr, b_ptr, out_ptr, B: tl.constexpr, S: tl.constexpr):
    rb, rs = tl.arange(0, B), tl.arange(0, S)
    offs = rb[:, None, None] * S * S + rs[None, :, None] * S + rs[None, None, :]
    d = tl.dot(tl.load(a_ptr + offs), tl.load(b_ptr + offs))
    tl.store(out_ptr + offs, d)


@pytest.mark.parametrize("target", TARGETS)
def test_batched_3d_dot_on_8_warps(target):
    # each batch element's operands come out of a cross-warp reduction; on tensor ops the
    # conversions after them are bypassed, and the second reduction reuses the first one's bytes
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 32, 32)).astype(np.float16)
    b = rng.standard_normal((2, 32, 32)).astype(np.float16)
    out = launch(batched_dot_kernel)[(1,)](a, b, np.zeros((2, 32, 32), np.float32), B=2, S=32, num_warps=8,
                                           target=target)["out_ptr"]
    np.testing.assert_allclose(out, np.matmul(a.astype(np.float64), b.astype(np.float64)), rtol=1e-5, atol=1e-4)


def test_batched_3d_dot_past_the_unroll_limit_is_refused_clearly():
    # 32 batch elements of 16 x 16 x 16: past both the product form and the per-batch unrolling
    a = np.zeros((32, 16, 16), np.float32)
    with pytest.raises(CompilationError, match="3-D") as info:
        launch(batched_dot_kernel)[(1,)](a, a, a.copy(), B=32, S=16)
    assert "d = tl.dot(" in str(info.value) and "2-D" in str(info.value)


def test_staging_larger_than_threadgroup_memory_is_refused():
    a, b = quarters((128, 128)), quarters((128, 128))
    c = np.zeros((128, 128), np.float32)
    # 128x128 fp32 operands are 64 KiB each: staging cannot fit
    with pytest.raises(TritonError, match="32768") as info:
        launch(dot_acc_kernel)[(1,)](a, b, c, c.copy(), BM=128, BN=128, BK=128, num_warps=4)
    assert re.search("[Rr]educ|smaller", str(info.value))


@pytest.mark.parametrize("activation,bm,bn,bk,group,num_warps,target", [
    ("", 32, 32, 32, 4, 4, None), ("leaky_relu", 64, 32, 16, 8, 4, None), ("leaky_relu", 16, 64, 32, 2, 2, None),
    ("leaky_relu", 16, 64, 32, 2, 2, TENSOR_OPS),
])
def test_examples_matmul_grouped_ordering(activation, bm, bn, bk, group, num_warps, target):
    from examples import matmul as ex

    M, K, N = 200, 150, 170
    a = RNG.standard_normal((M, K)).astype(np.float16)
    b = RNG.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    out = launch(ex.matmul_kernel)[grid](
        a, b, c, M, N, K, K, 1, N, 1, N, 1, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
        GROUP_SIZE_M=group, ACTIVATION=activation, num_warps=num_warps, target=target)["c_ptr"]
    ref = ex.reference(a, b, activation)
    # fp16 output: one rounding of an exactly accumulated fp32 value (plus summation order)
    np.testing.assert_allclose(out.astype(np.float32), ref, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim,block_m,block_n,num_warps,dtype,target", [
    (32, 32, 32, 4, "float16", None), (64, 32, 16, 2, "float16", None), (16, 16, 16, 1, "float16", None),
    (32, 32, 16, 4, "bfloat16", None), (32, 32, 32, 4, "float16", TENSOR_OPS), (32, 32, 32, 2, "bfloat16", TENSOR_OPS),
])
def test_examples_flash_attention(causal, head_dim, block_m, block_n, num_warps, dtype, target):
    from examples import flash_attention as ex

    Z, H, N_CTX = 1, 2, 64
    shape = (Z, H, N_CTX, head_dim)
    q, k, v = (RNG.standard_normal(shape).astype(np.float16) for _ in range(3))
    st = [x // 2 for x in q.strides]  # element strides (2-byte elements)
    o = np.zeros(shape, np.float16)
    m = np.zeros((Z, H, N_CTX), np.float32)
    if dtype == "bfloat16":
        q, k, v, o = (bf16(x) for x in (q, k, v, o))
        q32, k32, v32 = (np.array(x.astype(mx.float32)) for x in (q, k, v))
    else:
        q32, k32, v32 = q, k, v
    grid = (triton.cdiv(N_CTX, block_m), Z * H, 1)
    out = launch(ex._attn_fwd)[grid](
        q, k, v, 0.5, m, o, *st, *st, *st, *st, H, N_CTX,
        HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, STAGE=3 if causal else 1, num_warps=num_warps,
        target=target)
    o_ref, m_ref = ex.reference(q32, k32, v32, causal, 0.5)
    # p is rounded to the input type before the second dot: bf16 keeps 8 bits
    atol = 1e-2 if dtype == "float16" else 4e-2
    np.testing.assert_allclose(out["Out"].astype(np.float32), o_ref, atol=atol, rtol=0)
    np.testing.assert_allclose(out["M"], m_ref, atol=1e-3, rtol=0)


def test_matmul_msl_uses_fragments_and_threadgroup_staging():
    kernel = compile_source(matmul_kernel, "*fp16/16", "*fp16/16", "*fp32/16", "i32", "i32", "i32", "i32", "i32",
                            "i32", "i32", "i32", "i32", C(32), C(32), C(32), C(False), C(False), num_warps=4)
    body = kernel.source
    # 2x2 SIMD groups over a 32x32 tile: each has 2x2 accumulator fragments, 4 K steps of 8
    assert body.count("simdgroup_multiply_accumulate(") == 16
    assert "simdgroup_matrix<half, 8, 8>" in body and "simdgroup_matrix<float, 8, 8>" in body
    # operands go through threadgroup memory between barriers
    assert re.search(r"\(threadgroup half\*\)", body)
    assert "threadgroup_barrier(mem_flags::mem_threadgroup)" in body
    # the fp32 accumulator stays in registers (as fragment elements) across the K loop: inside the
    # loop only the fp16 operands go through threadgroup memory
    loop = _loop_body(body)
    assert loop.count("simdgroup_multiply_accumulate(") == 16
    assert "(threadgroup half*)" in loop and "threadgroup float" not in loop
    assert "(threadgroup float*)" in body[body.index(loop) + len(loop):]  # converted for the store after


def _loop_body(text: str) -> str:
    """The text of the first `for` loop's body (braces matched)."""
    start = text.index("{", re.search(r"\bfor \(", text).start())
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i + 1]
    raise AssertionError("unbalanced braces")


@pytest.mark.parametrize("dtype,acc", [("fp16", "fp32"), ("bf16", "fp32"), ("fp32", "fp32"), ("i8", "i32")])
def test_msl_of_each_target(dtype, acc):
    # apple10:4.0 compiles every dot with whole tensor-op tiles to matmul2d; apple9:3.2 to
    # simdgroup matrices (int8: half fragments, float partials); a tile that is no whole tensor-op tile
    # (K = 16) keeps the simdgroup path on apple10:4.0 too
    specs = (f"*{dtype}/16", f"*{dtype}/16", f"*{acc}/16", *["i32"] * 9)
    flags = (C(dtype == "fp16" and False), C(dtype == "i8"))
    for target, bk, expected in ((SIMDGROUP, 32, SIMDGROUP), (TENSOR_OPS, 32, TENSOR_OPS), (TENSOR_OPS, 16, SIMDGROUP)):
        kernel = compile_source(matmul_kernel, *specs, C(32), C(32), C(bk), *flags, num_warps=4,
                                target=parse_target(target))
        takes_path(kernel, expected)
        assert f"compiled for {target}" in kernel.header
        if expected == TENSOR_OPS:
            assert "#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>" in kernel.header
            assert "mode::multiply_accumulate" in kernel.header and "execution_simdgroups<SimdGroups>" in kernel.header
            assert "get_destination_cooperative_tensor" in kernel.header
            # `acc += tl.dot(a, b)` in the K loop: the accumulator is the op's cooperative
            # tensor from before the loop to after it, the loop runs the op only
            body = kernel.source
            loop = _loop_body(body)
            before, after = body[:body.index(loop)], body[body.index(loop) + len(loop):]
            assert tensor_forms(kernel) == (0, 1)
            assert re.search(r"km_tensor_run<32, 32, 32, 32, 4>\(\(+threadgroup \w+\*\)", loop)
            assert re.search(r"auto km_\d+ = km_tensor_acc<32, 32, 32, 32, 4, \w+>\(", before)
            assert "km_tensor_load<32, 32>(" in before and "km_tensor_store<32, 32>(" in after
            # the operands are staged once, double-buffered: one barrier per K step
            assert loop.count("threadgroup_barrier(") == 1
            assert "km_tensor_load" not in loop and "km_tensor_store" not in loop


def test_tensor_op_dot_falls_back_past_8_warps_and_for_partial_tiles():
    # the op's scope is the whole threadgroup: 16 warps keep the simdgroup path, as does an N
    # that is no multiple of 32 (a 32 x 16 tile)
    specs = ("*fp16/16", "*fp16/16", "*fp32/16", *["i32"] * 9)
    target = parse_target(TENSOR_OPS)
    for bm, bn, warps, expected in ((32, 64, 16, SIMDGROUP), (32, 64, 8, TENSOR_OPS), (32, 16, 4, SIMDGROUP)):
        kernel = compile_source(matmul_kernel, *specs, C(bm), C(bn), C(32), C(False), C(False),
                                num_warps=warps, target=target)
        takes_path(kernel, expected)
