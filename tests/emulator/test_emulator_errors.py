"""Kernels the emulator must refuse or stop, each with a message that says what and where."""

from __future__ import annotations

import numpy as np
import pytest

from triton_metal.backends.emulator import (
    KernelFault,
    MSLCompileError,
    OutOfBoundsAccess,
    ThreadgroupMemoryError,
    WatchdogTimeout,
    metal_kernel,
)
from triton_metal.errors import OutOfResources


def run(name: str, src: str, n: int = 64, tg: int = 64, header: str = ""):
    kernel = metal_kernel(name, ["x"], ["out"], src, header=header)
    (out,) = kernel(
        inputs=[np.arange(n, dtype=np.float32)],
        output_shapes=[(n,)],
        output_dtypes=[np.float32],
        grid=(n, 1, 1),
        threadgroup=(tg, 1, 1),
    )
    return np.array(out)


def body_line(name: str, src: str, marker: str) -> int:
    """The line of the full MSL source (header + signature + body) that contains `marker`."""
    from triton_metal.backends.emulator.signature import InputSpec, OutputSpec, build_kernel_source

    text = build_kernel_source(
        name, [InputSpec("x", "float", 1, 64)], [OutputSpec("out", "float")], src
    ).text
    for i, line in enumerate(text.splitlines(), start=1):
        if marker in line:
            return i
    raise AssertionError(marker)


def test_divergent_barrier_thread_returned_early():
    src = """
    uint i = thread_position_in_grid.x;
    if (i < 10) return;
    threadgroup_barrier(mem_flags::mem_threadgroup);  // the barrier
    out[i] = 1;
    """
    with pytest.raises(KernelFault) as info:
        run("divbar", src)
    msg = str(info.value)
    line = body_line("divbar", src, "// the barrier")
    assert "divergent barrier" in msg and "finished while other threads" in msg
    assert f"custom_kernel_divbar_float_float.metal:{line}" in msg
    assert "54 thread(s) wait at threadgroup_barrier" in msg and "10 thread(s) have finished" in msg
    assert "threadgroup_barrier(mem_flags::mem_threadgroup);  // the barrier" in msg


def test_barriers_on_different_lines():
    src = """
    uint i = thread_position_in_grid.x;
    if (i < 10) { threadgroup_barrier(mem_flags::mem_threadgroup); }  // first
    else { threadgroup_barrier(mem_flags::mem_threadgroup); }  // second
    out[i] = 1;
    """
    with pytest.raises(KernelFault) as info:
        run("lines", src)
    msg = str(info.value)
    assert "barriers on different lines" in msg
    assert f".metal:{body_line('lines', src, '// first')}), first: thread (0,0,0)" in msg
    assert f".metal:{body_line('lines', src, '// second')}), first: thread (10,0,0)" in msg


def test_simd_function_reached_by_part_of_the_simdgroup():
    src = """
    uint i = thread_position_in_grid.x;
    float v = 0;
    if (i < 16) v = simd_sum(x[i]); else v = simd_max(x[i]);
    out[i] = v;
    """
    with pytest.raises(KernelFault, match="reached different SIMD-group operations") as info:
        run("simdmis", src)
    assert "16 thread(s) wait at simd_sum" in str(info.value)
    assert "16 thread(s) wait at simd_max" in str(info.value)


def test_barrier_waiting_against_simd_function_is_a_deadlock():
    src = """
    uint i = thread_position_in_grid.x;
    float v = 0;
    if (i == 3) threadgroup_barrier(mem_flags::mem_threadgroup);
    else v = simd_sum(x[i]);
    out[i] = v;
    """
    with pytest.raises(KernelFault, match="deadlock"):
        run("dead", src, n=32, tg=32)


def test_simdgroup_matrix_needs_all_32_lanes():
    src = """
    simdgroup_float8x8 m;
    simdgroup_load(m, x, 8);
    simdgroup_store(m, out, 8);
    """
    with pytest.raises(KernelFault, match="needs all 32 lanes of the SIMD-group, but only 20"):
        run("mat20", src, n=64, tg=20)


