"""Host tensor descriptors (`triton.tools.tensor_descriptor.TensorDescriptor`) passed to kernels:
torch CPU tensors on the emulator, in the interpreter and through the torch_mps path (the
recording stand-in), NumPy and MLX arrays, against torch / NumPy; Triton's host checks."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # the `torch` extra; CI installs it

from torch_backends import torch_backend  # noqa: E402, F401 - the fixture

import triton_metal  # noqa: E402
import triton_metal.language as tl  # noqa: E402
from triton_metal.errors import LaunchError  # noqa: E402
from triton_metal.tools.tensor_descriptor import TensorDescriptor  # noqa: E402


@triton_metal.jit
def _scale_block(src, dst, scale, BM: tl.constexpr, BN: tl.constexpr):
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    dst.store([m0, n0], src.load([m0, n0]) * scale)


@triton_metal.jit
def scaled_tiles(src, dst, scale, BM: tl.constexpr, BN: tl.constexpr):
    """dst's block = src's block * scale, one block per program (2-D grid)."""
    _scale_block(src, dst, scale, BM, BN)


@triton_metal.jit
def _as_descriptor(d, n, BLOCK: tl.constexpr):
    # a descriptor from the host is used as it is; a pointer becomes one in the kernel
    if isinstance(d, tl.tensor_descriptor):
        return d
    return tl.make_tensor_descriptor(d, [n], [1], [BLOCK])


@triton_metal.jit
def shifted_copy(x, y, n, shift, BLOCK: tl.constexpr):
    """y[i] = x[i + shift] (x a descriptor or a pointer), zero past x's end."""
    xd = _as_descriptor(x, n, BLOCK)
    yd = _as_descriptor(y, n, BLOCK)
    start = tl.program_id(0) * BLOCK
    yd.store([start], xd.load([start + shift]))


def test_from_tensor_and_an_explicit_shape_over_a_strided_view(torch_backend):
    torch.manual_seed(0)
    x = torch.randn(37, 56)[:, :50]  # rows 56 floats apart: 224 bytes, a multiple of 16
    y = torch.full((40, 56), 7.0)
    src = TensorDescriptor.from_tensor(x, [16, 32])
    assert (src.shape, src.strides) == ([37, 50], [56, 1])
    dst = TensorDescriptor(y, [37, 50], list(y.stride()), [16, 32])  # a window of y
    scaled_tiles[(3, 2)](src, dst, 2.5, 16, 32)
    torch.testing.assert_close(y[:37, :50], x * 2.5, rtol=0, atol=0)
    assert torch.all(y[37:] == 7.0) and torch.all(y[:, 50:] == 7.0)  # outside the shape: untouched


def test_reads_past_the_shape_are_padding(torch_backend):
    x, y = torch.arange(1.0, 41.0), torch.full((48,), -1.0)
    shifted_copy[(3,)](TensorDescriptor.from_tensor(x, [16]), TensorDescriptor.from_tensor(y[:40], [16]),
                       40, 5, BLOCK=16)
    ref = torch.cat([x[5:], torch.zeros(5)])
    assert torch.equal(y[:40], ref)
    assert torch.all(y[40:] == -1.0)
    nan = torch.full((40,), 3.0)
    shifted_copy[(3,)](TensorDescriptor(x, [40], [1], [16], padding="nan"), nan, 40, 5, BLOCK=16)
    assert torch.equal(nan[:35], x[5:]) and torch.isnan(nan[35:]).all()


def test_a_pointer_and_a_descriptor_in_one_helper(torch_backend):
    x, y = torch.randn(64), torch.zeros(64)
    shifted_copy[(4,)](TensorDescriptor.from_tensor(x, [16]), y, 64, 0, BLOCK=16)
    assert torch.equal(y, x)


def test_block_shape_set_before_each_launch_selects_the_variant(torch_backend):
    """As autotuning pre-hooks do: the descriptor made with a placeholder block shape, which is
    set to the config's before the launch."""
    x = torch.randn(100)
    desc = TensorDescriptor(x, [100], [1], [1])
    for block in (16, 32):
        y = torch.zeros(100)
        desc.block_shape = [block]
        shifted_copy[(triton_metal.cdiv(100, block),)](desc, y, 100, 0, BLOCK=block)
        assert torch.equal(y, x)


def test_numpy_and_mlx_bases():
    mx = pytest.importorskip("mlx.core")
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    y = np.zeros((8, 8), np.float32)
    scaled_tiles[(2, 1)](TensorDescriptor.from_tensor(x, [4, 8]), TensorDescriptor.from_tensor(y, [4, 8]), 3.0, 4, 8)
    np.testing.assert_array_equal(y, x * 3)
    xm, ym = mx.array(x), mx.zeros((8, 8))
    scaled_tiles[(2, 1)](TensorDescriptor.from_tensor(xm, [4, 8]), TensorDescriptor.from_tensor(ym, [4, 8]), 3.0, 4, 8)
    np.testing.assert_array_equal(np.array(ym), x * 3)  # the MLX array is rebound to the result


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda x: TensorDescriptor(x, [8, 6], [6, 1], [4, 8]), "strides must be 16-byte aligned"),
        (lambda x: TensorDescriptor(x, [8, 8], [4, 8], [4, 8]), "Last dimension must be contiguous"),
        (lambda x: TensorDescriptor(x, [8, 8], [8, 1], [4, 6]), "power of two"),
        (lambda x: TensorDescriptor(x, [8, 8], [8, 1], [4]), "rank mismatch"),
        (lambda x: TensorDescriptor(x.view(-1)[1:], [63], [1], [8]), "base must be 16-byte aligned"),
        (lambda x: TensorDescriptor(x, [8, 8], [8, 1], [4, 8], padding="inf"), "Illegal value for padding"),
        (lambda x: TensorDescriptor(x.int(), [8, 8], [8, 1], [4, 8], padding="nan"), "floating point"),
    ],
)
def test_triton_host_checks(make, message):
    with pytest.raises(ValueError, match=message):
        make(torch.zeros(8, 8))


