"""Pointers reinterpreted to another element type (`ptr.to(tl.pointer_type(T))`, Triton's
`tt.bitcast` of a pointer): loads and stores through them read and write the array's bytes as
NumPy's views of the same buffer with the new dtype do, on the emulator and in the interpreter
(`run_both`), masked and not; what neither can run is refused with the same words on both.
The reference is NumPy's `ndarray.view`, which reinterprets bytes exactly as a pointer cast
does (little-endian, the byte order of Apple GPUs and of this machine)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError, OutOfBoundsError

from differential import run_both

BLOCK = 16


@triton.jit
def copy_as(src_ptr, dst_ptr, n, KEY, VIEW: tl.constexpr, BLOCK: tl.constexpr):
    """Both arrays seen as VIEW: dst[o] = src[o] ^ KEY for o < n (bits through integer views)."""
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    v = tl.load(src_ptr.to(tl.pointer_type(VIEW)) + o, mask=m, other=0)
    tl.store(dst_ptr.to(tl.pointer_type(VIEW)) + o, v ^ KEY.to(VIEW), mask=m)


def _views(src: np.ndarray, dst: np.ndarray, view: Any, n: int, key: int) -> np.ndarray:
    want = dst.copy()
    want.view(view)[:n] = src.view(view)[:n] ^ np.asarray(key).astype(view)
    return want


# (array dtype of src, of dst, the view type): same size, wider, narrower
CASES = [
    (np.float32, np.float32, "int32"),  # float bits as integers
    (np.int32, np.float32, "int32"),  # integers stored as a float array's bits
    (np.float16, np.float16, "int16"),  # half bits
    (np.uint8, np.uint8, "uint32"),  # bytes as words
    (np.uint32, np.uint32, "uint8"),  # words as bytes
]


@pytest.mark.parametrize("src_dtype, dst_dtype, view", CASES)
@pytest.mark.parametrize("n_frac", [1.0, 0.55])
def test_loads_and_stores_through_a_reinterpreted_pointer(src_dtype: Any, dst_dtype: Any, view: str,
                                                          n_frac: float):
    rng = np.random.default_rng(7)
    nbytes = 4 * BLOCK * 4  # whole elements of every type involved
    src = rng.integers(0, 256, nbytes, dtype=np.uint8).view(src_dtype)
    dst = rng.integers(0, 256, nbytes, dtype=np.uint8).view(dst_dtype)
    count = nbytes // np.dtype(view).itemsize
    n = int(count * n_frac)  # a partial last block: masked loads and stores
    key = 0x5A
    want = _views(src, dst, np.dtype(view), n, key)
    run_both(copy_as, (triton.cdiv(count, BLOCK),), src_ptr=src, dst_ptr=dst, n=n, KEY=key,
             VIEW=getattr(tl, view), BLOCK=BLOCK)
    np.testing.assert_array_equal(dst.view(np.uint8), want.view(np.uint8))


@triton.jit
def scalar_store_as(out_ptr, VALUE: tl.constexpr, VIEW: tl.constexpr):
    """Triton's test_constexpr: a constant stored through the output reinterpreted as its type."""
    val = tl.full([], VALUE, VIEW)
    tl.store(out_ptr.to(tl.pointer_type(val.dtype)), val)


@pytest.mark.parametrize("value, view", [(5, "int32"), (2**40, "int64")])
def test_a_scalar_store_through_a_pointer_of_the_values_type(value: int, view: str):
    out = np.full(4, 1.5, np.float32)
    want = out.copy()
    want.view(view)[0] = value
    run_both(scalar_store_as, (1,), out_ptr=out, VALUE=value, VIEW=getattr(tl, view))
    np.testing.assert_array_equal(out.view(np.uint32), want.view(np.uint32))


