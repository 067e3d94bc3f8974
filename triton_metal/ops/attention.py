"""`scaled_dot_product_attention` (as `mx.fast.scaled_dot_product_attention`), forward and backward.

Shapes: `q (B, Hq, Lq, D)`, `k` and `v (B, Hkv, Lkv, D)` with `Hq` a multiple of `Hkv` (grouped-
query attention: query head `h` reads key/value head `h // (Hq // Hkv)`), `D` in 64, 80, 96, 128
(padded to a power of two inside the kernels and masked). `mask`: None, "causal" (aligned to the
bottom right, as MLX: query `i` sees keys `j <= i + Lkv - Lq`), or an array broadcastable to
`(B, Hq, Lq, Lkv)`, additive (float) or boolean (False hides the key); it gets no gradient.

Kernels (scores in float32, softmax online in natural-log space, `lse` kept per query row; the
mask kind is a run-time argument, a uniform branch, so one compiled variant per dtype and padded
head dimension serves every mask):
* prefill (`Lq > 1`): FlashAttention-2, one program per (block of `BLOCK_M` queries, batch x
  query head), streaming key/value blocks of `BLOCK_N` through `tl.dot`; causal programs stop at
  their last visible key block.
* decode (`Lq == 1`): flash-decoding. Pass 1, one program per (split of `SPLIT` keys, batch x
  kv head), or two or four neighbouring ones sharing the group's query heads (`HSPLIT`), reads
  its keys and values once for its query heads, with elementwise products and row sums (a
  1-row `tl.dot` would waste 15 of 16 rows) and an online
  softmax per key slot (each slot's `ROWS` keys of a step in its thread), and writes each
  head's normalised partial output and log-sum-exp (where `Lkv` is a multiple of `SPLIT` and the
  group at most 8 heads, every split is whole steps and its loads take no row mask:
  `_whole_steps`); pass 2 merges the splits per (batch x query head, chunk of the head dim),
  one SIMD group a program.
* backward: `delta = rowsum(dO * O)` per query row; then `dK, dV` one program per (key block,
  batch x key/value head), summing over the group's query heads and every query block, and
  `dQ` one program per (query block, batch x query head):
      P = exp(scale * Q K^T + mask - lse);  dV = P^T dO;  dS = P * (dO V^T - delta)
      dQ = scale * dS K;  dK = scale * dS^T Q
"""

from __future__ import annotations

from typing import Any

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.chip import THREADGROUP_MEMORY_BYTES

from . import _common as c
from ._common import next_pow2
from ._rows import row_mask

HEAD_DIMS = (64, 80, 96, 128)
NEG_INF = tl.constexpr(float("-inf"))
NO_MASK, CAUSAL, ADDITIVE = 0, 1, 2


@triton.jit
def _scores(q, k_ptrs, mask_ptrs, offs_m, offs_n, start_n, Lq, Lkv, scale, dmask, MASK):
    # scale * q @ k^T + mask for one key block, -inf where hidden or out of range; the padded
    # head dimensions are masked too (past the last key they lie outside the array)
    k = tl.load(k_ptrs, mask=((start_n + offs_n)[None, :] < Lkv) & dmask[:, None], other=0.0)
    s = tl.dot(q, k) * scale
    cols = start_n + offs_n
    keep = (cols[None, :] < Lkv) & ((MASK != 1) | (cols[None, :] <= offs_m[:, None] + (Lkv - Lq)))
    # the additive mask is read only when there is one (MASK == 2)
    bias = tl.load(mask_ptrs, mask=(offs_m[:, None] < Lq) & (cols[None, :] < Lkv) & (MASK == 2),
                   other=0.0)
    return tl.where(keep, s + bias.to(tl.float32), NEG_INF)


def _fits(block_m: int, block_n: int, block_d: int, itemsize: int) -> bool:
    # dot operands staged in threadgroup memory: the q tile, converted once before the key loop,
    # then k^T, p and v in each step; the allocator gives the loop's tiles q's space once q
    # is in its fragments (docs/dot.md, "Attention prefill")
    q = block_m * block_d
    step = block_d * block_n + block_m * block_n + block_n * block_d
    return max(q, step) * itemsize <= THREADGROUP_MEMORY_BYTES


def _prune_tiles(configs: list[Any], named_args: dict[str, Any], **kwargs: Any) -> list[Any]:
    # the dot operands at their real size: q, k and v in the inputs' dtype, and p converted to
    # v's before its dot (fp16 and bf16 heads stage half the bytes of fp32 ones); the dtype joins
    # the autotune key, so each dtype gets its own choice. The backward kernels convert their
    # tiles (q, dO and their transposes, k, v, the probabilities and their gradients) one at a
    # time in the same sizes, and the allocation shares their bytes (docs/ops.md, "Prefill
    # tiles"): the forward's estimate serves them too
    itemsize = int(getattr(named_args.get("q_ptr"), "itemsize", 4))
    block_d = int(kwargs.get("BLOCK_D", 128))
    fitting = [cf for cf in configs if _fits(cf.kwargs["BLOCK_M"], cf.kwargs["BLOCK_N"], block_d, itemsize)]
    return c.first_or_all(fitting or configs[-1:])


