"""The dot reports of the tutorial matmul and of the ops' GEMMs, beside a steel-like tile.

    python -m benchmarks.dot_reports [--baseline PATH] [TARGET ...]

Compiles (no launch) the tutorial matmul (`examples/matmul.py`, fp16, 4096^3) at its default
tile and at the tiles of `examples/matmul_autotuned.py`'s configs; the tiled quantized matmul
(`ops.quantized_matmul` for M > 8, 4-bit affine weights, fp16 activations) at each of its tiled
configs, and its MX kernel (mxfp4 weights through `tl.dot_scaled`) beside the dequantizing
kernel it replaced; and attention prefill (`ops.scaled_dot_product_attention`, fp16, head dim 128) at the
tiles its pruning keeps, and at head dim 64 at two of them, and its backward kernels at two
tiles; fp32 64 x 64 x 32 tiles of the tutorial and of the quantized matmul;
and the int8 GEMM of `examples/matmul.py` (`int8_matmul`, int32
accumulator) at four tiles; all for `apple7:3.1` and `apple9:3.2` (simdgroup matrices) and
`apple10:4.0` (MSL 4.0: tensor ops where a dot has whole tensor-op tiles, docs/dot.md), or the
targets named on the command line. Each int8 dot on
simdgroup matrices is shown beside the work the integer path it replaces ran for the same tile
(per thread and dot: one scalar multiply-add per accumulator element and K, read as `char4`s from
threadgroup memory; docs/dot.md, "int8"). Prints,
per `tl.dot`, the figures `codegen/dot_report.py` reads off the lowered program (for tensor-op
dots: their form, barriers and threadgroup bytes per K step), then the same figures for MLX's
steel GEMM at its 64 x 64 x 16 tile on
2 x 2 SIMD groups, derived from steel's parameters and loop (mlx/backend/metal/kernels/steel/gemm/
gemm.h: A and B written to threadgroup memory between two barriers per K step, each SIMD group
loading TM = 4 A and TN = 4 B fragments per 8 of K for 16 products). The figures are structure,
not time: no GPU runs here. Also printed: the `tl.dot_scaled` GEMM of
`benchmarks/dot_scaled_compile.py` (mxfp operands dequantized into the fragments) at its tiles.

On targets with tensor ops each dot's line is followed by `why:`, the reason its report gives for
its path (the cost rule, docs/dot.md, "Which path, by cost"). With `--baseline PATH` (a checkout
of an earlier commit, e.g. `git archive main` unpacked, with its own environment in `.venv`: the
package maps `codegen/` into itself, so one checkout's install cannot import another's) both
checkouts compile in fresh processes with fresh caches in the same run; this one's lines are
printed, each line whose figures differ followed by the baseline's (`baseline:`).
"""

from __future__ import annotations

import argparse
import inspect
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from triton_metal.codegen.dot_report import DotReport
from triton_metal.runtime.heuristics import base_jit_function

SIZE = 4096


def reports(compiled: Any) -> list[DotReport]:
    return [DotReport(**r) for r in compiled.msl.metadata["dot_reports"]]


def tutorial(bm: int, bn: int, bk: int, warps: int, dtype: Any = np.float16) -> list[DotReport]:
    from examples.matmul import matmul_kernel

    n = SIZE
    compiled = matmul_kernel.warmup(
        dtype, dtype, dtype, n, n, n, n, 1, n, 1, n, 1,
        BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="",
        num_warps=warps, grid=(1,))
    return reports(compiled)


def quantized(bm: int, bn: int, bk: int, warps: int, dtype: Any = np.float16) -> list[DotReport]:
    from triton_metal.ops import quantized as q

    n = SIZE
    group, bits = 64, 4
    kernel = base_jit_function(q._qmm)
    compiled = kernel.warmup(
        dtype, np.uint32, dtype, dtype, dtype, 64, n, n, n * bits // 32, n // group, bits,
        group.bit_length() - 1, TRANS=True, MODE=q.AFFINE, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
        num_warps=warps, grid=(1,))
    return reports(compiled)


