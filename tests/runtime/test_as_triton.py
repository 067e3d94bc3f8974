"""The import opt-in: `import triton` resolving to triton_metal, the host API ported code uses,
the environment switch and the script runner."""

from __future__ import annotations

import os
import sys

import pytest

import triton_metal

triton_metal.install_as_triton()


def test_import_opt_in_surface():
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice

    assert triton.__version__.startswith("3.")
    assert tl is triton_metal.language and triton.jit is triton_metal.jit
    assert triton.Config is triton_metal.Config and libdevice.tanh is not None
    import triton.language.standard as standard

    assert standard.sum is tl.sum
    from triton.runtime import driver

    assert driver.active.get_current_device() == 0
    with pytest.raises(NotImplementedError, match="no Apple GPU counterpart"):
        driver.active.get_device_interface()
    from triton.compiler.errors import CompilationError
    from triton.runtime import Autotuner, Config, Heuristics
    from triton.runtime.errors import OutOfResources

    assert CompilationError is triton_metal.CompilationError and Config is triton.Config
    assert OutOfResources is triton_metal.OutOfResources and Autotuner and Heuristics
    with pytest.raises(ModuleNotFoundError):
        import triton.no_such_module  # noqa: F401


def test_installing_again_keeps_the_installed_module():
    import triton

    assert triton_metal.install_as_triton() is triton
    assert triton.__file__ == triton_metal.__file__ and triton.jit is triton_metal.jit
    # importlib's own check of an imported module (torch's lazy CUDA init makes it)
    import importlib.util

    assert importlib.util.find_spec("triton") is triton.__spec__ and triton.__spec__.name == "triton"


def test_triton_test_helpers_and_allocator_under_the_swap():
    import triton
    from triton._internal_testing import default_alloc_fn, is_cuda
    from triton.runtime._allocation import NullAllocator
    from triton.tools.mxfp import MXFP4Tensor

    assert not is_cuda() and MXFP4Tensor is not None
    assert triton.compiler.errors.CompilationError is triton_metal.CompilationError
    triton.set_allocator(default_alloc_fn)
    from triton_metal.runtime._allocation import allocator

    assert allocator() is default_alloc_fn
    triton.set_allocator(NullAllocator())
    with pytest.raises(RuntimeError, match="no allocator was set"):
        allocator()(16, 16, None)


def test_active_torch_device_is_where_tensors_run_in_place():
    torch = pytest.importorskip("torch")
    from triton.runtime import driver

    device = driver.active.get_active_torch_device()
    assert isinstance(device, torch.device)
    assert device.type == ("mps" if torch.backends.mps.is_available() else "cpu")
    assert torch.zeros(2, device=device).device.type == device.type


def test_cpu_device_gets_the_set_stream_device_agnostic_code_calls():
    """Tutorial 02's benchmark: `getattr(torch, DEVICE.type).set_stream(stream)` on the CPU."""
    torch = pytest.importorskip("torch")
    from triton.runtime import driver

    if driver.active.get_active_torch_device().type != "cpu":
        pytest.skip("the active device is MPS")
    default = torch.cpu.current_stream()
    stream = torch.cpu.Stream()
    try:
        torch.cpu.set_stream(stream)
        assert torch.cpu.current_stream() is stream
        torch.cpu.set_stream(None)  # None selects nothing, as in torch.cuda.set_stream
        assert torch.cpu.current_stream() is stream
    finally:
        torch.cpu.set_stream(default)
    assert torch.cpu.current_stream() is default


def test_perf_report_tables(tmp_path, capsys):
    import triton

    calls = []

    @triton.testing.perf_report(triton.testing.Benchmark(
        x_names=["N"], x_vals=[128, 256], line_arg="provider", line_vals=["a", "b"],
        line_names=["A", "B"], plot_name="demo", args={"scale": 2},
    ))
    def bench(N, provider, scale):
        calls.append((N, provider))
        return N * scale + (provider == "b"), 0.0, 0.0

    header, rows = bench.run(print_data=True, save_path=str(tmp_path), return_df=True)
    assert header == ["N", "A", "B"] and rows == [[128, 256, 257], [256, 512, 513]]
    assert calls == [(128, "a"), (128, "b"), (256, "a"), (256, "b")]
    assert (tmp_path / "demo.csv").read_text().splitlines()[1] == "128,256,257"
    assert "demo:" in capsys.readouterr().out


