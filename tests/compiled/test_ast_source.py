"""`triton.compile(triton.compiler.ASTSource(fn, signature, constexprs))`: a kernel compiled for
a signature given as text, launched on both backends (`each_backend`) against NumPy; its refusals
are a launch's, and a signature that does not fit the kernel is refused naming the parameter."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError, LaunchError
from triton_metal.runtime.compiler import ASTSource


@triton.jit
def scaled_copy(src, dst, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask) * scale, mask=mask)


def test_compiled_for_a_signature_then_launched(each_backend):
    compiled = triton.compile(ASTSource(
        fn=scaled_copy, signature={"src": "*fp16", "dst": "*fp32", "n": "i32", "scale": "fp32"},
        constexprs={"BLOCK": 32},
    ))
    assert compiled is triton.compile(ASTSource(  # the same specialization: the cached variant
        fn=scaled_copy, signature={"src": "*fp16", "dst": "*fp32", "n": "i32", "scale": "fp32", "BLOCK": "constexpr"},
        constexprs={"BLOCK": 32},
    ))
    x = np.random.default_rng(2).standard_normal(70).astype(np.float16)
    out = np.zeros(70, np.float32)
    compiled[(3, 1, 1)](x, out, 70, 2.5, 32)
    np.testing.assert_allclose(out, x.astype(np.float64) * 2.5, rtol=1e-6)


@triton.jit
def bad_kernel(n):
    tl.static_assert(n > 0, "n must be positive")


def test_refusals_are_a_launchs(each_backend):
    with pytest.raises(CompilationError, match="n must be positive"):
        triton.compile(ASTSource(fn=bad_kernel, signature={"n": "constexpr"}, constexprs={"n": 0}))
    with pytest.raises(LaunchError, match="the signature gives no type for parameter 'n'"):
        triton.compile(ASTSource(fn=bad_kernel, signature={}, constexprs={}))
    with pytest.raises(LaunchError, match="has no parameter named 'm'"):
        triton.compile(ASTSource(fn=bad_kernel, signature={"n": "i32", "m": "i32"}))
    with pytest.raises(LaunchError, match="parameter 'n' has the unknown type 'q7'"):
        triton.compile(ASTSource(fn=bad_kernel, signature={"n": "q7"}))
