"""`analyze_memory_access` and `launch_bytes` against kernels whose access patterns are known by
construction, and against the MSL the code generator actually emits."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.tools.memory_analysis import launch_bytes

from diag_kernels import (
    broadcast_read, copy_rows, gather_read, k_loop, line_of, row_copy, strided_read, transpose_tile,
    triangle, wrapped_read,
)


def _by_line(report, tag):
    found = [a for a in report.accesses if a.line == line_of(tag)]
    assert len(found) == 1, (tag, [(a.line, a.kind) for a in report.accesses])
    return found[0]


def test_contiguous_copy_is_coalesced_and_vectorized():
    report = triton.analyze_memory_access(copy_rows, np.float32, np.float32, 4096, BLOCK=1024)
    load = _by_line(report, "copy-load")
    store = _by_line(report, "copy-store")
    for access, kind, arg in ((load, "load", "src"), (store, "store", "dst")):
        assert access.kind == kind and access.argument == arg
        assert access.pattern == "contiguous" and access.stride == 1
        assert access.coalesced and access.masked
        assert access.vector_width == 4  # float4: 16 bytes
        assert access.bytes_per_execution == 1024 * 4
        assert access.bytes_per_program == 1024 * 4
        assert access.advice == ""
    assert report.bytes_per_program == 2 * 1024 * 4
    assert "tl.load(src + offs, mask=mask)" in load.source


def test_vector_width_matches_generated_msl():
    # the reported width is the one the code generator emits: float4 accesses for fp32; for fp16
    # runs of 8 as one uint4 from 4 warps up, half4 below
    for dtype, warps, width, vec_type in ((np.float32, 4, 4, "float4"), (np.float16, 4, 8, "uint4"),
                                          (np.float16, 2, 4, "half4")):
        compiled = copy_rows.warmup(dtype, dtype, 4096, BLOCK=1024, num_warps=warps, grid=(4,))
        report = triton.analyze_memory_access(copy_rows, dtype, dtype, 4096, BLOCK=1024, num_warps=warps)
        assert {a.vector_width for a in report.accesses} == {width}
        assert f"const device {vec_type}*" in compiled.source
        assert all(a.advice == "" for a in report.accesses)


def test_strided_access_reports_stride_and_advice():
    report = triton.analyze_memory_access(strided_read, np.float32, np.float32, 3, BLOCK=128)
    load = _by_line(report, "strided-load")
    assert load.pattern == "strided" and load.stride == 3
    assert not load.coalesced and load.vector_width == 1
    assert "stride 3 elements (12 bytes)" in load.advice
    assert "strided (3)" in str(report)
    # another stride gives another report: the sample's scalar value is used
    assert _by_line(triton.analyze_memory_access(strided_read, np.float32, np.float32, 7, BLOCK=128),
                    "strided-load").stride == 7


def test_broadcast_access():
    report = triton.analyze_memory_access(broadcast_read, np.float32, np.float32, BLOCK=128)
    load = _by_line(report, "broadcast-load")
    assert load.pattern == "broadcast" and load.coalesced
    assert "same element" in load.advice


def test_gather_from_loaded_indices():
    report = triton.analyze_memory_access(gather_read, np.int32, np.float32, np.float32, BLOCK=128)
    load = _by_line(report, "gather-load")
    assert load.pattern == "gather" and not load.coalesced
    assert "loaded data" in load.advice


def test_remainder_offsets_suggest_contiguity_hints():
    report = triton.analyze_memory_access(wrapped_read, np.float32, np.float32, 1000, BLOCK=128)
    load = _by_line(report, "wrapped-load")
    assert load.pattern == "gather" and not load.coalesced
    assert "tl.max_contiguous" in load.advice


@pytest.mark.parametrize("row_stride,vec", [(100, 1), (128, 4)])
def test_row_stride_alignment_limits_vector_width(row_stride, vec):
    # a row stride of 100 floats is not known to be a multiple of 4 elements: scalar accesses
    report = triton.analyze_memory_access(row_copy, np.float32, np.float32, row_stride, 128, BLOCK=128,
                                          num_warps=1)
    load = _by_line(report, "row-load")
    assert load.pattern == "contiguous" and load.coalesced
    assert load.vector_width == vec
    if vec == 1:
        assert "4-byte aligned" in load.advice and "multiples of 4 elements" in load.advice
    else:
        assert load.advice == ""


def test_transposed_store_uses_its_own_layout():
    report = triton.analyze_memory_access(transpose_tile, np.float32, np.float32, N=32)
    load, store = _by_line(report, "tile-load"), _by_line(report, "tile-store")
    assert load.pattern == "contiguous" and load.dim == 1 and load.coalesced
    assert store.pattern == "contiguous" and store.dim == 0 and store.coalesced
    assert load.layout != store.layout


def test_loop_trips_multiply_bytes_per_program():
    report = triton.analyze_memory_access(k_loop, np.float32, np.float32, 1000, BLOCK=128)
    load = _by_line(report, "loop-load")
    assert load.executions_per_program == len(range(0, 1000, 128)) == 8
    assert load.bytes_per_program == 8 * 128 * 4


def test_atomics_are_reported():
    from examples.histogram import histogram_kernel

    report = triton.analyze_memory_access(histogram_kernel, np.float32, np.int32, 5000, NUM_BINS=64, BLOCK_SIZE=256)
    kinds = [a.kind for a in report.accesses]
    assert kinds == ["load", "atomic_rmw"]
    atomic = report.accesses[1]
    assert atomic.argument == "hist_ptr" and atomic.pattern == "gather"
    d = report.to_dict()
    assert d["accesses"][1]["kind"] == "atomic_rmw"


@triton.jit
def _wait_then_copy(flag_ptr, x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if tl.atomic_poll(flag_ptr, 1):
        tl.store(y_ptr + offs, tl.load(x_ptr + offs))


def test_atomic_poll_is_reported_as_one_read():
    report = triton.analyze_memory_access(_wait_then_copy, np.int32, np.float32, np.float32, BLOCK=128)
    assert [a.kind for a in report.accesses] == ["atomic_poll", "load", "store"]
    poll = report.accesses[0]
    assert poll.argument == "flag_ptr" and poll.pattern == "scalar" and poll.bytes_per_program == 4


def test_refuses_non_kernels():
    with pytest.raises(TypeError, match="@jit kernel"):
        triton.analyze_memory_access(lambda x: x, 1)


# -- bytes of a launch -----------------------------------------------------------------------


def _module(kernel, *args, **meta):
    compiled = kernel.warmup(*args, grid=(1,), **meta)
    return compiled.module if compiled.module is not None else __import__("triton_metal.ir", fromlist=["x"]).parse_module(compiled.ir_text)


def test_launch_bytes_of_a_copy():
    module = _module(copy_rows, np.float32, np.float32, 5000, BLOCK=1024)
    moved = launch_bytes(module, {"n": 5000}, (5, 1, 1))
    assert moved.exact and moved.total == 5 * 2 * 1024 * 4


def test_launch_bytes_with_program_dependent_loops():
    # program p loads p + 1 blocks: sum over p < 6 of (p + 1) = 21 blocks, plus one stored block each
    module = _module(triangle, np.float32, np.float32, BLOCK=64)
    moved = launch_bytes(module, {}, (6, 1, 1))
    assert moved.exact
    assert moved.total == (21 + 6) * 64 * 4


def test_launch_bytes_of_a_persistent_softmax():
    from examples.softmax import softmax_kernel

    module = _module(softmax_kernel, np.float32, np.float32, 128, 128, 16, 100, BLOCK_SIZE=128, num_stages=2)
    names = ["output_ptr", "input_ptr", "input_row_stride", "output_row_stride", "n_rows", "n_cols"]
    moved = launch_bytes(module, dict(zip(names, (None, None, 128, 128, 10, 100))), (4, 1, 1))
    # 10 rows spread over 4 programs: each row loaded and stored once, 128 lanes of 4 bytes
    assert moved.exact and moved.total == 10 * 2 * 128 * 4


def test_unknown_trip_count_is_flagged():
    module = _module(k_loop, np.float32, np.float32, 1000, BLOCK=128)
    moved = launch_bytes(module, {}, (2, 1, 1))  # K not given: one trip counted, flagged
    assert not moved.exact


def test_too_many_threads_for_the_block_is_explained():
    # 128 elements over 128 threads: one element each, so no vector access; the advice says why
    report = triton.analyze_memory_access(row_copy, np.float32, np.float32, 128, 128, BLOCK=128, num_warps=4)
    load = _by_line(report, "row-load")
    assert load.vector_width == 1
    assert "too small for the threads" in load.advice


def test_mask_not_multiple_of_vector_is_explained():
    report = triton.analyze_memory_access(row_copy, np.float32, np.float32, 128, 100, BLOCK=128, num_warps=1)
    load = _by_line(report, "row-load")
    assert load.vector_width == 1
    assert "mask" in load.advice
