"""Whole kernels through the emulator runtime on aarch64, under qemu user-mode emulation.

Each kernel goes through the emulator's own pipeline (`build_kernel_source`, then
`StandaloneProgram`: the threadgroup rewrite, the generated wrapper, the shim, the runtime with
its scheduler, context switch, workers and watchdog, and the standalone launcher), is built with
`aarch64-linux-gnu-g++` by the program's own compile commands and runs under `qemu-aarch64` on a
buffer file. Results are checked against NumPy; runtime errors against the runtime's report.

Tools come from `.ci/install-cross.sh`; without them these tests skip with the reason (or fail
when `TRITON_METAL_REQUIRE_CROSS=1`).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from triton_metal.backends.emulator.rewrite import needs_fibers
from triton_metal.backends.emulator.signature import (
    InputSpec,
    KernelSource,
    OutputSpec,
    ParamKind,
    build_kernel_source,
)
from triton_metal.backends.emulator.standalone import StandaloneProgram, read_buffers, write_buffers

try:  # imported as part of a test package or as a top-level module, depending on the layout
    from .test_aarch64 import CROSS_GXX, QEMU, SYSROOT, require_tools
except ImportError:
    from test_aarch64 import CROSS_GXX, QEMU, SYSROOT, require_tools  # type: ignore[no-redef]

RNG = np.random.default_rng(20261121)
STATUS_FAULT, STATUS_WATCHDOG = 1, 3  # runtime/tm_abi.h


@dataclass(frozen=True)
class CrossKernel:
    """A kernel built as an aarch64 standalone program."""

    source: KernelSource
    executable: Path
    work_dir: Path


@dataclass(frozen=True)
class RunResult:
    status: int
    """0, or the runtime's TM_* status of a failed launch."""
    message: str


OK = RunResult(0, "")


@pytest.fixture(autouse=True)
def cross_tools() -> None:
    require_tools(CROSS_GXX, QEMU, sysroot=True)


def cross_kernel(
    out_dir: Path,
    name: str,
    inputs: Sequence[tuple[str, np.ndarray, str]],
    outputs: Sequence[tuple[str, str]],
    body: str,
    *,
    atomic_outputs: bool = False,
) -> CrossKernel:
    source = build_kernel_source(
        name,
        [InputSpec(n, t, a.ndim, a.size) for n, a, t in inputs],
        [OutputSpec(n, t) for n, t in outputs],
        body,
        atomic_outputs=atomic_outputs,
    )
    program = StandaloneProgram.make(source, body)
    kernel_file = out_dir / "kernel.cpp"
    kernel_file.write_text(program.kernel_unit)
    exe = out_dir / f"{name}-aarch64"
    for cmd in program.commands(CROSS_GXX, kernel_file, exe):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stderr}"
    return CrossKernel(source, exe, out_dir)


def run(
    kernel: CrossKernel,
    inputs: Sequence[np.ndarray],
    outputs: Sequence[np.ndarray],
    grid: tuple[int, int, int],
    threadgroup: tuple[int, int, int],
    watchdog: float = 60.0,
    workers: int = 2,
) -> RunResult:
    """Launch under qemu; outputs are written in place when the launch succeeds."""
    buffers: list[np.ndarray] = []
    writeback: list[bool] = []
    for param in kernel.source.params:
        if param.kind is ParamKind.INPUT:
            assert param.arg is not None
            buffers.append(np.ascontiguousarray(inputs[param.arg]))
            writeback.append(False)
        elif param.kind is ParamKind.OUTPUT:
            assert param.arg is not None
            buffers.append(outputs[param.arg])
            writeback.append(True)
        elif param.kind is not ParamKind.ATTRIBUTE:
            raise AssertionError("these tests pass no shape/strides/ndim buffers")
    src, dst = kernel.work_dir / "in.bin", kernel.work_dir / "out.bin"
    write_buffers(src, buffers, writeback, grid, threadgroup, watchdog, workers)
    done = subprocess.run([QEMU, "-L", str(SYSROOT), str(kernel.executable), str(src), str(dst)],
                          capture_output=True, text=True, timeout=600)
    if done.returncode == 0:
        read_buffers(dst, buffers, writeback)
        return RunResult(0, "")
    marker = re.search(r"TM-RUNTIME-ERROR (\d+)\n(.*)", done.stderr, re.S)
    assert marker, f"the program failed without a runtime report (exit {done.returncode}):\n{done.stderr}"
    return RunResult(int(marker.group(1)), marker.group(2))


