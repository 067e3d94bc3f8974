"""Launching: decoration forms, grids, launch options, warmup, the compile cache, modes."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from triton_metal.errors import CompilationError
from runtime_kernels import axpy_kernel, copy_kernel, program_id_kernel

import triton_metal as triton
import triton_metal.frontend as frontend
import triton_metal.language as tl
from triton_metal.language.jit_marker import JITCallable


def _identity(x):
    return x


def test_decoration_forms():
    plain = triton.jit(_identity)
    called = triton.jit()(_identity)
    with_options = triton.jit(_identity, do_not_specialize=[0], debug=True, noinline=True)
    for k in (plain, called, with_options):
        assert isinstance(k, triton.JITFunction) and isinstance(k, JITCallable)
        assert k.fn is _identity and k.__name__ == "_identity"
        assert k.arg_names == ["x"]
    assert with_options.debug and with_options.noinline and with_options.do_not_specialize == ["x"]

    @triton.jit(version=2, repr=lambda meta: "name", launch_metadata=None)
    def k(a):
        pass

    assert k.version == 2 and k.repr({}) == "name"


def test_calling_a_kernel_directly_is_refused():
    with pytest.raises(RuntimeError, match="cannot be called directly"):
        copy_kernel(np.zeros(4), np.zeros(4), 4, 4)


@pytest.mark.parametrize("n", [1, 100, 256, 1000])
@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_launch_numpy(n, num_warps):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    grid = (triton.cdiv(n, 128),)
    axpy_kernel[grid](x, y, out, 2.5, n, BLOCK=128, num_warps=num_warps)
    np.testing.assert_array_equal(out, np.float32(2.5) * x + y)


def test_launch_mlx_arrays_rebinds_the_output():
    x = mx.arange(300, dtype=mx.float32)
    out = mx.zeros((300,), dtype=mx.float32)
    copy_kernel[(3,)](x, out, 300, BLOCK=128)
    np.testing.assert_array_equal(np.array(out), np.arange(300, dtype=np.float32))


def test_grid_function_sees_every_bound_argument():
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (triton.cdiv(meta["n"], meta["BLOCK"]),)

    src = np.arange(50, dtype=np.int32)
    dst = np.zeros(50, np.int32)
    copy_kernel[grid](src, dst, 50, BLOCK=16)
    np.testing.assert_array_equal(dst, src)
    assert list(seen) == ["src_ptr", "dst_ptr", "n", "BLOCK"]
    assert seen["n"] == 50 and seen["BLOCK"] == 16 and seen["src_ptr"] is src


def test_three_dimensional_grid_runs_every_program():
    out = np.zeros(2 * 3 * 4, np.int32)
    program_id_kernel[(2, 3, 4)](out, STRIDE_Y=2, STRIDE_Z=6)
    np.testing.assert_array_equal(out, np.arange(1, 25, dtype=np.int32))


def test_ignored_launch_options_are_accepted():
    src = np.arange(16, dtype=np.float32)
    dst = np.zeros(16, np.float32)
    copy_kernel[(1,)](src, dst, 16, BLOCK=16, num_warps=2, num_stages=4, num_ctas=1, maxnreg=128)
    np.testing.assert_array_equal(dst, src)


def test_amd_tuning_options_are_accepted_and_options_that_change_results_are_not():
    # tutorial 03 takes AMD's configs on any backend that is not CUDA; they carry waves_per_eu
    src = np.arange(16, dtype=np.float32)
    dst = np.zeros(16, np.float32)
    copy_kernel[(1,)](src, dst, 16, BLOCK=16, waves_per_eu=2, matrix_instr_nonkdim=16, kpack=2)
    np.testing.assert_array_equal(dst, src)
    with pytest.raises(KeyError, match="Keyword argument enable_fp_fusion was specified but unrecognised"):
        copy_kernel[(1,)](src, dst, 16, BLOCK=16, waves_per_eu=2, enable_fp_fusion=False)


@pytest.mark.parametrize("cooperative", [True, False])
def test_cooperative_grid_option_is_accepted(cooperative: bool):
    # Triton's test_load_scope_sem_coop_grid_cta_one: the same result with or without it
    src = np.arange(16, dtype=np.float32)
    dst = np.zeros(16, np.float32)
    copy_kernel[(1,)](src, dst, 16, BLOCK=16, num_ctas=1, launch_cooperative_grid=cooperative)
    np.testing.assert_array_equal(dst, src)


def test_warmup_compiles_without_running():
    @triton.jit
    def k(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)

    src = np.arange(32, dtype=np.float32)
    dst = np.zeros(32, np.float32)
    compiled = k.warmup(src, dst, 32, BLOCK=32, grid=(1,))
    assert compiled is not None
    assert not dst.any()  # nothing ran
    assert len(k.cache) == 1 and compiled.key in k.cache
    assert "tt.store" in compiled.ir or "store" in compiled.ir
    # the launch finds the warmed-up variant
    k[(1,)](src, dst, 32, BLOCK=32)
    np.testing.assert_array_equal(dst, src)
    assert len(k.cache) == 1 and k.cache.hits == 1 and compiled.launches == 1


def test_second_launch_does_not_recompile(monkeypatch):
    calls = []
    real = frontend.compile_to_ir

    def counting(kernel, signature):
        calls.append(signature)
        return real(kernel, signature)

    monkeypatch.setattr(frontend, "compile_to_ir", counting)

    @triton.jit
    def k(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)

    src = np.arange(64, dtype=np.float32)
    for n in (64, 48, 64, 32):  # 64, 48 and 32 are all multiples of 16: one variant
        dst = np.zeros(64, np.float32)
        k[(2,)](src, dst, n, BLOCK=32)
        np.testing.assert_array_equal(dst[:n], src[:n])
    assert len(calls) == 1 and k.cache.misses == 1 and k.cache.hits == 3
    k[(2,)](src, np.zeros(64, np.float32), 33, BLOCK=32)  # not a multiple of 16: a new variant
    k[(2,)](src, np.zeros(64, np.float32), 64, BLOCK=32, num_warps=8)  # another num_warps
    k[(4,)](src, np.zeros(64, np.float32), 64, BLOCK=16)  # another constexpr
    assert len(calls) == 4 and len(k.cache) == 4


def test_interpret_mode_checks_with_the_compiler_once_per_variant(monkeypatch):
    """One legality: the interpreter runs what the compiler accepts, checked once per variant
    (no toolchain, no launcher), and refuses with the compiler's own error."""
    calls = []
    real = frontend.compile_to_ir

    def counting(kernel, signature):
        calls.append(kernel.__name__)
        return real(kernel, signature)

    monkeypatch.setattr(frontend, "compile_to_ir", counting)
    monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")

    @triton.jit
    def copy_twice(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)

    src = np.arange(20, dtype=np.float32)
    for _ in range(3):
        dst = np.zeros(20, np.float32)
        copy_twice[(1,)](src, dst, 20, BLOCK=32)
        np.testing.assert_array_equal(dst, src)
    assert calls == ["copy_twice"] and len(copy_twice.cache) == 0  # checked, never built
    warmed = copy_twice.warmup(src, dst, 20, BLOCK=32, grid=(1,))  # the legality check's variant
    assert warmed is not None and warmed.key.backend == "interpreter" and warmed.kernel is copy_twice
    assert triton.active_backend_name() == "interpreter"

    @triton.jit
    def ptr_to_int(dst_ptr, n):  # a limit of the code generator, not of the semantic layer
        tl.store(dst_ptr + tl.arange(0, 4), (dst_ptr + tl.arange(0, 4)).to(tl.int64).to(tl.int32))

    monkeypatch.delenv("TRITON_METAL_INTERPRET")
    with pytest.raises(CompilationError) as compiled:
        ptr_to_int[(1,)](np.zeros(4, np.int32), 4)
    monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    out = np.zeros(4, np.int32)
    with pytest.raises(CompilationError) as interpreted:
        ptr_to_int[(1,)](out, 4)
    assert interpreted.value.reason == compiled.value.reason and not out.any()


