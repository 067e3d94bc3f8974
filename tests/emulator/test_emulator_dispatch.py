"""Grid and threadgroup semantics: MLX's `dispatchThreads` rules and every Metal attribute."""

from __future__ import annotations

import itertools

import mlx.core as mx
import numpy as np
import pytest

from triton_metal.backends.emulator import dispatch_dims, metal_kernel

UINT3 = [
    "thread_position_in_grid",
    "threads_per_grid",
    "grid_size",
    "grid_origin",
    "threadgroup_position_in_grid",
    "threadgroups_per_grid",
    "thread_position_in_threadgroup",
    "threads_per_threadgroup",
    "dispatch_threads_per_threadgroup",
]
UINT = [
    "thread_index_in_threadgroup",
    "simdgroup_index_in_threadgroup",
    "thread_index_in_simdgroup",
    "threads_per_simdgroup",
    "thread_execution_width",
    "simdgroups_per_threadgroup",
    "dispatch_simdgroups_per_threadgroup",
    "quadgroup_index_in_threadgroup",
    "thread_index_in_quadgroup",
    "quadgroups_per_threadgroup",
    "dispatch_quadgroups_per_threadgroup",
]


def attribute_kernel():
    lines = [
        "uint3 p = thread_position_in_grid;",
        "uint gi = (p.z * threads_per_grid.y + p.y) * threads_per_grid.x + p.x;",
    ]
    for k, name in enumerate(UINT3):
        for c, comp in enumerate("xyz"):
            lines.append(f"v3[gi * {len(UINT3) * 3} + {k * 3 + c}] = {name}.{comp};")
    for k, name in enumerate(UINT):
        lines.append(f"v1[gi * {len(UINT)} + {k}] = {name};")
    return metal_kernel("attrs", ["x"], ["v3", "v1"], "\n".join(lines))


def expected(grid, tg):
    """Metal's definitions, restated per threadgroup (grid and threadgroup in threads)."""
    tg = tuple(min(t, g) for t, g in zip(tg, grid))
    ngroups = tuple(-(-g // t) for g, t in zip(grid, tg))
    n = grid[0] * grid[1] * grid[2]
    v3 = np.zeros((n, len(UINT3), 3), np.uint32)
    v1 = np.zeros((n, len(UINT)), np.uint32)
    tg_threads = tg[0] * tg[1] * tg[2]
    for gpos in itertools.product(*(range(k) for k in ngroups)):
        d = tuple(min(t, g - q * t) for t, g, q in zip(tg, grid, gpos))
        d_threads = d[0] * d[1] * d[2]
        for lz, ly, lx in itertools.product(range(d[2]), range(d[1]), range(d[0])):
            idx = lx + ly * d[0] + lz * d[0] * d[1]
            pos = tuple(q * t + l for q, t, l in zip(gpos, tg, (lx, ly, lz)))
            gi = (pos[2] * grid[1] + pos[1]) * grid[0] + pos[0]
            v3[gi] = [pos, grid, grid, (0, 0, 0), gpos, ngroups, (lx, ly, lz), tg, d]
            v1[gi] = [
                idx, idx // 32, idx % 32, 32, 32,
                -(-tg_threads // 32), -(-d_threads // 32),
                idx // 4, idx % 4, -(-tg_threads // 4), -(-d_threads // 4),
            ]
    return v3, v1


@pytest.mark.parametrize(
    "grid,tg",
    [
        ((10, 5, 3), (4, 2, 2)),     # partial groups in every dimension
        ((70, 3, 1), (64, 1, 1)),    # a partial last group of 6 threads
        ((20, 6, 3), (8, 4, 2)),     # two SIMD-groups per group
        ((5, 1, 1), (64, 1, 1)),     # threadgroup clamped to the grid
        ((33, 1, 1), (32, 2, 1)),    # clamped in y
    ],
)
def test_every_attribute_value(grid, tg):
    kernel = attribute_kernel()
    n = grid[0] * grid[1] * grid[2]
    v3, v1 = kernel(
        inputs=[np.zeros(1, np.float32)],
        output_shapes=[(n, len(UINT3), 3), (n, len(UINT))],
        output_dtypes=[mx.uint32, mx.uint32],
        grid=grid,
        threadgroup=tg,
    )
    e3, e1 = expected(grid, tg)
    for k, name in enumerate(UINT3):
        np.testing.assert_array_equal(np.array(v3)[:, k], e3[:, k], err_msg=name)
    for k, name in enumerate(UINT):
        np.testing.assert_array_equal(np.array(v1)[:, k], e1[:, k], err_msg=name)


def test_each_thread_runs_exactly_once():
    src = """
    uint3 p = thread_position_in_grid;
    uint gi = (p.z * threads_per_grid.y + p.y) * threads_per_grid.x + p.x;
    atomic_fetch_add_explicit(&count[gi], 1, memory_order_relaxed);
    """
    kernel = metal_kernel("once", ["x"], ["count"], src, atomic_outputs=True)
    grid = (37, 11, 5)
    (count,) = kernel(
        inputs=[np.zeros(1, np.float32)], output_shapes=[(37 * 11 * 5,)], output_dtypes=[mx.int32],
        grid=grid, threadgroup=(8, 4, 2), init_value=0,
    )
    np.testing.assert_array_equal(np.array(count), np.ones(37 * 11 * 5, np.int32))


def test_threadgroup_larger_than_1024_is_refused_like_mlx():
    kernel = metal_kernel("big", ["x"], ["out"], "out[thread_position_in_grid.x] = 0;")
    with pytest.raises(ValueError, match=r"Thread group size \(2048\) is greater than"):
        kernel(
            inputs=[np.zeros(1, np.float32)], output_shapes=[(4096,)], output_dtypes=[mx.float32],
            grid=(4096, 2, 1), threadgroup=(1024, 2, 1),
        )
    # Clamped to the grid first: a grid of height 1 makes the same request legal.
    assert dispatch_dims((4096, 1, 1), (1024, 2, 1))[1] == (1024, 1, 1)


def test_empty_grid_runs_nothing():
    kernel = metal_kernel("empty", ["x"], ["out"], "out[thread_position_in_grid.x] = 1;")
    (out,) = kernel(
        inputs=[np.zeros(1, np.float32)], output_shapes=[(4,)], output_dtypes=[mx.float32],
        grid=(0, 1, 1), threadgroup=(32, 1, 1), init_value=5.0,
    )
    np.testing.assert_array_equal(np.array(out), np.full(4, 5.0, np.float32))


@pytest.mark.parametrize("threads", [1, 2])
def test_worker_count_does_not_change_results(monkeypatch, threads):
    monkeypatch.setenv("TRITON_METAL_EMULATOR_THREADS", str(threads))
    src = """
    uint g = threadgroup_position_in_grid.x;
    threadgroup float acc[1];
    if (thread_index_in_threadgroup == 0) acc[0] = 0;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float s = simd_sum(x[thread_position_in_grid.x]);
    if (thread_index_in_simdgroup == 0) {
        // Fibers of one group never run at once: a plain read-modify-write is safe.
        acc[0] += s;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (thread_index_in_threadgroup == 0) out[g] = acc[0];
    """
    kernel = metal_kernel("groups", ["x"], ["out"], src)
    x = np.arange(128 * 40, dtype=np.float32)
    (out,) = kernel(
        inputs=[x], output_shapes=[(40,)], output_dtypes=[mx.float32],
        grid=(128 * 40, 1, 1), threadgroup=(128, 1, 1),
    )
    np.testing.assert_array_equal(np.array(out), x.reshape(40, 128).sum(axis=1))