def test_vector_add_without_fibers(tmp_path: Path) -> None:
    n = 3000
    a = RNG.standard_normal(n).astype(np.float32)
    b = RNG.standard_normal(n).astype(np.float32)
    count = np.array(n, dtype=np.int32)
    body = "uint i = thread_position_in_grid.x;\nif (i < int(n)) out[i] = a[i] * 2.0f + b[i];\n"
    kernel = cross_kernel(tmp_path, "vadd",
                          [("a", a, "float"), ("b", b, "float"), ("n", count, "int32_t")],
                          [("out", "float")], body)
    assert not needs_fibers(body)  # each thread runs straight through, no context switches
    out = np.full(n, np.nan, dtype=np.float32)
    assert run(kernel, [a, b, count], [out], (3072, 1, 1), (256, 1, 1)) == OK
    np.testing.assert_array_equal(out, a * np.float32(2) + b)


BLOCK_SUM = """
uint tid = thread_position_in_threadgroup.x;
uint group = threadgroup_position_in_grid.x;
threadgroup float scratch[256];
scratch[tid] = x[group * 256 + tid];
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint half_width = 128; half_width > 0; half_width /= 2) {
    if (tid < half_width) scratch[tid] += scratch[tid + half_width];
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
if (tid == 0) sums[group] = scratch[0];
"""


def test_threadgroup_tree_reduction_with_barriers(tmp_path: Path) -> None:
    groups = 12
    x = RNG.integers(-1000, 1000, groups * 256).astype(np.float32)  # integers: exact sums
    kernel = cross_kernel(tmp_path, "blocksum", [("x", x, "float")], [("sums", "float")],
                          BLOCK_SUM)
    assert needs_fibers(BLOCK_SUM)  # 256 fibers per group, switching at every barrier
    sums = np.zeros(groups, dtype=np.float32)
    assert run(kernel, [x], [sums], (groups * 256, 1, 1), (256, 1, 1)) == OK
    np.testing.assert_array_equal(sums, x.reshape(groups, 256).sum(axis=1))


SIMD_OPS = """
uint i = thread_position_in_grid.x;
uint lane = thread_index_in_simdgroup;
int v = x[i];
total[i] = simd_sum(v);
prefix[i] = simd_prefix_exclusive_sum(v);
swapped[i] = simd_shuffle_xor(v, 5u);
biggest[i] = simd_max(v);
(void)lane;
"""


def test_simd_group_functions(tmp_path: Path) -> None:
    n = 256
    x = RNG.integers(-100, 100, n).astype(np.int32)
    outs = [("total", "int32_t"), ("prefix", "int32_t"), ("swapped", "int32_t"), ("biggest", "int32_t")]
    kernel = cross_kernel(tmp_path, "simd", [("x", x, "int32_t")], outs, SIMD_OPS)
    total, prefix, swapped, biggest = (np.zeros(n, dtype=np.int32) for _ in range(4))
    assert run(kernel, [x], [total, prefix, swapped, biggest], (n, 1, 1), (128, 1, 1)) == OK
    lanes = x.reshape(-1, 32)
    np.testing.assert_array_equal(total, np.repeat(lanes.sum(axis=1), 32))
    np.testing.assert_array_equal(prefix, (np.cumsum(lanes, axis=1) - lanes).reshape(-1))
    np.testing.assert_array_equal(swapped, lanes[:, np.arange(32) ^ 5].reshape(-1))
    np.testing.assert_array_equal(biggest, np.repeat(lanes.max(axis=1), 32))


MATMUL_8X8 = """
simdgroup_float8x8 ma, mb, mc;
simdgroup_load(ma, a, 8);
simdgroup_load(mb, b, 8);
mc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
simdgroup_multiply_accumulate(mc, ma, mb, mc);
simdgroup_store(mc, c, 8);
(void)thread_index_in_simdgroup;
"""


