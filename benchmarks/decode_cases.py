"""The decode-time ops at a model's shapes, for `gpuproxy` captures (and anyone timing them).

`python benchmarks/decode_cases.py CASE...` runs each case once (default: all). Cases, at M = 1
(one token) but where named, K = N = 4096, float16 activations:

| case | call |
|---|---|
| `q4` | `quantized_matmul`, affine 4-bit, group 64 (`mx.quantize`'s default) |
| `mxfp4` | `quantized_matmul`, mode "mxfp4" |
| `mxfp8`, `nvfp4` | `quantized_matmul`, modes "mxfp8" and "nvfp4" |
| `int8` | `int8_matmul` (int8 weights, per-channel scales) |
| `ternary` | `ternary_matmul` (int8 activations, 2-bit ternary weights) |
| `q4_m2` ... `ternary_m8` | a GEMV case above at M = 2 to 8 rows of x (a few tokens at once) |
| `sdpa` | `scaled_dot_product_attention`, one query, 32 query heads over 8 kv heads, 4096 keys, D = 128 |
| `sdpa_g1`, `_g2`, `_g8` | the same keys and values under 8, 16 or 64 query heads (groups of 1, 2, 8) |
| `sdpa_4000` | `sdpa` over 4000 keys: a short last split, pass 1's masked form |
| `sdpa_4000_g8` | `sdpa_4000` under 64 query heads |
| `sdpa_32k` | `sdpa` over 32768 keys: a long context |
| `sdpa_32k_g1`, `_g2`, `_g8` | `sdpa_32k`'s keys and values under 8, 16 or 64 query heads |

The `sdpa_g` cases read the bytes of `sdpa` (but for q and the partials) with a quarter, half or
twice its math a key: they tell what decode attention's time owes to its group's work.

Capture one case per folder and replay them on a GPU beside a copy of the same bytes and the
references in `decode_proxy_refs.py` (docs/ops.md, "Decode speed", gives the commands). The
`sdpa` cases are two launches, pass 1 and the combine: `gpuproxy_whole.py CAPTURE:I,J --refs
benchmarks/decode_proxy_refs.py` times them back to back, as the op runs.
"""

from __future__ import annotations

import sys
from functools import partial

import mlx.core as mx

from triton_metal import ops

K = N = 4096
HQ, HKV, LKV, D = 32, 8, 4096, 128


def _q4(m: int = 1) -> mx.array:
    x = mx.random.normal((m, K)).astype(mx.float16)
    wq, s, b = mx.quantize(mx.random.normal((N, K)).astype(mx.float16), group_size=64, bits=4)
    return ops.quantized_matmul(x, wq, s, b, group_size=64, bits=4)


def _float_mode(mode: str, m: int = 1) -> mx.array:
    x = mx.random.normal((m, K)).astype(mx.float16)
    wq, s = mx.quantize(mx.random.normal((N, K)), mode=mode)
    return ops.quantized_matmul(x, wq, s, mode=mode)


def _int8(m: int = 1) -> mx.array:
    x = mx.random.normal((m, K)).astype(mx.float16)
    wq, s = ops.pack_int8(mx.random.normal((N, K)).astype(mx.float16))
    return ops.int8_matmul(x, wq, s)


def _ternary(m: int = 1) -> mx.array:
    xq, xs = ops.quantize_activations(mx.random.normal((m, K)))
    wp, ws = ops.pack_ternary(mx.random.normal((N, K)))
    return ops.ternary_matmul(xq, xs, wp, ws)


def _sdpa(hq: int = HQ, keys: int = LKV) -> mx.array:
    q = mx.random.normal((1, hq, 1, D)).astype(mx.float16)
    k = mx.random.normal((1, HKV, keys, D)).astype(mx.float16)
    v = mx.random.normal((1, HKV, keys, D)).astype(mx.float16)
    return ops.scaled_dot_product_attention(q, k, v, scale=D ** -0.5)


# the GEMV cases, which also run at M rows of x as `NAME_mM` (M = 2 to 8)
GEMVS = {"q4": _q4, "mxfp4": lambda m: _float_mode("mxfp4", m), "mxfp8": lambda m: _float_mode("mxfp8", m),
         "nvfp4": lambda m: _float_mode("nvfp4", m), "int8": _int8, "ternary": _ternary}
CASES = {**{name: partial(f, 1) for name, f in GEMVS.items()},
         "sdpa": _sdpa,
         "sdpa_g1": lambda: _sdpa(HKV), "sdpa_g2": lambda: _sdpa(2 * HKV), "sdpa_g8": lambda: _sdpa(8 * HKV),
         "sdpa_4000": lambda: _sdpa(keys=4000),  # a short last split: pass 1's masked form
         "sdpa_4000_g8": lambda: _sdpa(8 * HKV, 4000),
         "sdpa_32k": lambda: _sdpa(keys=32768),  # a long context: 128 splits of 256 keys
         "sdpa_32k_g1": lambda: _sdpa(HKV, 32768), "sdpa_32k_g2": lambda: _sdpa(2 * HKV, 32768),
         "sdpa_32k_g8": lambda: _sdpa(8 * HKV, 32768)}


def _case(name: str) -> mx.array:
    base, _, rows = name.rpartition("_m")
    if base in GEMVS and rows.isdigit() and 2 <= int(rows) <= 8:
        return GEMVS[base](int(rows))
    return CASES[name]()


def main(argv: list[str]) -> int:
    for name in argv or list(CASES):
        mx.eval(_case(name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
