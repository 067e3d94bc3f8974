"""Autotuned matrix multiplication: the tile sizes are chosen per chip and remembered.

The kernel is tutorial 03's grouped-order `tl.dot` loop, `examples/matmul.py`'s kernel called as a
`@jit` function; `@autotune` times each `Config` on the first launch for a shape and dtype
(`key=["M", "N", "K"]`, dtypes always join the key), launches the fastest, and files the choice
under this chip in `$TRITON_METAL_CACHE_DIR/autotune/`. A later process with the same kernel,
shapes and configs reads the choice instead of benchmarking; so does a user without results of
their own when `autotune_cache/` in the repository ships one for the chip. One config asks for
8x8 tiles, below simdgroup_matrix's reach: `tl.dot` computes those as products and a sum over K.

    python -m examples.matmul_autotuned          # TRITON_METAL_PRINT_AUTOTUNING=1 to see the choice
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np

import triton_metal as triton
import triton_metal.language as tl

from ._common import empty, report, strides, to_numpy
from .matmul import matmul_kernel as tiled_matmul

CONFIGS = [
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4),
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 4}, num_warps=2),
    triton.Config({"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 8}, num_warps=1),
    # on MSL 4.0 targets (docs/dot.md) 64 x 64 x 32 is a whole tensor-op tile, on 4 SIMD groups
    # above and on 8 here; 64 x 64 x 16 (K no multiple of 32) is the same output tile on
    # simdgroup matrices (MLX steel's tile), so tuning on an M5 times both paths
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=8),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 16, "GROUP_M": 8}, num_warps=4),
    # tiles under 16: tl.dot's product form, not simdgroup_matrix fragments
    triton.Config({"BLOCK_M": 8, "BLOCK_N": 8, "BLOCK_K": 8, "GROUP_M": 8}, num_warps=1),
]
DEFAULT_CONFIG = CONFIGS[0]


@triton.jit
def matmul_kernel(
        a_ptr, b_ptr, c_ptr,
        M, N, K,
        stride_am, stride_ak,
        stride_bk, stride_bn,
        stride_cm, stride_cn,
        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
        GROUP_M: tl.constexpr,
):
    # tutorial 03's kernel (examples/matmul.py) with no activation, called as a @jit function:
    # only the names of the tuned meta-parameters differ
    tiled_matmul(
        a_ptr, b_ptr, c_ptr,
        M, N, K,
        stride_am, stride_ak,
        stride_bk, stride_bn,
        stride_cm, stride_cn,
        BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, "",
    )


# rep: a time budget in ms; 300 gives a few timed runs per config even on the CPU emulator
matmul_tuned = triton.autotune(configs=CONFIGS, key=["M", "N", "K"], rep=300)(matmul_kernel)


def _grid(M: int, N: int) -> Any:
    return lambda META: (triton.cdiv(M, META["BLOCK_M"]) * triton.cdiv(N, META["BLOCK_N"]),)


def matmul(a: Any, b: Any) -> Any:
    """`a @ b` (M x K times K x N) with the tuned tile sizes; C has `a`'s dtype."""
    assert a.shape[1] == b.shape[0], "incompatible dimensions"
    assert a.dtype == b.dtype, "a and b must have the same dtype"
    M, K = a.shape
    N = b.shape[1]
    c = empty((M, N), a.dtype, like=a)
    matmul_tuned[_grid(M, N)](a, b, c, M, N, K, *strides(a), *strides(b), *strides(c))
    return c


def matmul_with(config: triton.Config, a: Any, b: Any, c: Any) -> None:
    """One launch of the untuned kernel with `config` (benchmarks compare configs with this)."""
    M, K = a.shape
    N = b.shape[1]
    matmul_kernel[_grid(M, N)](a, b, c, M, N, K, *strides(a), *strides(b), *strides(c),
                               **config.all_kwargs())


def inputs(M: int = 256, N: int = 256, K: int = 128, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16))


def main() -> int:
    a, b = inputs()
    start = time.perf_counter()
    c = to_numpy(matmul(a, b)).astype(np.float32)
    seconds = time.perf_counter() - start
    print(f"matmul_autotuned: config {{{matmul_tuned.best_config}}} from {matmul_tuned.last_origin} "
          f"in {seconds:.2f} s")
    ref = a.astype(np.float32) @ b.astype(np.float32)
    error = float(np.max(np.abs(c - ref)))
    return 0 if report("matmul_autotuned (fp16)", error, 1e-2 * float(np.max(np.abs(ref)))) else 1


if __name__ == "__main__":
    # run the module's importable copy: a kernel's cache key includes its module's name, and
    # tuning results saved by `python -m examples.matmul_autotuned` must serve `import` too
    from examples.matmul_autotuned import main as imported_main

    sys.exit(imported_main())
