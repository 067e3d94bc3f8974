"""The example kernels through the whole compiler (front end, passes with layout assignment, code
generator) and run as MSL on the emulator, against the examples' NumPy references."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest
from harness import C, compile_source, run

import triton_metal as triton
from examples import cumsum, dropout, histogram, layer_norm, softmax, vector_add

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_vector_add(num_warps: int):
    n = 5000
    x, y = (RNG.standard_normal(n).astype(np.float32) for _ in range(2))
    k = compile_source(vector_add.add_kernel, "*fp32/16", "*fp32/16", "*fp32/16", "i32", C(1024), num_warps=num_warps)
    out = run(k, (triton.cdiv(n, 1024),), x_ptr=x, y_ptr=y, output_ptr=np.zeros(n, np.float32), n_elements=n)
    np.testing.assert_array_equal(out["output_ptr"], x + y)


@pytest.mark.parametrize("dtype,n_cols", [("fp32", 781), ("fp16", 1000), ("bf16", 64)])
def test_softmax(dtype: str, n_cols: int):
    rows = 20
    block = triton.next_power_of_2(n_cols)
    mxt = {"fp32": mx.float32, "fp16": mx.float16, "bf16": mx.bfloat16}[dtype]
    x = mx.array(RNG.standard_normal((rows, n_cols)).astype(np.float32)).astype(mxt)
    k = compile_source(softmax.softmax_kernel, f"*{dtype}", f"*{dtype}", "i32", "i32", "i32", "i32", C(block), C(2))
    out = run(k, (8,), output_ptr=mx.zeros((rows, n_cols), mxt), input_ptr=x, input_row_stride=n_cols,
              output_row_stride=n_cols, n_rows=rows, n_cols=n_cols)["output_ptr"]
    want = softmax.reference(np.array(x.astype(mx.float32)))
    tol = {"fp32": 1e-6, "fp16": 2e-3, "bf16": 1e-2}[dtype]
    np.testing.assert_allclose(out, want, atol=tol, rtol=tol)


def test_cumsum_rows():
    x = RNG.integers(-1000, 1000, (12, 300)).astype(np.int32)
    k = compile_source(cumsum.cumsum_kernel, "*i32", "*i32", "i32", "i32", "i32", C(512))
    out = run(k, (12,), x_ptr=x, y_ptr=np.zeros_like(x), stride_x=300, stride_y=300, n_cols=300)["y_ptr"]
    np.testing.assert_array_equal(out, cumsum.reference(x))


def test_dropout_philox():
    n, p, seed = 3000, 0.4, 1234
    x = RNG.standard_normal(n).astype(np.float32)
    k = compile_source(dropout._seeded_dropout, "*fp32", "*fp32", "i32", "fp32", "i32", C(1024))
    out = run(k, (triton.cdiv(n, 1024),), x_ptr=x, output_ptr=np.zeros(n, np.float32), n_elements=n, p=p,
              seed=seed)["output_ptr"]
    np.testing.assert_allclose(out, dropout.reference(x, p, seed), rtol=1e-6, atol=1e-6)


def test_histogram_atomics():
    n, bins = 4000, 64
    x = RNG.random(n).astype(np.float32)
    k = compile_source(histogram.histogram_kernel, "*fp32", "*i32", "i32", C(bins), C(1024))
    out = run(k, (triton.cdiv(n, 1024),), x_ptr=x, hist_ptr=np.zeros(bins, np.int32), n_elements=n)["hist_ptr"]
    np.testing.assert_array_equal(out, histogram.reference(x, bins))


def test_layer_norm_forward():
    rows, n = 9, 700
    x = RNG.standard_normal((rows, n)).astype(np.float32)
    w = RNG.standard_normal(n).astype(np.float32)
    b = RNG.standard_normal(n).astype(np.float32)
    k = compile_source(layer_norm._layer_norm_fwd_fused, "*fp32", "*fp32", "*fp32", "*fp32", "*fp32", "*fp32",
                       "i32", "i32", "fp32", C(256))
    outs = run(k, (rows,), X=x, Y=np.zeros_like(x), W=w, B=b, Mean=np.zeros(rows, np.float32),
               Rstd=np.zeros(rows, np.float32), stride=n, N=n, eps=1e-5)
    y, mean, rstd = layer_norm.reference_forward(x, w, b, 1e-5)
    np.testing.assert_allclose(outs["Y"], y, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(outs["Mean"], mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outs["Rstd"], rstd, rtol=1e-5)


def test_layer_norm_dwdb_2d_reduction():
    m, n = 37, 100
    dw = RNG.standard_normal((m, n)).astype(np.float32)
    db = RNG.standard_normal((m, n)).astype(np.float32)
    k = compile_source(layer_norm._layer_norm_bwd_dwdb, "*fp32", "*fp32", "*fp32", "*fp32", "i32", "i32",
                       C(16), C(32))
    outs = run(k, (triton.cdiv(n, 32),), DW=dw, DB=db, FINAL_DW=np.zeros(n, np.float32),
               FINAL_DB=np.zeros(n, np.float32), M=m, N=n)
    np.testing.assert_allclose(outs["FINAL_DW"], dw.sum(axis=0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outs["FINAL_DB"], db.sum(axis=0), rtol=1e-5, atol=1e-5)


def test_golden_vector_add_through_the_pipeline():
    k = compile_source(vector_add.add_kernel, "*fp32/16", "*fp32/16", "*fp32/16", "i32/16", C(1024))
    src = k.source
    assert src.count("const device float4*") == 4 and src.count("(device float4*)") == 2
    assert "km_smem" not in src and "barrier" not in src
    assert k.metadata["threadgroup_memory_bytes"] == 0


def test_golden_softmax_through_the_pipeline():
    k = compile_source(softmax.softmax_kernel, "*fp32/16", "*fp32/16", "i32", "i32", "i32", "i32", C(1024), C(2))
    src = k.source
    assert src.count("simd_max(") == 1 and src.count("simd_sum(") == 1
    # partials of 4 SIMD groups, 16 bytes per reduction, in disjoint bytes; per reduction one
    # barrier between the partials' writes and reads, and none more: each reduction's barrier
    # completes the other's reads (also across the loop over rows)
    assert k.metadata["threadgroup_memory_bytes"] == 32
    assert src.count("threadgroup_barrier(mem_flags::mem_threadgroup)") == 2
    assert "fast::exp(" in src and "km_div_fast(" in src and "km_fmax" not in src
