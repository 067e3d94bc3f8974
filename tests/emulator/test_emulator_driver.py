"""The Python driver: disk cache, compiler discovery, source rewrites, the NumPy launch path."""

from __future__ import annotations

import subprocess

import mlx.core as mx
import numpy as np
import pytest

from triton_metal.backends.emulator import (
    CompilerNotFound,
    EmulatorKernel,
    metal_kernel,
    toolchain,
)
from triton_metal.backends.emulator.rewrite import (
    needs_fibers,
    rewrite_threadgroup_declarations,
    strip_comments,
)
from triton_metal.backends.emulator.signature import InputSpec, OutputSpec, build_kernel_source

VADD = "uint i = thread_position_in_grid.x;\nif (i < n) out[i] = a[i] + b[i];\n"


def vadd_source(n: int = 100):
    return build_kernel_source(
        "vadd_np",
        [InputSpec("a", "float", 1, n), InputSpec("b", "float", 1, n), InputSpec("n", "int32_t", 0, 1)],
        [OutputSpec("out", "float")],
        VADD,
    )


def test_numpy_path_writes_outputs_in_place():
    kernel = EmulatorKernel.build(vadd_source(), VADD)
    assert not kernel.uses_fibers  # no barrier or SIMD-group function: threads run straight through
    a = np.arange(100, dtype=np.float32)
    b = np.full(100, 0.5, np.float32)
    out = np.zeros(100, np.float32)
    kernel.launch([a, b, np.array(100, np.int32)], [out], (128, 1, 1), (32, 1, 1))
    np.testing.assert_array_equal(out, a + b)


def test_compile_from_metal_kernel_arguments():
    kernel = EmulatorKernel.compile(
        "scale", [InputSpec("x", "float16_t", 2, 12)], [OutputSpec("y", "float")],
        "uint i = thread_position_in_grid.x; y[i] = float(x[i]) * S;", template=[("S", 3)],
    )
    x = np.arange(12, dtype=np.float16).reshape(3, 4)
    y = np.zeros(12, np.float32)
    kernel.launch([x], [y], (12, 1, 1), (4, 1, 1))
    np.testing.assert_array_equal(y, np.arange(12, dtype=np.float32) * 3)


def test_numpy_path_checks_dtypes_and_counts():
    kernel = EmulatorKernel.build(vadd_source(), VADD)
    a = np.zeros(100, np.float32)
    with pytest.raises(TypeError, match="'b' is declared float but the array has dtype float64"):
        kernel.launch([a, np.zeros(100), np.array(1, np.int32)], [a.copy()], (1, 1, 1), (1, 1, 1))
    with pytest.raises(ValueError, match="takes 3 inputs and 1 outputs"):
        kernel.launch([a], [a.copy()], (1, 1, 1), (1, 1, 1))
    with pytest.raises(ValueError, match="writable C-contiguous"):
        kernel.launch([a, a, np.array(1, np.int32)], [np.zeros((10, 20), np.float32).T.reshape(-1)[::2]], (1, 1, 1), (1, 1, 1))


def test_disk_cache_reuses_the_compiled_kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_METAL_CACHE_DIR", str(tmp_path))
    first = EmulatorKernel.build(vadd_source(), VADD)
    assert first.artifact.parent == tmp_path / "emulator"
    assert first.artifact.exists()
    # The second build must not run the compiler at all.
    def no_compiler(*args, **kwargs):
        raise AssertionError(f"compiler ran again: {args}")

    monkeypatch.setattr(subprocess, "run", no_compiler)
    second = EmulatorKernel.build(vadd_source(), VADD)
    assert second.artifact == first.artifact
    # No temporary files are left next to the artifacts.
    assert not [p for p in (tmp_path / "emulator").iterdir() if p.name.startswith((".", "tm-build"))]


def test_different_source_gets_a_different_artifact():
    one = EmulatorKernel.build(vadd_source(100), VADD)
    other = EmulatorKernel.build(vadd_source(5), VADD)  # 5 elements: `constant` inputs
    assert one.artifact != other.artifact


