"""How slow is the NumPy interpreter? Each example kernel against its NumPy reference.

For every example the same work is timed twice: the kernel run by the interpreter
(`TRITON_METAL_INTERPRET=1`, so no compile is involved) and the example's NumPy reference. The
table gives both medians and their ratio.

    python benchmarks/interpreter.py [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

os.environ["TRITON_METAL_INTERPRET"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for `examples`

import numpy as np  # noqa: E402

from examples import (  # noqa: E402
    cumsum,
    dropout,
    flash_attention,
    histogram,
    layer_norm,
    matmul,
    softmax,
    vector_add,
)


@dataclass(frozen=True)
class Case:
    name: str
    shape: str
    kernel: Callable[[], object]
    reference: Callable[[], object]


def cases() -> list[Case]:
    rng = np.random.default_rng(0)
    x1 = rng.standard_normal(1 << 20).astype(np.float32)
    y1 = rng.standard_normal(1 << 20).astype(np.float32)
    sm = rng.standard_normal((1024, 1000)).astype(np.float32)
    ln_x = rng.standard_normal((512, 1000)).astype(np.float32)
    ln_w = rng.random(1000).astype(np.float32)
    ln_b = rng.random(1000).astype(np.float32)
    ln_dy = rng.standard_normal((512, 1000)).astype(np.float32)
    _, ln_mean, ln_rstd = layer_norm.layer_norm_forward(ln_x, ln_w, ln_b)
    a16 = rng.standard_normal((256, 256)).astype(np.float16)
    b16 = rng.standard_normal((256, 256)).astype(np.float16)
    a32 = a16.astype(np.float32)
    b32 = b16.astype(np.float32)
    cs = rng.integers(-100, 100, size=(1024, 1000)).astype(np.int32)
    h = rng.random(1 << 20).astype(np.float32)
    qkv = [rng.standard_normal((1, 4, 256, 64)).astype(np.float16) for _ in range(3)]
    return [
        Case("vector_add", "1M fp32", lambda: vector_add.add(x1, y1),
             lambda: vector_add.reference(x1, y1)),
        Case("softmax", "1024x1000 fp32", lambda: softmax.softmax(sm),
             lambda: softmax.reference(sm)),
        Case("layer_norm fwd", "512x1000 fp32",
             lambda: layer_norm.layer_norm_forward(ln_x, ln_w, ln_b),
             lambda: layer_norm.reference_forward(ln_x, ln_w, ln_b, 1e-5)),
        Case("layer_norm bwd", "512x1000 fp32",
             lambda: layer_norm.layer_norm_backward(ln_dy, ln_x, ln_w, ln_mean, ln_rstd),
             lambda: layer_norm.reference_backward(ln_dy, ln_x, ln_w, 1e-5)),
        Case("matmul fp32", "256x256x256", lambda: matmul.matmul(a32, b32, BLOCK_SIZE_M=64,
                                                                  BLOCK_SIZE_N=64),
             lambda: matmul.reference(a32, b32)),
        Case("matmul fp16+leaky", "256x256x256",
             lambda: matmul.matmul(a16, b16, "leaky_relu", BLOCK_SIZE_M=64, BLOCK_SIZE_N=64),
             lambda: matmul.reference(a16, b16, "leaky_relu")),
        Case("dropout", "1M fp32", lambda: dropout.seeded_dropout(x1, 0.5, 7),
             lambda: dropout.reference(x1, 0.5, 7)),
        Case("cumsum", "1024x1000 i32", lambda: cumsum.cumsum(cs), lambda: cumsum.reference(cs)),
        Case("histogram", "1M fp32, 64 bins", lambda: histogram.histogram(h, 64),
             lambda: histogram.reference(h, 64)),
        Case("flash_attention", "1x4x256x64 fp16 causal",
             lambda: flash_attention.attention(*qkv, True, 0.125),
             lambda: flash_attention.reference(*qkv, True, 0.125)),
    ]


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up: first-call costs (imports, NumPy dispatch caches) are not the steady state
    times: list[float] = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", help="run only the cases whose name contains this")
    args = parser.parse_args()
    rows: list[tuple[str, str, float, float]] = []
    for case in cases():
        if args.only and args.only not in case.name:
            continue
        t_kernel = median_seconds(case.kernel, args.repeats)
        t_numpy = median_seconds(case.reference, args.repeats)
        rows.append((case.name, case.shape, t_kernel, t_numpy))
    header = f"| {'kernel':<18} | {'size':<24} | {'interpreter ms':>14} | {'NumPy ms':>9} | {'ratio':>7} |"
    print(header)
    print("|" + "|".join("-" * (len(cell)) for cell in header.split("|")[1:-1]) + "|")
    for name, shape, t_kernel, t_numpy in rows:
        print(f"| {name:<18} | {shape:<24} | {t_kernel * 1e3:>14.2f} | {t_numpy * 1e3:>9.2f} | "
              f"{t_kernel / t_numpy:>7.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
