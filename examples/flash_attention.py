"""Fused attention forward, FlashAttention-2 style (Triton tutorial 06, with plain pointers).

One program owns `BLOCK_M` query rows of one (batch, head). It streams over the keys and values
in blocks of `BLOCK_N`, keeping a running row maximum `m_i`, a running normaliser `l_i` and an
unnormalised output `acc`, so the full attention matrix never exists. Scores are scaled by
`sm_scale * log2(e)` and exponentiated with `exp2`.

`STAGE` selects the causal scheme: 1 is non-causal (every key block); 3 is causal, done as two
passes over the key blocks, the blocks strictly left of the diagonal without a mask and then the
diagonal block with one. The kernel also writes `M`, each row's log-sum-exp in base 2, which a
backward pass would need.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

import triton_metal as triton
import triton_metal.language as tl

from ._common import empty, report, strides, to_numpy


@triton.jit
def _attn_fwd_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, start_m, qk_scale,
                    BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr,
                    STAGE: tl.constexpr, offs_m, offs_n, N_CTX):
    # the range of keys this pass covers
    if STAGE == 1:
        # causal, left of the diagonal
        lo, hi = 0, start_m * BLOCK_M
    elif STAGE == 2:
        # causal, the diagonal block
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
        lo = tl.multiple_of(lo, BLOCK_M)
    else:
        # non-causal: everything
        lo, hi = 0, N_CTX
    k_ptrs += lo * stride_kn
    v_ptrs += lo * stride_vn
    for start_n in tl.range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        # scores for this block of keys
        k = tl.load(k_ptrs)
        qk = tl.dot(q, k)
        if STAGE == 2:
            mask = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tl.where(mask, 0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        l_ij = tl.sum(p, 1)
        # rescale what was accumulated under the old maximum
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(v_ptrs)
        p = p.to(v.dtype)
        acc = tl.dot(p, v, acc)
        m_i = m_ij
        k_ptrs += BLOCK_N * stride_kn
        v_ptrs += BLOCK_N * stride_vn
    return acc, l_i, m_i


@triton.jit
def _attn_fwd(Q, K, V, sm_scale, M, Out,
              stride_qz, stride_qh, stride_qm, stride_qk,
              stride_kz, stride_kh, stride_kn, stride_kk,
              stride_vz, stride_vh, stride_vn, stride_vk,
              stride_oz, stride_oh, stride_om, stride_ok,
              H, N_CTX,
              HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              STAGE: tl.constexpr):
    tl.static_assert(BLOCK_N <= HEAD_DIM)
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    # 64-bit offsets: batch * heads * sequence * head_dim can pass 2**31
    q_offset = off_z.to(tl.int64) * stride_qz + off_h.to(tl.int64) * stride_qh
    k_offset = off_z.to(tl.int64) * stride_kz + off_h.to(tl.int64) * stride_kh
    v_offset = off_z.to(tl.int64) * stride_vz + off_h.to(tl.int64) * stride_vh
    o_offset = off_z.to(tl.int64) * stride_oz + off_h.to(tl.int64) * stride_oh

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = Q + q_offset + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qk
    # K is read transposed: a HEAD_DIM x BLOCK_N tile
    k_ptrs = K + k_offset + offs_d[:, None] * stride_kk + offs_n[None, :] * stride_kn
    v_ptrs = V + v_offset + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vk
    o_ptrs = Out + o_offset + offs_m[:, None] * stride_om + offs_d[None, :] * stride_ok

    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    # fold log2(e) into the scale so exp2 can stand in for exp
    qk_scale = sm_scale * 1.44269504
    q = tl.load(q_ptrs)
    # STAGE 1 (non-causal) runs the inner loop once over everything (its STAGE 3); STAGE 3
    # (causal) runs it left of the diagonal (STAGE 1) and then on the diagonal (STAGE 2)
    if STAGE & 1:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn,
                                        start_m, qk_scale, BLOCK_M, HEAD_DIM, BLOCK_N,
                                        4 - STAGE, offs_m, offs_n, N_CTX)
    if STAGE & 2:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn,
                                        start_m, qk_scale, BLOCK_M, HEAD_DIM, BLOCK_N,
                                        2, offs_m, offs_n, N_CTX)
    # epilogue
    m_i += tl.math.log2(l_i)
    acc = acc / l_i[:, None]
    tl.store(M + off_hz * N_CTX + offs_m, m_i)
    tl.store(o_ptrs, acc.to(Out.dtype.element_ty))


def attention(q: Any, k: Any, v: Any, causal: bool, sm_scale: float,
              BLOCK_M: int = 32, BLOCK_N: int = 32, num_warps: int = 4) -> tuple[Any, Any]:
    """`(out, M)` for q, k, v of shape (Z, H, N_CTX, HEAD_DIM); N_CTX a multiple of the blocks."""
    Z, H, N_CTX, HEAD_DIM = q.shape
    assert k.shape == q.shape and v.shape == q.shape
    assert HEAD_DIM in (16, 32, 64, 128), "HEAD_DIM must be 16, 32, 64 or 128"
    assert N_CTX % BLOCK_M == 0 and N_CTX % BLOCK_N == 0, "N_CTX must be a multiple of the blocks"
    o = empty(q.shape, q.dtype, like=q)
    M = empty((Z, H, N_CTX), np.float32, like=q)
    stage = 3 if causal else 1
    grid = (triton.cdiv(N_CTX, BLOCK_M), Z * H, 1)
    _attn_fwd[grid](
        q, k, v, sm_scale, M, o,
        *strides(q), *strides(k), *strides(v), *strides(o),
        H, N_CTX,
        HEAD_DIM=HEAD_DIM, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, STAGE=stage, num_warps=num_warps,
    )
    return o, M


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool, sm_scale: float):
    """Plain softmax attention in fp32, and the base-2 log-sum-exp of each row's scores."""
    q32, k32, v32 = (a.astype(np.float32) for a in (q, k, v))
    scores = np.einsum("zhmd,zhnd->zhmn", q32, k32) * np.float32(sm_scale)
    if causal:
        n = q.shape[2]
        scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
    row_max = scores.max(axis=-1, keepdims=True)
    p = np.exp(scores - row_max)
    denom = p.sum(axis=-1, keepdims=True)
    out = np.einsum("zhmn,zhnd->zhmd", p / denom, v32)
    lse2 = (row_max[..., 0] + np.log(denom[..., 0])) / np.float32(math.log(2))
    return out, lse2


def main() -> int:
    rng = np.random.default_rng(0)
    Z, H, N_CTX, HEAD_DIM = 1, 2, 128, 32
    shape = (Z, H, N_CTX, HEAD_DIM)
    q, k, v = (rng.standard_normal(shape).astype(np.float16) for _ in range(3))
    sm_scale = 0.5
    ok = True
    for causal in (False, True):
        o, M = attention(q, k, v, causal, sm_scale)
        o_ref, m_ref = reference(q, k, v, causal, sm_scale)
        error = max(
            float(np.max(np.abs(to_numpy(o).astype(np.float32) - o_ref))),
            float(np.max(np.abs(to_numpy(M) - m_ref))),
        )
        ok &= report(f"flash_attention (fp16, causal={causal})", error, 1e-2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
