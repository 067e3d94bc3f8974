"""The shim's atomics: MSL's operations per type, their return values, real atomicity."""

from __future__ import annotations


import threading

import numpy as np
import pytest

try:
    from .shim.shim_harness import Library, compile_only, library, library_fixture
except ImportError:
    from shim.shim_harness import Library, compile_only, library, library_fixture  # type: ignore[no-redef]


lib = library_fixture("atomic_ops.cpp")


def test_int_operations_return_the_old_value(lib: Library) -> None:
    cell = np.zeros(1, np.int32)
    log = np.zeros(32, np.int32)
    n = lib.int_sequence(cell, log)
    assert list(log[:n]) == [10, 10, 15, -5, 3, -7, 0xF9, 0x1F9, 0x1F8, 0, 42, 1, 7]
    assert cell[0] == 7


def test_uint_operations_wrap_and_compare_unsigned(lib: Library) -> None:
    cell = np.zeros(1, np.uint32)
    log = np.zeros(8, np.uint32)
    n = lib.uint_sequence(cell, log)
    assert [int(v) for v in log[:n]] == [1, 0xFFFFFFFF, 0xFFFFFFFF, 5, 3]


def test_float_operations_and_numeric_compare_exchange(lib: Library) -> None:
    cell = np.zeros(1, np.float32)
    log = np.zeros(16, np.float32)
    n = lib.float_sequence(cell, log)
    assert n == 8
    assert list(log[:3]) == [1.5, 3.75, 3.0]
    assert log[3] == 1 and log[4] == 8.0  # +0 expected matched the stored -0
    assert log[5] == 0 and log[6] == 1 and log[7] == 1  # NaN never matches


def test_bool_and_ulong(lib: Library) -> None:
    b = np.zeros(1, np.bool_)
    u = np.zeros(1, np.uint64)
    log = np.zeros(8, np.uint64)
    n = lib.bool_ulong_sequence(b, u, log)
    assert [int(v) for v in log[:n]] == [0, 1, 0xFFFFFFFFFF, 7]


def _in_threads(target, count: int) -> None:  # type: ignore[no-untyped-def]
    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@pytest.fixture(scope="module")
def native_lib(tmp_path_factory: pytest.TempPathFactory) -> Library:
    return library("native", "atomic_ops.cpp", tmp_path_factory.mktemp("atomic_native"))