def test_environment_opt_in_and_script_runner(tmp_path):
    import os
    import subprocess

    env = {**os.environ, "TRITON_METAL_AS_TRITON": "1"}
    probe = "import triton_metal, triton, triton.language as tl; print(triton.__version__, tl.sum is triton_metal.language.sum)"
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    version, same = out.stdout.split()
    assert version.startswith("3.") and same == "True"
    script = tmp_path / "uses_triton.py"
    script.write_text("import sys, triton\nprint(triton.__version__, sys.argv[1:])\n")
    env.pop("TRITON_METAL_AS_TRITON")
    out = subprocess.run([sys.executable, "-W", "default", "-m", "triton_metal.as_triton", str(script), "a"],
                         env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip().endswith("['a']") and out.stdout.startswith("3.")
    assert "Warning" not in out.stderr  # runpy's "found in sys.modules" warning included
    usage = subprocess.run([sys.executable, "-W", "default", "-m", "triton_metal.as_triton", "--help"],
                           env=env, capture_output=True, text=True)
    assert usage.returncode == 0 and usage.stdout.startswith("usage: python -m triton_metal.as_triton")
    assert usage.stderr == ""
    bare = subprocess.run([sys.executable, "-m", "triton_metal.as_triton"], env=env, capture_output=True, text=True)
    assert bare.returncode == 2 and "usage:" in bare.stderr


def test_modules_that_torch_inductor_imports_from_triton():
    """PyTorch treats an importable `triton` as Triton: `torch.compiler.disable` (Liger-Kernel's
    ops use it) imports torch._inductor, which imports these at module level."""
    import triton
    import triton.backends.compiler
    import triton.compiler.compiler
    from triton.compiler import CompiledKernel
    from triton.language import core
    from triton.runtime.jit import JITFunction, KernelInterface

    from triton_metal.runtime.cache import CompiledKernel as Ours

    assert CompiledKernel is Ours and issubclass(JITFunction, KernelInterface)
    import triton_metal.runtime

    # importing the submodule through its alias left the package's `jit` function in place
    assert triton_metal.runtime.jit is triton_metal.jit and callable(triton_metal.runtime.jit)
    assert triton.backends.compiler.GPUTarget("metal", "apple", 32).warp_size == 32
    key = triton.compiler.compiler.triton_key()
    assert key.startswith("triton_metal-") and key == triton.compiler.compiler.triton_key()
    import inspect

    # every builtin answers through triton.language.core, as in Triton (the same objects)
    assert core.view is triton.language.view and core.reshape is triton.language.reshape
    assert "_semantic" in inspect.signature(core.view).parameters and core.CONSTEXPR_0 == 0


def test_torch_inductor_imports_under_the_swap():
    pytest.importorskip("torch")
    import subprocess

    probe = (
        "import triton_metal; triton_metal.install_as_triton()\n"
        "from torch._inductor.runtime import triton_compat as tc\n"
        "from triton_metal.runtime.cache import CompiledKernel\n"
        "print(tc.HAS_TRITON, tc.CompiledKernel is CompiledKernel)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"]


def test_torch_compile_runs_under_the_swap(tmp_path):
    """PyTorch reads Triton's registry of backends (`triton.backends.backends`) to decide whether
    it may generate Triton code: here it is empty, so `torch.compile` compiles as without Triton,
    and a function that launches a kernel still computes what torch computes."""
    pytest.importorskip("torch")
    import subprocess

    probe = (
        "import triton_metal; triton_metal.install_as_triton()\n"
        "import torch, triton, triton.language as tl\n"
        "from torch.utils._triton import has_triton\n"
        "@triton.jit\n"
        "def add(x, y, z, n, BLOCK: tl.constexpr):\n"
        "    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(z + o, tl.load(x + o, mask=o < n) + tl.load(y + o, mask=o < n), mask=o < n)\n"
        "def model(a, b):\n"
        "    c = torch.empty_like(a)\n"
        "    add[(triton.cdiv(a.numel(), 16),)](a * 2, b, c, a.numel(), BLOCK=16)\n"
        "    return c + 1\n"
        "a, b = torch.randn(20), torch.randn(20)\n"
        "got = torch.compile(model, backend='eager')(a, b)\n"
        "print(has_triton(), torch.equal(got, a * 2 + b + 1))\n"
    )
    script = tmp_path / "compiled_model.py"  # a file: the kernel's source must be readable
    script.write_text(probe)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_METAL_")}
    env["TRITON_METAL_CACHE_DIR"] = str(tmp_path / "cache")
    out = subprocess.run([sys.executable, "-W", "ignore", str(script)], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["False", "True"]
