"""Compiled kernels using gather, histogram, 64-bit indexing, pointer selects and scalar memory
ops, against NumPy on the emulator; parameter bindings and coverage facts."""

from __future__ import annotations

import re

import numpy as np
import pytest
from harness import C, compile_1d, run

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.runtime.coverage import check_coverage
from triton_metal.errors import CompilationError

RNG = np.random.default_rng(4)


@triton.jit
def hist_kernel(x_ptr, out_ptr, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    h = tl.histogram(x, BINS, mask=offs < n)
    tl.store(out_ptr + tl.arange(0, BINS), h)


@pytest.mark.parametrize("num_warps", [1, 4])
def test_histogram(num_warps: int):
    n, block, bins = 900, 1024, 64
    x = RNG.integers(-5, 70, n).astype(np.int32)
    k = compile_1d(hist_kernel, "*i32", "*i32", "i32", C(bins), C(block), num_warps=num_warps)
    out = run(k, (1,), x_ptr=x, out_ptr=np.zeros(bins, np.int32), n=n)["out_ptr"]
    want = np.bincount(x[(x >= 0) & (x < bins)], minlength=bins)
    np.testing.assert_array_equal(out, want)


@triton.jit
def gather_kernel(src_ptr, idx_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    src = tl.load(src_ptr + offs)
    idx = tl.load(idx_ptr + offs)
    tl.store(out_ptr + offs, tl.gather(src, idx, 0))


def test_gather():
    block = 256
    src = RNG.standard_normal(block).astype(np.float32)
    idx = RNG.integers(0, block, block).astype(np.int32)
    k = compile_1d(gather_kernel, "*fp32", "*i32", "*fp32", C(block))
    out = run(k, (1,), src_ptr=src, idx_ptr=idx, out_ptr=np.zeros(block, np.float32))["out_ptr"]
    np.testing.assert_array_equal(out, src[idx])


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


def test_index_bits_64_computes_offsets_in_long():
    k = compile_1d(copy_kernel, "*fp32", "*fp32", "i32", C(128), index_bits=64)
    assert "long km_" in k.source
    n = 1000
    x = RNG.standard_normal(n).astype(np.float32)
    out = run(k, (triton.cdiv(n, 128),), x_ptr=x, out_ptr=np.zeros(n, np.float32), n=n)["out_ptr"]
    np.testing.assert_array_equal(out, x * 2)


def test_bindings_and_coverage():
    k = compile_1d(copy_kernel, "*fp32", "*fp32", "i32", C(128))
    kinds = {p.name: (p.kind, p.msl_inputs, p.msl_outputs, p.dtype) for p in k.params}
    assert kinds == {
        "x_ptr": ("pointer_in", ("x_ptr_in",), (), "float"),
        "out_ptr": ("pointer_out", (), ("out_ptr_out",), "float"),
        "n": ("scalar", ("n_in",), (), "int32_t"),
    }
    assert k.input_names == ("x_ptr_in", "n_in") and k.output_names == ("out_ptr_out",)
    (cov,) = k.stored_coverage
    assert (cov.output, cov.checkable) == ("out_ptr_out", True)  # the launch-time check decides
    assert k.threads_per_program == 128 and not k.atomic_outputs
    assert k.name.startswith("copy_kernel_") and k.source.isascii() and k.header.isascii()


@triton.jit
def inplace_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK) * 2
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, x + 1, mask=offs < n)


def test_inout_parameter_reads_input_and_writes_output_without_coverage():
    k = compile_1d(inplace_kernel, "*fp32", "i32", C(64))
    (p, _) = k.params
    assert (p.kind, p.msl_inputs, p.msl_outputs) == ("pointer_inout", ("x_ptr_in",), ("x_ptr_out",))
    verdicts = check_coverage(k.coverage_program, (1, 1, 1), {"n": 128}, {"x_ptr_out": 128})
    assert not verdicts["x_ptr_out"].proven  # every other element only
    x = RNG.standard_normal(128).astype(np.float32)
    out = run(k, (1,), x_ptr=x, n=128, init_value=-7.0)["x_ptr"]
    np.testing.assert_array_equal(out[::2], x[::2] + 1)
    np.testing.assert_array_equal(out[1::2], -7.0)  # untouched: the runtime merges these


@triton.jit
def read_after_write_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.full((BLOCK,), 1.0, tl.float32))
    y = tl.load(x_ptr + offs + 1, mask=offs < BLOCK - 1)  # another thread's element
    tl.store(x_ptr + offs, y + 1)