def test_missing_compiler_names_the_package(monkeypatch):
    toolchain.find_compiler.cache_clear()
    monkeypatch.setenv("CXX", "/nonexistent/bin/g++")
    try:
        with pytest.raises(CompilerNotFound, match=r"apt-get install g\+\+.*build-essential"):
            toolchain.find_compiler()
    finally:
        monkeypatch.delenv("CXX")
        toolchain.find_compiler.cache_clear()


def test_rewrite_threadgroup_declarations_keeps_lines():
    text = (
        "threadgroup float a[64];\n"
        "  threadgroup vec<float, 4> b[4][8]; // threadgroup float fake[3];\n"
        "threadgroup T c[BLOCK * 2];\n"
        "threadgroup atomic_int counter;\n"
        "void f(threadgroup float* p) { threadgroup float* q = p; }\n"
        "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
    )
    out, count = rewrite_threadgroup_declarations(text)
    assert count == 4
    assert out.count("\n") == text.count("\n")
    lines = out.splitlines()
    assert lines[0] == 'auto& a = ::metal::tm_tg_var<float[64]>(0, "a", __FILE__, __LINE__);'
    assert 'tm_tg_var<vec<float, 4>[4][8]>(1, "b"' in lines[1]
    assert "// threadgroup float fake[3];" in lines[1]  # comments are left alone
    assert 'tm_tg_var<T[BLOCK*2]>(2, "c"' in lines[2]
    assert 'tm_tg_var<atomic_int>(3, "counter"' in lines[3]
    assert lines[4] == text.splitlines()[4]  # pointers and parameters untouched
    assert lines[5] == text.splitlines()[5]


def test_needs_fibers_scans_for_synchronisation_only():
    assert not needs_fibers("uint simd_id = simdgroup_index_in_threadgroup; out[0] = simd_id;")
    assert not needs_fibers("// simd_sum(x) in a comment\nout[0] = 1;")
    assert needs_fibers("float s = simd_sum(x);")
    assert needs_fibers("", "inline void sync() { threadgroup_barrier(mem_flags::mem_none); }")
    assert needs_fibers("simdgroup_float8x8 m;")
    assert strip_comments('a /* b\nc */ "d//e" // f\n').count("\n") == 2


