"""Benchmark cases for `triton_metal.ops`: each op beside MLX's built-in for the same call.

Shared by `python -m triton_metal.selftest --bench` and `benchmarks/ops.py`. Sizes are a GPU's
(`large`) or a CPU's (the emulator); bytes are the op's compulsory traffic (inputs read once,
outputs written once) and flops its multiply-adds times two, for the rates in the report.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class OpBenchCase:
    name: str
    kernel: Callable[[], Any]
    builtin: Callable[[], Any]
    builtin_name: str
    bytes_moved: int
    flops: int


def op_bench_cases(mx: Any, large: bool) -> list[OpBenchCase]:
    """Every op on MLX arrays, each with its MLX twin (module docstring)."""
    import mlx.nn as nn

    from .. import ops

    rows, cols = (4096, 4096) if large else (64, 1024)
    B, H, Hkv, L, D = (1, 32, 8, 2048, 128) if large else (1, 4, 2, 128, 64)
    M, N, K = (4096, 4096, 4096) if large else (64, 256, 256)
    x = mx.random.normal((rows, cols))
    x16 = x.astype(mx.float16)
    w = mx.random.normal((cols,))
    b = mx.random.normal((cols,))
    up = mx.random.normal((rows, cols))
    targets = mx.random.randint(0, cols, (rows,))
    q = mx.random.normal((B, H, L, D)).astype(mx.float16)
    k = mx.random.normal((B, Hkv, L, D)).astype(mx.float16)
    v = mx.random.normal((B, Hkv, L, D)).astype(mx.float16)
    q1 = q[:, :, -1:, :]
    q8 = mx.random.normal((B, 8 * Hkv, 1, D)).astype(mx.float16)  # a group of 8 query heads
    act = mx.random.normal((M, K)).astype(mx.float16)
    act1, act8 = act[:1], act[:8]
    wq, sc, bi = mx.quantize(mx.random.normal((N, K)).astype(mx.float16), group_size=64, bits=4)
    mq, ms = mx.quantize(mx.random.normal((N, K)), group_size=32, bits=4, mode="mxfp4")
    m8, m8s = mx.quantize(mx.random.normal((N, K)), mode="mxfp8")
    nq, ns = mx.quantize(mx.random.normal((N, K)), mode="nvfp4")
    i8, i8s = ops.pack_int8(mx.random.normal((N, K)).astype(mx.float16))
    tp, tw = ops.pack_ternary(mx.random.normal((N, K)))
    tq, ts = ops.quantize_activations(act1.astype(mx.float32))
    codes = (tp.reshape(N, K // 4, 1) >> mx.array([0, 2, 4, 6], dtype=mx.uint8)) & 3
    tern = (codes.reshape(N, K).astype(mx.float32) - 1) * tw
    mx.eval(x, x16, w, b, up, targets, q, k, v, q1, q8, act, act1, act8, wq, sc, bi, mq, ms, m8, m8s, nq, ns, i8, i8s, tp, tw,
            tq, ts, tern)
    scale = 1.0 / math.sqrt(D)
    f4, f2 = 4, 2
    n = rows * cols
    attn = 4 * B * H * L * L * D // 2  # causal: half the scores
    kv_bytes = 2 * B * Hkv * L * D * f2
    qbytes = N * K // 2 + 2 * N * (K // 64) * f2
    rope_kw = dict(traditional=False, base=10000.0, scale=1.0, offset=0)
    q3 = q.reshape(B * H, L, D)
    return [
        OpBenchCase("ops.softmax", lambda: ops.softmax(x), lambda: mx.softmax(x, axis=-1), "mx.softmax", 2 * n * f4, 0),
        OpBenchCase("ops.softmax fp16", lambda: ops.softmax(x16), lambda: mx.softmax(x16, axis=-1, precise=True),
                    "mx.softmax(precise)", 2 * n * f2, 0),
        OpBenchCase("ops.log_softmax", lambda: ops.log_softmax(x), lambda: nn.log_softmax(x), "nn.log_softmax", 2 * n * f4, 0),
        OpBenchCase("ops.rms_norm", lambda: ops.rms_norm(x, w, 1e-5), lambda: mx.fast.rms_norm(x, w, 1e-5),
                    "mx.fast.rms_norm", 2 * n * f4, 0),
        OpBenchCase("ops.layer_norm", lambda: ops.layer_norm(x, w, b, 1e-5), lambda: mx.fast.layer_norm(x, w, b, 1e-5),
                    "mx.fast.layer_norm", 2 * n * f4, 0),
        OpBenchCase("ops.gelu", lambda: ops.gelu(x), lambda: nn.gelu(x), "nn.gelu", 2 * n * f4, 0),
        OpBenchCase("ops.silu", lambda: ops.silu(x), lambda: nn.silu(x), "nn.silu", 2 * n * f4, 0),
        OpBenchCase("ops.swiglu", lambda: ops.swiglu(x, up), lambda: nn.silu(x) * up, "nn.silu(g) * u", 3 * n * f4, 0),
        OpBenchCase("ops.cross_entropy", lambda: ops.cross_entropy(x, targets),
                    lambda: nn.losses.cross_entropy(x, targets), "nn.losses.cross_entropy", n * f4, 0),
        OpBenchCase("ops.entropy", lambda: ops.entropy(x),
                    lambda: -(mx.softmax(x, axis=-1) * nn.log_softmax(x)).sum(axis=-1), "MLX ops", n * f4, 0),
        OpBenchCase("ops.rope fp16", lambda: ops.rope(q3, D, **rope_kw), lambda: mx.fast.rope(q3, D, **rope_kw),
                    "mx.fast.rope", 2 * q.size * f2, 0),
        OpBenchCase("ops.attention prefill fp16", lambda: ops.scaled_dot_product_attention(q, k, v, scale=scale, mask="causal"),
                    lambda: mx.fast.scaled_dot_product_attention(q, k, v, scale=scale, mask="causal"),
                    "mx.fast.scaled_dot_product_attention", 2 * q.size * f2 + kv_bytes, attn),
        OpBenchCase("ops.attention decode fp16", lambda: ops.scaled_dot_product_attention(q1, k, v, scale=scale),
                    lambda: mx.fast.scaled_dot_product_attention(q1, k, v, scale=scale),
                    "mx.fast.scaled_dot_product_attention", kv_bytes, 0),
        OpBenchCase("ops.attention decode fp16 group 8", lambda: ops.scaled_dot_product_attention(q8, k, v, scale=scale),
                    lambda: mx.fast.scaled_dot_product_attention(q8, k, v, scale=scale),
                    "mx.fast.scaled_dot_product_attention", kv_bytes, 0),
        OpBenchCase("ops.quantized_matmul 4-bit M=1", lambda: ops.quantized_matmul(act1, wq, sc, bi),
                    lambda: mx.quantized_matmul(act1, wq, sc, bi), "mx.quantized_matmul", qbytes, 0),
        OpBenchCase("ops.quantized_matmul 4-bit M=8", lambda: ops.quantized_matmul(act8, wq, sc, bi),
                    lambda: mx.quantized_matmul(act8, wq, sc, bi), "mx.quantized_matmul", qbytes, 0),
        OpBenchCase("ops.quantized_matmul mxfp4 M=1", lambda: ops.quantized_matmul(act1, mq, ms, mode="mxfp4"),
                    lambda: mx.quantized_matmul(act1, mq, ms, mode="mxfp4"), "mx.quantized_matmul",
                    N * K // 2 + N * (K // 32), 0),
        OpBenchCase("ops.quantized_matmul mxfp8 M=1", lambda: ops.quantized_matmul(act1, m8, m8s, mode="mxfp8"),
                    lambda: mx.quantized_matmul(act1, m8, m8s, mode="mxfp8"), "mx.quantized_matmul",
                    N * K + N * (K // 32), 0),
        OpBenchCase("ops.quantized_matmul nvfp4 M=1", lambda: ops.quantized_matmul(act1, nq, ns, mode="nvfp4"),
                    lambda: mx.quantized_matmul(act1, nq, ns, mode="nvfp4"), "mx.quantized_matmul",
                    N * K // 2 + N * (K // 16), 0),
        OpBenchCase("ops.int8_matmul M=1", lambda: ops.int8_matmul(act1, i8, i8s),
                    lambda: act1 @ (i8.astype(mx.float16) * i8s[:, None]).T, "dequantize + matmul", N * K + N * f2, 0),
        OpBenchCase("ops.ternary_matmul M=1", lambda: ops.ternary_matmul(tq, ts, tp, tw),
                    lambda: (tq.astype(mx.float32) * ts[:, None]) @ tern.T, "dequantized matmul", N * K // 4 + K, 0),
        OpBenchCase(f"ops.quantized_matmul 4-bit M={M}", lambda: ops.quantized_matmul(act, wq, sc, bi),
                    lambda: mx.quantized_matmul(act, wq, sc, bi), "mx.quantized_matmul", 0, 2 * M * N * K),
        OpBenchCase(f"ops.quantized_matmul mxfp4 M={M}", lambda: ops.quantized_matmul(act, mq, ms, mode="mxfp4"),
                    lambda: mx.quantized_matmul(act, mq, ms, mode="mxfp4"), "mx.quantized_matmul", 0, 2 * M * N * K),
        OpBenchCase(f"ops.quantized_matmul mxfp8 M={M}", lambda: ops.quantized_matmul(act, m8, m8s, mode="mxfp8"),
                    lambda: mx.quantized_matmul(act, m8, m8s, mode="mxfp8"), "mx.quantized_matmul", 0, 2 * M * N * K),
        OpBenchCase(f"ops.quantized_matmul nvfp4 M={M}", lambda: ops.quantized_matmul(act, nq, ns, mode="nvfp4"),
                    lambda: mx.quantized_matmul(act, nq, ns, mode="nvfp4"), "mx.quantized_matmul", 0, 2 * M * N * K),
    ]