def test_simdgroup_matrix_multiply(tmp_path: Path) -> None:
    a = RNG.integers(-8, 8, (8, 8)).astype(np.float32)
    b = RNG.integers(-8, 8, (8, 8)).astype(np.float32)
    kernel = cross_kernel(tmp_path, "mm8", [("a", a, "float"), ("b", b, "float")],
                          [("c", "float")], MATMUL_8X8)
    c = np.zeros((8, 8), dtype=np.float32)
    assert run(kernel, [a, b], [c], (32, 1, 1), (32, 1, 1)) == OK
    np.testing.assert_array_equal(c, a @ b)


def test_half_arithmetic_rounds_per_operation(tmp_path: Path) -> None:
    """On aarch64 the shim's half must round like Metal's (after every operation)."""
    n = 512
    x = (RNG.standard_normal(n) * 30).astype(np.float16)
    y = (RNG.standard_normal(n) * 30).astype(np.float16)
    body = "uint i = thread_position_in_grid.x;\nhalf p = x[i] * y[i];\nout[i] = p + x[i];\n"
    kernel = cross_kernel(tmp_path, "halfops", [("x", x, "float16_t"), ("y", y, "float16_t")],
                          [("out", "float16_t")], body)
    out = np.zeros(n, dtype=np.float16)
    assert run(kernel, [x, y], [out], (n, 1, 1), (64, 1, 1)) == OK
    np.testing.assert_array_equal(out, (x * y) + x)  # NumPy float16 also rounds per operation


def test_device_atomics_across_worker_threads(tmp_path: Path) -> None:
    n, bins = 20000, 13
    values = RNG.integers(0, 1000, n).astype(np.uint32)
    body = (
        "uint i = thread_position_in_grid.x;\n"
        "if (i < 20000u) atomic_fetch_add_explicit(&hist[values[i] % 13u], 1u, memory_order_relaxed);\n"
    )
    kernel = cross_kernel(tmp_path, "hist", [("values", values, "uint32_t")],
                          [("hist", "uint32_t")], body, atomic_outputs=True)
    hist = np.zeros(bins, dtype=np.uint32)
    assert run(kernel, [values], [hist], (n, 1, 1), (128, 1, 1)) == OK
    np.testing.assert_array_equal(hist, np.bincount(values % bins, minlength=bins).astype(np.uint32))


def test_divergent_barrier_is_reported(tmp_path: Path) -> None:
    body = (
        "uint i = thread_position_in_grid.x;\n"
        "if (i % 2 == 0) return;\n"
        "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
        "out[i] = x[i];\n"
    )
    x = np.zeros(64, dtype=np.float32)
    kernel = cross_kernel(tmp_path, "divergent", [("x", x, "float")], [("out", "float")], body)
    result = run(kernel, [x], [np.zeros(64, dtype=np.float32)], (64, 1, 1), (64, 1, 1))
    assert result.status == STATUS_FAULT
    assert "divergent barrier" in result.message
    barrier_line = kernel.source.text.splitlines().index("threadgroup_barrier(mem_flags::mem_threadgroup);") + 1
    assert f"{kernel.source.kernel_name}.metal:{barrier_line}" in result.message


def test_watchdog_stops_a_spin_wait(tmp_path: Path) -> None:
    """The watchdog's signal and its jump out of a fiber work on aarch64 too."""
    body = (
        "uint i = thread_position_in_grid.x;\n"
        "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
        "// nobody ever stores 99: thread 3 spins without yielding\n"
        "if (i == 3) while (atomic_load_explicit(&flag[0], memory_order_relaxed) != 99) {}\n"
        "atomic_store_explicit(&flag[1 + i], 1, memory_order_relaxed);\n"
    )
    x = np.zeros(8, dtype=np.int32)
    kernel = cross_kernel(tmp_path, "spin", [("x", x, "int32_t")], [("flag", "int32_t")], body,
                          atomic_outputs=True)
    result = run(kernel, [x], [np.zeros(33, dtype=np.int32)], (32, 1, 1), (32, 1, 1), watchdog=1.0)
    assert result.status == STATUS_WATCHDOG
    assert "did not finish within 1 s" in result.message