# (BLOCK_M, BLOCK_N, warps); the first that fits is the default where nothing is tuned. The
# forward's: 64 x 32 on 4 SIMD groups of 16 query rows (1.333 and 1.778 products per fragment
# load in q k^T and p v, where 8 rows a SIMD group reach 0.8 and 0.941, with the same 2 barriers
# and 16 KiB of threadgroup writes per key block at head dim 128 in float16: docs/ops.md,
# "Prefill tiles"); MLX's M5 attention takes 64 query rows on 4 SIMD groups at head dim 128
# too. The backward kernels take the same default (docs/ops.md, "Prefill tiles").
_TILES = [triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w)
          for m, n, w in ((64, 32, 4), (32, 32, 4), (64, 32, 2), (32, 64, 4), (64, 64, 8), (16, 16, 2))]
_TILE_TUNING = {"early_config_prune": _prune_tiles}


@triton.autotune(configs=_TILES, key=["BLOCK_D", "MASK"], prune_configs_by=_TILE_TUNING)
@triton.jit
def _attn_fwd(q_ptr, k_ptr, v_ptr, mask_ptr, o_ptr, lse_ptr, Hq, group, Lq, Lkv, D, scale,
              smb, smh, smq, smk, MASK, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr,
              BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // Hq
    h = bh % Hq
    kvh = b * (Hq // group) + h // group
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    q_base = q_ptr + bh.to(tl.int64) * Lq * D
    k_base = k_ptr + kvh.to(tl.int64) * Lkv * D
    v_base = v_ptr + kvh.to(tl.int64) * Lkv * D
    dmask = offs_d < D
    q = tl.load(q_base + offs_m[:, None] * D + offs_d[None, :],
                mask=(offs_m[:, None] < Lq) & dmask[None, :], other=0.0)
    k_ptrs = k_base + offs_n[None, :] * D + offs_d[:, None]
    v_ptrs = v_base + offs_n[:, None] * D + offs_d[None, :]
    mask_ptrs = mask_ptr + b.to(tl.int64) * smb + h * smh + offs_m[:, None] * smq + offs_n[None, :] * smk
    m_i = tl.full([BLOCK_M], NEG_INF, tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    # causal programs stop after the last key their last query sees
    hi = tl.where(MASK == 1, tl.minimum(Lkv, (start_m + 1) * BLOCK_M + Lkv - Lq), Lkv)
    for start_n in range(0, hi, BLOCK_N):
        s = _scores(q, k_ptrs + start_n * D, mask_ptrs + start_n * smk, offs_m, offs_n, start_n,
                    Lq, Lkv, scale, dmask, MASK)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        # rows that have seen only hidden keys keep a finite reference (exp(-inf - -inf) = NaN)
        m_ref = tl.where(m_new > NEG_INF, m_new, 0.0)
        p = tl.exp(s - m_ref[:, None])
        alpha = tl.exp(m_i - m_ref)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptrs + start_n * D, mask=((start_n + offs_n)[:, None] < Lkv) & dmask[None, :],
                    other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    row_ok = offs_m < Lq
    tl.store(o_ptr + bh.to(tl.int64) * Lq * D + offs_m[:, None] * D + offs_d[None, :], out,
             mask=row_ok[:, None] & dmask[None, :])
    tl.store(lse_ptr + bh.to(tl.int64) * Lq + offs_m, m_i + tl.log(l_i), mask=row_ok)


def _slot_lanes(block_d: int, itemsize: int) -> int:
    """Lanes a key row leaves free in a SIMD group: the row takes 16-byte vectors, one a lane."""
    return max(1, 32 // max(1, block_d * itemsize // 16))


def _prune_decode(configs: list[Any], named_args: dict[str, Any], **kwargs: Any) -> list[Any]:
    # a split must hold whole key blocks (ROWS x SLOTS keys); the per-slot accumulators (group x
    # SLOTS x BLOCK_D floats) must stay within 64 registers a thread; and the slots should be
    # the lanes a key row leaves free times the warps, so that a thread's ROWS keys of a step
    # lie in its registers (the sums over them stay in the thread)
    gp, block_d = int(kwargs.get("GROUP_P", 4)), int(kwargs.get("BLOCK_D", 128))
    split = int(kwargs.get("SPLIT", 64))
    lanes = _slot_lanes(block_d, int(getattr(named_args.get("q_ptr"), "itemsize", 2)))
    fitting = [cf for cf in configs
               if split % (cf.kwargs["SLOTS"] * cf.kwargs["ROWS"]) == 0
               and cf.kwargs["HSPLIT"] <= gp
               and gp // cf.kwargs["HSPLIT"] * cf.kwargs["SLOTS"] * block_d <= 64 * 32 * cf.num_warps]
    matching = [cf for cf in fitting if cf.kwargs["SLOTS"] == lanes * cf.num_warps]
    hsplit, one_warp = _default_shape(gp, bool(kwargs.get("WHOLE")), split)
    ordered = sorted(matching or fitting,
                     key=lambda cf: (cf.kwargs["HSPLIT"] != hsplit, (cf.num_warps == 1) != one_warp))
    one_slot = {"SLOTS": 1, "ROWS": 1, "HSPLIT": 1, "V_AHEAD": True}
    return c.first_or_all(ordered or [triton.Config(one_slot, num_warps=1)])


def _default_shape(group_p: int, whole: bool, split: int) -> tuple[int, bool]:
    """(HSPLIT, one SIMD group) of the default decode config, the fastest measured through the
    GPU proxy (docs/ops.md, "Decode speed", tenth and thirteenth rounds): two query heads a
    program where every split is whole steps (a group of 8 over four programs), else the group
    on one program up to 4 heads (a group of 8 over two); one SIMD group a program for a group
    of 8, and for groups of 2 or more in splits of 256 keys or more (caches past 16384 keys),
    else two."""
    hsplit = min(group_p, max(2, group_p // 2)) if whole else max(1, group_p // 4)
    return hsplit, group_p >= 8 or (split >= 256 and group_p >= 2)


def _split(n_keys: int) -> int:
    """Keys a decode program reads: 64 (with the combine, the fastest measured through the GPU
    proxy: docs/ops.md, "Decode speed"), more for caches over 8192 keys, so that a kv head has
    at most 128 splits (the combine holds a kv head's splits in one tile; at 32768 keys, 128
    splits were the fastest of 32 to 512: the thirteenth round)."""
    return max(64, next_pow2(triton.cdiv(n_keys, 128)))


def _whole_steps(n_keys: int, split: int, group_p: int) -> bool:
    """Whether decode's pass 1 takes its unmasked form (`WHOLE`): every split holds `split`
    keys, which pruning makes a whole number of steps, and the group (padded) is at most 8.
    Through the GPU proxy the unmasked form was faster for groups of 1, 2 and 4, and for 8 on
    two or four programs (on one it spills); larger groups were not measured (docs/ops.md,
    "Decode speed", eighth and thirteenth rounds)."""
    return n_keys % split == 0 and group_p <= 8


# (SLOTS, ROWS, num_warps, HSPLIT, V_AHEAD): key slots, key rows a slot takes a step (a step
# reads SLOTS x ROWS keys), SIMD groups, programs sharing a group's query heads (each reads the
# split's keys and values: the later reads of neighbouring programs find them in the cache,
# and each program holds its share of the heads' registers), and whether a step reads the next
# step's values with its keys (else its own values after its scores); the launcher picks the
# keys a program reads (`_split`). Pruning keeps those whose slots match the inputs' key rows:
# two slots a SIMD group for float16 heads of 128 (or float32 heads of 64), one for float32
# heads of 128, four for float16 heads of 64, and orders the default first (`_default_shape`:
# 4 x 4 on 2 SIMD groups or 2 x 4 on one, the group on one, two or four programs), the fastest
# measured through the GPU proxy for float16 heads of 128 (docs/ops.md, "Decode speed")
_DECODE = [triton.Config({"SLOTS": n, "ROWS": r, "HSPLIT": hs, "V_AHEAD": ahead}, num_warps=w)
           for n, r, w, hs, ahead in (
               (4, 4, 2, 1, True), (4, 4, 2, 2, False), (4, 4, 2, 2, True), (2, 4, 1, 1, True),
               (2, 4, 1, 2, True), (2, 8, 1, 2, True), (2, 8, 1, 2, False), (8, 2, 4, 2, True),
               (8, 2, 4, 2, False), (2, 2, 1, 1, True), (4, 1, 2, 1, True), (4, 2, 2, 1, True),
               (8, 2, 4, 1, True), (8, 1, 4, 1, True), (1, 4, 1, 1, True), (1, 2, 1, 1, True),
               (2, 1, 2, 1, True), (2, 2, 2, 1, True), (4, 1, 4, 1, True), (4, 2, 4, 1, True),
               (4, 2, 1, 1, True), (8, 1, 2, 1, True), (2, 8, 1, 1, True), (8, 8, 4, 1, True),
               (2, 4, 1, 4, True), (4, 4, 2, 4, True), (4, 4, 2, 4, False), (8, 2, 4, 4, True),
               (2, 8, 1, 4, True))]
# the combine's (head dims a program, warps): one SIMD group, so its reductions over the
# splits need no threadgroup memory or barrier
_COMBINE = (32, 1)


@triton.jit
def _masked_tile(ptr, at, ok, dmask, EVEN_D: tl.constexpr):
    # the rows `ok` of a tile (keys, or the group's query heads), zero elsewhere; the head-dim
    # mask only where D is padded
    if EVEN_D:
        t = tl.load(ptr + at, mask=ok, other=0.0)
    else:
        t = tl.load(ptr + at, mask=ok & dmask, other=0.0)
    return t


@triton.jit
def _kv_tile(ptr, at, ok, dmask, EVEN_D: tl.constexpr, WHOLE: tl.constexpr):
    # a step's keys or values: where every split is whole steps (WHOLE), every row lies in the
    # array, so only a padded head dim is masked
    if WHOLE:
        if EVEN_D:
            t = tl.load(ptr + at)
        else:
            t = tl.load(ptr + at, mask=dmask, other=0.0)
    else:
        t = _masked_tile(ptr, at, ok, dmask, EVEN_D)
    return t


@triton.autotune(configs=_DECODE, key=["BLOCK_D", "GROUP_P", "MASK", "EVEN_D", "SPLIT", "WHOLE"],
                 prune_configs_by={"early_config_prune": _prune_decode})
@triton.jit
def _attn_decode(q_ptr, k_ptr, v_ptr, mask_ptr, po_ptr, plse_ptr, Hq, group, Lkv, D, scale,
                 n_splits, smb, smh, smk, MASK, BLOCK_D: tl.constexpr, GROUP_P: tl.constexpr,
                 EVEN_D: tl.constexpr, SPLIT: tl.constexpr, WHOLE: tl.constexpr,
                 SLOTS: tl.constexpr, ROWS: tl.constexpr, HSPLIT: tl.constexpr,
                 V_AHEAD: tl.constexpr):
    # flash-decoding, pass 1: program (split x HSPLIT, batch x kv head) reads keys and values
    # [split * SPLIT, (split + 1) * SPLIT) once for its share of the query heads of the group
    # (GROUP_P, the group size rounded up to a power of two, over HSPLIT neighbouring
    # programs), and writes each head's partial output (normalised) and log-sum-exp;
    # `_attn_decode_combine` merges the splits. The grid has `n_splits` = cdiv(Lkv, SPLIT)
    # splits per kv head, each with at least one key, so every slot is written, unmasked.
    # Tiles of 4 axes: (query head of the group, key row of a slot, slot, head dim). A step
    # reads ROWS x SLOTS keys; each slot keeps its own online softmax (maximum, sum, output)
    # over its keys, ROWS of them a step, so a step's sums over keys stay in the slot's thread
    # (the slots merge once, at the end).
    # WHOLE (the launcher's choice, `_whole_steps`: Lkv a multiple of SPLIT, and SPLIT a
    # multiple of every config's step, which `_prune_decode` keeps) makes every split a whole
    # number of full steps: no key past the split, so the key and value loads take no row mask
    # and the scores no -inf, and the last step's read-ahead re-reads its own block (in the
    # array, unused) rather than the next split's
    split = tl.program_id(0) // HSPLIT
    HEADS: tl.constexpr = GROUP_P // HSPLIT
    bkv = tl.program_id(1)
    Hkv = Hq // group
    b = bkv // Hkv
    g = (tl.program_id(0) % HSPLIT) * HEADS + tl.arange(0, HEADS)[:, None, None, None]
    h = (bkv % Hkv) * group + g  # the query heads of this kv head (padded ones masked)
    head_ok = g < group
    BLOCK_N: tl.constexpr = ROWS * SLOTS
    tl.static_assert(SPLIT % BLOCK_N == 0, "a decode split must hold whole steps")
    offs_n = tl.arange(0, ROWS)[None, :, None, None] * SLOTS + tl.arange(0, SLOTS)[None, None, :, None]
    offs_d = tl.arange(0, BLOCK_D)[None, None, None, :]
    dmask = offs_d < D
    lo = split * SPLIT
    if WHOLE:
        hi = lo + SPLIT
    else:
        hi = tl.minimum(lo + SPLIT, Lkv)
    kv_base = bkv.to(tl.int64) * Lkv * D
    # the first key block is read before q, so the tiles take the key tile's layout (lanes
    # along the head dim in vectors, then along the slots, warps along the slots, a slot's
    # rows in its thread's registers, the program's heads in every thread's registers), and
    # each step reads the next block's keys (and with V_AHEAD its values) ahead of its math
    at0 = kv_base + (lo + offs_n) * D + offs_d
    k = _kv_tile(k_ptr, at0, (lo + offs_n) < hi, dmask, EVEN_D, WHOLE)
    if V_AHEAD:
        v = _kv_tile(v_ptr, at0, (lo + offs_n) < hi, dmask, EVEN_D, WHOLE)
    q = _masked_tile(q_ptr, (b * Hq + h).to(tl.int64) * D + offs_d, head_ok, dmask, EVEN_D).to(tl.float32)
    m_i = tl.full([HEADS, 1, SLOTS, 1], NEG_INF, tl.float32)
    l_i = tl.zeros([HEADS, 1, SLOTS, 1], tl.float32)
    acc = tl.zeros([HEADS, 1, SLOTS, BLOCK_D], tl.float32)
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        ok = cols < hi
        if WHOLE:
            # the next block of the split, or this one again after the split's last step
            nxt = start_n + BLOCK_N
            nxt = tl.where(nxt < hi, nxt, start_n)
            at_next = kv_base + (nxt + offs_n) * D + offs_d
        else:
            at_next = kv_base + (cols + BLOCK_N) * D + offs_d
        ok_next = (cols + BLOCK_N) < hi
        k_next = _kv_tile(k_ptr, at_next, ok_next, dmask, EVEN_D, WHOLE)
        if V_AHEAD:
            v_next = _kv_tile(v_ptr, at_next, ok_next, dmask, EVEN_D, WHOLE)
        s = tl.sum(q * k.to(tl.float32), 3, keep_dims=True) * scale
        if not V_AHEAD:
            v = _kv_tile(v_ptr, kv_base + cols * D + offs_d, ok, dmask, EVEN_D, WHOLE)
        if MASK == 2:  # a uniform branch: no mask, no predicated loads
            s += tl.load(mask_ptr + b.to(tl.int64) * smb + h * smh + cols * smk,
                         mask=ok & head_ok, other=0.0).to(tl.float32)
        if not WHOLE:
            s = tl.where(ok, s, NEG_INF)
        # per-slot online softmax over the slot's rows of this step
        m_new = tl.maximum(m_i, tl.max(s, 1, keep_dims=True))
        m_ref = tl.where(m_new > NEG_INF, m_new, 0.0)
        p = tl.exp(s - m_ref)
        alpha = tl.exp(m_i - m_ref)
        l_i = l_i * alpha + tl.sum(p, 1, keep_dims=True)
        acc = acc * alpha + tl.sum(p * v.to(tl.float32), 1, keep_dims=True)
        m_i = m_new
        k = k_next
        if V_AHEAD:
            v = v_next
    m = tl.max(m_i, 2, keep_dims=True)
    w = tl.where(m_i > NEG_INF, tl.exp(m_i - m), 0.0)
    total = tl.sum(l_i * w, 2, keep_dims=True)
    out = tl.sum(acc * w, 2, keep_dims=True) / tl.where(total > 0, total, 1.0)
    row = (bkv.to(tl.int64) * n_splits + split) * GROUP_P + g  # [GROUP_P, 1, 1, 1]
    tl.store(po_ptr + row * BLOCK_D + offs_d, out)
    tl.store(plse_ptr + row, m + tl.log(total))


@triton.jit
def _attn_decode_combine(po_ptr, plse_ptr, o_ptr, lse_ptr, group, n_splits, D,
                         GROUP_P: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr,
                         CHUNK_D: tl.constexpr, WHOLE_S: tl.constexpr, EVEN_D: tl.constexpr):
    # flash-decoding, pass 2: program (batch x query head, chunk of CHUNK_D head dims) merges
    # its splits' partial outputs by their log-sum-exps. Pass 1 writes every split (an empty
    # one as zeros with log-sum-exp -inf), so the partial outputs are read unmasked, in the
    # same wave as the log-sum-exps rather than after them; a head whose every key is hidden
    # gets NaN, as one pass would. Where the splits fill the tile (WHOLE_S) their bound is the
    # tile's own, which the compiler folds, and where the head dims fill the block (EVEN_D) the
    # store takes no mask
    bh = tl.program_id(0)
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.program_id(1) * CHUNK_D + tl.arange(0, CHUNK_D)
    bkv = bh // group  # batch x kv head (query heads of a batch are consecutive)
    row = (bkv.to(tl.int64) * n_splits + offs_s) * GROUP_P + bh % group
    ok = row_mask(offs_s, n_splits, BLOCK_S, WHOLE_S)
    po = tl.load(po_ptr + row[:, None] * BLOCK_D + offs_d[None, :], mask=ok[:, None], other=0.0)
    lse = tl.load(plse_ptr + row, mask=ok, other=NEG_INF)
    m = tl.max(lse, 0)
    w = tl.where(lse > NEG_INF, tl.exp(lse - tl.where(m > NEG_INF, m, 0.0)), 0.0)
    total = tl.sum(w, 0)
    out = tl.sum(po * w[:, None], 0) / total
    if EVEN_D:
        tl.store(o_ptr + bh.to(tl.int64) * D + offs_d, out)
    else:
        tl.store(o_ptr + bh.to(tl.int64) * D + offs_d, out, mask=offs_d < D)
    if tl.program_id(1) == 0:
        tl.store(lse_ptr + bh, m + tl.log(total))


@triton.jit
def _attn_bwd_delta(o_ptr, do_ptr, delta_ptr, n_rows, D, BLOCK_R: tl.constexpr,
                    BLOCK_D: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    offs_d = tl.arange(0, BLOCK_D)
    tile = (rows[:, None] < n_rows) & (offs_d[None, :] < D)
    at = rows.to(tl.int64)[:, None] * D + offs_d[None, :]
    o = tl.load(o_ptr + at, mask=tile, other=0.0).to(tl.float32)
    do = tl.load(do_ptr + at, mask=tile, other=0.0).to(tl.float32)
    tl.store(delta_ptr + rows, tl.sum(o * do, 1), mask=rows < n_rows)


@triton.autotune(configs=_TILES, key=["BLOCK_D", "MASK"], prune_configs_by=_TILE_TUNING)
@triton.jit
def _attn_bwd_dkdv(q_ptr, k_ptr, v_ptr, mask_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr,
                   Hq, group, Lq, Lkv, D, scale, smb, smh, smq, smk, MASK, BLOCK_D: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_n = tl.program_id(0) * BLOCK_N
    bkv = tl.program_id(1)
    Hkv = Hq // group
    b = bkv // Hkv
    kvh = bkv % Hkv
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_m0 = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    dmask = offs_d < D
    kv_tile = (offs_n[:, None] < Lkv) & dmask[None, :]
    kv_at = bkv.to(tl.int64) * Lkv * D + offs_n[:, None] * D + offs_d[None, :]
    k = tl.load(k_ptr + kv_at, mask=kv_tile, other=0.0)
    v = tl.load(v_ptr + kv_at, mask=kv_tile, other=0.0)
    dk = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    # causal: start at the block of the first query that sees this key block (i + Lkv - Lq >= start_n)
    lo = tl.where(MASK == 1, tl.maximum(start_n - (Lkv - Lq), 0) // BLOCK_M * BLOCK_M, 0)
    for g in range(0, group):
        h = kvh * group + g
        bh = b * Hq + h
        q_base = q_ptr + bh.to(tl.int64) * Lq * D
        do_base = do_ptr + bh.to(tl.int64) * Lq * D
        for start_m in range(lo, Lq, BLOCK_M):
            offs_m = start_m + offs_m0
            row_ok = offs_m < Lq
            # transposed tiles: BLOCK_D x BLOCK_M
            qT = tl.load(q_base + offs_m[None, :] * D + offs_d[:, None],
                         mask=row_ok[None, :] & dmask[:, None], other=0.0)
            sT = tl.dot(k, qT) * scale
            inb = (offs_n[:, None] < Lkv) & row_ok[None, :]
            keep = inb & ((MASK != 1) | (offs_n[:, None] <= offs_m[None, :] + (Lkv - Lq)))
            bias = tl.load(mask_ptr + b.to(tl.int64) * smb + h * smh + offs_m[None, :] * smq
                           + offs_n[:, None] * smk, mask=inb & (MASK == 2), other=0.0)
            sT = sT + bias.to(tl.float32)
            lse = tl.load(lse_ptr + bh.to(tl.int64) * Lq + offs_m[None, :], mask=row_ok[None, :], other=0.0)
            pT = tl.where(keep, tl.exp(sT - lse), 0.0)
            do = tl.load(do_base + offs_m[:, None] * D + offs_d[None, :],
                         mask=row_ok[:, None] & dmask[None, :], other=0.0)
            dv += tl.dot(pT.to(do.dtype), do)
            dpT = tl.dot(v, tl.trans(do))
            delta = tl.load(delta_ptr + bh.to(tl.int64) * Lq + offs_m[None, :], mask=row_ok[None, :], other=0.0)
            dsT = pT * (dpT - delta)
            dk += tl.dot(dsT.to(qT.dtype), tl.trans(qT))
    tl.store(dk_ptr + kv_at, dk * scale, mask=kv_tile)
    tl.store(dv_ptr + kv_at, dv, mask=kv_tile)


@triton.autotune(configs=_TILES, key=["BLOCK_D", "MASK"], prune_configs_by=_TILE_TUNING)
@triton.jit
def _attn_bwd_dq(q_ptr, k_ptr, v_ptr, mask_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr,
                 Hq, group, Lq, Lkv, D, scale, smb, smh, smq, smk, MASK, BLOCK_D: tl.constexpr,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // Hq
    h = bh % Hq
    kvh = b * (Hq // group) + h // group
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    dmask = offs_d < D
    row_ok = offs_m < Lq
    tile = row_ok[:, None] & dmask[None, :]
    at = bh.to(tl.int64) * Lq * D + offs_m[:, None] * D + offs_d[None, :]
    q = tl.load(q_ptr + at, mask=tile, other=0.0)
    do = tl.load(do_ptr + at, mask=tile, other=0.0)
    lse = tl.load(lse_ptr + bh.to(tl.int64) * Lq + offs_m, mask=row_ok, other=0.0)
    delta = tl.load(delta_ptr + bh.to(tl.int64) * Lq + offs_m, mask=row_ok, other=0.0)
    k_base = k_ptr + kvh.to(tl.int64) * Lkv * D
    v_base = v_ptr + kvh.to(tl.int64) * Lkv * D
    mask_ptrs = mask_ptr + b.to(tl.int64) * smb + h * smh + offs_m[:, None] * smq + offs_n[None, :] * smk
    dq = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    hi = tl.where(MASK == 1, tl.minimum(Lkv, (start_m + 1) * BLOCK_M + Lkv - Lq), Lkv)
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        kT_ptrs = k_base + cols[None, :] * D + offs_d[:, None]
        s = _scores(q, kT_ptrs, mask_ptrs + start_n * smk, offs_m, offs_n, start_n, Lq, Lkv,
                    scale, dmask, MASK)
        p = tl.where(row_ok[:, None], tl.exp(s - lse[:, None]), 0.0)
        vT = tl.load(v_base + cols[None, :] * D + offs_d[:, None],
                     mask=(cols[None, :] < Lkv) & dmask[:, None], other=0.0)
        dp = tl.dot(do, vT)
        ds = p * (dp - delta[:, None])
        k = tl.load(k_base + cols[:, None] * D + offs_d[None, :],
                    mask=(cols[:, None] < Lkv) & dmask[None, :], other=0.0)
        dq += tl.dot(ds.to(k.dtype), k)
    tl.store(dq_ptr + at, dq * scale, mask=tile)


def _mask_args(mask: Any, B: int, Hq: int, Lq: int, Lkv: int) -> tuple[Any, tuple[int, int, int, int]]:
    """The mask as a 4-D float array and its element strides (0 along broadcast axes)."""
    m = c.mx()
    mask4 = mask.reshape((1,) * (4 - mask.ndim) + tuple(mask.shape))
    if mask4.dtype == m.bool_:
        mask4 = m.where(mask4, 0.0, float("-inf")).astype(m.float32)
    shape = tuple(mask4.shape)
    strides = [0, 0, 0, 0]
    step = 1
    for axis in range(3, -1, -1):
        strides[axis] = 0 if shape[axis] == 1 else step
        step *= shape[axis]
    return mask4, (strides[0], strides[1], strides[2], strides[3])


def _kind(mask: Any) -> int:
    if mask is None:
        return NO_MASK
    return CAUSAL if isinstance(mask, str) else ADDITIVE


def _decode(q: Any, k: Any, v: Any, mask4: Any, o: Any, lse: Any, group: int, scale: float,
            mask_strides: tuple[int, int, int], kind: int, block_d: int) -> None:
    """Flash-decoding: the keys split across programs (one pass per kv head serving its whole
    group of query heads), then a combine per (query head, 32 head dims)."""
    m = c.mx()
    B, Hq, _, D = q.shape
    Hkv, Lkv = k.shape[1], k.shape[2]
    # the launcher picks SPLIT (not the tuning), so the partial buffers and the grid are sized
    # before any config is chosen and every program has keys
    split = _split(Lkv)
    n_splits = triton.cdiv(Lkv, split)
    gp = next_pow2(group)
    po = c.zeros((B * Hkv * n_splits * gp, block_d), m.float32)
    plse = c.zeros((B * Hkv * n_splits * gp,), m.float32)
    grid = lambda meta: (n_splits * meta["HSPLIT"], B * Hkv)  # noqa: E731
    _attn_decode[grid](q, k, v, mask4, po, plse, Hq, group, Lkv, D, scale, n_splits, *mask_strides, kind,
                       BLOCK_D=block_d, GROUP_P=gp, EVEN_D=D == block_d, SPLIT=split,
                       WHOLE=_whole_steps(Lkv, split, gp))
    chunk_d, warps = _COMBINE
    chunk = min(chunk_d, block_d)
    block_s = next_pow2(n_splits)
    _attn_decode_combine[(B * Hq, block_d // chunk)](po, plse, o, lse, group, n_splits, D, GROUP_P=gp,
                                                     BLOCK_S=block_s, BLOCK_D=block_d, CHUNK_D=chunk,
                                                     WHOLE_S=n_splits == block_s, EVEN_D=D == block_d,
                                                     num_warps=warps)


def _forward(q: Any, k: Any, v: Any, mask: Any, scale: float) -> tuple[Any, Any]:
    m = c.mx()
    B, Hq, Lq, D = q.shape
    Hkv, Lkv = k.shape[1], k.shape[2]
    group = Hq // Hkv
    kind = _kind(mask)
    o = c.zeros(q.shape, q.dtype)
    lse = c.zeros((B, Hq, Lq), m.float32)
    if kind == ADDITIVE:
        mask4, (smb, smh, smq, smk) = _mask_args(mask, B, Hq, Lq, Lkv)
    else:
        mask4, (smb, smh, smq, smk) = q, (0, 0, 0, 0)
    block_d = max(16, next_pow2(D))
    if Lq == 1:  # causal with one query (bottom-right aligned) sees every key
        _decode(q, k, v, mask4, o, lse, group, scale, (smb, smh, smk),
                ADDITIVE if kind == ADDITIVE else NO_MASK, block_d)
    else:
        grid = lambda meta: (triton.cdiv(Lq, meta["BLOCK_M"]), B * Hq)  # noqa: E731
        _attn_fwd[grid](q, k, v, mask4, o, lse, Hq, group, Lq, Lkv, D, scale, smb, smh, smq, smk,
                        kind, BLOCK_D=block_d)
    return o, lse


def _backward(q: Any, k: Any, v: Any, mask: Any, scale: float, o: Any, lse: Any,
              do: Any) -> tuple[Any, Any, Any]:
    m = c.mx()
    B, Hq, Lq, D = q.shape
    Hkv, Lkv = k.shape[1], k.shape[2]
    group = Hq // Hkv
    kind = _kind(mask)
    do = do.astype(q.dtype)
    if kind == ADDITIVE:
        mask4, (smb, smh, smq, smk) = _mask_args(mask, B, Hq, Lq, Lkv)
    else:
        mask4, (smb, smh, smq, smk) = q, (0, 0, 0, 0)
    block_d = max(16, next_pow2(D))
    rows = B * Hq * Lq
    delta = c.zeros((B, Hq, Lq), m.float32)
    _attn_bwd_delta[(triton.cdiv(rows, 16),)](o, do, delta, rows, D, BLOCK_R=16, BLOCK_D=block_d,
                                              num_warps=2)
    dq = c.zeros(q.shape, q.dtype)
    dk = c.zeros(k.shape, k.dtype)
    dv = c.zeros(v.shape, v.dtype)
    common = (Hq, group, Lq, Lkv, D, scale, smb, smh, smq, smk, kind)
    _attn_bwd_dkdv[lambda meta: (triton.cdiv(Lkv, meta["BLOCK_N"]), B * Hkv)](
        q, k, v, mask4, do, lse, delta, dk, dv, *common, BLOCK_D=block_d)
    _attn_bwd_dq[lambda meta: (triton.cdiv(Lq, meta["BLOCK_M"]), B * Hq)](
        q, k, v, mask4, do, lse, delta, dq, *common, BLOCK_D=block_d)
    return dq, dk, dv


@triton.op(name="scaled_dot_product_attention")
def _sdpa_op(q: Any, k: Any, v: Any, mask: Any, causal: bool, scale: float) -> Any:
    return _forward(q, k, v, "causal" if causal else mask, scale)


@_sdpa_op.backward
def _sdpa_vjp(primals: Any, cotangents: Any, outputs: Any) -> Any:
    q, k, v, mask, causal, scale = primals
    o, lse = outputs
    dq, dk, dv = _backward(q, k, v, "causal" if causal else mask, scale, o, lse, cotangents[0])
    return (dq, dk, dv) if mask is None else (dq, dk, dv, None)


def scaled_dot_product_attention(q: Any, k: Any, v: Any, *, scale: float, mask: Any = None) -> Any:
    """`softmax(scale * q @ k^T + mask) @ v`, as `mx.fast.scaled_dot_product_attention`.

    `q (B, Hq, Lq, D)`, `k, v (B, Hkv, Lkv, D)` of one float dtype, `Hq % Hkv == 0` (grouped-
    query attention), `D` in 64, 80, 96, 128; `mask` None, "causal" or an array broadcastable
    to `(B, Hq, Lq, Lkv)` (boolean: True keeps; float: added to the scores), which gets no
    gradient. `Lq == 1` takes the decode kernel. Differentiable in `q`, `k`, `v`."""
    name = "scaled_dot_product_attention"
    m = c.mx()
    for arg, a in (("q", q), ("k", k), ("v", v)):
        c.check_array(name, arg, a)
        if a.ndim != 4:
            raise c.fail(name, arg, f"expected 4 dimensions (B, heads, L, D), got shape {tuple(a.shape)}")
    c.check_same_dtype(name, "k", k, "q", q)
    c.check_same_dtype(name, "v", v, "q", q)
    B, Hq, Lq, D = q.shape
    if D not in HEAD_DIMS:
        raise c.fail(name, "q", f"head dimension {D} is not handled (the kernels take {HEAD_DIMS})")
    if k.shape[0] != B or k.shape[3] != D:
        raise c.fail(name, "k", f"shape {tuple(k.shape)} does not match q {tuple(q.shape)} in "
                     "batch or head dimension")
    if tuple(v.shape) != tuple(k.shape):
        raise c.fail(name, "v", f"shape {tuple(v.shape)} differs from k's {tuple(k.shape)}")
    if Hq and (not k.shape[1] or Hq % k.shape[1]):
        raise c.fail(name, "k", f"its {k.shape[1]} heads do not divide q's {Hq} heads")
    scale = c.check_float(name, "scale", scale)
    Lkv = k.shape[2]
    causal = False
    if isinstance(mask, str):
        if mask != "causal":
            raise c.fail(name, "mask", f"the only string mask is 'causal', got {mask!r}")
        causal, mask = True, None
    elif mask is not None:
        c.check_array(name, "mask", mask, dtypes=("bool", "float32", "float16", "bfloat16"), min_ndim=0)
        try:
            m.broadcast_shapes(tuple(mask.shape), (B, Hq, Lq, Lkv))
        except ValueError:
            raise c.fail(name, "mask", f"shape {tuple(mask.shape)} does not broadcast to "
                         f"(B, Hq, Lq, Lkv) = {(B, Hq, Lq, Lkv)}") from None
        if mask.ndim > 4:
            raise c.fail(name, "mask", f"at most 4 dimensions, got {mask.ndim}")
        mask = m.stop_gradient(mask)
    if 0 in (B, Hq, Lq, Lkv):
        # no program has work: an empty result, or, over no keys, zeros (the product of empty
        # weights with no values), as MLX's and torch's attention give
        return c.zeros(q.shape, q.dtype)
    return _sdpa_op(q, k, v, mask, causal, scale)[0]
