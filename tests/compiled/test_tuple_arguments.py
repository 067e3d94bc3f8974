"""Tuple kernel arguments (nested, mixing arrays, integers, floats and compile-time values) and
`tl.tuple`, in the interpreter and compiled (`run_both`), against NumPy; a tuple of torch CPU
tensors and of a host tensor descriptor on both backends."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import LaunchError

from differential import run_both


@triton.jit
def _add_each(ptrs, amounts, N: tl.constexpr):
    offs = tl.arange(0, N)
    for i in tl.static_range(len(ptrs)):
        tl.store(ptrs[i] + offs, tl.load(ptrs[i] + offs) + amounts[i])


@triton.jit
def tuples_in(ptrs, amounts, nested, N: tl.constexpr):
    _add_each(ptrs, amounts, N)
    out, (scale, shift), name = nested
    offs = tl.arange(0, N)
    pair = tl.tuple([scale, shift])  # Triton's spelling of a tuple made in the kernel
    if isinstance(pair, tl.tuple) and name == "affine":
        tl.store(out + offs, tl.load(out + offs) * pair[0] + pair[1])


@pytest.mark.parametrize(("scale", "shift"), [(3, 1.5), (1, -2.0), (2**40, 0.5)])  # i32, constexpr 1, i64
def test_nested_tuple_arguments(scale, shift):
    x = np.zeros(16, np.float32)
    y = np.arange(16, dtype=np.int32)
    z = np.arange(16, dtype=np.float32)
    run_both(tuples_in, (1,), ptrs=(x, y), amounts=(2.5, 7), nested=(z, (scale, shift), "affine"), N=16)
    np.testing.assert_array_equal(x, np.full(16, 2.5, np.float32))
    np.testing.assert_array_equal(y, np.arange(16) + 7)
    np.testing.assert_array_equal(z, (np.arange(16, dtype=np.float64) * scale + shift).astype(np.float32))


def test_tuple_of_torch_tensors_and_a_descriptor(monkeypatch):
    torch = pytest.importorskip("torch")
    from triton_metal.tools.tensor_descriptor import TensorDescriptor

    @triton.jit
    def copy_through(pair, N: tl.constexpr):
        src, dst = pair
        dst.store([0], src.load([0]))

    for interpret in ("0", "1"):
        monkeypatch.setenv("TRITON_METAL_INTERPRET", interpret)
        x, y = torch.randn(32), torch.zeros(32)
        copy_through[(1,)]((TensorDescriptor.from_tensor(x, [32]), TensorDescriptor.from_tensor(y, [32])), 32)
        assert torch.equal(x, y)


def test_lists_are_refused():
    x = np.zeros(16, np.float32)
    with pytest.raises(LaunchError, match="argument 'ptrs' is a Python list; pass an array or a tensor"):
        tuples_in[(1,)]([x, x], (1, 1), (x, (1, 1), "affine"), 16)
    assert not x.any()


@triton.jit
def doubled_into(pair, N: tl.constexpr):
    src, dst = pair
    offs = tl.arange(0, N)
    tl.store(dst + offs, tl.load(src + offs) * 2)


def test_mlx_arrays_in_a_tuple_are_rebound_to_the_results():
    mx = pytest.importorskip("mlx.core")
    x, y = mx.arange(16, dtype=mx.float32), mx.zeros(16)
    run_both(doubled_into, (1,), pair=(x, y), N=16)
    np.testing.assert_array_equal(np.array(y), np.arange(16, dtype=np.float32) * 2)


def test_warmup_takes_dtypes_inside_a_tuple_argument():
    mx = pytest.importorskip("mlx.core")
    compiled = doubled_into.warmup((np.float32, mx.float32), N=16, grid=(1,))
    assert compiled is not None and compiled.key.kernel == "doubled_into"
    x, y = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    variants, hits = len(doubled_into.cache), doubled_into.cache.hits
    doubled_into[(1,)]((x, y), 16)  # real arrays reuse the warmed-up variant
    assert len(doubled_into.cache) == variants and doubled_into.cache.hits == hits + 1
    np.testing.assert_array_equal(y, np.arange(16, dtype=np.float32) * 2)