@pytest.mark.parametrize("interpret", [False, True])
def test_a_load_reads_what_the_kernel_stored_before_it(monkeypatch: pytest.MonkeyPatch, interpret: bool):
    # in place (NumPy on the emulator, and the interpreter): the load sees the first store,
    # made by the threads that own its elements (a device barrier orders them)
    monkeypatch.setenv("TRITON_METAL_INTERPRET", "1" if interpret else "0")
    x = np.arange(65, dtype=np.float32)
    read_after_write_kernel[(1,)](x, BLOCK=64)
    want = np.concatenate([np.full(63, 2.0), [1.0, 64.0]]).astype(np.float32)
    np.testing.assert_array_equal(x, want)
    if not interpret:
        k = compile_1d(read_after_write_kernel, "*fp32", C(64))
        assert k.metadata["reads_stored"] == ("x_ptr",)  # the Metal path keeps it relative


@triton.jit
def scalar_kernel(x_ptr, out_ptr, flag):
    v = tl.load(x_ptr + 3)
    if flag:
        v = v * 2
    tl.store(out_ptr + 1, v)


@pytest.mark.parametrize("flag", [True, False])
def test_scalar_load_store_and_bool_parameter(flag: bool):
    k = compile_1d(scalar_kernel, "*fp32", "*fp32", "i1")
    x = np.arange(8, dtype=np.float32)
    out = run(k, (3,), x_ptr=x, out_ptr=np.zeros(2, np.float32), flag=flag, init_value=5.0)["out_ptr"]
    np.testing.assert_array_equal(out, [5.0, 6.0 if flag else 3.0])


@triton.jit
def live_atomic_kernel(flag_ptr, out_ptr, lock_ptr, total_ptr):
    pid = tl.program_id(0)
    tl.atomic_xchg(flag_ptr + pid, pid + 10)
    tl.store(out_ptr + pid, tl.load(flag_ptr + pid))
    # a spin lock around a read-modify-write of a plain element of the same array
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(lock_ptr + 1, tl.load(lock_ptr + 1) + pid)
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr, 0)
    tl.atomic_add(total_ptr, pid)


def test_loads_of_atomic_arrays_read_the_updated_memory():
    k = compile_1d(live_atomic_kernel, "*i32", "*i32", "*i32", "*i32")
    kinds = {p.name: (p.kind, p.msl_inputs, p.msl_outputs) for p in k.params}
    assert kinds["flag_ptr"] == ("pointer_atomic", (), ("flag_ptr_out",))
    assert k.metadata["atomics"]["lock_ptr"] == {"kinds": ["cas", "xchg"], "result_used": True, "loaded": True,
                                                "stored": True, "polled": False}
    grid = 16
    outs = run(k, (grid,), flag_ptr=np.zeros(grid, np.int32), out_ptr=np.zeros(grid, np.int32),
               lock_ptr=np.zeros(2, np.int32), total_ptr=np.zeros(1, np.int32), init_value=0)
    np.testing.assert_array_equal(outs["out_ptr"], np.arange(grid) + 10)
    np.testing.assert_array_equal(outs["lock_ptr"], [0, sum(range(grid))])
    np.testing.assert_array_equal(outs["total_ptr"], [sum(range(grid))])


