"""Triton's `sem` on atomics: device fences around acquiring and releasing atomics, and
coherent (atomic) accesses to the arrays programs exchange (docs/codegen.md, "Memory order
between programs"); the Metal launch's warning where the MSL version has no fence."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from harness import C, compile_1d, run

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.codegen.target import Target
from triton_metal.errors import CompilationError
from triton_metal.runtime.launch import warn_unordered


@triton.jit
def counter_kernel(count_ptr, out_ptr, SEM: tl.constexpr):
    old = tl.atomic_add(count_ptr, 1, sem=SEM)
    tl.store(out_ptr + tl.program_id(0), old)


def _fences_around(source: str, call: str) -> tuple[bool, bool]:
    """(a fence right before the atomic call, a fence right after it) in the thread running it."""
    lines = [line.strip() for line in source.splitlines()]
    at = next(i for i, line in enumerate(lines) if call in line)
    # the fence sits in its own `if (owner)` block beside the atomic's
    return "km_fence_device();" in lines[at - 3:at], "km_fence_device();" in lines[at + 1:at + 6]


@pytest.mark.parametrize(("sem", "before", "after"), [
    ("relaxed", False, False), ("acquire", False, True), ("release", True, False), ("acq_rel", True, True),
])
def test_fences_follow_the_semantics(sem: str, before: bool, after: bool):
    k = compile_1d(counter_kernel, "*i32", "*i32", C(sem))
    assert _fences_around(k.source, "atomic_fetch_add_explicit") == (before, after)
    assert ("atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst)" in k.header) == (before or after)
    grid = 40
    outs = run(k, (grid,), count_ptr=np.zeros(1, np.int32), out_ptr=np.zeros(grid, np.int32))
    # each program saw a distinct count whatever the order
    np.testing.assert_array_equal(np.sort(outs["out_ptr"]), np.arange(grid))
    assert outs["count_ptr"][0] == grid


@pytest.mark.parametrize(("target", "fence"), [
    (Target(7, (3, 1)), False), (Target(7, (3, 2)), True), (Target(9, (4, 0)), True),
])
def test_the_fence_follows_the_target_msl(target: Target, fence: bool):
    # MSL 3.2 introduced atomic_thread_fence: a 3.1 target gets an empty km_fence_device
    k = compile_1d(counter_kernel, "*i32", "*i32", C("acq_rel"), target=target)
    assert ("atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst)" in k.header) == fence
    assert ("inline void km_fence_device() {}" in k.header) == (not fence)
    assert "__METAL_VERSION__" not in k.header  # the target decides, not the compiling machine


@triton.jit
def locked_sum_kernel(x_ptr, acc_ptr, lock_ptr, N: tl.constexpr, GROUPS: tl.constexpr):
    pid = tl.program_id(0)
    g = pid % GROUPS
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + pid * N + cols)
    while tl.atomic_cas(lock_ptr + g, 0, 1) == 1:
        pass
    acc = tl.load(acc_ptr + g * N + cols)
    tl.store(acc_ptr + g * N + cols, acc + x)
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr + g, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_data_exchanged_under_a_lock_is_read_and_written_atomically(dtype):
    n, groups, programs = 64, 3, 48
    ty = {np.float32: "*fp32", np.float16: "*fp16"}[dtype]
    k = compile_1d(locked_sum_kernel, ty, ty, "*i32", C(n), C(groups))
    # no plain access to the exchanged array: only its elements' addresses, inside atomics
    assert re.search(r"(?<!&)acc_ptr_out\[", k.source) is None
    assert k.metadata["ordered_exchange"] == ("acc_ptr",)
    x = np.random.default_rng(3).integers(-8, 9, (programs, n)).astype(dtype)
    outs = run(k, (programs,), x_ptr=x, acc_ptr=np.zeros(groups * n, dtype), lock_ptr=np.zeros(groups, np.int32))
    want = np.stack([x[g::groups].astype(np.float64).sum(axis=0) for g in range(groups)]).ravel()
    np.testing.assert_array_equal(outs["acc_ptr"].astype(np.float64), want)  # small integers: exact
    np.testing.assert_array_equal(outs["lock_ptr"], 0)


@triton.jit
def relaxed_lock_kernel(acc_ptr, lock_ptr):
    while tl.atomic_cas(lock_ptr, 0, 1, sem="relaxed") == 1:
        pass
    tl.store(acc_ptr, tl.load(acc_ptr) + 1)
    tl.atomic_xchg(lock_ptr, 0, sem="relaxed")


def test_relaxed_atomics_order_nothing():
    k = compile_1d(relaxed_lock_kernel, "*i32", "*i32")
    assert "km_fence_device" not in k.source
    assert k.metadata["ordered_exchange"] == ()


@triton.jit
def byte_lock_kernel(flag_ptr, lock_ptr):
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(flag_ptr, tl.load(flag_ptr) + 1)
    tl.atomic_xchg(lock_ptr, 0)


def test_exchanged_bytes_are_refused():
    with pytest.raises(CompilationError, match="coherent across threadgroups only as atomics"):
        compile_1d(byte_lock_kernel, "*i8", "*i32")


def test_a_variant_warns_where_its_target_has_no_fence():
    older = Target(7, (3, 1))
    k = compile_1d(locked_sum_kernel, "*fp32", "*fp32", "*i32", C(32), C(2), target=older)
    with pytest.warns(RuntimeWarning, match=r"exchange acc_ptr .* target apple7:3\.1 \(MSL 3\.1\)"):
        warn_unordered(k)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_unordered(compile_1d(locked_sum_kernel, "*fp32", "*fp32", "*i32", C(32), C(2), target=Target(7, (3, 2))))
        warn_unordered(compile_1d(relaxed_lock_kernel, "*i32", "*i32", target=older))
