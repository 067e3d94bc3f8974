"""Kernels with known access patterns for the diagnostics tests. Lines that the tests look up
carry a `# <tag>` comment (`line_of(tag)`)."""

from __future__ import annotations

from pathlib import Path

import triton_metal as triton
import triton_metal.language as tl


@triton.jit
def copy_rows(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(src + offs, mask=mask)  # copy-load
    tl.store(dst + offs, x, mask=mask)  # copy-store


@triton.jit
def strided_read(src, dst, stride, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(src + offs * stride)  # strided-load
    tl.store(dst + offs, x)


@triton.jit
def broadcast_read(src, dst, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(src + offs * 0)  # broadcast-load
    tl.store(dst + offs, x)


@triton.jit
def gather_read(idx_ptr, src, dst, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    idx = tl.load(idx_ptr + offs)
    x = tl.load(src + idx)  # gather-load
    tl.store(dst + offs, x)


@triton.jit
def wrapped_read(src, dst, n, BLOCK: tl.constexpr):
    offs = (tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)) % n
    x = tl.load(src + offs)  # wrapped-load
    tl.store(dst + tl.arange(0, BLOCK), x)


@triton.jit
def row_copy(src, dst, row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(src + row * row_stride + cols, mask=cols < n_cols)  # row-load
    tl.store(dst + row * row_stride + cols, x, mask=cols < n_cols)


@triton.jit
def k_loop(src, dst, K, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for k in range(0, K, BLOCK):
        acc += tl.load(src + k + tl.arange(0, BLOCK))  # loop-load
    tl.store(dst + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), acc)


@triton.jit
def triangle(src, dst, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, pid + 1):
        acc += tl.load(src + i * BLOCK + tl.arange(0, BLOCK))
    tl.store(dst + pid * BLOCK + tl.arange(0, BLOCK), acc)


@triton.jit
def transpose_tile(src, dst, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(src + r[:, None] * N + r[None, :])  # tile-load
    tl.store(dst + r[None, :] * N + r[:, None], x)  # tile-store


def line_of(tag: str) -> int:
    """The 1-based line of this file that ends with `# tag`."""
    for i, text in enumerate(Path(__file__).read_text().splitlines()):
        if text.rstrip().endswith(f"# {tag}"):
            return i + 1
    raise KeyError(tag)
