"""The generated body keeps MLX's `metal_kernel` contract (mlx_api.md 1.3): it references
`thread_position_in_grid`, declares nothing named after one of MLX's 20 attribute names, never
spells `<input>_shape/_strides/_ndim`, declares no identifier of the emulator's `tm_` prefix,
and is pure ASCII."""

from __future__ import annotations

import re

import pytest
from harness import C, compile_1d, compile_source

from examples import cumsum, dropout, histogram, layer_norm, softmax, vector_add

ATTRIBUTES = (
    "dispatch_quadgroups_per_threadgroup", "dispatch_simdgroups_per_threadgroup", "quadgroup_index_in_threadgroup",
    "quadgroups_per_threadgroup", "simdgroup_index_in_threadgroup", "simdgroups_per_threadgroup",
    "thread_execution_width", "thread_index_in_quadgroup", "thread_index_in_simdgroup", "thread_index_in_threadgroup",
    "threads_per_simdgroup", "dispatch_threads_per_threadgroup", "grid_origin", "grid_size",
    "thread_position_in_grid", "thread_position_in_threadgroup", "threadgroup_position_in_grid",
    "threadgroups_per_grid", "threads_per_grid", "threads_per_threadgroup",
)

KERNELS = [
    lambda: compile_source(vector_add.add_kernel, "*fp32/16", "*fp32/16", "*fp32/16", "i32/16", C(1024)),
    lambda: compile_source(softmax.softmax_kernel, "*fp16", "*fp16", "i32", "i32", "i32", "i32", C(256), C(2)),
    lambda: compile_source(cumsum.cumsum_kernel, "*i32", "*i32", "i32", "i32", "i32", C(512)),
    lambda: compile_source(dropout._seeded_dropout, "*fp32", "*fp32", "i32", "fp32", "i32", C(1024)),
    lambda: compile_source(histogram.histogram_kernel, "*fp32", "*i32", "i32", C(64), C(1024)),
    lambda: compile_source(layer_norm._layer_norm_bwd_dwdb, "*fp32", "*fp32", "*fp32", "*fp32", "i32", "i32",
                           C(16), C(32)),
    lambda: compile_1d(vector_add.add_kernel, "*bf16", "*bf16", "*bf16", "i32", C(128), spread_programs=True),
]


@pytest.mark.parametrize("make", KERNELS, ids=["add", "softmax", "cumsum", "dropout", "histogram", "dwdb", "spread"])
def test_body_keeps_the_contract(make):
    k = make()
    body, header = k.source, k.header
    assert body.isascii() and header.isascii()
    assert "thread_position_in_grid" in body
    declared = set(re.findall(r"\b(?:bool|char|uchar|short|ushort|int|uint|long|ulong|half|bfloat|float)\d?\s+(\w+)\s*[\[=;]",
                              body))
    assert not declared & set(ATTRIBUTES)
    assert not any(name.startswith("tm_") for name in declared)
    assert all(name.startswith("km_") for name in declared), sorted(declared)
    for name in k.input_names:
        for suffix in ("_shape", "_strides", "_ndim"):
            assert name + suffix not in body
    for attr in ATTRIBUTES:
        if attr in body:
            assert attr in ("thread_position_in_grid", "threadgroup_position_in_grid", "threadgroups_per_grid")
    # the attribute names cannot appear in the header (MLX passes them to the body only)
    assert not any(attr in header for attr in ATTRIBUTES)