def test_threadgroup_memory_exactly_at_the_limit_is_allowed():
    src = """
    threadgroup float a[4096];
    threadgroup float b[4096];
    uint i = thread_position_in_grid.x;
    a[i] = 1; b[i] = 2;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = a[63 - i] + b[i];
    """
    np.testing.assert_array_equal(run("tgmax", src), np.full(64, 3.0, np.float32))


def test_threadgroup_memory_over_the_limit():
    src = """
    threadgroup float a[4096];
    threadgroup float b[4096];
    threadgroup float c[1];
    a[0] = 1; b[0] = 2; c[0] = 3;
    out[thread_position_in_grid.x] = a[0] + b[0] + c[0];
    """
    with pytest.raises(ThreadgroupMemoryError) as info:
        run("tgover", src)
    msg = str(info.value)
    assert "exceeds Metal's limit of 32768 bytes" in msg
    assert "'a' 16384 bytes" in msg and "'b' 16384 bytes" in msg and "'c' 4 bytes" in msg
    assert "32772 bytes in all" in msg
    assert info.value.required == 32772


@pytest.mark.parametrize(
    "call,name",
    [("expf(x[0])", "expf"), ("(printf(\"hi\"), 0.0f)", "printf"), ("float(double(x[0]))", "double")],
)
def test_calls_msl_lacks_fail_to_compile_at_the_line(call, name):
    src = f"""
    uint i = thread_position_in_grid.x;
    out[i] = {call};  // bad
    """
    with pytest.raises(MSLCompileError) as info:
        run("nomsl_" + name, src)
    err = info.value
    assert err.loc is not None and err.loc.line == body_line("nomsl_" + name, src, "// bad")
    assert name in err.reason
    assert f"out[i] = {call};" in str(err)


def test_bfloat_implicit_conversion_from_float_is_refused():
    src = """
    uint i = thread_position_in_grid.x;
    bfloat b = x[i];  // implicit float -> bfloat
    out[i] = b;
    """
    with pytest.raises(MSLCompileError) as info:
        run("bfimpl", src)
    assert info.value.loc.line == body_line("bfimpl", src, "// implicit")
    assert "bfloat" in info.value.reason


def test_syntax_error_is_mapped_to_the_msl_line():
    src = """
    uint i = thread_position_in_grid.x;
    float y = x[i] +;
    out[i] = y;
    """
    with pytest.raises(MSLCompileError) as info:
        run("synerr", src)
    err = info.value
    assert err.loc.file == "custom_kernel_synerr_float_float.metal"
    assert err.loc.line == body_line("synerr", src, "x[i] +;")
    assert "float y = x[i] +;" in str(err)
    assert "expected primary-expression" in err.reason


def test_error_in_header_is_mapped_to_the_header_line():
    header = "inline float twice(float v) {\n  return v * 2 +;\n}\n"
    with pytest.raises(MSLCompileError) as info:
        run("hdr", "out[thread_position_in_grid.x] = twice(x[0]);", header=header)
    assert info.value.loc.line == 2


def test_goto_is_refused():
    src = """
    uint i = thread_position_in_grid.x;
    again: out[i] = 1;
    if (i > 1000) goto again;
    """
    with pytest.raises(MSLCompileError, match="no `goto`") as info:
        run("gt", src)
    assert info.value.loc.line == body_line("gt", src, "goto again")


def test_watchdog_stops_a_spin_wait_on_device_memory(monkeypatch):
    monkeypatch.setenv("TRITON_METAL_EMULATOR_WATCHDOG", "0.5")
    src = """
    device atomic_int* flag = (device atomic_int*)out;
    // Waits for a value no thread ever writes.
    while (atomic_load_explicit(flag, memory_order_relaxed) != 12345) {}
    """
    with pytest.raises(WatchdogTimeout, match=r"threadgroup \(0,0,0\) did not finish within 0.5 s"):
        run("spin", src)


