"""The self-test's cases: every example kernel, its inputs, and how close two runs must agree.

A case is `run(lib) -> tuple of outputs` for fixed, seeded inputs, where `lib` turns a NumPy
input into the array type of the run (MLX arrays on Metal, NumPy elsewhere). The self-test calls
it once on the active backend and once in the interpreter and compares output by output.
Benchmark cases time a kernel and MLX's built-in equivalent on the same inputs.

The kernels are the repository's `examples/` package (a source checkout, or any folder on
`sys.path` that holds it); `load_examples()` says where it looked when it is missing.
"""

from __future__ import annotations

import importlib
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

EXAMPLE_MODULES = ("vector_add", "softmax", "layer_norm", "matmul", "dropout", "cumsum", "histogram",
                   "flash_attention")


class ExamplesNotFound(ImportError):
    pass


def load_examples() -> dict[str, Any]:
    """The example modules by name; the repository root is tried when `examples` is not importable."""
    root = Path(__file__).resolve().parents[2]
    try:
        importlib.import_module("examples")
    except ImportError:
        if (root / "examples" / "__init__.py").is_file():
            sys.path.insert(0, str(root))
        else:
            raise ExamplesNotFound(
                "the example kernels ship with the source repository (examples/); run the self-test "
                f"from a checkout, or put the folder holding examples/ on PYTHONPATH (looked in {root})"
            ) from None
    return {name: importlib.import_module(f"examples.{name}") for name in EXAMPLE_MODULES}


@dataclass(frozen=True)
class Case:
    name: str
    run: Callable[[Callable[[np.ndarray], Any]], tuple[Any, ...]]
    atol: float
    rtol: float = 0.0


def correctness_cases(ex: dict[str, Any]) -> list[Case]:
    rng = np.random.default_rng(0)
    f32 = np.float32
    x1 = rng.standard_normal(10_000).astype(f32)
    y1 = rng.standard_normal(10_000).astype(f32)
    sm = rng.standard_normal((33, 200)).astype(f32)
    ln_x = rng.standard_normal((16, 300)).astype(f32)
    ln_w = rng.standard_normal(300).astype(f32)
    ln_b = rng.standard_normal(300).astype(f32)
    ma = rng.standard_normal((64, 48)).astype(np.float16)
    mb = rng.standard_normal((48, 80)).astype(np.float16)
    dx = rng.standard_normal(5000).astype(f32)
    cs = rng.integers(-1000, 1000, size=(8, 100)).astype(np.int32)
    hx = rng.random(20_000).astype(f32)
    q, k, v = (rng.standard_normal((1, 2, 64, 32)).astype(np.float16) for _ in range(3))
    # int8 dots run on float fragments whose partials are exact by the chunk bound (docs/dot.md,
    # "int8"): operands from the ends of the range (products up to 2^14) must match the
    # interpreter exactly
    ia = rng.choice(np.array([-128, -127, 127, 1], np.int8), (40, 200))
    ib = rng.choice(np.array([-128, -127, 127, 1], np.int8), (200, 36))
    # an MX GEMM (mxfp4 weights, float16 activations) through tl.dot_scaled: on an M5 its K loop
    # fills each SIMD group's tensor-op inputs by their elements' coordinates (docs/fp8.md)
    mx_x = rng.standard_normal((64, 128)).astype(np.float16)
    mx_w = rng.integers(0, 2**32, (64, 16), dtype=np.uint32)
    mx_s = rng.integers(122, 132, (64, 4)).astype(np.uint8)
    return [
        Case("vector_add", lambda lib: (ex["vector_add"].add(lib(x1), lib(y1)),), 0.0),
        Case("softmax", lambda lib: (ex["softmax"].softmax(lib(sm)),), 1e-6),
        Case("layer_norm", lambda lib: ex["layer_norm"].layer_norm_forward(lib(ln_x), lib(ln_w), lib(ln_b)), 1e-4),
        Case("matmul", lambda lib: (ex["matmul"].matmul(lib(ma), lib(mb), activation="leaky_relu"),), 5e-2, 1e-2),
        Case("int8 matmul", lambda lib: (ex["matmul"].int8_matmul(lib(ia), lib(ib)),), 0.0),
        # x / (1 - p) is Triton's approximate fp32 division, fast::divide (2.5 ulp) compiled
        Case("dropout", lambda lib: (ex["dropout"].seeded_dropout(lib(dx), 0.5, 123),), 0.0, 3.6e-7),
        Case("cumsum", lambda lib: (ex["cumsum"].cumsum(lib(cs)),), 0.0),
        Case("histogram", lambda lib: (ex["histogram"].histogram(lib(hx), 64),), 0.0),
        Case("flash_attention", lambda lib: ex["flash_attention"].attention(lib(q), lib(k), lib(v), True, 0.5), 1e-2),
        Case("mxfp4 matmul", lambda lib: _mx_matmul(lib, mx_x, mx_w, mx_s), 1e-2, 1e-3),
    ]


