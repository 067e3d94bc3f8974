"""A program's atomics see its own earlier stores to the same array (`order-device-accesses`):
a histogram that zeroes its bins with a store and then counts into them with `atomic_add` from
every thread (the shape of Liger-Kernel's MoE router histogram). Both backends (`run_both`) and
NumPy."""

from __future__ import annotations

import numpy as np

import triton_metal as triton
import triton_metal.language as tl

from differential import run_both


@triton.jit
def zero_then_count(ids_ptr, bins_ptr, n_tiles, TOKENS: tl.constexpr, K: tl.constexpr, BINS: tl.constexpr):
    tile = tl.program_id(0)
    tl.store(bins_ptr + tl.arange(0, BINS) * n_tiles + tile, tl.zeros([BINS], tl.int32))
    rows = tile * TOKENS + tl.arange(0, TOKENS)
    ids = tl.load(ids_ptr + rows[:, None] * K + tl.arange(0, K)[None, :])
    flat = tl.reshape(ids, [TOKENS * K])
    tl.atomic_add(bins_ptr + flat * n_tiles + tile, tl.full([TOKENS * K], 1, tl.int32))


def test_atomics_after_the_programs_own_zeroing_store():
    rng = np.random.default_rng(3)
    tiles, tokens, k, bins = 3, 16, 2, 4
    ids = rng.integers(0, bins, (tiles * tokens, k)).astype(np.int32)
    ids[:4] = 3  # repeated bins within one thread's elements
    counts = np.full((bins, tiles), 99, np.int32)  # not zeroed by the caller
    run_both(zero_then_count, (tiles,), ids_ptr=ids, bins_ptr=counts, n_tiles=tiles, TOKENS=tokens, K=k, BINS=bins)
    want = np.stack([np.bincount(ids[t * tokens:(t + 1) * tokens].ravel(), minlength=bins) for t in range(tiles)], 1)
    np.testing.assert_array_equal(counts, want)