def test_watchdog_stops_a_spin_wait_between_fibers(monkeypatch):
    # Thread 5 waits for thread 0, which runs only when thread 5 yields: it never does.
    monkeypatch.setenv("TRITON_METAL_EMULATOR_WATCHDOG", "0.5")
    src = """
    threadgroup atomic_int flag;
    if (thread_index_in_threadgroup == 5) {
        while (atomic_load_explicit(&flag, memory_order_relaxed) != 7) {}
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (thread_index_in_threadgroup == 0) atomic_store_explicit(&flag, 7, memory_order_relaxed);
    out[thread_position_in_grid.x] = 1;
    """
    with pytest.raises(WatchdogTimeout) as info:
        run("spinfiber", src)
    msg = str(info.value)
    assert "running: thread (5,0,0)" in msg
    assert "5 thread(s) wait at threadgroup_barrier" in msg


def test_launch_after_a_fault_still_works():
    src = """
    uint i = thread_position_in_grid.x;
    if (i < 10) return;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = 1;
    """
    with pytest.raises(KernelFault):
        run("after", src)
    np.testing.assert_array_equal(
        run("after_ok", "uint i = thread_position_in_grid.x; out[i] = x[i] + 1;"),
        np.arange(64, dtype=np.float32) + 1,
    )


@pytest.fixture
def asan(monkeypatch):
    monkeypatch.setenv("TRITON_METAL_EMULATOR_ASAN", "1")


def test_asan_reports_out_of_bounds_device_read(asan):
    src = """
    uint i = thread_position_in_grid.x;
    out[i] = x[i + 1];  // reads one past the end
    """
    with pytest.raises(KernelFault) as info:
        run("oob", src)
    msg = str(info.value)
    assert "AddressSanitizer: heap-buffer-overflow (read of 4 bytes)" in msg
    assert f"custom_kernel_oob_float_float.metal:{body_line('oob', src, 'one past')}" in msg
    assert "out[i] = x[i + 1];" in msg


def test_asan_reports_out_of_bounds_threadgroup_read(asan):
    src = """
    uint i = thread_position_in_grid.x;
    threadgroup float buf[64];
    buf[i] = x[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = buf[i + 1];  // past the threadgroup array
    """
    with pytest.raises(KernelFault) as info:
        run("tgoob", src)
    msg = str(info.value)
    assert "(threadgroup memory)" in msg
    assert f".metal:{body_line('tgoob', src, 'past the threadgroup')}" in msg


def test_asan_build_runs_correct_kernels(asan):
    src = """
    uint i = thread_position_in_grid.x;
    threadgroup float buf[64];
    buf[i] = x[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = buf[63 - i] + simd_sum(1.0f);
    """
    np.testing.assert_array_equal(run("asanok", src), np.arange(63, -1, -1, dtype=np.float32) + 32)


def test_wild_access_becomes_an_error_not_a_crash(monkeypatch):
    src = "out[thread_position_in_grid.x] = x[thread_position_in_grid.x + (1u << 31)];"
    # with bounds checks (the default), the access is refused before it happens
    with pytest.raises(OutOfBoundsAccess, match=r"'x' at index 2147483648 \(the buffer has 64 elements\) at custom_kernel_wild\w*\.metal:\d+"):
        run("wild", src)
    # without them, the fault it causes is caught
    monkeypatch.setenv("TRITON_METAL_EMULATOR_CHECKS", "0")
    with pytest.raises(KernelFault, match="invalid memory access .* out-of-bounds.*ASAN=1"):
        run("wild", src)


def test_fiber_stack_overflow_is_reported():
    src = """
    float big[100000];  // 400 KB of locals: more than a fiber's 128 KiB stack
    for (uint k = 0; k < 100000; ++k) big[k] = x[k % 64] + k;
    out[thread_position_in_grid.x] = simd_sum(big[thread_position_in_grid.x * 7]);
    """
    with pytest.raises(KernelFault, match="overflowed its stack .* TRITON_METAL_EMULATOR_STACK"):
        run("overflow", src)