def _mx_matmul(lib: Callable[[np.ndarray], Any], x: np.ndarray, w: np.ndarray, s: np.ndarray) -> tuple[Any]:
    """`x @ W^T` for the mxfp4 matrix of words `w` and scales `s` (`ops.quantized_matmul`'s
    tiled MX kernel at its default tile)."""
    from ..ops import quantized
    from ..runtime.heuristics import base_jit_function

    (m, k), n = x.shape, w.shape[0]
    y = lib(np.zeros((m, n), np.float16))
    cf = quantized._MX_CONFIGS[0]
    base_jit_function(quantized._qmm_mx)[(1, 1)](lib(x), lib(w), lib(s), y, m, n, k, XF="fp16",
                                                 MODE=quantized.MXFP4, **cf.all_kwargs())
    return (y,)


@dataclass(frozen=True)
class BenchCase:
    name: str
    kernel: Callable[[], Any]
    builtin: Callable[[], Any]
    builtin_name: str
    bytes_moved: int
    flops: int


def bench_cases(ex: dict[str, Any], mx: Any, large: bool) -> list[BenchCase]:
    """Kernel and MLX built-in on the same MLX arrays (sizes for a GPU when `large`)."""
    rows, cols = (4096, 4096) if large else (256, 1024)
    mm = 2048 if large else 128
    n_ctx, head = (2048, 64) if large else (128, 32)
    x = mx.random.normal((rows, cols))
    w = mx.random.normal((cols,))
    b = mx.random.normal((cols,))
    a16 = mx.random.normal((mm, mm)).astype(mx.float16)
    b16 = mx.random.normal((mm, mm)).astype(mx.float16)
    q, k, v = (mx.random.normal((1, 4, n_ctx, head)).astype(mx.float16) for _ in range(3))
    scale = 1.0 / math.sqrt(head)
    mx.eval(x, w, b, a16, b16, q, k, v)
    ln = ex["layer_norm"]
    attn_flops = 4 * 1 * 4 * n_ctx * n_ctx * head
    return [
        BenchCase("softmax", lambda: ex["softmax"].softmax(x), lambda: mx.softmax(x, axis=-1), "mx.softmax",
                  2 * rows * cols * 4, 0),
        BenchCase("layer_norm", lambda: ln.layer_norm_forward(x, w, b)[0],
                  lambda: mx.fast.layer_norm(x, w, b, 1e-5), "mx.fast.layer_norm", 2 * rows * cols * 4, 0),
        BenchCase("matmul fp16", lambda: ex["matmul"].matmul(a16, b16),
                  lambda: mx.matmul(a16, b16), "mx.matmul", 3 * mm * mm * 2, 2 * mm * mm * mm),
        BenchCase("attention fp16", lambda: ex["flash_attention"].attention(q, k, v, False, scale)[0],
                  lambda: mx.fast.scaled_dot_product_attention(q, k, v, scale=scale),
                  "mx.fast.scaled_dot_product_attention", 4 * n_ctx * head * 2 * 4, attn_flops),
    ]