def test_threadgroup_memory_reads_nan_at_group_start(monkeypatch):
    monkeypatch.setenv("TRITON_METAL_EMULATOR_THREADS", "1")  # one worker reuses its storage
    src = """
    uint g = threadgroup_position_in_grid.x;
    threadgroup float f[4];
    threadgroup int k[4];
    out[g * 2] = f[thread_index_in_threadgroup];
    iout[g] = k[thread_index_in_threadgroup];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    f[thread_index_in_threadgroup] = 1.0f;   // the next group must not see this
    k[thread_index_in_threadgroup] = 5;
    out[g * 2 + 1] = f[0];
    """
    kernel = metal_kernel("tgnan", ["x"], ["out", "iout"], src)
    out, iout = kernel(
        inputs=[np.zeros(1, np.float32)], output_shapes=[(6,), (3,)],
        output_dtypes=[mx.float32, mx.int32], grid=(3, 1, 1), threadgroup=(1, 1, 1),
    )
    out = np.array(out)
    assert np.isnan(out[0::2]).all()
    np.testing.assert_array_equal(out[1::2], [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(np.array(iout), [-1, -1, -1])


def test_compile_options_are_checked_like_mlx():
    with pytest.raises(ValueError, match="Invalid math_mode"):
        metal_kernel("k", ["x"], ["o"], "o[0] = x[0];", compile_options={"math_mode": "sloppy"})
    with pytest.raises(ValueError, match="Unknown compile option"):
        metal_kernel("k", ["x"], ["o"], "o[0] = x[0];", compile_options={"opt": "fast"})
    with pytest.raises(ValueError, match="at least one output"):
        metal_kernel("k", ["x"], [], "")


def test_wrong_input_count_is_refused():
    kernel = metal_kernel("cnt", ["x", "y"], ["out"], "out[0] = x[0];")
    with pytest.raises(ValueError, match="Expected `inputs` to have size 2"):
        kernel(
            inputs=[np.zeros(1, np.float32)], output_shapes=[(1,)], output_dtypes=[mx.float32],
            grid=(1, 1, 1), threadgroup=(1, 1, 1),
        )


def test_python_int_outside_int32_becomes_int64():
    src = "out[thread_position_in_grid.x] = float(big - 4294967296L);"
    kernel = metal_kernel("bigint", ["big"], ["out"], src)
    (out,) = kernel(
        inputs=[2**32 + 3], output_shapes=[(1,)], output_dtypes=[mx.float32],
        grid=(1, 1, 1), threadgroup=(1, 1, 1),
    )
    np.testing.assert_array_equal(np.array(out), [3.0])


def test_standalone_program_runs_a_fiber_kernel(tmp_path):
    import shutil
    import subprocess

    from triton_metal.backends.emulator.standalone import StandaloneProgram, read_buffers, write_buffers

    body = """
    uint i = thread_position_in_grid.x;
    threadgroup float buf[64];
    buf[thread_index_in_threadgroup] = x[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = buf[63 - thread_index_in_threadgroup] + simd_sum(1.0f);
    """
    ksrc = build_kernel_source(
        "standalone", [InputSpec("x", "float", 1, 128)], [OutputSpec("out", "float")], body
    )
    program = StandaloneProgram.make(ksrc, body)
    kernel_file = tmp_path / "kernel.cpp"
    kernel_file.write_text(program.kernel_unit)
    exe = tmp_path / "kernel"
    cxx = shutil.which("g++") or shutil.which("clang++")
    assert cxx is not None
    for command in program.commands(cxx, kernel_file, exe):
        subprocess.run(command, check=True, capture_output=True)
    x = np.arange(128, dtype=np.float32)
    out = np.zeros(128, np.float32)
    write_buffers(tmp_path / "in.bin", [x, out], [False, True], (128, 1, 1), (64, 1, 1), 10.0, 2)
    subprocess.run([exe, tmp_path / "in.bin", tmp_path / "out.bin"], check=True)
    read_buffers(tmp_path / "out.bin", [x, out], [False, True])
    expected = x.reshape(2, 64)[:, ::-1].reshape(-1) + 32
    np.testing.assert_array_equal(out, expected)


def test_launch_in_a_forked_child():
    # Worker threads persist between launches; a forked child has none and must start its own.
    import os

    kernel = EmulatorKernel.build(vadd_source(), VADD)
    a = np.arange(100, dtype=np.float32)
    out = np.zeros(100, np.float32)
    kernel.launch([a, a, np.array(100, np.int32)], [out], (100, 1, 1), (32, 1, 1))  # start the pool
    pid = os.fork()
    if pid == 0:  # child: exit status says whether the launch worked
        try:
            res = np.zeros(100, np.float32)
            kernel.launch([a, a, np.array(100, np.int32)], [res], (100, 1, 1), (32, 1, 1))
            os._exit(0 if np.array_equal(res, 2 * a) else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_threadgroup_array_parameters_are_not_declarations():
    header = "inline float first(threadgroup float v[4], int k) { return v[k]; }\n"
    src = """
    threadgroup float buf[4];
    buf[thread_index_in_threadgroup] = 2.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[thread_position_in_grid.x] = first(buf, 3);
    """
    kernel = metal_kernel("tgparam", ["x"], ["out"], src, header=header)
    (out,) = kernel(
        inputs=[np.zeros(1, np.float32)], output_shapes=[(4,)], output_dtypes=[mx.float32],
        grid=(4, 1, 1), threadgroup=(4, 1, 1),
    )
    np.testing.assert_array_equal(np.array(out), np.full(4, 2.0, np.float32))


@pytest.mark.parametrize(
    "in_dtype,out_dtype,message",
    [
        (mx.complex64, mx.float32, "does not support arrays of complex64_t"),
        (mx.float32, mx.float64, "double \\(float64\\), which Metal does not support"),
    ],
)
def test_unsupported_dtypes_are_refused(in_dtype, out_dtype, message):
    kernel = metal_kernel("dt", ["x"], ["o"], "o[thread_position_in_grid.x] = 0;")
    with pytest.raises(ValueError, match=message):
        kernel(
            inputs=[mx.zeros(4, dtype=in_dtype)], output_shapes=[(1,)], output_dtypes=[out_dtype],
            grid=(1, 1, 1), threadgroup=(1, 1, 1),
        )
