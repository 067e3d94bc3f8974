"""torch tensors as kernel arguments: CPU tensors zero-copy on the emulator and the interpreter,
the torch_mps backend through the recording stand-in, PyTorch's binding rules, bad input."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")  # the `torch` extra; CI installs it

import triton_metal as triton  # noqa: E402
import triton_metal.language as tl  # noqa: E402
from triton_metal.backends.torch_mps import build_source  # noqa: E402
from triton_metal.backends.torch_mps.standin import RecordingCompiler, parse_kernels  # noqa: E402
from triton_metal.errors import LaunchError  # noqa: E402
from triton_metal.runtime.backend import TORCH_MPS, backend_for_arrays  # noqa: E402
from triton_metal.runtime.specialization import PointerArg  # noqa: E402


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, stride, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * stride, mask=mask)
    tl.store(y_ptr + offs, x * alpha + 1, mask=mask)


@triton.jit
def count_kernel(x_ptr, counter_ptr, total_ptr, n, big, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.atomic_add(counter_ptr, 1)
    tl.atomic_add(total_ptr, tl.sum(x, axis=0))
    tl.store(x_ptr + offs, x + (big == 18446744073709551615).to(tl.int32), mask=mask)


@pytest.fixture(params=["emulator", "interpret", "torch_mps"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    for name in ("TRITON_METAL_INTERPRET", "TRITON_METAL_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    if request.param == "interpret":
        monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
        yield request.param
        return
    monkeypatch.setenv("TRITON_METAL_BACKEND", request.param)
    if request.param == "emulator":
        yield request.param
        return
    with RecordingCompiler().installed() as recorder:
        yield recorder


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.uint16])
def test_strided_offset_views_in_place(backend, dtype):
    base = torch.arange(400).to(dtype)
    x = base[7::3]  # storage offset and a stride: the pointer is x.data_ptr()
    out_storage = torch.full((x.numel() + 6,), 5).to(dtype)
    y = out_storage[3:-3]
    scale_kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), x.stride(0), 2.0, BLOCK=64)
    expected = (x.to(torch.float32) * 2 + 1).to(dtype)
    assert torch.equal(y, expected)
    assert torch.equal(out_storage[:3], torch.full((3,), 5).to(dtype))  # nothing outside the view
    assert torch.equal(out_storage[-3:], torch.full((3,), 5).to(dtype))
    assert torch.equal(base, torch.arange(400).to(dtype))  # the input is untouched


def test_atomics_and_u64_scalar(backend):
    x = torch.arange(300, dtype=torch.int32)
    counter = torch.zeros(1, dtype=torch.int32)
    total = torch.full((1,), 10, dtype=torch.int32)
    count_kernel[(3,)](x, counter, total, 300, 2**64 - 1, BLOCK=128)
    assert counter.item() == 3  # a scalar atomic runs once per program
    assert total.item() == 10 + sum(range(300))
    assert torch.equal(x, torch.arange(1, 301, dtype=torch.int32))


def test_tensor_requiring_grad_and_2d_strides(backend):
    w = torch.randn(6, 40, requires_grad=True)
    col = w[:, 3]  # stride 40
    out = torch.zeros(6)
    scale_kernel[(1,)](col, out, 6, col.stride(0), 0.5, BLOCK=32)
    torch.testing.assert_close(out, col.detach() * 0.5 + 1)


def test_torch_mps_source_follows_pytorchs_binding_rules():
    x = torch.zeros(8)
    key = scale_kernel.specialization(x, x, 8, 3, 2.0, BLOCK=64)  # stride 1 would be a constexpr
    from triton_metal.runtime.compiler import compile_msl

    msl = compile_msl(scale_kernel, key).msl
    src = build_source(msl, scale_kernel.arg_names)
    params = parse_kernels(src.text)[src.function]
    buffers = [p for p in params if p.attribute == "buffer"]
    # one [[buffer(i)]] per non-constexpr argument, in argument order
    assert [p.index for p in buffers] == [0, 1, 2, 3, 4]
    # tensors: device T*; Python ints: 64-bit long; Python floats: 32-bit float (Module.cpp)
    assert [p.ctype for p in buffers] == [
        "device float*", "device float*", "constant long&", "constant long&", "constant float&"
    ]
    assert "kernel void " + src.function + "(" in src.text
    assert src.text.startswith("#include <metal_stdlib>\nusing namespace metal;\n")
    assert "[[thread_position_in_grid]]" in src.text


def test_stand_in_binds_like_pytorch_and_refuses_drift():
    rec = RecordingCompiler()
    lib = rec(
        "#include <metal_stdlib>\nusing namespace metal;\n"
        "kernel void fill(device float* out [[buffer(0)]], constant float& v [[buffer(1)]],\n"
        "                 constant long& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {\n"
        "  if (long(i) < n) out[i] = v;\n}\n"
    )
    base = torch.zeros(20)
    lib.fill(base[4:], 2.5, 10, threads=16, group_size=8)  # bound at the storage offset
    assert torch.equal(base, torch.tensor([0.0] * 4 + [2.5] * 10 + [0.0] * 6))
    assert rec.calls[-1].threads == (16,) and rec.calls[-1].group_size == (8,)
    with pytest.raises(TypeError, match="PyTorch binds 3 as 'constant long&'"):
        lib.fill(base, 3, 10)  # an int where the kernel declares a float
    with pytest.raises(TypeError, match="declared 'device float\\*'"):
        lib.fill(torch.zeros(4, dtype=torch.int32), 1.0, 4)
    with pytest.raises(AttributeError):
        lib.missing  # noqa: B018


def test_backend_choice_by_arrays():
    mps = PointerArg(tl.float32, True, True)
    host = PointerArg(tl.float32, True)
    assert backend_for_arrays("emulator", (host,)) == "emulator"
    assert backend_for_arrays("metal", (host, mps)) == TORCH_MPS
    assert backend_for_arrays("emulator", (mps,)) == TORCH_MPS
    with pytest.raises(LaunchError, match="interpreter"):
        backend_for_arrays("interpreter", (mps,))


def test_mlx_array_in_a_torch_mps_launch_is_refused(monkeypatch):
    mx = pytest.importorskip("mlx.core")
    monkeypatch.setenv("TRITON_METAL_BACKEND", "torch_mps")
    y = torch.zeros(8)
    with RecordingCompiler().installed() as rec:
        with pytest.raises(LaunchError, match="MLX array"):
            scale_kernel[(1,)](mx.ones(8), y, 8, 1, 2.0, BLOCK=64)
    assert not rec.calls and torch.equal(y, torch.zeros(8))


class _OnDevice(torch.Tensor):
    """A CPU tensor that reports another device (CUDA cannot be made on this machine)."""

    fake_device = "cuda"

    @property
    def device(self):  # type: ignore[override]
        return torch.device(self.fake_device)

    @property
    def is_cpu(self):  # type: ignore[override]
        return self.fake_device == "cpu"

    @property
    def is_mps(self):  # type: ignore[override]
        return self.fake_device == "mps"


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: torch.zeros(8, dtype=torch.float64), "float64"),
        (lambda: torch.zeros(8).to_sparse(), "sparse"),
        (lambda: torch.quantize_per_tensor(torch.zeros(8), 0.1, 0, torch.qint8), "quantized"),
        (lambda: torch.zeros(8).as_subclass(_OnDevice), "device 'cuda'"),
        (lambda: torch.zeros(8, dtype=torch.complex64), "complex64"),
        (lambda: torch.zeros(8, device="meta"), "device 'meta'"),
    ],
)
def test_bad_tensors_refused_before_anything_runs(backend, make, message):
    out = torch.full((8,), 7.0)
    with pytest.raises(LaunchError, match=message):
        scale_kernel[(1,)](make(), out, 8, 1, 2.0, BLOCK=64)
    assert torch.equal(out, torch.full((8,), 7.0))
    if isinstance(backend, RecordingCompiler):
        assert not backend.calls


def test_mixed_devices_refused_before_anything_runs(monkeypatch):
    monkeypatch.setenv("TRITON_METAL_BACKEND", "torch_mps")
    out = torch.full((8,), 7.0)
    with RecordingCompiler().installed() as rec:
        with pytest.raises(LaunchError, match="different devices"):
            scale_kernel[(1,)](torch.zeros(8).as_subclass(_Mps), out, 8, 1, 2.0, BLOCK=64)
    assert not rec.calls and torch.equal(out, torch.full((8,), 7.0))


class _Mps(_OnDevice):
    fake_device = "mps"


def test_importing_and_numpy_launches_never_import_torch(tmp_path):
    code = (
        "import sys, numpy as np\n"
        "import triton_metal as triton, triton_metal.language as tl\n"
        "@triton.jit\n"
        "def k(x_ptr, n, B: tl.constexpr):\n"
        "    o = tl.arange(0, B)\n"
        "    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n) + 1, mask=o < n)\n"
        "x = np.zeros(8, np.float32)\n"
        "k[(1,)](x, 8, B=8)\n"
        "assert x.sum() == 8\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    script = tmp_path / "no_torch.py"  # a file: kernels need their source
    script.write_text(code)
    subprocess.run([sys.executable, str(script)], check=True, timeout=120)


def test_triton_tutorial_kernels_with_torch_cpu_tensors(backend):
    from examples import vector_add

    x = torch.randn(3000)
    y = torch.randn(3000)
    out = torch.empty_like(x)
    vector_add.add_kernel[(triton.cdiv(3000, 1024),)](x, y, out, 3000, BLOCK_SIZE=1024)
    assert torch.equal(out, x + y)


def test_warmup_with_torch_dtypes(monkeypatch):
    monkeypatch.setenv("TRITON_METAL_BACKEND", "emulator")
    compiled = scale_kernel.warmup(torch.float16, torch.float16, 8, 3, 2.0, BLOCK=64, grid=(1,))
    assert compiled.key.args[:2] == (PointerArg(tl.float16, True), PointerArg(tl.float16, True))
    with pytest.raises(LaunchError, match="float64"):
        scale_kernel.warmup(torch.float64, torch.float32, 8, 3, 2.0, BLOCK=64, grid=(1,))


def test_read_only_numpy_arrays_on_the_stand_in(monkeypatch):
    monkeypatch.setenv("TRITON_METAL_BACKEND", "torch_mps")
    x = np.arange(8, dtype=np.float32)
    x.flags.writeable = False
    y = np.zeros(8, np.float32)
    with RecordingCompiler().installed():
        scale_kernel[(1,)](x, y, 8, 1, 2.0, BLOCK=64)  # read only: fine
        np.testing.assert_array_equal(y, x * 2 + 1)
        y.flags.writeable = False
        with pytest.raises(LaunchError, match="read-only"):
            scale_kernel[(1,)](x, y, 8, 1, 3.0, BLOCK=64)
    np.testing.assert_array_equal(y, x * 2 + 1)


@triton.autotune(
    configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})],
    key=["n"], restore_value=["acc_ptr"],
)
@triton.jit
def accumulate_kernel(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(acc_ptr + offs, tl.load(acc_ptr + offs, mask=mask) + tl.load(x_ptr + offs, mask=mask), mask=mask)


def test_autotune_restores_torch_tensors(monkeypatch):
    monkeypatch.setenv("TRITON_METAL_BACKEND", "emulator")
    monkeypatch.setenv("TRITON_METAL_AUTOTUNE", "measure")  # the benchmark runs are the point
    x = torch.arange(100, dtype=torch.float32)
    acc = torch.ones(100)
    accumulate_kernel[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, acc, 100)
    assert torch.equal(acc, x + 1)  # benchmarking runs left no trace: restore_value on a tensor
    assert accumulate_kernel.tuning_key({"x_ptr": x, "acc_ptr": acc, "n": 100})[-2:] == ("float32", "float32")


@triton.jit
def half_add_kernel(acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(acc_ptr + offs, tl.full((BLOCK,), 1.0, tl.float16), mask=offs < n)


def test_half_atomics_on_torch_mps_need_whole_words(monkeypatch: pytest.MonkeyPatch):
    """PyTorch binds the tensor itself, so a 16-bit atomic's 32-bit word may not reach past it."""
    monkeypatch.setenv("TRITON_METAL_BACKEND", "torch_mps")
    with RecordingCompiler().installed():
        even = torch.zeros(6, dtype=torch.float16)
        half_add_kernel[(1,)](even, 6, BLOCK=8)
        assert torch.equal(even, torch.ones(6, dtype=torch.float16))
        odd = torch.zeros(5, dtype=torch.float16)
        with pytest.raises(LaunchError, match="even number of elements"):
            half_add_kernel[(1,)](odd, 5, BLOCK=8)
        assert torch.equal(odd, torch.zeros(5, dtype=torch.float16))  # refused before running
