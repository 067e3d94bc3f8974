"""Small kernels the runtime tests launch."""

from __future__ import annotations

import triton_metal as triton
import triton_metal.language as tl


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


@triton.jit
def program_id_kernel(out_ptr, STRIDE_Y: tl.constexpr, STRIDE_Z: tl.constexpr):
    x = tl.program_id(0)
    y = tl.program_id(1)
    z = tl.program_id(2)
    linear = x + y * STRIDE_Y + z * STRIDE_Z
    tl.store(out_ptr + linear, linear + 1)