def quantized_mx(bm: int, bn: int, bk: int, warps: int) -> list[DotReport]:
    """`ops.quantized_matmul`'s MX kernel (mxfp4 weights, fp16 activations, tl.dot_scaled)."""
    from triton_metal.ops import quantized as q

    n = SIZE
    compiled = base_jit_function(q._qmm_mx).warmup(
        np.float16, np.uint32, np.uint8, np.float16, 64, n, n, XF="fp16", MODE=q.MXFP4, BLOCK_M=bm, BLOCK_N=bn,
        BLOCK_K=bk, num_warps=warps, grid=(1,))
    return reports(compiled)


def quantized_mx_before(bm: int, bn: int, bk: int, warps: int) -> list[DotReport]:
    """The dequantizing kernel on the same mxfp4 GEMM (what took it before `_qmm_mx`)."""
    from triton_metal.ops import quantized as q

    n = SIZE
    compiled = base_jit_function(q._qmm).warmup(
        np.float16, np.uint32, np.uint8, np.uint8, np.float16, 64, n, n, n // 8, n // 32, 4, 5, TRANS=True,
        MODE=q.MXFP4, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=warps, grid=(1,))
    return reports(compiled)


def prefill(bm: int, bn: int, warps: int, d: int = 128) -> list[DotReport]:
    from triton_metal.ops import attention as at

    heads, length = 8, 2048
    kernel = base_jit_function(at._attn_fwd)
    compiled = kernel.warmup(
        np.float16, np.float16, np.float16, np.float32, np.float16, np.float32, heads, 1, length, length, d, 0.125,
        0, 0, 0, 0, 0, BLOCK_D=d, BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, grid=(1,))
    return reports(compiled)


def backward(bm: int, bn: int, warps: int) -> tuple[list[DotReport], list[DotReport]]:
    """The dot reports of the two tiled backward kernels (dQ; dK and dV), fp16, head dim 128."""
    from triton_metal.ops import attention as at

    heads, length, d, h = 8, 2048, 128, np.float16
    common = (heads, 1, length, length, d, 0.125, 0, 0, 0, 0, 0)
    meta = dict(BLOCK_D=d, BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, grid=(1,))
    f32 = np.float32
    dq = base_jit_function(at._attn_bwd_dq).warmup(h, h, h, f32, h, f32, f32, h, *common, **meta)
    dkdv = base_jit_function(at._attn_bwd_dkdv).warmup(h, h, h, f32, h, f32, f32, h, h, *common, **meta)
    return reports(dq), reports(dkdv)


INT8_TILES = ((32, 32, 32, 4), (64, 64, 32, 4), (64, 64, 64, 4), (32, 64, 32, 2))
PREVIOUS_DEFAULT = (32, 32, 32, 4)
"""`matmul()`'s default tile before it took steel's 64 x 64 on 2 x 2 SIMD groups."""


def matmul_default_tile() -> tuple[int, int, int, int]:
    """`examples.matmul.matmul()`'s default block sizes and warps, read off its signature."""
    from examples import matmul as plain

    params = inspect.signature(plain.matmul).parameters
    return tuple(params[n].default for n in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "num_warps"))  # type: ignore[return-value]


def int8_gemm(bm: int, bn: int, bk: int, warps: int) -> list[DotReport]:
    from examples.matmul import int8_matmul_kernel

    n = SIZE
    compiled = int8_matmul_kernel.warmup(
        np.int8, np.int8, np.int32, n, n, n, n, 1, n, 1, n, 1, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
        num_warps=warps, grid=(1,))
    return reports(compiled)


