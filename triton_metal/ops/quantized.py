"""Quantized matmuls: `quantized_matmul` on `mx.quantize`'s layouts, `int8_matmul`, `ternary_matmul`.

Layouts (read from MLX's packing and checked against `mx.dequantize` in the tests):
* affine, `bits` in 1, 2, 3, 4, 5, 6, 8: each row of `w` is a little-endian bit stream of
  `bits`-bit codes in uint32 words (element `e` of a row at bits `[e * bits, (e + 1) * bits)`
  of the row, so 3, 5 and 6-bit codes may straddle two words); `scales` and `biases` hold one
  value per `group_size` elements of a row, in the input dtype: `w = scale * code + bias`.
* mxfp4: 4-bit E2M1 codes (sign bit 3; magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6) packed as above,
  one uint8 E8M0 scale (`2 ** (s - 127)`) per 32 elements, no biases.
* mxfp8: 8-bit E4M3 codes (Triton's float8e4nv: bias 7, no infinities, 0x7F and 0xFF NaN),
  four a word, one E8M0 scale per 32 elements.
* nvfp4: E2M1 codes as mxfp4, one uint8 E4M3 scale per 16 elements.
* int8 (`int8_matmul`): int8 weights `(N, K)`, one float scale per output channel.
* ternary (`ternary_matmul`, BitNet b1.58): codes `value + 1` (0, 1, 2 for -1, 0, +1), four per
  byte from the low bits up, shape `(N, K / 4)` uint8, one float scale per tensor; activations
  int8 with one scale per row.

The kernels compute `y = x @ W^T` (`TRANS`, `W` the dequantized `(rows, elems) = (N, K)`
matrix) or `y = x @ W` (`W` of `(K, N)`), decoding weight tiles in registers (`_dequant`) and
accumulating in float32. `bits` and the group size are run-time arguments (one compiled variant
per dtype, layout and mode serves every width). The gradient of `x` is the same kernel with the
other `TRANS` (`dx = dy @ W` or `dy @ W^T`). E8M0 scales and E2M1 powers of two are built from
bits, never by `tl.exp2` (Metal's fast exp2, which need not be exact). Four kernels:
* `_gemv`, decode (`M <= 8`, `y = x @ W^T`) for the layouts whose codes never straddle a word
  (affine 1, 2, 4, 8 bits, the float modes, int8 and ternary bytes viewed as words): a variant
  per row count; a thread holds a run of `WPT` words of a group of each of `BLOCK_N` packed rows
  (one vector a row) and the x of their codes, read as vectors once for all the rows; E2M1 and
  E4M3 codes decoded into halves by bit moves, two codes (j and j + 4, or j and j + 2, of a
  word) a 32-bit operation, and so nvfp4's E4M3 scales; a group's scale and bias once a run;
  partial sums in registers over the whole K loop reduced once (memory-bound; tuned over
  `BLOCK_N`, `BLOCK_G`, `WPT`).
* `_qmv`, decode for the rest (3, 5, 6 bits, `transpose=False`, K that `_gemv` cannot step):
  one program per block of outputs holding every row of `x`, so each weight byte is read once;
  dequantized tiles, products reduced over K every step (tuned over `BLOCK_N`, `BLOCK_K`).
* `_qmm`, tiled (`M > 8`): a 2-D grid of `BLOCK_M x BLOCK_N` output tiles through `tl.dot`,
  tuned over the three blocks.
* `_qmm_mx`, tiled (`M > 8`) for the float modes with float16 or bfloat16 activations and
  `transpose=True`, whose layouts are the operand packings Triton's `tl.dot_scaled` takes
  (E2M1 or E4M3 codes; E8M0 scales a group of 32, or nvfp4's E4M3 scales a group of 16): the packed
  bytes and scale bytes loaded as they are and dequantized once an element inside the dot
  (straight into the fragments, or on MSL 4.0 targets into each SIMD group's tensor-op inputs),
  where `_qmm` loads a word, decodes and scales every element of the tile before its `tl.dot`.
  float32 activations (no MX operand format) and the gradient (`x @ W`, whose groups run along
  the output) keep `_qmm`.
"""

from __future__ import annotations

from typing import Any

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.chip import THREADGROUP_MEMORY_BYTES

from . import _common as c
from ._common import next_pow2

AFFINE, MXFP4, INT8, TERNARY, MXFP8, NVFP4 = 0, 1, 2, 3, 4, 5
AFFINE_BITS = (1, 2, 3, 4, 5, 6, 8)
FLOAT_MODES = {"mxfp4": (MXFP4, 32, 4), "mxfp8": (MXFP8, 32, 8), "nvfp4": (NVFP4, 16, 4)}
"""`mx.quantize`'s float modes: the mode's number here, its group size and its bits."""
_FLOAT_NUMBERS = tuple(number for number, _, _ in FLOAT_MODES.values())
GROUP_SIZES = (32, 64, 128)
DECODE_MAX_M = 8


