"""A tensor descriptor's reductions (`desc.atomic_add/min/max/and/or/xor(offsets, value)`) on
both backends (`each_backend`) against NumPy: every program reduces its block into the same
place (so the atomics matter), elements outside the shape are left alone, and the element types
Triton's descriptor reductions refuse are refused in its words."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError


@triton.jit
def reduce_into(out, src, M, N, KIND: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    # a [BM, BN] block at (1, 2) of an [M, N] view whose edge cuts the block
    desc = tl.make_tensor_descriptor(out, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    value = tl.load(src + tl.program_id(0) * BM * BN + offs)
    if KIND == "add":
        desc.atomic_add([1, 2], value)
    elif KIND == "min":
        desc.atomic_min([1, 2], value)
    elif KIND == "max":
        desc.atomic_max([1, 2], value)
    elif KIND == "and":
        desc.atomic_and([1, 2], value)
    elif KIND == "or":
        desc.atomic_or([1, 2], value)
    else:
        desc.atomic_xor([1, 2], value)


REFERENCE = {"add": np.add, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and,
             "or": np.bitwise_or, "xor": np.bitwise_xor}


@pytest.mark.parametrize("kind, dtype", [
    ("add", np.float32), ("add", np.int32), ("min", np.int32), ("max", np.uint32),
    ("and", np.int32), ("or", np.uint32), ("xor", np.int32),
])
def test_descriptor_reductions(each_backend, kind, dtype):
    rng = np.random.default_rng(4)
    M, N, BM, BN, programs = 6, 8, 8, 8, 3
    if np.dtype(dtype).kind == "f":
        src = rng.integers(-8, 8, (programs, BM, BN)).astype(dtype)  # sums exact in any order
        out = rng.integers(-8, 8, (M, N)).astype(dtype)
    else:
        info = np.iinfo(dtype)
        src = rng.integers(info.min, info.max, (programs, BM, BN), dtype=dtype, endpoint=True)
        out = rng.integers(info.min, info.max, (M, N), dtype=dtype, endpoint=True)
    expected = out.copy()
    inside = expected[1:, 2:]  # the block's part inside the [M, N] shape
    with np.errstate(over="ignore"):
        for p in range(programs):
            inside[...] = REFERENCE[kind](inside, src[p][: M - 1, : N - 2])
    reduce_into[(programs,)](out, src, M, N, kind, BM, BN)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("kind, dtype, message", [
    ("add", np.int8, "Unsupported dtype i8 for a descriptor's atomic_add"),
    ("xor", np.float32, "Unsupported dtype fp32 for a descriptor's atomic_xor"),
    ("max", np.float16, "16-bit float types require native tma support"),
])
def test_descriptor_reductions_refused(each_backend, kind, dtype, message):
    # rows of 16 elements: at least the 16 bytes a descriptor's block row needs, even of int8
    out = np.zeros((6, 16), dtype)
    src = np.ones((1, 8, 16), dtype)
    with pytest.raises(CompilationError, match=message):
        reduce_into[(1,)](out, src, 6, 16, kind, 8, 16)
    assert not out.any()
