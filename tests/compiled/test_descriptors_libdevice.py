"""In-kernel tensor descriptors and libdevice functions: compiled on the emulator and
interpreted, both against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError
from triton_metal.language.extra import libdevice


@triton.jit
def tile_scale(x_ptr, y_ptr, M, N, stride_m, BM: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[stride_m, 1], block_shape=[BM, BN],
                                    padding_option=PAD)
    dst = tl.make_tensor_descriptor(y_ptr, [M, N], [N, 1], [BM, BN])
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    tile = src.load([m0, n0])
    dst.store([m0, n0], tile * 2.0)


@triton.jit
def tile_probe(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN], padding_option="nan")
    tile = tl.load_tensor_descriptor(src, [M - 2, -1])  # straddles two edges
    rows = tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    tl.store(out_ptr + rows * BN + cols, tile)


@triton.jit
def math_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.5)
    c = x * 0.5  # inside (-1, 1) for the inverse functions
    rows = [libdevice.tanh(x), libdevice.sinh(x), libdevice.cosh(x), libdevice.tan(c),
            libdevice.asin(c), libdevice.acos(c), libdevice.atan(x), libdevice.asinh(x),
            libdevice.acosh(tl.abs(x) + 1), libdevice.atanh(c), libdevice.log10(tl.abs(x) + 1),
            libdevice.trunc(x * 3), libdevice.rint(x * 3), libdevice.round(x * 3),
            libdevice.pow(tl.abs(x), 1.5), libdevice.fmod(x * 3, 1.25)]
    for i in tl.static_range(16):
        tl.store(out_ptr + i * n + offs, rows[i], mask=mask)


def _numpy_math(x: np.ndarray) -> np.ndarray:
    c = x * 0.5
    half_away = np.sign(x * 3) * np.floor(np.abs(x * 3) + 0.5)
    return np.stack([np.tanh(x), np.sinh(x), np.cosh(x), np.tan(c), np.arcsin(c), np.arccos(c),
                     np.arctan(x), np.arcsinh(x), np.arccosh(np.abs(x) + 1), np.arctanh(c),
                     np.log10(np.abs(x) + 1), np.trunc(x * 3), np.rint(x * 3), half_away,
                     np.abs(x) ** 1.5, np.fmod(x * 3, 1.25)])


@pytest.fixture(params=["compiled", "interpret"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "interpret":
        monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    return request.param


@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_descriptor_tiles_cover_a_ragged_matrix(mode, pad):
    rng = np.random.default_rng(0)
    full = rng.standard_normal((37, 60)).astype(np.float32)
    x = full[:, :45]  # a row stride of 60, 45 columns
    y = np.full((37, 45), 7.0, np.float32)
    grid = (triton.cdiv(37, 16), triton.cdiv(45, 32))
    tile_scale[grid](x, y, 37, 45, 60, BM=16, BN=32, PAD=pad)
    np.testing.assert_array_equal(y, x * 2)


def test_descriptor_padding_outside_the_shape(mode):
    x = np.arange(6 * 5, dtype=np.float32).reshape(6, 5)
    out = np.zeros((4, 4), np.float32)
    tile_probe[(1,)](x, out, 6, 5, BM=4, BN=4)
    expected = np.full((4, 4), np.nan, np.float32)
    expected[:2, 1:4] = x[4:6, 0:3]
    np.testing.assert_array_equal(out, expected)


def test_libdevice_functions_against_numpy(mode):
    x = np.linspace(-1.9, 1.9, 203).astype(np.float32)
    out = np.zeros((16, 203), np.float32)
    math_kernel[(triton.cdiv(203, 128),)](x, out, 203, BLOCK=128)
    np.testing.assert_allclose(out, _numpy_math(x.astype(np.float64)).astype(np.float32), rtol=2e-6, atol=2e-6)


def test_block_shape_must_be_a_power_of_two(mode):
    @triton.jit
    def bad(x_ptr):
        tl.make_tensor_descriptor(x_ptr, [4], [1], [3])

    with pytest.raises(CompilationError, match="powers of two"):
        bad[(1,)](np.zeros(4, np.float32))
