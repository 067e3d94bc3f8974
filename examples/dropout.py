"""Low-memory dropout (Triton tutorial 04): the keep mask comes from `tl.rand(seed, offset)`.

Nothing but the seed is stored: the same seed regenerates the same mask, element by element,
for the backward pass. The reference below implements Philox 4x32-10 in NumPy from its
specification, so it checks the kernel's random numbers bit for bit, not just statistically.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

import triton_metal as triton
import triton_metal.language as tl

from ._common import empty, numel, report, to_numpy


@triton.jit
def _seeded_dropout(x_ptr, output_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    # one uniform number in [0, 1) per element, a pure function of (seed, offset)
    random = tl.rand(seed, offsets)
    x_keep = random > p
    # scale the kept elements so the expected value is unchanged
    output = tl.where(x_keep, x / (1 - p), 0.0)
    tl.store(output_ptr + offsets, output, mask=mask)


def seeded_dropout(x: Any, p: float, seed: int, BLOCK_SIZE: int = 1024, num_warps: int = 4) -> Any:
    output = empty(x.shape, x.dtype, like=x)
    n_elements = numel(x)
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    _seeded_dropout[grid](x, output, n_elements, p, seed, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)
    return output


# -- a NumPy Philox 4x32-10, from the specification (Salmon et al., SC'11) -----------------------

PHILOX_KEY_A = np.uint32(0x9E3779B9)
PHILOX_KEY_B = np.uint32(0xBB67AE85)
PHILOX_ROUND_A = np.uint32(0xD2511F53)
PHILOX_ROUND_B = np.uint32(0xCD9E8D57)


def _mulhilo(a: np.uint32, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    product = np.uint64(a) * b.astype(np.uint64)
    return (product >> np.uint64(32)).astype(np.uint32), (product & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def philox4x32(counter: tuple[np.ndarray, ...], key: tuple[int, int], rounds: int = 10):
    """Philox 4x32 with `rounds` rounds over arrays of counters (uint32 each)."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint32) for c in counter)
    k0, k1 = np.uint32(key[0]), np.uint32(key[1])
    with np.errstate(over="ignore"):
        for _ in range(rounds):
            hi0, lo0 = _mulhilo(PHILOX_ROUND_A, c0)
            hi1, lo1 = _mulhilo(PHILOX_ROUND_B, c2)
            c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
            k0 = np.uint32(k0 + PHILOX_KEY_A)
            k1 = np.uint32(k1 + PHILOX_KEY_B)
    return c0, c1, c2, c3


def reference_rand(seed: int, offsets: np.ndarray) -> np.ndarray:
    """`tl.rand(seed, offsets)`: the first Philox output word mapped to [0, 1)."""
    zero = np.zeros_like(offsets, dtype=np.uint32)
    key = (seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF)
    word = philox4x32((offsets.astype(np.uint32), zero, zero, zero), key)[0]
    as_int = word.view(np.int32).astype(np.int64)
    # fold negative values onto [0, 2**31): -x - 1
    as_int = np.where(as_int < 0, -as_int - 1, as_int)
    return (as_int.astype(np.float32) * np.float32(4.6566127342e-10)).astype(np.float32)


def reference(x: np.ndarray, p: float, seed: int) -> np.ndarray:
    keep = reference_rand(seed, np.arange(x.size)) > np.float32(p)
    # `1 - p` is computed in fp32, as the kernel computes it from its fp32 argument
    scaled = (x / (np.float32(1) - np.float32(p))).astype(x.dtype)
    return np.where(keep, scaled, np.zeros_like(x))


def main() -> int:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(10_000).astype(np.float32)
    p, seed = 0.5, 123
    out = to_numpy(seeded_dropout(x, p, seed))
    error = float(np.max(np.abs(out - reference(x, p, seed))))
    return 0 if report("dropout", error, 1e-6) else 1


if __name__ == "__main__":
    sys.exit(main())