@triton.jit
def words_from_bytes(b_ptr, w_ptr, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    w = tl.load(b_ptr.to(tl.pointer_type(tl.uint32)) + o, mask=o < n)
    tl.store(w_ptr + o, w, mask=o < n)


def test_bounds_count_the_buffers_bytes(each_backend: str):
    """10 bytes hold two whole words: the third reaches bytes 10 and 11, outside the array,
    reported at the first byte outside in the array's own elements, on both backends."""
    b = np.arange(10, dtype=np.uint8)
    w = np.zeros(4, np.uint32)
    words_from_bytes[(1,)](b, w, 2, BLOCK=4)
    np.testing.assert_array_equal(w[:2], b[:8].view(np.uint32))
    with pytest.raises(OutOfBoundsError, match=r"access to 'b_ptr' at index 10 \(the buffer has 10 elements\)"):
        words_from_bytes[(1,)](b, w, 3, BLOCK=4)


def test_bounds_of_an_array_under_8_elements(each_backend: str):
    """An input of fewer than 8 elements gets 8 elements of memory on the emulator, but its
    checks count its own 5 bytes: the word at byte 4 reaches byte 5, outside, on both backends."""
    b = np.arange(1, 6, dtype=np.uint8)
    w = np.zeros(4, np.uint32)
    words_from_bytes[(1,)](b, w, 1, BLOCK=4)
    assert w[0] == b[:4].view(np.uint32)[0]
    with pytest.raises(OutOfBoundsError, match=r"access to 'b_ptr' at index 5 \(the buffer has 5 elements\)"):
        words_from_bytes[(1,)](b, w, 2, BLOCK=4)


@triton.jit
def misaligned_words(b_ptr, w_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(w_ptr + o, tl.load((b_ptr + 1 + o).to(tl.pointer_type(tl.uint32))))


@triton.jit
def words_from_byte(b_ptr, w_ptr, START: tl.constexpr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    p = tl.multiple_of(b_ptr + START + 4 * o, 4)  # the addresses' alignment, as the caller knows it
    tl.store(w_ptr + o, tl.load(p.to(tl.pointer_type(tl.uint32))))


def test_aligned_addresses_in_an_unaligned_array_are_refused(each_backend: str):
    """Offsets divided by the size ratio are exact only from an aligned start: a byte array that
    starts 2 bytes past a 16-byte boundary, read as words from its byte 2, would read from its
    byte 0. From an array that starts on a boundary the same read runs."""
    raw = np.arange(80, dtype=np.uint8)
    start = (-raw.ctypes.data) % 16
    w = np.zeros(8, np.uint32)
    with pytest.raises(CompilationError, match="needs the start of 'b_ptr' to be a multiple of 4 bytes"):
        words_from_byte[(1,)](raw[start + 2:start + 50], w, START=2, BLOCK=8)
    assert not w.any()
    aligned = raw[start:start + 48]
    words_from_byte[(1,)](aligned, w, START=4, BLOCK=8)
    np.testing.assert_array_equal(w, aligned[4:36].view(np.uint32))


@triton.jit
def pointer_to_int(x_ptr, out_ptr):
    tl.store(out_ptr, x_ptr.to(tl.int32, bitcast=True))


@triton.jit
def block_pointer_cast(x_ptr, out_ptr, BLOCK: tl.constexpr):
    p = tl.make_block_ptr(x_ptr, (BLOCK,), (1,), (0,), (BLOCK,), (0,))
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(p.to(tl.pointer_type(tl.int32))))


@pytest.mark.parametrize("kernel, args, words", [
    (misaligned_words, dict(BLOCK=4), "needs every address to be a multiple of 4 bytes"),
    (pointer_to_int, {}, "cannot cast pointer<fp32> to int32"),  # Triton's words
    (block_pointer_cast, dict(BLOCK=4), "a block pointer to fp32 cannot be cast"),
])
def test_refused_alike_on_both_backends(each_backend: str, kernel: Any, args: dict[str, Any], words: str):
    x = np.zeros(32, np.uint8 if kernel is misaligned_words else np.float32)
    out = np.zeros(8, np.int32 if kernel is pointer_to_int else np.uint32)
    with pytest.raises(CompilationError, match=words):
        kernel[(1,)](x, out, **args)


@triton.jit
def block_of_words(b_ptr, w_ptr, n_words, BLOCK: tl.constexpr):
    """A block pointer over a byte array's reinterpreted base: words, the tail bounds-checked."""
    base = b_ptr.to(tl.pointer_type(tl.uint32))
    p = tl.make_block_ptr(base, (n_words,), (1,), (0,), (BLOCK,), (0,))
    tl.store(tl.make_block_ptr(w_ptr, (n_words,), (1,), (0,), (BLOCK,), (0,)),
             tl.load(p, boundary_check=(0,), padding_option="zero"), boundary_check=(0,))


def test_a_block_pointer_over_a_reinterpreted_base():
    b = np.random.default_rng(1).integers(0, 256, 64, dtype=np.uint8)
    w = np.full(16, 3, np.uint32)
    run_both(block_of_words, (1,), b_ptr=b, w_ptr=w, n_words=11, BLOCK=16)
    want = np.full(16, 3, np.uint32)
    want[:11] = b.view(np.uint32)[:11]
    np.testing.assert_array_equal(w, want)


@triton.jit
def atomic_through(x_ptr, VIEW: tl.constexpr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.atomic_add(x_ptr.to(tl.pointer_type(VIEW)) + o, tl.full([BLOCK], 1, VIEW))


@pytest.mark.parametrize("dtype, view, words", [
    (np.uint8, "int32", "must have the array's element size"),  # four elements per atomic
    (np.int16, "float16", "keeps whole for float16 and bfloat16 arrays only"),  # a word's other half
])
def test_atomics_through_another_size_or_word_are_refused(each_backend: str, dtype: Any, view: str, words: str):
    x = np.zeros(64, dtype)
    with pytest.raises(CompilationError, match=words):
        atomic_through[(1,)](x, VIEW=getattr(tl, view), BLOCK=8)
    np.testing.assert_array_equal(x, 0)  # refused before anything ran


@triton.jit
def copy_through_tl_cast(out_ptr, x_ptr, BITCAST: tl.constexpr, BLOCK: tl.constexpr):
    """`tl.cast(ptr, tl.pointer_type(T), bitcast=...)`: the same pointer cast either way."""
    o = tl.arange(0, BLOCK)
    v = tl.load(tl.cast(x_ptr, tl.pointer_type(tl.int32), bitcast=BITCAST) + o)
    tl.store(tl.cast(out_ptr, tl.pointer_type(tl.int32), bitcast=BITCAST) + o, v)


@pytest.mark.parametrize("bitcast", [False, True])
def test_tl_cast_of_a_pointer(bitcast: bool):
    x = np.array([-0.0, np.nan, 1.5, -np.inf, 1e-45, 3.0, -2.5, 7.0], np.float32)
    out = np.zeros(8, np.float32)
    run_both(copy_through_tl_cast, (1,), out_ptr=out, x_ptr=x, BITCAST=bitcast, BLOCK=8)
    np.testing.assert_array_equal(out.view(np.int32), x.view(np.int32))
