"""Triton's `CompiledKernel` host API, as tutorial 02's persistent softmax uses it: `warmup`
returns the variant on every backend, `_init_handles()`, `n_regs`, `n_spills`,
`metadata.shared`, and a launch by subscript with all of the kernel's arguments."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # the `torch` extra; CI installs it

from torch_backends import torch_backend  # noqa: E402, F401 - the fixture

import triton_metal  # noqa: E402

triton = triton_metal.install_as_triton()
import triton.language as tl  # noqa: E402
from triton.runtime import driver  # noqa: E402


@triton.jit
def row_softmax(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols,
                BLOCK: tl.constexpr, num_stages: tl.constexpr):
    # persistent: each program walks rows program_id, program_id + num_programs, ...
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=num_stages):
        cols = tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * in_stride + cols, mask=cols < n_cols, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * out_stride + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


def test_persistent_softmax_sized_from_the_warmed_up_variant(torch_backend):
    device = driver.active.get_active_torch_device()
    props = driver.active.utils.get_device_properties(device.index)
    torch.manual_seed(0)
    x = torch.randn(45, 300, device=device)
    y = torch.empty_like(x)
    warps = 8
    kernel = row_softmax.warmup(y, x, x.stride(0), y.stride(0), 45, 300, BLOCK=512, num_stages=2,
                                num_warps=warps, grid=(1,))
    assert kernel is not None
    kernel._init_handles()
    assert kernel.n_spills == 0
    # each thread holds 512 / 256 = 2 floats of the row at least
    assert 2 <= kernel.n_regs < 256
    shared = kernel.metadata.shared
    assert shared == kernel.msl.metadata["threadgroup_memory_bytes"] > 0  # the cross-SIMD-group reductions
    assert kernel.metadata.num_warps == warps and kernel.metadata.name.startswith("row_softmax")
    occupancy = min(props["max_num_regs"] // (kernel.n_regs * props["warpSize"] * warps),
                    props["max_shared_mem"] // shared)
    programs = min(props["multiprocessor_count"] * occupancy, 45)
    assert programs >= 1
    kernel[(programs, 1, 1)](y, x, x.stride(0), y.stride(0), 45, 300, 512, 2)
    torch.testing.assert_close(y, torch.softmax(x, -1))
    # fewer programs than rows: the persistent loop covers the rest
    y2 = torch.zeros_like(x)
    kernel[(4, 1, 1)](y2, x, x.stride(0), y2.stride(0), 45, 300, 512, 2)
    torch.testing.assert_close(y2, torch.softmax(x, -1))


def test_warmup_does_not_run_and_the_subscript_launch_reuses_the_variant():
    x = np.random.default_rng(1).standard_normal((6, 40)).astype(np.float32)
    y = np.full_like(x, 5.0)
    kernel = row_softmax.warmup(y, x, 40, 40, 6, 40, BLOCK=64, num_stages=1, grid=(1,))
    assert np.all(y == 5.0)
    compiled_before = len(row_softmax.cache)
    kernel[(6, 1, 1)](y, x, 40, 40, 6, 40, 64, 1)
    assert len(row_softmax.cache) == compiled_before and kernel.launches == 1
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-6)