def scaled_gemm(tile: str) -> list[DotReport]:
    """The `tl.dot_scaled` GEMM of `benchmarks/dot_scaled_compile.py` at `tile`
    ("MxNxK:fa:fb", e8m0 scales)."""
    from benchmarks.dot_scaled_compile import _kernel

    shape, fa, fb = tile.split(":")
    bm, bn, bk = (int(x) for x in shape.split("x"))
    k = 2 * bk
    a = np.zeros((bm, k // 2 if fa == "e2m1" else k), np.uint8)
    b = np.zeros((k // 2 if fb == "e2m1" else k, bn), np.uint8)
    compiled = _kernel().warmup(a, np.zeros((bm, k // 32), np.uint8), b, np.zeros((bn, k // 32), np.uint8),
                                np.zeros((bm, bn), np.float32), k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, FA=fa, FB=fb,
                                grid=(1,))
    return reports(compiled)


def integer_path(bm: int, bn: int, bk: int, warps: int) -> str:
    """What the integer int8 path (before float fragments) ran per thread and dot for this tile."""
    elements = bm * bn // (32 * warps)
    return (f"integer path it replaces: {elements * bk} scalar multiply-adds per thread ({elements} "
            f"elements x K = {bk}), no fragments")


def steel_like(bm: int = 64, bn: int = 64, bk: int = 16, wm: int = 2, wn: int = 2, itemsize: int = 2) -> str:
    tm, tn = bm // (8 * wm), bn // (8 * wn)
    steps = bk // 8
    loads, products = steps * (tm + tn), steps * tm * tn
    written = (bm * bk + bk * bn) * itemsize
    padding = 16 // itemsize  # steel pads each threadgroup row by 16 bytes
    footprint = (bm * (bk + padding) + bk * (bn + padding)) * itemsize
    return (f"steel {bm}x{bn}x{bk}, {wm}x{wn} SIMD groups of {bm // wm}x{bn // wn}: {tm * tn} fragments per SIMD "
            f"group, {products} products from {loads} fragment loads ({products / loads:g} per load); per K step: "
            f"2 barriers, {written} threadgroup bytes ({footprint} bytes of threadgroup memory)")


WHY = "      why: "
"""The prefix of a dot's reason line (not compared with a baseline)."""


def _show(label: str, found: list[DotReport]) -> None:
    print(label)
    for r in found:
        print("   ", replace(r, path_reason="").text().split(": ", 1)[1])  # the reason on its own line
        if r.path_reason:
            print(WHY + r.path_reason)


TARGETS = ("apple7:3.1", "apple9:3.2", "apple10:4.0")
"""Simdgroup matrices (M1; M3/M4); Metal 4 tensor ops (M5) (TRITON_METAL_TARGET, docs/targets.md)."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="a checkout of an earlier commit")
    parser.add_argument("targets", nargs="*", default=list(TARGETS))
    args = parser.parse_args()
    if args.baseline is None:
        _print_all(args.targets)
        return 0
    here = Path(__file__).resolve().parent.parent
    ours, theirs = (_run(checkout, args.targets) for checkout in (here, args.baseline.resolve()))
    print(f"this checkout; each line that differs from the baseline ({args.baseline}) is followed by its line")
    base = iter(line for line in theirs if not line.startswith(WHY))
    for line in ours:
        print(line)
        if not line.startswith(WHY):
            was = next(base, "")
            if was != line:
                print(f"      baseline: {was.strip()}")
    return 0


def _run(checkout: Path, targets: list[str]) -> list[str]:
    """The lines this benchmark prints when run from `checkout` (its own code, a fresh cache)."""
    env = dict(os.environ, PYTHONPATH=str(checkout), PYTHONDONTWRITEBYTECODE="1")
    own = checkout / ".venv" / "bin" / "python"
    with tempfile.TemporaryDirectory() as cache:
        env["TRITON_METAL_CACHE_DIR"] = cache
        python = str(own) if own.exists() else sys.executable
        proc = subprocess.run([python, "-m", "benchmarks.dot_reports", *targets], env=env, capture_output=True,
                              text=True, cwd=checkout)
    if proc.returncode != 0:
        raise RuntimeError(f"{checkout}: the dot reports failed:\n{proc.stderr[-2000:]}")
    return proc.stdout.splitlines()


def _print_all(targets: list[str]) -> None:
    for target in targets:
        os.environ["TRITON_METAL_TARGET"] = target
        print(f"=== target {target}")
        _kernels()
    print("reference (MLX steel's figures, from its parameters)")
    print("  ", steel_like())


def _kernels() -> None:
    from benchmarks.dot_scaled_compile import TILES

    print("tl.dot_scaled GEMM (benchmarks/dot_scaled_compile.py: it also compiles a baseline checkout), e8m0 scales")
    for tile in TILES:
        _show(f"  BLOCK {tile}, 4 warps", scaled_gemm(tile))
    from examples import matmul_autotuned as ex

    print(f"tutorial matmul (examples/matmul.py), fp16, {SIZE}^3")
    default = matmul_default_tile()
    tiles = [default, PREVIOUS_DEFAULT] + [
        (cf.kwargs["BLOCK_M"], cf.kwargs["BLOCK_N"], cf.kwargs["BLOCK_K"], cf.num_warps)
        for cf in ex.CONFIGS if cf.kwargs["BLOCK_M"] >= 32]
    for cfg in dict.fromkeys(tiles):
        label = ("default (matmul()), " if cfg == default
                 else "the default before, " if cfg == PREVIOUS_DEFAULT else "")
        _show(f"  {label}BLOCK {cfg[0]}x{cfg[1]}x{cfg[2]}, {cfg[3]} warps", tutorial(*cfg))
    print(f"quantized_matmul tiled (M > 8), 4-bit affine, fp16, N = K = {SIZE}")
    from triton_metal.ops import quantized as q

    tiled = [cf for cf in q._CONFIGS if cf.kwargs["BLOCK_M"] > 16]
    for cf in tiled:
        bm, bn, bk = cf.kwargs["BLOCK_M"], cf.kwargs["BLOCK_N"], cf.kwargs["BLOCK_K"]
        label = "default, " if cf is tiled[0] else ""
        _show(f"  {label}BLOCK {bm}x{bn}x{bk}, {cf.num_warps} warps", quantized(bm, bn, bk, cf.num_warps))
    print(f"quantized_matmul tiled (M > 8), mxfp4, fp16, N = K = {SIZE}: tl.dot_scaled, and the dequantizing "
          "kernel it replaced at the same tile")
    for cf in q._MX_CONFIGS:
        bm, bn, bk = cf.kwargs["BLOCK_M"], cf.kwargs["BLOCK_N"], cf.kwargs["BLOCK_K"]
        label = "default, " if cf is q._MX_CONFIGS[0] else ""
        _show(f"  {label}BLOCK {bm}x{bn}x{bk}, {cf.num_warps} warps", quantized_mx(bm, bn, bk, cf.num_warps))
        _show("    before (tl.dot on the tile dequantized by every element)", quantized_mx_before(bm, bn, bk, cf.num_warps))
    print(f"int8 GEMM (int32 accumulator), {SIZE}^3")
    for cfg in INT8_TILES:
        found = int8_gemm(*cfg)
        _show(f"  BLOCK {cfg[0]}x{cfg[1]}x{cfg[2]}, {cfg[3]} warps", found)
        if any(r.k_chunk for r in found):
            print("   ", integer_path(*cfg))
    print("fp32 64x64x32 tiles (on MSL 4.0 the carried accumulator staged over the operands' bytes)")
    for warps in (4, 8):
        _show(f"  tutorial matmul, fp32, {warps} warps", tutorial(64, 64, 32, warps, np.float32))
    _show("  quantized_matmul default, fp32 activations, 4 warps", quantized(64, 64, 32, 4, np.float32))
    print("attention prefill forward, fp16, head dim 128, 2048 tokens")
    from triton_metal.ops import attention as at

    kept = [cf for cf in at._TILES if at._fits(cf.kwargs["BLOCK_M"], cf.kwargs["BLOCK_N"], 128, 2)]
    for cf in kept:
        bm, bn = cf.kwargs["BLOCK_M"], cf.kwargs["BLOCK_N"]
        label = "default, " if cf is kept[0] else ""
        _show(f"  {label}BLOCK_M {bm}, BLOCK_N {bn}, {cf.num_warps} warps", prefill(bm, bn, cf.num_warps))
    # at head dim 64 the dots' staging fits beside the layout passes' scratch: on MSL 4.0 they
    # would be single tensor-op dots (no K loop carries their accumulators), which the cost rule
    # weighs against simdgroup matrices
    for bm, bn, warps in ((64, 32, 4), (32, 32, 4)):
        _show(f"  head dim 64, BLOCK_M {bm}, BLOCK_N {bn}, {warps} warps", prefill(bm, bn, warps, 64))
    print("attention prefill backward, fp16, head dim 128: the default (64 x 32, 4 warps) and the one before")
    for bm, bn, warps in ((64, 32, 4), (16, 16, 2)):
        dq, dkdv = backward(bm, bn, warps)
        _show(f"  dQ, BLOCK_M {bm}, BLOCK_N {bn}, {warps} warps", dq)
        _show(f"  dK and dV, BLOCK_M {bm}, BLOCK_N {bn}, {warps} warps", dkdv)


if __name__ == "__main__":
    sys.exit(main())
