"""Metal's limit of 31 buffers per kernel: one check on the compiled variant refuses the same
kernels, with the same error (the count, what it is made of, the kernel and a hint), on the
emulator, in the interpreter, through the Metal driver (its recording MLX stand-in) and through
the torch_mps path (its recording `compile_shader` stand-in), before anything runs."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import mlx.core as mx
import numpy as np
import pytest

from reliability_support import on_backend
from triton_metal.backends.metal import driver
from triton_metal.errors import BufferLimitError, LaunchError, OutOfResources
from triton_metal.runtime import backend as runtime_backend

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from fake_mlx import FakeMx  # noqa: E402


def _kernel(tmp_path: Path, name: str, arrays: int, scalars: int = 0, assert_: bool = False) -> Callable:
    """A kernel that reads and writes `arrays` arrays (two buffers each) at the elements below
    its first scalar `s0`, adds its other scalars, and asserts `s0 > 0` when `assert_`."""
    params = [f"p{i}" for i in range(arrays)] + [f"s{j}" for j in range(scalars)]
    added = "".join(f" + s{j}" for j in range(1, scalars))
    mask = ", mask=offs < s0" if scalars else ""
    body = "    offs = tl.arange(0, 8)\n"
    if assert_:
        body += "    tl.device_assert(s0 > 0)\n"
    body += "".join(f"    tl.store(p{i} + offs, tl.load(p{i} + offs{mask}){added} + 1{mask})\n"
                    for i in range(arrays))
    path = tmp_path / f"{name}.py"
    path.write_text("import triton_metal as triton\nimport triton_metal.language as tl\n\n\n"
                    f"@triton.jit\ndef {name}({', '.join(params)}):\n{body}")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return getattr(module, name)


@pytest.fixture
def fake_metal(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMx]:
    stand_in = FakeMx()
    monkeypatch.setattr(runtime_backend, "_metal", True)
    monkeypatch.setattr(driver, "_mlx", lambda: stand_in)
    yield stand_in


def _refusal(run: Callable[[], object]) -> str:
    with pytest.raises(BufferLimitError) as info:
        run()
    assert isinstance(info.value, LaunchError) and isinstance(info.value, OutOfResources)
    return str(info.value)


def _numpy(arrays: int) -> list[np.ndarray]:
    return [np.full(8, i, np.float32) for i in range(arrays)]


def test_32_buffers_refused_alike_everywhere(tmp_path: Path, fake_metal: FakeMx) -> None:
    torch = pytest.importorskip("torch")
    from triton_metal.backends.torch_mps.standin import RecordingCompiler

    kernel = _kernel(tmp_path, "sixteen_pairs", 16)
    texts: dict[str, str] = {}
    for name in ("emulator", "interpreter"):
        arrays = _numpy(16)
        with on_backend(name):
            texts[name] = _refusal(lambda: kernel[(1,)](*arrays))
        assert all((a == i).all() for i, a in enumerate(arrays))
    with on_backend("metal"):
        mlx_arrays = [mx.full((8,), i, mx.float32) for i in range(16)]
        texts["metal"] = _refusal(lambda: kernel[(1,)](*mlx_arrays))
        assert all((np.array(a) == i).all() for i, a in enumerate(mlx_arrays))
    assert not fake_metal.fast.factory_calls and not fake_metal.fast.launches
    with on_backend("torch_mps"), RecordingCompiler().installed() as recorder:
        tensors = [torch.full((8,), float(i)) for i in range(16)]
        texts["torch_mps"] = _refusal(lambda: kernel[(1,)](*tensors))
        assert all(bool((t == i).all()) for i, t in enumerate(tensors))
    assert not recorder.sources and not recorder.calls
    assert len(set(texts.values())) == 1, texts
    text = texts["emulator"]
    line = f"{tmp_path / 'sixteen_pairs.py'}:5"  # the decorated definition
    assert text.startswith(f"kernel 'sixteen_pairs' ({line}) takes 32 buffers (16 arrays read, "
                           "16 arrays written), more than Metal's limit of 31 buffers per kernel"), text
    assert "\nhint: pass fewer arrays and scalars" in text, text


def test_31_buffers_run_everywhere(tmp_path: Path, fake_metal: FakeMx) -> None:
    kernel = _kernel(tmp_path, "fifteen_pairs", 15, scalars=1)  # 30 array buffers and a scalar
    for name in ("emulator", "interpreter"):
        arrays = _numpy(15)
        with on_backend(name):
            kernel[(1,)](*arrays, 8)
        assert all((a == i + 1).all() for i, a in enumerate(arrays))
    with on_backend("metal"):
        mlx_arrays = [mx.full((8,), i, mx.float32) for i in range(15)]
        kernel[(1,)](*mlx_arrays, 8)  # every store proven to cover its array: no written masks
        assert all((np.array(a) == i + 1).all() for i, a in enumerate(mlx_arrays))
    assert len(fake_metal.fast.launches) == 1


def test_each_scalar_is_a_buffer(tmp_path: Path) -> None:
    kernel = _kernel(tmp_path, "pairs_and_scalars", 14, scalars=4)  # 28 + 4
    for name in ("emulator", "interpreter"):
        arrays = _numpy(14)
        with on_backend(name):
            text = _refusal(lambda: kernel[(1,)](*arrays, 8, 5, 6, 7))  # (1 would be a constexpr)
        assert "takes 32 buffers (14 arrays read, 14 arrays written, 4 scalars)" in text, text
        assert all((a == i).all() for i, a in enumerate(arrays))


def test_the_grid_input_of_a_spread_launch_counts(tmp_path: Path) -> None:
    """Past 2**31 threads in x the programs are spread, and the kernel reads its grid from one
    more input: 31 buffers become 32. Refused before any program runs, in the interpreter too."""
    kernel = _kernel(tmp_path, "spread_pairs", 15, scalars=1)
    huge = (2**31 // 128 + 1,)
    for name in ("emulator", "interpreter"):
        arrays = _numpy(15)
        with on_backend(name):
            text = _refusal(lambda: kernel[huge](*arrays, 8))
        assert "takes 32 buffers (15 arrays read, 15 arrays written, 1 scalar, 1 grid input of a spread launch)" in text
        assert all((a == i).all() for i, a in enumerate(arrays))


def test_the_device_assert_status_counts_in_debug_builds(tmp_path: Path) -> None:
    kernel = _kernel(tmp_path, "asserting_pairs", 15, scalars=1, assert_=True)
    for name in ("emulator", "interpreter"):
        arrays = _numpy(15)
        with on_backend(name):
            kernel[(1,)](*arrays, 8)  # no asserts compiled in: 31 buffers
            text = _refusal(lambda: kernel[(1,)](*arrays, 8, debug=True))
        assert "takes 32 buffers (15 arrays read, 15 arrays written, 1 scalar, 1 device-assert status)" in text
        assert all((a == i + 1).all() for i, a in enumerate(arrays))


def test_written_masks_refuse_only_the_launches_that_need_them(tmp_path: Path, fake_metal: FakeMx) -> None:
    """A launch whose stores are not proven to cover an MLX output runs the twin that also writes
    a mask per such output: past 31 buffers only then, so the proven launches still run."""
    kernel = _kernel(tmp_path, "masked_pairs", 15, scalars=1)
    with on_backend("metal"):
        arrays = [mx.full((8,), i, mx.float32) for i in range(15)]
        kernel[(1,)](*arrays, 8)
        text = _refusal(lambda: kernel[(1,)](*arrays, 4))  # half of each array: 15 masks
        assert all((np.array(a) == i + 1).all() for i, a in enumerate(arrays))
    assert "takes 46 buffers (15 arrays read, 15 arrays written, 1 scalar, 15 written masks)" in text
    assert ("hint: the kernel itself takes 31 buffers; this launch of MLX arrays needs its twin, with 15 "
            "more for 'p0', 'p1'") in text, text
    assert len(fake_metal.fast.launches) == 1
    for name in ("emulator", "interpreter"):  # NumPy arrays are written in place: no masks
        numpy_arrays = _numpy(15)
        with on_backend(name):
            kernel[(1,)](*numpy_arrays, 4)
        assert all((a[:4] == i + 1).all() and (a[4:] == i).all() for i, a in enumerate(numpy_arrays))


def test_arrays_the_kernel_never_touches_take_no_buffer(tmp_path: Path, fake_metal: FakeMx) -> None:
    """40 array parameters, two of them used: 3 buffers on every path, torch_mps's included
    (which binds one buffer per parameter it passes)."""
    torch = pytest.importorskip("torch")
    from triton_metal.backends.torch_mps.standin import RecordingCompiler

    path = tmp_path / "mostly_unused.py"
    params = ", ".join(f"p{i}" for i in range(40))
    path.write_text("import triton_metal as triton\nimport triton_metal.language as tl\n\n\n"
                    f"@triton.jit\ndef mostly_unused({params}):\n"
                    "    offs = tl.arange(0, 8)\n"
                    "    tl.store(p39 + offs, tl.load(p0 + offs) + tl.load(p39 + offs))\n")
    spec = importlib.util.spec_from_file_location("mostly_unused", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = module.mostly_unused
    for name in ("emulator", "interpreter"):
        arrays = _numpy(40)
        with on_backend(name):
            kernel[(1,)](*arrays)
        assert (arrays[39] == 39).all() and all((a == i).all() for i, a in enumerate(arrays[:39]))
    with on_backend("metal"):
        mlx_arrays = [mx.full((8,), i, mx.float32) for i in range(40)]
        kernel[(1,)](*mlx_arrays)
        assert (np.array(mlx_arrays[39]) == 39).all()
    assert len(fake_metal.fast.factory_calls[0]["input_names"]) + len(fake_metal.fast.factory_calls[0]["output_names"]) == 3
    with on_backend("torch_mps"), RecordingCompiler().installed() as recorder:
        tensors = [torch.full((8,), float(i)) for i in range(40)]
        kernel[(1,)](*tensors)
        assert bool((tensors[39] == 39).all())
    assert len(recorder.calls) == 1 and recorder.sources[0].count("[[buffer(") == 2


def test_the_old_contents_of_a_counter_count_on_the_mlx_path(tmp_path: Path, fake_metal: FakeMx) -> None:
    """A counter whose old values the kernel reads makes the arrays it loads and stores read what
    the stores update: the kernel writes them through its outputs only (17 buffers), and on the
    MLX path those outputs start as the arrays, whose old contents its twin reads as 15 more
    inputs (32: refused). NumPy arrays, written in place, need no twin."""
    path = tmp_path / "counting_pairs.py"
    params = ", ".join([*(f"p{i}" for i in range(14)), "count", "s0", "s1"])
    body = "    offs = tl.arange(0, 8)\n    ticket = tl.atomic_add(count, 1)\n"
    body += "".join(f"    tl.store(p{i} + offs, tl.load(p{i} + offs, mask=offs < s0) + s1 + ticket, mask=offs < s0)\n"
                    for i in range(14))
    path.write_text("import triton_metal as triton\nimport triton_metal.language as tl\n\n\n"
                    f"@triton.jit\ndef counting_pairs({params}):\n{body}")
    spec = importlib.util.spec_from_file_location("counting_pairs", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = module.counting_pairs
    with on_backend("metal"):
        arrays = [mx.zeros((8,), mx.float32) for _ in range(14)]
        count = mx.array([4, 9], mx.int32)
        text = _refusal(lambda: kernel[(1,)](*arrays, count, 8, 3))
        assert np.array(count).tolist() == [4, 9] and all((np.array(a) == 0).all() for a in arrays)
    assert not fake_metal.fast.launches
    assert "takes 32 buffers (15 arrays written, 2 scalars, 15 arrays' old contents)" in text, text
    assert ("hint: the kernel itself takes 17 buffers; this launch of MLX arrays needs its twin, with 15 more "
            "for 'p0', 'p1', ") in text, text
    for name in ("emulator", "interpreter"):
        numpy_arrays = _numpy(14)
        numpy_count = np.array([4, 9], np.int32)
        with on_backend(name):
            kernel[(1,)](*numpy_arrays, numpy_count, 8, 3)
        assert numpy_count.tolist() == [5, 9] and (numpy_arrays[0] == 0 + 3 + 4).all()


def test_keys_give_way_to_the_bitwise_difference_near_the_limit(tmp_path: Path, fake_metal: FakeMx) -> None:
    """Arrays loaded and stored by programs that take tickets from a counter are kept relative on
    the MLX path, each with its old contents as one more input. Held with the key, each also
    takes an output of escape bytes: for 12 arrays (with the counter, 13 buffers and 13 old
    contents) that would make 38, so the launch holds them as bitwise differences instead, and
    runs; 6 arrays take the key (7 + 7 + 6 = 20)."""
    for arrays, keyed in ((12, 0), (6, 6)):
        name = f"ticketed_{arrays}"
        params = ", ".join([*(f"p{i}" for i in range(arrays)), "count"])
        body = "    offs = tl.arange(0, 8)\n    ticket = tl.atomic_add(count, 1)\n"
        body += "".join(f"    tl.store(p{i} + offs, tl.load(p{i} + offs) + ticket + 1)\n" for i in range(arrays))
        path = tmp_path / f"{name}.py"
        path.write_text("import triton_metal as triton\nimport triton_metal.language as tl\n\n\n"
                        f"@triton.jit\ndef {name}({params}):\n{body}")
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        with on_backend("metal"):
            xs = [mx.full((8,), float(i)) for i in range(arrays)]
            count = mx.array([5], mx.int32)
            getattr(module, name)[(1,)](*xs, count)
            assert all(np.array(x).tolist() == [i + 6.0] * 8 for i, x in enumerate(xs))
            assert np.array(count).tolist() == [6]
        outputs = fake_metal.fast.factory_calls[-1]["output_names"]
        assert len(outputs) == arrays + 1 + keyed and sum(o.endswith("_esc") for o in outputs) == keyed