@triton.jit
def replicated_atomic_kernel(count_ptr, old_ptr, best_ptr, prev_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    # BLOCK < 32 * num_warps: every element is held by several threads; each atomic must still
    # run once per element, and every copy of the element must see the value it returned
    old = tl.atomic_add(count_ptr + offs % 4, 1)
    tl.store(old_ptr + offs, old * 10 + offs)
    tl.atomic_max(best_ptr + offs, offs.to(tl.float32) * 0.5 - 1.0, mask=offs < BLOCK - 2)
    prev = tl.atomic_max(best_ptr + offs, 1.25, mask=offs < BLOCK - 2)
    tl.store(prev_ptr + offs, prev)


@pytest.mark.parametrize("num_warps,block", [(1, 8), (4, 16), (8, 64)])
def test_used_atomic_results_in_replicated_layouts(num_warps: int, block: int):
    k = compile_1d(replicated_atomic_kernel, "*i32", "*i32", "*fp32", "*fp32", C(block), num_warps=num_warps)
    # the harness starts atomic outputs from init_value (0), as the runtime may for max
    outs = run(k, (1,), count_ptr=np.zeros(4, np.int32), old_ptr=np.zeros(block, np.int32),
               best_ptr=np.zeros(block, np.float32), prev_ptr=np.full(block, -1.0, np.float32), init_value=0)
    per_slot = block // 4
    np.testing.assert_array_equal(outs["count_ptr"], [per_slot] * 4)
    offs = np.arange(block)
    old = (outs["old_ptr"] - offs) // 10
    # each slot's returned values are 0 .. per_slot - 1, each once (atomics ran once per element)
    for slot in range(4):
        np.testing.assert_array_equal(np.sort(old[offs % 4 == slot]), np.arange(per_slot))
    live = offs < block - 2
    first = np.maximum(0.0, offs * 0.5 - 1.0)
    np.testing.assert_array_equal(outs["best_ptr"], np.where(live, np.maximum(first, 1.25), 0.0).astype(np.float32))
    # masked-off elements return 0
    np.testing.assert_array_equal(outs["prev_ptr"], np.where(live, first, 0.0).astype(np.float32))


@triton.jit
def row_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, FILLS: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if FILLS:
        mask = offs < BLOCK  # true everywhere: the compiler folds it
    else:
        mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.where(mask, x * 2, 1.0), mask=mask)


def test_a_mask_true_everywhere_leaves_no_mask_in_the_msl():
    """`tl.arange(0, B) < B` folds to true, and the load, the select and the store that it
    masked lose their masks (the rows of the row ops that fill their block)."""
    fills = compile_1d(row_kernel, "*fp32", "*fp32", "i32", C(128), C(True))
    masked = compile_1d(row_kernel, "*fp32", "*fp32", "i32", C(128), C(False))
    assert " ? " in masked.source and " ? " not in fills.source
    x = RNG.standard_normal(128).astype(np.float32)
    for k, n in ((fills, 128), (masked, 100)):
        out = run(k, (1,), x_ptr=x, out_ptr=np.zeros(128, np.float32), n=n)["out_ptr"]
        np.testing.assert_array_equal(out[:n], x[:n] * 2)


@pytest.mark.parametrize("spt, n_spec, bools", [(4, "i32/16", 2), (4, "i32", 8), (1, "i32/16", 8)])
def test_a_mask_keeps_one_register_a_run_it_is_constant_over(spt: int, n_spec: str, bools: int):
    """`offs < n` with n a multiple of 16 is constant over each thread's aligned runs of 4
    elements: a thread of 8 elements computes and keeps 2 booleans, and every element reads its
    run's. Without the divisibility, or with no runs in the thread, one a element."""
    k = compile_1d(row_kernel, "*fp32/16", "*fp32/16", n_spec, C(1024), C(False), num_warps=4, spt=spt)
    assert re.findall(r"\bbool km_\d+\[(\d+)\];", k.source) == [str(bools)]
    x = RNG.standard_normal(1024).astype(np.float32)
    n = 1008 if n_spec.endswith("16") else 1001
    out = run(k, (1,), x_ptr=x, out_ptr=np.zeros(1024, np.float32), n=n)["out_ptr"]
    np.testing.assert_array_equal(out[:n], x[:n] * 2)


@triton.jit
def tile_kernel(x_ptr, out_ptr, m, n, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    keep = (rows[:, None] < m) & (cols[None, :] < n)
    at = rows[:, None] * BN + cols[None, :]
    x = tl.load(x_ptr + at, mask=keep, other=-1.0)
    tl.store(out_ptr + at, tl.where(keep, x * 3, x), mask=(rows[:, None] < m))


@pytest.mark.parametrize("m, n", [(48, 64), (48, 32), (37, 64), (64, 13)])
@pytest.mark.parametrize("num_warps", [1, 4])
def test_two_d_masks_shared_over_runs_against_numpy(m: int, n: int, num_warps: int):
    """2-D masks constant over runs along both dims (m and n multiples of 16 are specialized),
    or along one, or neither, through the whole compiler and a launch: the elements a run
    shares its mask register with get the same answer as NumPy's."""
    x = RNG.standard_normal((64, 64)).astype(np.float32)
    out = np.full((64, 64), 7.0, np.float32)
    tile_kernel[(2,)](x, out, m, n, BM=32, BN=64, num_warps=num_warps)
    want = np.full((64, 64), 7.0, np.float32)
    want[:m] = np.where(np.arange(64)[None, :] < n, x[:m] * 3, -1.0)
    np.testing.assert_array_equal(out, want)
