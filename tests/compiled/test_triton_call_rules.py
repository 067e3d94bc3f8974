"""Two of Triton's compile-time rules, refused in its words by one check for both backends
(`run_both` asserts the interpreter and the compiler give the same reason), with the programs
next to them that the rules allow computed against NumPy:

* a `noinline=True` function takes scalars and compile-time values, never a block of more than
  one element ("Function ... is marked noinline, but was called with non-scalar argument ...");
* a descriptor made in a kernel has at least 16 bytes in its block's last dimension
  ("Descriptor block shape must have at least 16 bytes in the last dimension, ...")."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError

from differential import run_both


@triton.jit(noinline=True)
def scaled(v, factor):
    return v * factor


@triton.jit
def scale_block(x, out, factor, BLOCK: tl.constexpr, SCALAR_CALL: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    if SCALAR_CALL:
        # the scalar product, then broadcast: what Triton allows a noinline function
        total = v + scaled(tl.load(x), factor)
    else:
        total = v + scaled(v, factor)
    tl.store(out + offs, total)


def test_noinline_function_takes_scalars() -> None:
    x = np.arange(1, 9, dtype=np.float32)
    out = np.zeros(8, np.float32)
    run_both(scale_block, (1,), x=x, out=out, factor=3, BLOCK=8, SCALAR_CALL=True)
    np.testing.assert_array_equal(out, x + x[0] * 3)


def test_noinline_function_refuses_a_block_argument() -> None:
    x = np.ones(8, np.float32)
    out = np.zeros(8, np.float32)
    with pytest.raises(CompilationError) as refusal:
        run_both(scale_block, (1,), x=x, out=out, factor=3, BLOCK=8, SCALAR_CALL=False)
    assert refusal.value.reason == ("Function scaled is marked noinline, but was called with non-scalar "
                                    "argument v:tensor<8xfp32>")
    assert not out.any()


@triton.jit
def copy_rows(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    a = tl.make_tensor_descriptor(src, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    b = tl.make_tensor_descriptor(dst, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    b.store([0, 0], a.load([0, 0]) + 1)


def test_descriptor_block_of_16_bytes_a_row_is_accepted() -> None:
    src = np.arange(24, dtype=np.float16).reshape(3, 8)
    dst = np.zeros((3, 8), np.float16)
    run_both(copy_rows, (1,), src=src, dst=dst, M=3, N=8, BM=2, BN=8)  # 8 halves: 16 bytes
    want = np.zeros((3, 8), np.float16)
    want[:2] = src[:2] + 1
    np.testing.assert_array_equal(dst, want)


@pytest.mark.parametrize("dtype, bn", [(np.float16, 4), (np.int8, 8), (np.float32, 2)])
def test_descriptor_block_under_16_bytes_a_row_is_refused(dtype: type, bn: int) -> None:
    size = np.dtype(dtype).itemsize
    src = np.ones((2, 8), dtype)
    dst = np.zeros((2, 8), dtype)
    with pytest.raises(CompilationError) as refusal:
        run_both(copy_rows, (1,), src=src, dst=dst, M=2, N=8, BM=2, BN=bn)
    assert refusal.value.reason == ("Descriptor block shape must have at least 16 bytes in the last "
                                    f"dimension, but got {bn} * {size} = {bn * size} bytes")
    assert isinstance(refusal.value.__cause__, ValueError)  # Triton's own exception, as it chains it
    assert not dst.any()