@triton.jit
def _dequant(w_ptr, s_ptr, b_ptr, rows, elems, valid, wpr, gpr, bits, group_shift,
             MODE: tl.constexpr):
    # the float value of element `elems` of row `rows` of the packed matrix (2-D index tiles)
    if MODE == 2:
        q = tl.load(w_ptr + rows.to(tl.int64) * wpr + elems, mask=valid, other=0).to(tl.float32)
        val = q * tl.load(s_ptr + rows + elems * 0, mask=valid, other=0.0).to(tl.float32)
    else:
        bitpos = elems * bits
        word = rows.to(tl.int64) * wpr + bitpos // 32
        shift = (bitpos % 32).to(tl.uint32)
        lo = tl.load(w_ptr + word, mask=valid, other=0)
        # a 3, 5 or 6-bit code may continue in the next word (never for 2, 4 and 8 bits)
        spill = valid & (shift + bits > 32)
        hi = tl.load(w_ptr + word + 1, mask=spill, other=0)
        code = (lo >> shift) | tl.where(spill, hi << ((32 - shift) & 31), 0)
        code = code & ((tl.full((), 1, tl.uint32) << bits) - 1)  # (bits may arrive as a constant 1)
        g = rows * gpr + (elems >> group_shift)
        if MODE == 0:
            scale = tl.load(s_ptr + g, mask=valid, other=0.0).to(tl.float32)
            bias = tl.load(b_ptr + g, mask=valid, other=0.0).to(tl.float32)
            val = code.to(tl.float32) * scale + bias
        else:
            if MODE == 4:
                # E4M3 (mxfp8): the byte as Triton's float8e4nv (its one NaN, 0x7F, kept)
                mag = code.to(tl.uint8).to(tl.float8e4nv, bitcast=True).to(tl.float32)
            else:
                # E2M1 (mxfp4, nvfp4): exponent bits 1-2, mantissa bit 0, sign bit 3; the
                # exponent's power of two by a shift (exact, where fast exp2 need not be)
                e = (code >> 1) & 3
                m = (code & 1).to(tl.float32)
                mag = tl.where(e == 0, 0.5 * m, (1.0 + 0.5 * m) * ((1 << e) >> 1).to(tl.float32))
                mag = tl.where((code & 8) != 0, -mag, mag)
            s = tl.load(s_ptr + g, mask=valid, other=0)
            if MODE == 5:
                scale = s.to(tl.float8e4nv, bitcast=True).to(tl.float32)  # E4M3 (nvfp4)
            else:
                scale = _e8m0(s)
            val = mag * scale
    return val


def _prune(configs: list[Any], named_args: dict[str, Any], **kwargs: Any) -> list[Any]:
    decode = bool(kwargs.get("DECODE", False))  # the ternary kernel's launch shape
    fitting = []
    for cf in configs:
        bm, bn, bk = cf.kwargs["BLOCK_M"], cf.kwargs["BLOCK_N"], cf.kwargs["BLOCK_K"]
        if (bm == 16) != decode:
            continue
        # dot operands staged in threadgroup memory (fp32 worst case)
        if (bm * bk + bk * bn + bm * bn) * 4 > THREADGROUP_MEMORY_BYTES:
            continue
        fitting.append(cf)
    return c.first_or_all(fitting or configs[:1])


_CONFIGS = [
    # decode shapes of the int8 ternary kernel: every row in one 16-row tile
    triton.Config({"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 64}, num_warps=4),
    triton.Config({"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 64}, num_warps=4),
    # tiled; the first is the default where nothing is tuned. MLX steel's shape: 2 x 2 SIMD
    # groups of 32 x 32, each A and B fragment used 4 times, one barrier per K step (the
    # operands staged together); on MSL 4.0 targets a whole tensor-op tile whose K loop carries
    # the cooperative accumulator (docs/dot.md, docs/ops.md "Tiles of the quantized matmul")
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4),
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, num_warps=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=8),
    # 1 x 2 SIMD groups of 32 x 32: steel's reuse on a 32-row tile
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 64}, num_warps=2),
    # steel's own tile; K no multiple of 32, so simdgroup matrices on MSL 4.0 targets as well:
    # tuning on an M5 times both paths at 64 x 64
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 16}, num_warps=4),
]


def _prune_decode(configs: list[Any], named_args: dict[str, Any], **kwargs: Any) -> list[Any]:
    # the broadcast product is DECODE_ROWS x BLOCK_N x BLOCK_K values per iteration: at most
    # 128 per thread
    fitting = [cf for cf in configs
               if DECODE_MAX_M * cf.kwargs["BLOCK_N"] * cf.kwargs["BLOCK_K"] <= 128 * 32 * cf.num_warps]
    return c.first_or_all(fitting or configs[:1])