def test_debug_log_reports_compiles_and_launches(monkeypatch, capfd):
    monkeypatch.setenv("TRITON_METAL_DEBUG", "1")

    @triton.jit
    def logged(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)

    src = np.arange(20, dtype=np.float32)
    logged[(1,)](src, np.zeros(20, np.float32), 20, BLOCK=32)
    err = capfd.readouterr().err
    assert "compile logged [src_ptr: *fp32 (aligned), dst_ptr: *fp32 (aligned), n: i32, BLOCK=32]" in err
    assert "launch logged grid=(1, 1, 1) num_warps=4 backend=emulator" in err
    assert "compiled in" in err


def test_requesting_an_unavailable_backend_is_an_error(monkeypatch):
    monkeypatch.setenv("TRITON_METAL_BACKEND", "metal")
    src = np.arange(4, dtype=np.float32)
    dst = np.zeros(4, np.float32)
    with pytest.raises(triton.LaunchError, match="TRITON_METAL_BACKEND=metal"):
        copy_kernel[(1,)](src, dst, 4, BLOCK=16)
    assert not dst.any()
    monkeypatch.setenv("TRITON_METAL_BACKEND", "cuda")
    with pytest.raises(triton.LaunchError, match="unknown backend"):
        triton.active_backend_name()


def test_reinterpret_numpy_and_mlx():
    x = np.array([1.0, -2.0, 0.5], np.float32)
    bits = np.zeros(3, np.int32)
    copy_kernel[(1,)](triton.reinterpret(x, tl.int32), bits, 3, BLOCK=16)
    np.testing.assert_array_equal(bits, x.view(np.int32))
    out = np.zeros(3, np.float32)
    copy_kernel[(1,)](bits, triton.reinterpret(out, "int32"), 3, BLOCK=16)
    np.testing.assert_array_equal(out, x)
    mx_out = mx.zeros((3,), dtype=mx.int32)
    viewed = triton.reinterpret(mx_out, tl.float32)
    assert viewed.dtype == mx.float32
    with pytest.raises(TypeError, match="no fp64"):
        triton.reinterpret(x, tl.float64)
    with pytest.raises(TypeError, match="expected a numpy.ndarray or mlx.core.array"):
        triton.reinterpret([1, 2], tl.int32)


