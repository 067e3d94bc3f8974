"""`tl.const` pointer parameters: loads through them work, a store through one (or a pointer
derived from it) is refused by the one shared check on every backend, and a variable that is a
const pointer on one path and a plain one on another is refused in Triton's words."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError


@triton.jit
def copy_plus_one(src: tl.const, dst, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs) + 1)


@triton.jit
def store_to_const(src: tl.const, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(src + offs, tl.load(src + offs))


@triton.jit
def choose(src: tl.const, dst, flag, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if flag:
        out = src
    else:
        out = dst
    tl.store(out + offs, tl.load(src + offs))


def test_loads_through_a_const_pointer(backend):
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    copy_plus_one[(1,)](x, y, BLOCK=8)
    np.testing.assert_array_equal(y, x + 1)


def test_store_through_a_const_pointer_is_refused(backend):
    x = np.arange(8, dtype=np.float32)
    with pytest.raises(CompilationError, match="Cannot store to a constant pointer") as info:
        store_to_const[(1,)](x, BLOCK=8)
    assert info.value.error_message == "Cannot store to a constant pointer"
    assert "tl.store(src + offs" in str(info.value)
    np.testing.assert_array_equal(x, np.arange(8))


def test_const_and_plain_pointer_cannot_merge(backend):
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    with pytest.raises(CompilationError, match=r"Mismatched type for out: 'out' is \*kfp32 .* \*fp32"):
        choose[(1,)](x, y, 3, BLOCK=8)  # not 1, which would specialize into a constant


def test_const_pointer_type():
    const_ptr = tl.pointer_type(tl.float32, const=True)
    assert const_ptr != tl.pointer_type(tl.float32) and const_ptr == tl.pointer_type(tl.float32, const=True)
    assert str(const_ptr) == "*kfp32" and str(tl.pointer_type(tl.float32)) == "*fp32"
    assert tl.const is not tl.constexpr
