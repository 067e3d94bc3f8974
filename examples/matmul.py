"""Matrix multiplication with `tl.dot` (Triton tutorial 03).

Each program computes one `BLOCK_SIZE_M x BLOCK_SIZE_N` tile of `C = A @ B`, walking K in
`BLOCK_SIZE_K` steps and accumulating in fp32. Programs are numbered in groups of
`GROUP_SIZE_M` tile rows ("grouped ordering") so that programs running together reuse the same
tiles of A and B. An optional activation, chosen by a constexpr string, is fused into the
epilogue through a `@jit` helper.

`int8_matmul` is the same walk for int8 operands with Triton's int32 accumulator (exact, wrapping
on overflow): on simdgroup targets each dot runs on half fragments with exact float partials
(docs/dot.md, "int8").
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

import triton_metal as triton
import triton_metal.language as tl

from ._common import empty, report, strides, to_numpy


@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@triton.jit
def matmul_kernel(
        a_ptr, b_ptr, c_ptr,
        M, N, K,
        stride_am, stride_ak,
        stride_bk, stride_bn,
        stride_cm, stride_cn,
        BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
        GROUP_SIZE_M: tl.constexpr,
        ACTIVATION: tl.constexpr,
):
    # map the program id to the tile of C it computes, in grouped order
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    tl.assume(pid_m >= 0)
    tl.assume(pid_n >= 0)
    tl.assume(stride_am > 0)
    tl.assume(stride_ak > 0)
    tl.assume(stride_bn > 0)
    tl.assume(stride_bk > 0)
    tl.assume(stride_cm > 0)
    tl.assume(stride_cn > 0)

    # pointers to the first tiles of A and B; rows and columns past the edge wrap around
    # (modulo M and N) and are masked off when C is stored
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    # accumulate in fp32 whatever the input type
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        # the last K step may be partial: masked lanes read 0, which adds nothing
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    # the epilogue runs on the fp32 accumulator
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(c_ptr.dtype.element_ty)

    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


def matmul(a: Any, b: Any, activation: str = "", BLOCK_SIZE_M: int = 64, BLOCK_SIZE_N: int = 64,
           BLOCK_SIZE_K: int = 32, GROUP_SIZE_M: int = 8, num_warps: int = 4) -> Any:
    """`activation(a @ b)` for 2-D `a` (M x K) and `b` (K x N); C has `a`'s dtype."""
    assert a.shape[1] == b.shape[0], "incompatible dimensions"
    assert a.dtype == b.dtype, "a and b must have the same dtype"
    M, K = a.shape
    K, N = b.shape
    c = empty((M, N), a.dtype, like=a)
    grid = lambda META: (  # noqa: E731
        triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"]),
    )
    matmul_kernel[grid](
        a, b, c,
        M, N, K,
        *strides(a), *strides(b), *strides(c),
        BLOCK_SIZE_M=BLOCK_SIZE_M, BLOCK_SIZE_N=BLOCK_SIZE_N, BLOCK_SIZE_K=BLOCK_SIZE_K,
        GROUP_SIZE_M=GROUP_SIZE_M, ACTIVATION=activation, num_warps=num_warps,
    )
    return c


@triton.jit
def int8_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                       stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                       BLOCK_SIZE_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_n = tl.program_id(1) * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.int32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        k_left = K - k * BLOCK_SIZE_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0)
        accumulator += tl.dot(a, b)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c_ptrs = c_ptr + stride_cm * offs_m[:, None] + stride_cn * offs_n[None, :]
    tl.store(c_ptrs, accumulator, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def int8_matmul(a: Any, b: Any, BLOCK_SIZE_M: int = 32, BLOCK_SIZE_N: int = 32, BLOCK_SIZE_K: int = 32,
                num_warps: int = 4) -> Any:
    """`a @ b` for int8 `a` (M x K) and `b` (K x N), in int32 (wrapping on overflow, as Triton's
    int32 accumulator)."""
    assert a.shape[1] == b.shape[0], "incompatible dimensions"
    M, K = a.shape
    N = b.shape[1]
    c = empty((M, N), np.int32, like=a)
    grid = (triton.cdiv(M, BLOCK_SIZE_M), triton.cdiv(N, BLOCK_SIZE_N))
    int8_matmul_kernel[grid](a, b, c, M, N, K, *strides(a), *strides(b), *strides(c), BLOCK_SIZE_M=BLOCK_SIZE_M,
                             BLOCK_SIZE_N=BLOCK_SIZE_N, BLOCK_SIZE_K=BLOCK_SIZE_K, num_warps=num_warps)
    return c


def reference(a: np.ndarray, b: np.ndarray, activation: str = "") -> np.ndarray:
    c = a.astype(np.float32) @ b.astype(np.float32)
    if activation == "leaky_relu":
        c = np.where(c >= 0, c, np.float32(0.01) * c)
    return c


def main() -> int:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((200, 150)).astype(np.float16)
    b = rng.standard_normal((150, 170)).astype(np.float16)
    c = to_numpy(matmul(a, b, activation="leaky_relu")).astype(np.float32)
    ref = reference(a, b, "leaky_relu")
    # fp16 output: compare relative to the size of the result
    error = float(np.max(np.abs(c - ref)))
    return 0 if report("matmul (fp16, leaky_relu)", error, 1e-2 * float(np.max(np.abs(ref)))) else 1


if __name__ == "__main__":
    sys.exit(main())