def test_reinterpret_numpy_as_bfloat16():
    # bfloat16 is the top half of a float32: 1.5 is 0x3FC0, -2.0 is 0xC000
    src = np.array([0x3FC0, 0xC000, 0x0000], np.uint16)
    dst = np.zeros(3, np.uint16)
    copy_kernel[(1,)](triton.reinterpret(src, tl.bfloat16), triton.reinterpret(dst, tl.bfloat16), 3,
                      BLOCK=16)
    np.testing.assert_array_equal(dst, src)
    with pytest.raises(ValueError, match="2-byte elements"):
        triton.reinterpret(np.zeros(3, np.float32), tl.bfloat16)


def test_signature_given_to_the_front_end():
    from triton_metal.frontend import ParamConstexpr, ParamType

    @triton.jit(debug=True)
    def k(x_ptr, n, one, big, scale, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * scale, mask=offs < n)

    x = np.zeros(64, np.float32)
    compiled = k.warmup(x[4:], 48, 1, 2**40, 2.0, BLOCK=64, grid=(1,), num_warps=2)
    sig = compiled.signature
    assert sig.params == (
        ParamType(tl.pointer_type(tl.float32), True),  # 16 bytes in: still aligned
        ParamType(tl.int32, True),
        ParamConstexpr(1),
        ParamType(tl.int64, True),
        ParamType(tl.float32, False),
        ParamConstexpr(64),
    )
    assert sig.num_warps == 2 and sig.debug  # the decorator's debug is the default
    assert not k.warmup(x, 48, 1, 2**40, 2.0, BLOCK=64, grid=(1,), debug=False).signature.debug


def test_warmup_with_dtypes_in_place_of_arrays():
    @triton.jit
    def k(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)

    from_numpy = k.warmup(np.float16, np.dtype(np.float16), 64, BLOCK=64, grid=(1,))
    from_mlx = k.warmup(mx.float16, dst_ptr=mx.float16, n=64, BLOCK=64, grid=(1,))
    assert from_numpy.key == from_mlx.key and len(k.cache) == 1
    src = np.arange(64, dtype=np.float16)
    dst = np.zeros(64, np.float16)
    k[(1,)](src, dst, 64, BLOCK=64)  # the warmed-up variant serves real arrays
    np.testing.assert_array_equal(dst, src)
    assert len(k.cache) == 1 and k.cache.hits >= 2
    with pytest.raises(triton.LaunchError, match="no fp64"):
        k.warmup(np.float64, np.float64, 64, BLOCK=64, grid=(1,))


@pytest.mark.parametrize(
    "dtype",
    [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
     np.float16, np.float32],
)
def test_every_array_element_type_compiles_and_runs(dtype):
    rng = np.random.default_rng(0)
    src = (rng.random(50) * 100).astype(dtype)
    dst = np.zeros(50, dtype)
    copy_kernel[(2,)](src, dst, 50, BLOCK=32)
    np.testing.assert_array_equal(dst, src)


@pytest.mark.parametrize("n", [2**31 + 5, 2**63 + 7])
def test_wide_integer_scalars_compile_and_run(n):
    @triton.jit
    def store_scalar(out_ptr, value):
        tl.store(out_ptr, value)

    dtype = np.int64 if n < 2**63 else np.uint64
    out = np.zeros(1, dtype)
    store_scalar[(1,)](out, n)
    assert int(out[0]) == n