def test_a_block_shape_changed_to_an_illegal_one_is_refused_before_the_launch():
    x, y = torch.randn(16), torch.zeros(16)
    desc = TensorDescriptor.from_tensor(x, [16])
    desc.block_shape = [12]
    with pytest.raises(LaunchError, match="argument 'x': block shape \\[12\\]"):
        shifted_copy[(1,)](desc, y, 16, 0, BLOCK=16)
    assert torch.all(y == 0)


def test_importable_as_triton_tools():
    triton = triton_metal.install_as_triton()
    from triton.tools.tensor_descriptor import TensorDescriptor as Imported  # type: ignore[import-not-found]

    assert Imported is TensorDescriptor
    assert triton.tools.tensor_descriptor.TensorDescriptor is TensorDescriptor


def _block_shapes_of_the_config(nargs):
    """Tutorial 06's pre-hook: the descriptors were made with a placeholder block shape."""
    nargs["src"].block_shape = [nargs["BM"], nargs["BN"]]
    nargs["dst"].block_shape = [nargs["BM"], nargs["BN"]]


@triton_metal.autotune([triton_metal.Config({"BM": 8, "BN": 16}, pre_hook=_block_shapes_of_the_config)], key=[])
@triton_metal.jit
def tuned_scaled_tiles(src, dst, scale, BM: tl.constexpr, BN: tl.constexpr):
    _scale_block(src, dst, scale, BM, BN)


def test_block_shapes_set_by_an_autotuning_pre_hook(torch_backend):
    x = torch.randn(20, 16)
    y = torch.zeros(20, 16)
    src, dst = (TensorDescriptor(t, list(t.shape), list(t.stride()), [1, 1]) for t in (x, y))
    tuned_scaled_tiles[lambda meta: (triton_metal.cdiv(20, meta["BM"]), 1)](src, dst, -1.0)
    assert torch.equal(y, -x) and src.block_shape == [8, 16]


@triton_metal.jit
def flat_scaled_tiles(src, dst, scale, BM: tl.constexpr, BN: tl.constexpr):
    """scaled_tiles through a flat block: compiles only when the descriptors' block is BM x BN."""
    m0 = tl.program_id(0) * BM
    n0 = tl.program_id(1) * BN
    flat = tl.reshape(src.load([m0, n0]), (BM * BN,)) * scale
    dst.store([m0, n0], tl.reshape(flat, (BM, BN)))


_TWO_CONFIGS = [triton_metal.Config({"BM": 8, "BN": 16}, pre_hook=_block_shapes_of_the_config),
                triton_metal.Config({"BM": 4, "BN": 8}, pre_hook=_block_shapes_of_the_config)]


@pytest.mark.parametrize("interpret", ["", "1"])
@pytest.mark.parametrize("mode", ["", "measure"])
def test_each_config_is_compiled_after_its_pre_hook(monkeypatch, mode, interpret):
    # Triton calls a config's pre_hook before each run of it, its first (compiling) run included:
    # tutorial 06's descriptors get the config's block shapes before anything compiles. Timed
    # (measure) or not (the first config that fits, off a GPU), no config is skipped.
    monkeypatch.setenv("TRITON_METAL_AUTOTUNE", mode)
    monkeypatch.setenv("TRITON_METAL_INTERPRET", interpret)
    seen = []

    def bench(call, quantiles):
        call()
        seen.append(tuned.configs_timings)
        return [float(len(seen))] * 3  # the first config is the fastest

    tuned = triton_metal.autotune(_TWO_CONFIGS, key=[], do_bench=bench if mode else None)(flat_scaled_tiles)
    x = torch.randn(20, 16)
    y = torch.zeros(20, 16)
    src, dst = (TensorDescriptor(t, list(t.shape), list(t.stride()), [1, 1]) for t in (x, y))
    tuned[lambda meta: (triton_metal.cdiv(20, meta["BM"]), triton_metal.cdiv(16, meta["BN"]))](src, dst, -1.0)
    assert torch.equal(y, -x) and not tuned.skipped
    assert len(seen) == (2 if mode else 0)
    assert tuned.best_config is _TWO_CONFIGS[0] and src.block_shape == [8, 16]


def test_autotuner_base_fn_is_the_python_function():
    # Triton's Autotuner.base_fn: the decorated Python function under every wrapper
    stacked = triton_metal.autotune(_TWO_CONFIGS, key=[])(triton_metal.heuristics({"BN": lambda a: 8})(flat_scaled_tiles))
    for tuned in (tuned_scaled_tiles, stacked):
        assert inspect.isfunction(tuned.base_fn)
    assert stacked.base_fn is flat_scaled_tiles.fn and stacked.base_fn.__name__ == "flat_scaled_tiles"