def test_larger_fiber_stacks_on_request(monkeypatch):
    monkeypatch.setenv("TRITON_METAL_EMULATOR_STACK", str(1 << 20))
    src = """
    float big[100000];
    for (uint k = 0; k < 100000; ++k) big[k] = x[k % 64] + k;
    out[thread_position_in_grid.x] = simd_sum(big[thread_position_in_grid.x * 7]);
    """
    big = [float(k % 64 + k) for k in range(64 * 7)]
    per_lane = np.array([big[t * 7] for t in range(64)])
    # simd_sum over each SIMD-group of 32 lanes.
    expected = np.repeat([per_lane[:32].sum(), per_lane[32:].sum()], 32).astype(np.float32)
    np.testing.assert_allclose(run("bigstack", src), expected, rtol=1e-6)


def test_watchdog_works_with_two_runtime_copies_loaded(tmp_path, monkeypatch):
    # A second cache directory brings a second copy of the runtime library into the process; the
    # watchdog signal of the first copy must still reach it (handlers chain).
    spin = """
    device atomic_int* flag = (device atomic_int*)out;
    while (atomic_load_explicit(flag, memory_order_relaxed) != 12345) {}
    """
    kernel = metal_kernel("spin_two", ["x"], ["out"], spin)
    run("copy_one", "out[thread_position_in_grid.x] = x[0];")  # the first copy is loaded
    monkeypatch.setenv("TRITON_METAL_CACHE_DIR", str(tmp_path))
    run("copy_two", "out[thread_position_in_grid.x] = x[1];")  # a second copy, later handlers
    monkeypatch.delenv("TRITON_METAL_CACHE_DIR")
    monkeypatch.setenv("TRITON_METAL_EMULATOR_WATCHDOG", "0.5")
    with pytest.raises(WatchdogTimeout):
        kernel(
            inputs=[np.zeros(4, np.float32)], output_shapes=[(4,)], output_dtypes=[np.float32],
            grid=(4, 1, 1), threadgroup=(4, 1, 1),
        )


@pytest.mark.parametrize(
    "decl,reason",
    [
        ("threadgroup float buf[4] = {0, 0, 0, 0};", "cannot have an initializer"),
        ("threadgroup float a[4], b[4];", "one threadgroup variable per statement"),
    ],
)
def test_threadgroup_declarations_msl_refuses(decl, reason):
    src = f"""
    {decl}  // here
    out[thread_position_in_grid.x] = 0;
    """
    with pytest.raises(MSLCompileError, match=reason) as info:
        run("tgdecl", src)
    assert info.value.loc.line == body_line("tgdecl", src, "// here")


def test_compile_error_follows_the_kernels_own_line_directives(tmp_path):
    # A code generator may point #line at its own source; errors then cite that file and line,
    # and the line is quoted from it.
    py = tmp_path / "my_kernel.py"
    py.write_text("def kernel():\n    x = 1\n    y = oops + x  # the bad line\n")
    body = f'#line 3 "{py}"\nout[thread_position_in_grid.x] = x[0] + oops;\n'
    with pytest.raises(MSLCompileError) as info:
        run("linedir", body)
    err = info.value
    assert err.loc.file == str(py) and err.loc.line == 3
    assert "y = oops + x  # the bad line" in str(err)
    assert "oops" in err.reason


def test_runtime_error_quotes_the_line_named_by_line_directives(tmp_path):
    py = tmp_path / "gen.py"
    py.write_text("a = 1\nbarrier_here()  # generated barrier\n")
    body = (
        "uint i = thread_position_in_grid.x;\n"
        "if (i < 10) return;\n"
        f'#line 2 "{py}"\n'
        "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
        "out[i] = 1;\n"
    )
    with pytest.raises(KernelFault) as info:
        run("linedir_rt", body)
    msg = str(info.value)
    assert f"({py}:2)" in msg
    assert "barrier_here()  # generated barrier" in msg
