"""What `tl.dot_scaled` GEMMs compile to, and how long the emulator's C++ compiler takes on them,
here and in a baseline checkout, in one run.

    python -m benchmarks.dot_scaled_compile [--baseline PATH] [--tiles 32x32x64,...] [--target T]

For each tile (BLOCK_M x BLOCK_N x BLOCK_K, 4 warps, a K loop of two steps, one program) and each
checkout (this one; `--baseline`, a checkout of an earlier commit, e.g. made with `git worktree
add`), a fresh process with a fresh kernel cache compiles the kernel and launches it on the
emulator. Prints the MSL's lines, the dot report (barriers and threadgroup bytes per K step),
the seconds of the first launch of the GEMM (after a small kernel has built the emulator's
runtime: nearly all of it is the C++ compile of the GEMM) and of the second, and whether the two checkouts' results are bit-identical (NaNs compared as NaNs). The
times are the emulator's compile on this machine, not anything of an Apple GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

TILES = ("32x32x64:e5m2:e4m3", "64x64x128:e5m2:e2m1", "128x128x128:e2m1:e5m2", "128x256x128:e2m1:e5m2")
"""BLOCK_M x BLOCK_N x BLOCK_K and the two formats; each with e8m0 scales on both operands."""


def _kernel() -> Any:
    import triton_metal as triton
    import triton_metal.language as tl

    @triton.jit
    def scaled_gemm(a_ptr, sa_ptr, b_ptr, sb_ptr, c_ptr, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    BLOCK_K: tl.constexpr, FA: tl.constexpr, FB: tl.constexpr):
        # e2m1 bytes hold two elements along K
        PA: tl.constexpr = 2 if FA == "e2m1" else 1
        PB: tl.constexpr = 2 if FB == "e2m1" else 1
        rows = tl.arange(0, BLOCK_M)
        cols = tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        for k0 in range(0, K, BLOCK_K):
            ka = k0 // PA + tl.arange(0, BLOCK_K // PA)
            kb = k0 // PB + tl.arange(0, BLOCK_K // PB)
            ks = k0 // 32 + tl.arange(0, BLOCK_K // 32)
            a = tl.load(a_ptr + rows[:, None] * (K // PA) + ka[None, :])
            b = tl.load(b_ptr + kb[:, None] * BLOCK_N + cols[None, :])
            sa = tl.load(sa_ptr + rows[:, None] * (K // 32) + ks[None, :])
            sb = tl.load(sb_ptr + cols[:, None] * (K // 32) + ks[None, :])
            acc = tl.dot_scaled(a, sa, FA, b, sb, FB, acc)
        tl.store(c_ptr + rows[:, None] * BLOCK_N + cols[None, :], acc)

    return scaled_gemm


def _warm() -> None:
    """Launch a small kernel first: the emulator's runtime and precompiled header are then built,
    and the launches timed next compile the GEMM alone."""
    import triton_metal as triton
    import triton_metal.language as tl

    @triton.jit
    def fill(x_ptr, BLOCK: tl.constexpr):
        tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)

    fill[(1,)](np.zeros(32, np.float32), BLOCK=32)


def _operand(rng: np.random.Generator, fmt: str, rows: int, cols: int) -> np.ndarray:
    """Bytes of every code (NaN codes included); e2m1 packed along `cols`."""
    return rng.integers(0, 256, (rows, cols // 2 if fmt == "e2m1" else cols)).astype(np.uint8)


def child(tile: str, out_path: str) -> None:
    """Compile and launch one tile in this process (the checkout on its path); JSON to stdout."""
    from triton_metal.codegen.dot_report import DotReport

    shape, fa, fb = tile.split(":")
    bm, bn, bk = (int(x) for x in shape.split("x"))
    k = 2 * bk
    rng = np.random.default_rng(0)
    a = _operand(rng, fa, bm, k)
    b = np.ascontiguousarray(_operand(rng, fb, bn, k).T)  # [K, N], or [K / 2, N] bytes of e2m1 pairs
    sa = rng.integers(110, 140, (bm, k // 32)).astype(np.uint8)
    sb = rng.integers(110, 140, (bn, k // 32)).astype(np.uint8)
    out = np.zeros((bm, bn), np.float32)
    _warm()
    kernel = _kernel()
    meta = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, FA=fa, FB=fb)
    compiled = kernel.warmup(a, sa, b, sb, out, k, grid=(1,), **meta)
    times = []
    for _ in range(2):
        start = time.perf_counter()
        kernel[(1,)](a, sa, b, sb, out, k, **meta)
        times.append(time.perf_counter() - start)
    np.save(out_path, out)
    report = DotReport(**compiled.msl.metadata["dot_reports"][0])
    print(json.dumps({"lines": compiled.msl.source.count("\n"), "barriers": report.barriers_per_k_step,
                      "bytes": report.threadgroup_bytes_per_k_step, "first_s": times[0], "second_s": times[1]}))


def _run(checkout: Path, tile: str, target: str, out_path: str) -> dict[str, Any]:
    from benchmarks._checkouts import run_child  # the parent only

    with tempfile.TemporaryDirectory() as cache:  # compiled afresh
        return run_child(__file__, checkout, [tile, out_path], TRITON_METAL_TARGET=target,
                         TRITON_METAL_CACHE_DIR=cache)


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    both_nan = np.isnan(x) & np.isnan(y)
    return bool(np.array_equal(np.where(both_nan, 0, x).view(np.uint32), np.where(both_nan, 0, y).view(np.uint32)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="a checkout of an earlier commit")
    parser.add_argument("--tiles", default=",".join(TILES))
    parser.add_argument("--target", default="apple9:3.2")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return 0
    from benchmarks._checkouts import checkouts as both  # the parent only

    checkouts = both(args.baseline)
    print(f"tl.dot_scaled GEMM, e8m0 scales, 4 warps, K = 2 x BLOCK_K, target {args.target}, emulator")
    with tempfile.TemporaryDirectory() as outs:
        for tile in args.tiles.split(","):
            found = {}
            for label, checkout in checkouts:
                path = str(Path(outs, f"{label}.npy"))
                r = _run(checkout, tile, args.target, path)
                found[label] = np.load(path)
                print(f"  {tile:24} {label:8} MSL {r['lines']:6} lines, per K step {r['barriers']:2} barriers "
                      f"{r['bytes']:6} threadgroup bytes; first launch {r['first_s']:7.1f} s, "
                      f"second {r['second_s']:.3f} s", flush=True)
            if len(found) == 2:
                print(f"  {tile:24} results bit-identical: {_same(found['this'], found['baseline'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