_DECODE_CONFIGS = [
    triton.Config({"BLOCK_N": 32, "BLOCK_K": 64}, num_warps=4),
    triton.Config({"BLOCK_N": 16, "BLOCK_K": 128}, num_warps=4),
    triton.Config({"BLOCK_N": 64, "BLOCK_K": 64}, num_warps=8),
    triton.Config({"BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4),
]


@triton.autotune(configs=_DECODE_CONFIGS, key=["N", "K", "TRANS", "bits", "MODE"],
                 prune_configs_by={"early_config_prune": _prune_decode})
@triton.jit
def _qmv(x_ptr, w_ptr, s_ptr, b_ptr, y_ptr, M, N, K, wpr, gpr, bits, group_shift,
         TRANS: tl.constexpr, MODE: tl.constexpr, ROWS: tl.constexpr, BLOCK_N: tl.constexpr,
         BLOCK_K: tl.constexpr):
    # decode (M <= ROWS): one program per block of outputs, every row of x, so each weight
    # byte is read once; products summed over K without tl.dot (its 16-row minimum would waste
    # most of a tile on 1 to 8 rows)
    offs_m = tl.arange(0, ROWS)
    offs_n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros([ROWS, BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + offs_k
        x = tl.load(x_ptr + offs_m[:, None] * K + kk[None, :],
                    mask=(offs_m[:, None] < M) & (kk[None, :] < K), other=0.0).to(tl.float32)
        if TRANS:
            # an (N, K) tile: row n, element k
            w = _dequant(w_ptr, s_ptr, b_ptr, offs_n[:, None], kk[None, :],
                         (offs_n[:, None] < N) & (kk[None, :] < K), wpr, gpr, bits, group_shift, MODE)
            acc += tl.sum(x[:, None, :] * w[None, :, :], 2)
        else:
            # a (K, N) tile: row k, element n
            w = _dequant(w_ptr, s_ptr, b_ptr, kk[:, None], offs_n[None, :],
                         (kk[:, None] < K) & (offs_n[None, :] < N), wpr, gpr, bits, group_shift, MODE)
            acc += tl.sum(x[:, :, None] * w[None, :, :], 1)
    tl.store(y_ptr + offs_m[:, None] * N + offs_n[None, :], acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _prune_gemv(configs: list[Any], named_args: dict[str, Any], **kwargs: Any) -> list[Any]:
    # a step of BLOCK_G groups must tile the row's groups exactly (the loop has no masks); a
    # thread's run of WPT words must lie in one group; every thread must hold a run (else threads
    # hold copies), and at most 8 words of each row a step
    steps, wpg = int(named_args["steps"]), int(kwargs["WPG"])
    fitting = [cf for cf in configs
               if steps % cf.kwargs["BLOCK_G"] == 0 and wpg % cf.kwargs["WPT"] == 0
               and 32 * cf.num_warps <= cf.kwargs["BLOCK_G"] * wpg // cf.kwargs["WPT"]
               and cf.kwargs["BLOCK_G"] * wpg <= 8 * 32 * cf.num_warps]
    if not fitting:  # a short or odd row: one group per step, every row of the tile busy
        fitting = [triton.Config({"BLOCK_N": 32, "BLOCK_G": 1, "WPT": 1},
                                 num_warps=max(1, min(4, wpg // 32)))]
    # the default (first) config: the fastest measured for the mode and the rows of x, where
    # one fits
    mode = int(kwargs["MODE"])
    by_rows = _GEMV_DEFAULT_ROWS if int(kwargs["ROWS"]) > 1 else {}
    best = by_rows.get(mode, _GEMV_DEFAULT.get(mode))
    fitting.sort(key=lambda cf: (cf.kwargs["BLOCK_N"], cf.kwargs["BLOCK_G"], cf.kwargs["WPT"],
                                 cf.num_warps) != best)
    return c.first_or_all(fitting)


# (BLOCK_N, BLOCK_G, WPT, num_warps) per mode: the fastest measured through the GPU proxy at
# M = 1, K = N = 4096; and for 2 to 8 rows of x where measured (affine 4-bit, mxfp4), fewer
# words of a row a thread (each word's x takes registers a row): within 1.11x of the best
# config at M = 2, 4, 8 where the M = 1 default took up to 2.1x (docs/ops.md, "Decode speed")
_GEMV_DEFAULT = {AFFINE: (4, 64, 4, 2), MXFP4: (4, 64, 2, 4), INT8: (4, 64, 2, 4), TERNARY: (4, 64, 2, 4),
                 MXFP8: (2, 64, 4, 2), NVFP4: (4, 128, 2, 2)}
_GEMV_DEFAULT_ROWS = {AFFINE: (4, 16, 2, 2), MXFP4: (4, 32, 2, 2)}
_GEMV_CONFIGS = [triton.Config({"BLOCK_N": n, "BLOCK_G": g, "WPT": t}, num_warps=w)
                 for n, g, t, w in (
                     (8, 16, 1, 4), (8, 32, 1, 4), (16, 16, 1, 4), (16, 32, 1, 4), (4, 32, 1, 4), (4, 16, 1, 2),
                     (16, 8, 1, 2), (8, 16, 1, 2), (32, 16, 1, 4), (8, 64, 1, 8), (4, 64, 1, 8), (2, 64, 1, 4),
                     (1, 64, 1, 2),
                     (4, 32, 2, 4), (8, 32, 2, 4), (4, 64, 2, 8), (8, 64, 2, 8), (16, 32, 2, 4), (8, 64, 2, 4),
                     (4, 64, 2, 4), (2, 64, 2, 4), (4, 16, 2, 2), (4, 32, 2, 2), (4, 128, 2, 8),
                     (4, 64, 4, 4), (8, 64, 4, 4), (4, 32, 4, 2), (8, 32, 4, 2), (4, 128, 4, 4), (8, 128, 4, 4),
                     (2, 128, 4, 4), (4, 64, 4, 2), (16, 64, 4, 4), (2, 64, 4, 2),
                     (4, 128, 2, 4), (4, 64, 2, 2), (4, 32, 2, 1), (8, 32, 2, 2), (4, 32, 4, 1),
                     # for nvfp4's groups of 2 words: runs of a whole group, wider steps
                     (4, 256, 2, 4), (2, 256, 2, 4), (8, 128, 2, 4), (2, 128, 2, 4), (4, 256, 2, 8),
                     (4, 128, 2, 2), (4, 256, 1, 8))]


@triton.jit
def _e8m0(s):
    # an E8M0 scale code as the float 2 ** (s - 127), exactly, as MLX decodes it: its bits are s
    # << 23, but for code 0, 2 ** -127 (code 255 is then infinity). Made from bits, not by
    # tl.exp2, which is Metal's fast exp2 and need not be exact
    bits = s.to(tl.uint32) << 23
    return tl.where(s == 0, 2.0 ** -127, bits.to(tl.float32, bitcast=True))


@triton.jit
def _bits_to(words, at: tl.constexpr, to: tl.constexpr, keep: tl.constexpr):
    # the bits of `words` from bit `at` moved to bit `to`, `keep` masking them (one shift, one and)
    if at > to:
        moved = words >> (at - to)
    elif at < to:
        moved = words << (to - at)
    else:
        moved = words
    return moved & keep


@triton.jit
def _gemv_codes(words, BITS: tl.constexpr, MODE: tl.constexpr):
    # the affine, int8 or ternary codes of each word along a last axis of EPW (words:
    # [..., 1]) as floats, each masked in place (code j times 2 ** (BITS * j): the caller's x
    # carries 2 ** -(BITS * j))
    EPW: tl.constexpr = 32 // BITS
    offs_j = tl.arange(0, EPW)[None, None, None, None, None, :]
    if MODE == 2:
        # int8: each byte's sign bit flipped makes it `value + 128` unsigned (the 128 comes
        # off through the sum of x), so its code is masked in place like an affine one
        words = words ^ 0x80808080
    CODE: tl.constexpr = (1 << BITS) - 1
    return (words & (CODE << (offs_j * BITS).to(tl.uint32))).to(tl.float32)


@triton.jit
def _mxfp4_halves(words, shift):
    # E2M1 codes into halves by moving bits, no table, two codes a 32-bit operation: codes j
    # and j + 4 of a word (`shift` = 4 j moves them to bits 0-3 and 16-19) become the low and
    # high halves of one word. The magnitude (bits 0-2 of a code: exponent, mantissa) goes to
    # a half's bits 9-11 (exponent low bits, mantissa top bit), the sign (bit 3) to bit 15:
    # every code's half is its value times 2 ** -14 (code 1, 0.5, is the subnormal 2 ** -15)
    pair = words >> shift
    return _halves(_bits_to(pair, 0, 9, 0x0E000E00) | _bits_to(pair, 3, 15, 0x80008000))


@triton.jit
def _e4m3_halves(words, shift):
    # E4M3 codes into halves by moving bits, two codes a 32-bit operation: codes j and j + 2 of
    # a word (`shift` = 8 j moves them to bits 0-7 and 16-23) become the low and high halves of
    # one word. Exponent and mantissa (bits 0-6) go to a half's bits 7-13, the sign (bit 7) to
    # bit 15: a code's half is its value times 2 ** -8, subnormals included (E4M3's bias is 7,
    # a half's 15). The NaN code (bits 0-6 all set) also sets bit 14, the half's exponent then
    # all ones: its 7 bits plus one carry into bit 7, which moves to bit 14
    pair = words >> shift
    nan = _bits_to((pair & 0x007F007F) + 0x00010001, 7, 14, 0x40004000)
    return _halves(_bits_to(pair, 0, 7, 0x3F803F80) | _bits_to(pair, 7, 15, 0x80008000) | nan)


@triton.jit
def _halves(h):
    # the two halves of each 32-bit word as floats, the low one first
    lo = h.to(tl.uint16).to(tl.float16, bitcast=True).to(tl.float32)
    hi = (h >> 16).to(tl.uint16).to(tl.float16, bitcast=True).to(tl.float32)
    return lo, hi


@triton.jit
def _gemv_x(x_ptrs, xmask, ROWS_PADDED: tl.constexpr):
    if ROWS_PADDED:
        x = tl.load(x_ptrs, mask=xmask, other=0).to(tl.float32)
    else:
        x = tl.load(x_ptrs).to(tl.float32)
    return x


@triton.jit
def _gemv_word(words, offs_t, t: tl.constexpr):
    # word t of each thread's run (held in its registers: a select the compiler folds)
    return tl.sum(tl.where(offs_t == t, words, 0), 4, keep_dims=True)


@triton.autotune(configs=_GEMV_CONFIGS, key=["N", "steps", "ROWS", "BITS", "WPG", "MODE"],
                 prune_configs_by={"early_config_prune": _prune_gemv})
@triton.jit
def _gemv(x_ptr, w_ptr, s_ptr, b_ptr, y_ptr, M, N, K, wpr, gpr, steps, ROWS: tl.constexpr,
          BITS: tl.constexpr, WPG: tl.constexpr, MODE: tl.constexpr, BLOCK_N: tl.constexpr,
          ROWS_PADDED: tl.constexpr, BLOCK_G: tl.constexpr, WPT: tl.constexpr):
    # decode GEMV, `y = x @ W^T` for the M rows of x (ROWS: M rounded up to a power of two;
    # only M = 3, 5, 6, 7 pad, with masked rows of x). Tiles of 6 axes: (row of x, packed row,
    # group of the step, thread's share of the group, word of the share, code of the word).
    # A thread holds a run of WPT consecutive words of one group of each of the BLOCK_N packed
    # rows (one vector load a row) and the x of those words (a vector load a word, once for
    # all the rows). The x of the run's first word is read first in each step, in a tile
    # without the word axis, so its layout decides every tile's: a word's codes along the
    # thread's registers, lanes and warps on the shares of the groups, and the word axis,
    # taking no lane, next in each thread's registers (what makes the run one vector). The
    # sums over the codes stay in the thread, then take the group's scale and bias once a
    # run; partial sums in registers across the whole K loop, reduced once; no threadgroup
    # memory or barrier inside the loop. A step covers BLOCK_G groups of WPG words (int8 and
    # ternary: of 4 words, their bytes viewed as uint32 by the launcher, since a kernel cannot
    # reinterpret an int8 pointer).
    EPW: tl.constexpr = 32 // BITS  # codes per word
    SHARES: tl.constexpr = WPG // WPT  # threads per group
    pid = tl.program_id(0)
    offs_n = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = tl.where(offs_n < N, offs_n, 0)[None, :, None, None, None, None]  # the tail re-reads row 0
    offs_m = tl.arange(0, ROWS)[:, None, None, None, None, None]
    offs_g = tl.arange(0, BLOCK_G)[None, None, :, None, None, None]
    offs_w = tl.arange(0, SHARES)[None, None, None, :, None, None]
    offs_t = tl.arange(0, WPT)[None, None, None, None, :, None]
    # the float modes take the codes of a word in pairs (j, j + EPW / 2): their code axis is half
    # a word
    FLOAT: tl.constexpr = MODE == 1 or MODE == 4 or MODE == 5
    CPW: tl.constexpr = EPW // 2 if FLOAT else EPW
    offs_j = tl.arange(0, CPW)[None, None, None, None, None, :]
    first = offs_g * WPG + offs_w * WPT  # the run's first word
    # pointers carried through the loop
    w_ptrs = w_ptr + rows.to(tl.int64) * wpr + first + offs_t
    x_ptrs = x_ptr + offs_m * K + first * EPW + offs_j
    # a group's scale and bias for a run: one load a row per thread; the group index is taken
    # by a division, so these pointers show no contiguity and the loads take the layout of
    # the per-run sums (no conversion)
    group_of = first // WPG
    s_ptrs = s_ptr + rows * gpr + group_of
    b_ptrs = b_ptr + rows * gpr + group_of
    xmask = offs_m < M
    # affine, int8 and ternary: code j is masked in place, x carries its 2 ** -(BITS * j)
    # (exp2 of each register's constant j, which the compiler folds: computed from bits or by an
    # exact division, nvcc kept the 8 values in registers and the kernel took 5% longer)
    unplace = tl.exp2(-(offs_j * BITS).to(tl.float32))
    acc = tl.zeros([ROWS, BLOCK_N, BLOCK_G, SHARES, 1, 1], tl.float32)
    for _ in range(0, steps, BLOCK_G):
        x = _gemv_x(x_ptrs, xmask, ROWS_PADDED)
        words = tl.load(w_ptrs)
        if FLOAT:
            qx = tl.zeros([ROWS, BLOCK_N, BLOCK_G, SHARES, 1, 1], tl.float32)
            for t in tl.static_range(WPT):
                if t > 0:
                    x = _gemv_x(x_ptrs + t * EPW, xmask, ROWS_PADDED)
                # codes j and j + EPW / 2 of each word: the x of its upper codes too
                x_hi = _gemv_x(x_ptrs + (t * EPW + CPW), xmask, ROWS_PADDED)
                word = _gemv_word(words, offs_t, t)
                if MODE == 4:
                    q, q_hi = _e4m3_halves(word, (offs_j * 8).to(tl.uint32))
                else:
                    q, q_hi = _mxfp4_halves(word, (offs_j * 4).to(tl.uint32))
                qx += tl.sum(q * x + q_hi * x_hi, 5, keep_dims=True)
            # the scale: E8M0's 2 ** (s - 127), or nvfp4's E4M3 as a half by the codes' bit
            # moves (its value times 2 ** -8). What the codes' halves carry (2 ** -14 for E2M1,
            # 2 ** -8 for E4M3) and the scale's half's 2 ** -8 are taken off qx first, so a
            # scale near the top of its range does not overflow
            UNDO: tl.constexpr = 256.0 if MODE == 4 else (4194304.0 if MODE == 5 else 16384.0)
            if MODE == 5:
                scale, _ = _e4m3_halves(tl.load(s_ptrs).to(tl.uint32), 0)
                acc += (qx * UNDO) * scale
            else:
                acc += (qx * UNDO) * _e8m0(tl.load(s_ptrs))
            s_ptrs += BLOCK_G
        else:
            qx = tl.zeros([ROWS, BLOCK_N, BLOCK_G, SHARES, 1, 1], tl.float32)
            xs = tl.zeros([ROWS, 1, BLOCK_G, SHARES, 1, 1], tl.float32)
            for t in tl.static_range(WPT):
                if t > 0:
                    x = _gemv_x(x_ptrs + t * EPW, xmask, ROWS_PADDED)
                q = _gemv_codes(_gemv_word(words, offs_t, t), BITS, MODE)
                qx += tl.sum(q * (x * unplace), 5, keep_dims=True)
                # affine's bias, int8's 128 and ternary's -1 need the sum of x
                xs += tl.sum(x, 5, keep_dims=True)
            if MODE == 0:
                acc += qx * tl.load(s_ptrs).to(tl.float32) + tl.load(b_ptrs).to(tl.float32) * xs
                s_ptrs += BLOCK_G
                b_ptrs += BLOCK_G
            elif MODE == 2:
                acc += qx - 128.0 * xs
            else:
                acc += qx - xs  # ternary: value = code - 1
        w_ptrs += BLOCK_G * WPG
        x_ptrs += BLOCK_G * WPG * EPW
    y = tl.sum(tl.sum(tl.sum(tl.sum(acc, 5), 4), 3), 2)
    offs_y = tl.arange(0, ROWS)[:, None] * N + offs_n[None, :]
    ymask = (tl.arange(0, ROWS)[:, None] < M) & (offs_n[None, :] < N)
    if MODE == 2:  # one scale per output channel
        y = y * tl.load(s_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
    elif MODE == 3:  # one scale per row of x, one for the whole matrix
        xscale = tl.load(s_ptr + tl.arange(0, ROWS), mask=tl.arange(0, ROWS) < M, other=0.0)
        y = y * xscale[:, None] * tl.load(b_ptr)
    tl.store(y_ptr + offs_y, y, mask=ymask)


def _gemv_layout(mode: int, bits: int, group: int, K: int) -> tuple[int, int, int] | None:
    """`(BITS, WPG, steps)` of the GEMV kernel for a packed layout (WPG: words a group), or None
    where it does not apply: codes that straddle words (3, 5, 6 bits), or int8 and ternary rows
    (K and K / 4 bytes) that do not split into whole 16-byte vectors."""
    if mode == AFFINE and bits in (1, 2, 4, 8):
        wpg = group * bits // 32
        return bits, wpg, K // group
    if mode == MXFP4:
        return 4, 4, K // 32
    if mode == NVFP4:
        return 4, 2, K // 16
    if mode == MXFP8:
        return 8, 8, K // 32
    if mode == INT8 and K % 16 == 0:
        return 8, 4, K // 16
    if mode == TERNARY and K % 64 == 0:
        return 2, 4, K // 64
    return None


def _gemv_launch(x2: Any, w: Any, s: Any, b: Any, y: Any, N: int, layout: tuple[int, int, int],
                 mode: int) -> None:
    M, K = x2.shape
    bits, wpg, steps = layout
    wpr = K * bits // 32
    if mode in (INT8, TERNARY):  # bytes read as little-endian words: a code stream as affine
        w = c.mx().view(w, c.mx().uint32)
    rows = next_pow2(M)
    gpr = 1 if mode in (INT8, TERNARY) else steps
    _gemv[lambda meta: (triton.cdiv(N, meta["BLOCK_N"]),)](
        x2, w, s, b, y, M, N, K, wpr, gpr, steps, ROWS=rows, BITS=bits, WPG=wpg, MODE=mode,
        ROWS_PADDED=rows != M)


@triton.autotune(configs=_CONFIGS[2:], key=["N", "K", "TRANS", "bits", "MODE"],
                 prune_configs_by={"early_config_prune": _prune})
@triton.jit
def _qmm(x_ptr, w_ptr, s_ptr, b_ptr, y_ptr, M, N, K, wpr, gpr, bits, group_shift,
         TRANS: tl.constexpr, MODE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
         BLOCK_K: tl.constexpr):
    # tiled (M > 8): BLOCK_M x BLOCK_N output tiles through tl.dot
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + offs_k
        x = tl.load(x_ptr + offs_m[:, None].to(tl.int64) * K + kk[None, :],
                    mask=(offs_m[:, None] < M) & (kk[None, :] < K), other=0.0)
        valid = (kk[:, None] < K) & (offs_n[None, :] < N)
        if TRANS:
            wt = _dequant(w_ptr, s_ptr, b_ptr, offs_n[None, :], kk[:, None], valid, wpr, gpr,
                          bits, group_shift, MODE)
        else:
            wt = _dequant(w_ptr, s_ptr, b_ptr, kk[:, None], offs_n[None, :], valid, wpr, gpr,
                          bits, group_shift, MODE)
        acc += tl.dot(x, wt.to(x.dtype))
    tl.store(y_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :], acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


_MX_CONFIGS = [
    # the first is the default where nothing is tuned: 2 x 2 SIMD groups of 32 x 32 fragments,
    # or on MSL 4.0 targets one 32 x 32 tensor-op block a SIMD group (docs/fp8.md)
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64}, num_warps=4),
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 64}, num_warps=4),
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 64}, num_warps=2),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 128}, num_warps=4),
    # 2 x 2 blocks of 32 x 32 a SIMD group on tensor ops (the accumulator staged a block at a
    # time before and after the K loop): the most reuse of each dequantized element
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=4),
]


@triton.autotune(configs=_MX_CONFIGS, key=["N", "K", "XF", "MODE"],
                 prune_configs_by={"early_config_prune": lambda configs, named_args, **kw: c.first_or_all(configs)})
@triton.jit
def _qmm_mx(x_ptr, w_ptr, s_ptr, y_ptr, M, N, K, XF: tl.constexpr, MODE: tl.constexpr,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # tiled (M > 8), the float modes with 16-bit activations, y = x @ W^T through
    # tl.dot_scaled, on the bytes as mx.quantize packs them, which are the MX operand packing:
    # mxfp4 and nvfp4 two E2M1 codes a byte along K (the low nibble first), mxfp8 an E4M3 code
    # a byte; one scale a group along K, E8M0 a group of 32 (mx), E4M3 a group of 16 (nvfp4)
    PER_BYTE: tl.constexpr = 1 if MODE == 4 else 2
    GROUP: tl.constexpr = 16 if MODE == 5 else 32
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    w_bytes = w_ptr.to(tl.pointer_type(tl.uint8))
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + offs_m[:, None].to(tl.int64) * K + kk[None, :],
                    mask=(offs_m[:, None] < M) & (kk[None, :] < K), other=0.0)
        kb = k0 // PER_BYTE + tl.arange(0, BLOCK_K // PER_BYTE)
        w = tl.load(w_bytes + offs_n[None, :].to(tl.int64) * (K // PER_BYTE) + kb[:, None],
                    mask=(kb[:, None] < K // PER_BYTE) & (offs_n[None, :] < N), other=0)
        ks = k0 // GROUP + tl.arange(0, BLOCK_K // GROUP)
        # past K: the scale of 1 (E8M0 127, E4M3 0x38) on zero codes
        s = tl.load(s_ptr + offs_n[:, None] * (K // GROUP) + ks[None, :],
                    mask=(offs_n[:, None] < N) & (ks[None, :] < K // GROUP), other=0x38 if MODE == 5 else 127)
        if MODE == 4:  # E4M3 codes
            w = w.to(tl.float8e4nv, bitcast=True)
        if MODE == 5:  # E4M3 scales
            s = s.to(tl.float8e4nv, bitcast=True)
        acc = tl.dot_scaled(x, None, XF, w, s, "e4m3" if MODE == 4 else "e2m1", acc)
    tl.store(y_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :], acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


_MX_FORMATS = {"float16": "fp16", "bfloat16": "bf16"}
"""`tl.dot_scaled`'s operand format of each 16-bit activation dtype."""


def _launch(x2: Any, w: Any, scales: Any, biases: Any, N: int, trans: bool, bits: int,
            group: int, mode: int) -> Any:
    """`x2 (M, K)` times the dequantized matrix; `wpr`/`gpr`: words and groups per packed row."""
    M, K = x2.shape
    y = c.zeros((M, N), x2.dtype)
    wpr = w.shape[1]
    gpr = 1 if mode == INT8 else scales.shape[1]
    b = scales if biases is None else biases
    layout = _gemv_layout(mode, bits, group, K) if trans else None
    if M and N and M <= DECODE_MAX_M and layout is not None:
        _gemv_launch(x2, w, scales, b, y, N, layout, mode)
    elif M and N and M <= DECODE_MAX_M:
        _qmv[lambda meta: (triton.cdiv(N, meta["BLOCK_N"]),)](
            x2, w, scales, b, y, M, N, K, wpr, gpr, bits, group.bit_length() - 1, TRANS=trans,
            MODE=mode, ROWS=DECODE_MAX_M)
    elif M and N:
        grid = lambda meta: (triton.cdiv(N, meta["BLOCK_N"]), triton.cdiv(M, meta["BLOCK_M"]))  # noqa: E731
        xf = _MX_FORMATS.get(c.dtype_name(x2)) if mode in _FLOAT_NUMBERS and trans else None
        if xf is not None:
            _qmm_mx[grid](x2, w, scales, y, M, N, K, XF=xf, MODE=mode)
        else:
            _qmm[grid](x2, w, scales, b, y, M, N, K, wpr, gpr, bits, group.bit_length() - 1,
                       TRANS=trans, MODE=mode)
    return y


def _rows2(x: Any) -> Any:
    return x.reshape(-1, x.shape[-1])


@triton.op(name="quantized_matmul")
def _qmm_op(x: Any, w: Any, scales: Any, biases: Any, transpose: bool, group_size: int, bits: int,
            mode: int) -> Any:
    n_out = w.shape[0] if transpose else _elems_per_row(w, bits, mode)
    y = _launch(_rows2(x), w, scales, biases, n_out, transpose, bits, group_size, mode)
    return y.reshape(*x.shape[:-1], n_out)


@_qmm_op.backward
def _qmm_vjp(primals: Any, cotangents: Any, outputs: Any) -> Any:
    x, w, scales, biases, transpose, group_size, bits, mode = primals
    dy = c.first(cotangents).astype(x.dtype)
    K = x.shape[-1]
    dx = _launch(_rows2(dy), w, scales, biases, K, not transpose, bits, group_size, mode)
    # w holds integers; scales and biases enter through stop_gradient (the public functions)
    rest = (None, None) if biases is None else (None, None, None)
    return (dx.reshape(x.shape),) + rest


def _elems_per_row(w: Any, bits: int, mode: int) -> int:
    return w.shape[1] if mode == INT8 else w.shape[1] * 32 // bits


def quantized_matmul(x: Any, w: Any, scales: Any, biases: Any = None, transpose: bool = True,
                     group_size: int | None = None, bits: int | None = None,
                     mode: str = "affine") -> Any:
    """`x @ dequantize(w).T` (or `x @ dequantize(w)` when `transpose=False`), as
    `mx.quantized_matmul`, on exactly what `mx.quantize(w, group_size, bits, mode)` returns.

    `mode="affine"`: `bits` in 1, 2, 3, 4, 5, 6, 8 (default 4), `group_size` in 32, 64, 128
    (default 64), `scales` and `biases` in `x`'s dtype. The float modes take uint8 `scales` and
    no `biases`: `mode="mxfp4"`, E2M1 codes (`bits` 4) with E8M0 scales a `group_size` of 32;
    `"mxfp8"`, E4M3 codes (`bits` 8) with E8M0 scales a group of 32; `"nvfp4"`, E2M1 codes with
    E4M3 scales a group of 16. `x`: float32/float16/bfloat16 `(..., K)`. Differentiable in `x`
    (`scales` and `biases` are treated as constants)."""
    name = "quantized_matmul"
    m = c.mx()
    c.check_array(name, "x", x)
    if mode != "affine" and mode not in FLOAT_MODES:
        raise c.fail(name, "mode", f"expected 'affine', {', '.join(map(repr, FLOAT_MODES))}, got {mode!r}")
    if not isinstance(transpose, bool):
        raise c.fail(name, "transpose", f"expected a bool, got {type(transpose).__name__}")
    if mode == "affine":
        group_size = 64 if group_size is None else group_size
        bits = 4 if bits is None else bits
        if bits not in AFFINE_BITS:
            raise c.fail(name, "bits", f"affine mode takes bits in {AFFINE_BITS}, got {bits}")
        if group_size not in GROUP_SIZES:
            raise c.fail(name, "group_size", f"affine mode takes {GROUP_SIZES}, got {group_size}")
        if biases is None:
            raise c.fail(name, "biases", "affine mode needs the biases mx.quantize returned")
    else:
        _, group, width = FLOAT_MODES[mode]
        group_size = group if group_size is None else group_size
        bits = width if bits is None else bits
        if group_size != group or bits != width:
            raise c.fail(name, "group_size" if group_size != group else "bits",
                         f"{mode} takes group_size {group} and bits {width}, got {group_size} and {bits}")
        if biases is not None:
            raise c.fail(name, "biases", f"{mode} has no biases")
    c.check_array(name, "w", w, dtypes=("uint32",), min_ndim=2)
    if w.ndim != 2:
        raise c.fail(name, "w", f"expected a 2-D packed matrix, got shape {tuple(w.shape)}")
    rows, words = w.shape
    elems = words * 32 // bits
    if (words * 32) % bits:
        raise c.fail(name, "w", f"{words} words per row do not hold a whole number of {bits}-bit codes")
    if elems % group_size:  # as mx.quantized_matmul: a row is whole groups (a partial one has no scale)
        raise c.fail(name, "w", f"its rows hold {elems} {bits}-bit elements, not a whole number of groups "
                     f"of {group_size}")
    groups = elems // group_size
    scale_dtypes = ("uint8",) if mode in FLOAT_MODES else c.FLOAT_DTYPES
    c.check_array(name, "scales", scales, dtypes=scale_dtypes, min_ndim=2)
    if tuple(scales.shape) != (rows, groups):
        raise c.fail(name, "scales", f"expected shape {(rows, groups)} for w {tuple(w.shape)} with "
                     f"bits={bits} and group_size={group_size}, got {tuple(scales.shape)}")
    if biases is not None:
        c.check_array(name, "biases", biases, min_ndim=2)
        if tuple(biases.shape) != (rows, groups):
            raise c.fail(name, "biases", f"expected shape {(rows, groups)}, got {tuple(biases.shape)}")
    K = elems if transpose else rows
    if x.shape[-1] != K:
        raise c.fail(name, "x", f"last axis {x.shape[-1]} does not match the {K} inputs of w "
                     f"{tuple(w.shape)} (bits={bits}, transpose={transpose})")
    if mode == "affine":
        c.check_same_dtype(name, "scales", scales, "x", x)
        c.check_same_dtype(name, "biases", biases, "x", x)
    scales = m.stop_gradient(scales)
    biases = None if biases is None else m.stop_gradient(biases)
    return _qmm_op(x, w, scales, biases, transpose, group_size, bits,
                   AFFINE if mode == "affine" else FLOAT_MODES[mode][0])


def int8_matmul(x: Any, w: Any, scales: Any) -> Any:
    """`x @ (w * scales[:, None]).T`: int8 weights `(N, K)` with one float scale per output
    channel (`pack_int8` makes them), `x` float32/float16/bfloat16 `(..., K)`.

    Differentiable in `x`."""
    name = "int8_matmul"
    c.check_array(name, "x", x)
    c.check_array(name, "w", w, dtypes=("int8",), min_ndim=2)
    if w.ndim != 2 or w.shape[1] != x.shape[-1]:
        raise c.fail(name, "w", f"expected shape (N, {x.shape[-1]}) to match x's last axis, got "
                     f"{tuple(w.shape)}")
    c.check_array(name, "scales", scales)
    if tuple(scales.shape) != (w.shape[0],):
        raise c.fail(name, "scales", f"expected shape ({w.shape[0]},), one per output channel, got "
                     f"{tuple(scales.shape)}")
    return _qmm_op(x, w, c.mx().stop_gradient(scales), None, True, 1, 8, INT8)


def pack_int8(w: Any) -> tuple[Any, Any]:
    """`(w_q, scales)` for `int8_matmul`: symmetric per-output-channel int8 quantization of a
    float `(N, K)` matrix (`scale = max|w_row| / 127`)."""
    m = c.mx()
    c.check_array("pack_int8", "w", w, min_ndim=2)
    w32 = w.astype(m.float32)
    scales = m.maximum(m.abs(w32).max(axis=1), 1e-12) / 127.0
    w_q = m.clip(m.round(w32 / scales[:, None]), -127, 127).astype(m.int8)
    return w_q, scales.astype(w.dtype)


@triton.autotune(configs=_CONFIGS, key=["N", "K", "DECODE"], prune_configs_by={"early_config_prune": _prune})
@triton.jit
def _ternary_mm(x_ptr, xs_ptr, w_ptr, ws_ptr, y_ptr, M, N, K, DECODE: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # int8 activations times {-1, 0, +1} weights in an int32 accumulator, scaled at the end
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.int32)
    kb = K // 4
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + offs_k
        x = tl.load(x_ptr + offs_m[:, None].to(tl.int64) * K + kk[None, :],
                    mask=(offs_m[:, None] < M) & (kk[None, :] < K), other=0)
        valid = (kk[:, None] < K) & (offs_n[None, :] < N)
        byte = tl.load(w_ptr + offs_n[None, :].to(tl.int64) * kb + kk[:, None] // 4, mask=valid, other=0)
        code = (byte >> ((kk[:, None] % 4) * 2).to(tl.uint8)) & 3
        wt = tl.where(valid, code.to(tl.int8) - 1, 0).to(tl.int8)
        acc += tl.dot(x, wt)
    xs = tl.load(xs_ptr + offs_m, mask=offs_m < M, other=0.0).to(tl.float32)
    ws = tl.load(ws_ptr).to(tl.float32)
    y = acc.to(tl.float32) * xs[:, None] * ws
    tl.store(y_ptr + offs_m[:, None].to(tl.int64) * N + offs_n[None, :], y,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def ternary_matmul(x_q: Any, x_scales: Any, w_packed: Any, w_scale: Any) -> Any:
    """BitNet b1.58 linear layer: `(x_q * x_scales[..., None]) @ (ternary(w_packed) * w_scale).T`.

    `x_q`: int8 activations `(..., K)` with one float32 scale per row (`quantize_activations`);
    `w_packed`: uint8 `(N, K / 4)`, four 2-bit codes per byte, and a float32 scalar `w_scale`
    (`pack_ternary`). Returns float32 `(..., N)`. Integer inputs: not differentiable."""
    name = "ternary_matmul"
    m = c.mx()
    c.check_array(name, "x_q", x_q, dtypes=("int8",))
    K = x_q.shape[-1]
    if K % 4:
        raise c.fail(name, "x_q", f"the last axis ({K}) must be a multiple of 4 (codes per byte)")
    c.check_array(name, "x_scales", x_scales, dtypes=("float32",), min_ndim=0)
    if tuple(x_scales.shape) != tuple(x_q.shape[:-1]):
        raise c.fail(name, "x_scales", f"expected shape {tuple(x_q.shape[:-1])}, one per row, got "
                     f"{tuple(x_scales.shape)}")
    c.check_array(name, "w_packed", w_packed, dtypes=("uint8",), min_ndim=2)
    if w_packed.ndim != 2 or w_packed.shape[1] * 4 != K:
        raise c.fail(name, "w_packed", f"expected shape (N, {K // 4}) for K = {K}, got "
                     f"{tuple(w_packed.shape)}")
    c.check_array(name, "w_scale", w_scale, dtypes=("float32",), min_ndim=0)
    if w_scale.size != 1:
        raise c.fail(name, "w_scale", "expected one value (a per-tensor scale), got shape "
                     f"{tuple(w_scale.shape)}")
    x2 = x_q.reshape(-1, K)
    M, N = x2.shape[0], w_packed.shape[0]
    y = c.zeros((M, N), m.float32)
    layout = _gemv_layout(TERNARY, 2, 1, K)
    if M and N and M <= DECODE_MAX_M and layout is not None:
        _gemv_launch(x2, w_packed, x_scales.reshape(-1), w_scale.reshape(1), y, N, layout, TERNARY)
    elif M and N:
        grid = lambda meta: (triton.cdiv(N, meta["BLOCK_N"]), triton.cdiv(M, meta["BLOCK_M"]))  # noqa: E731
        _ternary_mm[grid](x2, x_scales.reshape(-1), w_packed, w_scale.reshape(1), y, M, N, K,
                          DECODE=M <= DECODE_MAX_M)
    return y.reshape(*x_q.shape[:-1], N)


def pack_ternary(w: Any) -> tuple[Any, Any]:
    """`(w_packed, w_scale)` for `ternary_matmul` from a float `(N, K)` matrix, BitNet b1.58's
    absmean rule: `scale = mean|w|`, `q = clip(round(w / scale), -1, 1)`, codes `q + 1` packed
    four per byte from the low bits up."""
    m = c.mx()
    c.check_array("pack_ternary", "w", w, min_ndim=2)
    if w.ndim != 2 or w.shape[1] % 4:
        raise c.fail("pack_ternary", "w", f"expected (N, K) with K a multiple of 4, got {tuple(w.shape)}")
    w32 = w.astype(m.float32)
    scale = m.maximum(m.abs(w32).mean(), 1e-8)
    codes = (m.clip(m.round(w32 / scale), -1, 1) + 1).astype(m.uint8).reshape(w.shape[0], -1, 4)
    shifts = m.array([0, 2, 4, 6], dtype=m.uint8)
    packed = (m.left_shift(codes, shifts)).sum(axis=-1).astype(m.uint8)
    return packed, scale.reshape(())


def quantize_activations(x: Any) -> tuple[Any, Any]:
    """`(x_q, scales)`: per-row absmax int8 quantization of activations (BitNet's 8-bit
    inputs): `scale = max|x_row| / 127`, `x_q = round(x / scale)`."""
    m = c.mx()
    c.check_array("quantize_activations", "x", x)
    x32 = x.astype(m.float32)
    scales = m.maximum(m.abs(x32).max(axis=-1), 1e-8) / 127.0
    x_q = m.clip(m.round(x32 / scales[..., None]), -127, 127).astype(m.int8)
    return x_q, scales