def test_atomics_are_atomic_across_os_threads(native_lib: Library) -> None:
    # Native only: ctypes releases the GIL during each call, so the loops really run at the
    # same time (the qemu runner serves one call at a time).
    lib = native_lib
    counter = np.zeros(1, np.int32)
    total = np.zeros(1, np.float32)
    peak = np.zeros(1, np.uint32)
    iterations = 200_000
    _in_threads(lambda i: lib.hammer_int(counter, iterations), 4)
    _in_threads(lambda i: lib.hammer_float(total, iterations // 4), 4)
    _in_threads(lambda i: lib.hammer_max(peak, 1000 * i, iterations // 4), 4)
    assert counter[0] == 4 * iterations
    assert total[0] == float(iterations)  # integers below 2**24 add exactly in float
    assert peak[0] == 3000 + iterations // 4 - 1


def test_array_of_atomics(lib: Library) -> None:
    keys = np.random.default_rng(0).integers(0, 2**32, 10_000).astype(np.uint32)
    bins = np.zeros(16, np.uint32)
    lib.histogram(keys, keys.size, bins)
    np.testing.assert_array_equal(bins, np.bincount(keys % 16, minlength=16))


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("float f(device atomic_float* a) { return atomic_fetch_max_explicit(a, 1.0f, memory_order_relaxed); }",
         "atomic_fetch_max_explicit is not available"),
        ("float f(device atomic_float* a) { return atomic_fetch_and_explicit(a, 1.0f, memory_order_relaxed); }",
         "atomic_fetch_and_explicit is not available"),
        ("ulong f(device atomic_ulong* a) { return atomic_fetch_add_explicit(a, 1ul, memory_order_relaxed); }",
         "atomic_fetch_add_explicit is not available"),
        ("ulong f(device atomic_ulong* a) { return atomic_load_explicit(a, memory_order_relaxed); }",
         "atomic_load_explicit is not available"),
        ("void f(device atomic_int* a) { atomic_min_explicit(a, 1, memory_order_relaxed); }",
         "atomic_min_explicit is not available"),
        ("bool f(device atomic_bool* a) { return atomic_fetch_add_explicit(a, true, memory_order_relaxed); }",
         "atomic_fetch_add_explicit is not available"),
        ("void f(device atomic<half>* a) { atomic_store_explicit(a, half(1), memory_order_relaxed); }",
         "MSL atomics exist only for"),
        ("void f(device atomic_int* a) { atomic_store_explicit(a, 1, memory_order_seq_cst); }",
         "memory_order_seq_cst"),
        ("int f(device atomic_int* a) { return atomic_fetch_add(a, 1); }", "atomic_fetch_add"),
        ("void f(device atomic_int* a, device atomic_int* b) { *a = *b; }", "deleted"),
    ],
    ids=["float-max", "float-and", "ulong-add", "ulong-load", "int-nonreturning-min", "bool-add",
         "half-atomic", "seq-cst", "non-explicit", "copy"],
)
def test_operations_msl_lacks_do_not_compile(code: str, message: str) -> None:
    result = compile_only(code)
    assert not result.ok, f"compiled but MSL rejects it: {code}"
    assert message in result.stderr, result.stderr


@pytest.mark.parametrize(
    "code",
    [
        "void f() { atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst); }",
        "void f() { atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device); }",
        "void f() { atomic_thread_fence(mem_flags::mem_device | mem_flags::mem_threadgroup, memory_order_relaxed,"
        " thread_scope_threadgroup); }",
        "float f(coherent(device) device float* p) { coherent(device) device float* q = p + 1; return *q; }",
    ],
    ids=["default-scope", "device-scope", "relaxed", "coherent-device"],
)
def test_fences_and_coherence_of_msl_3_2_compile(code: str) -> None:
    result = compile_only(code)
    assert result.ok, result.stderr


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("void f() { atomic_thread_fence(mem_flags::mem_device, memory_order_acquire); }", "memory_order_acquire"),
        ("void f() { atomic_thread_fence(mem_flags::mem_device, memory_order_acq_rel); }", "memory_order_acq_rel"),
        ("void f() { atomic_thread_fence(memory_order_seq_cst); }", "atomic_thread_fence"),
        ("int f(device atomic_int* a) { return atomic_fetch_add_explicit(a, 1, memory_order_seq_cst); }",
         "atomic_fetch_add_explicit"),
        ("void f() { atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, 2); }",
         "atomic_thread_fence"),
        ("float f(coherent(threadgroup) device float* p) { return *p; }", "tm_coherent_threadgroup"),
    ],
    ids=["acquire-fence", "acq-rel-fence", "no-flags", "seq-cst-atomic", "int-scope", "coherent-threadgroup"],
)
def test_fence_forms_msl_3_2_lacks_do_not_compile(code: str, message: str) -> None:
    # before MSL 4.1 a fence takes relaxed or seq_cst and atomic operations take relaxed only
    result = compile_only(code)
    assert not result.ok, f"compiled but MSL 3.2 rejects it: {code}"
    assert message in result.stderr, result.stderr


def test_atomic_layout_matches_the_value() -> None:
    code = """
    static_assert(sizeof(atomic_int) == 4 && sizeof(atomic_float) == 4, "32-bit atomics");
    static_assert(sizeof(atomic_ulong) == 8 && sizeof(atomic_bool) == 1, "sizes");
    int f(device atomic_int* out, threadgroup atomic_uint* tg, volatile device atomic_float* v) {
      atomic_fetch_add_explicit(v, 1.0f, memory_order_relaxed);
      return atomic_fetch_add_explicit(&out[3], 2, memory_order_relaxed) +
             int(atomic_load_explicit(tg, memory_order_relaxed));
    }
    """
    result = compile_only(code)
    assert result.ok, result.stderr
