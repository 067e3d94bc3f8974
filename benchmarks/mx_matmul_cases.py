"""The float-mode quantized matmuls at M > 8, through `tl.dot_scaled` and through the dequantizing
kernel, for `gpuproxy` captures.

`python benchmarks/mx_matmul_cases.py [SIZE] [MODE]` (default 2048, mxfp4; also mxfp8, nvfp4)
runs `ops.quantized_matmul` with the mode's weights and float16 activations at M = N = K = SIZE
(the MX kernel `_qmm_mx`), then the dequantizing tiled kernel `_qmm` (which took mxfp4's call
before, and would take the others') on the same arrays. Under
`capture.py` every config of both is launched; replayed with `decode_proxy_refs.py` (random
codes and E8M0 scales near 1, a float64 check of `x @ W^T`, a dense float16 `F.linear` of the
same shape), both are timed in one run (docs/ops.md, "Tiles of the quantized matmul"):

    python ../shared/gpuproxy/capture.py --out .gpuproxy/mxmm -- python benchmarks/mx_matmul_cases.py
    python3 .gpuproxy/gpuproxy/replay.py .gpuproxy/mxmm --inputs benchmarks/decode_proxy_refs.py:inputs \\
        --check-fn benchmarks/decode_proxy_refs.py:check --time-ref-fn benchmarks/decode_proxy_refs.py:time_refs
"""

from __future__ import annotations

import sys

import mlx.core as mx

import triton_metal as triton
from triton_metal import ops
from triton_metal.ops import quantized


def main(argv: list[str]) -> int:
    size = int(argv[0]) if argv else 2048
    mode = argv[1] if len(argv) > 1 else "mxfp4"
    number, group, bits = quantized.FLOAT_MODES[mode]
    m = n = k = size
    x = mx.random.normal((m, k), key=mx.random.key(1)).astype(mx.float16)
    wq, s = mx.quantize(mx.random.normal((n, k), key=mx.random.key(2)), mode=mode)
    now = ops.quantized_matmul(x, wq, s, mode=mode)
    before = mx.zeros((m, n), mx.float16)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_N"]), triton.cdiv(m, meta["BLOCK_M"]))  # noqa: E731
    quantized._qmm[grid](x, wq, s, s, before, m, n, k, wq.shape[1], s.shape[1], bits, group.bit_length() - 1,
                         TRANS=True, MODE=number)
    mx.eval(now, before)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
