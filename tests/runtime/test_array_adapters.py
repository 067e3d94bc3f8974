"""The array adapters (`runtime/arrays/`): each kind answers the runtime's questions as its own
library does, and a new kind is one registered adapter, launched on every host backend."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import mlx.core as mx
import numpy as np
import pytest
from runtime_kernels import axpy_kernel

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.language import types as tlt
from triton_metal.runtime import arrays
from triton_metal.runtime.arrays.numpy import NUMPY, ReinterpretedArray
from triton_metal.runtime.specialization import PointerArg, specialize_arg


def _numpy_extent(a: np.ndarray) -> int:
    """The elements from the first to the last one the view reaches, from NumPy's own
    `byte_bounds` (independent of the adapter's stride arithmetic)."""
    low, high = np.lib.array_utils.byte_bounds(a)
    return (high - low) // a.itemsize


def test_numpy_views_report_their_span_strides_and_address() -> None:
    base = np.arange(200, dtype=np.float32).reshape(10, 20)
    for view in (base, base[::2, 3:17:3], base[1:, :5].T, base[4:5, 7:8]):
        adapter = arrays.adapter_of(view)
        assert adapter is NUMPY and adapter.written_in_place
        assert arrays.element_extent(view) == _numpy_extent(view)
        assert adapter.element_strides(view) == [s // 4 for s in view.strides]
        assert adapter.base_address(view) == view.ctypes.data
        flat = arrays.host_buffer(view, "x")
        assert np.shares_memory(flat, view) and flat.size == _numpy_extent(view)
        flat[0] = -1.0  # the buffer starts at the view's first element
        assert view.flat[0] == -1.0


def test_reinterpreted_arrays_are_their_base_codes() -> None:
    words = np.arange(12, dtype=np.uint16).reshape(3, 4)[:, ::2]
    value = triton.reinterpret(words, tl.bfloat16)
    assert isinstance(value, ReinterpretedArray)
    adapter = arrays.adapter_of(value)
    assert adapter is not None and adapter.name == "reinterpreted"
    assert arrays.element_extent(value) == _numpy_extent(words)
    assert adapter.element_strides(value) == [s // 2 for s in words.strides]
    assert specialize_arg(value, "x").element is tlt.bfloat16
    assert np.shares_memory(arrays.host_buffer(value, "x"), words)


def test_mlx_arrays_are_row_major_and_rebound() -> None:
    value = mx.zeros((3, 5, 2), dtype=mx.bfloat16)
    adapter = arrays.adapter_of(value)
    assert adapter is not None and adapter.name == "mlx" and not adapter.written_in_place
    assert arrays.element_extent(value) == 30
    row_major = np.zeros((3, 5, 2), np.float32)
    assert adapter.element_strides(value) == [s // 4 for s in row_major.strides]
    assert specialize_arg(value, "x") == PointerArg(tlt.bfloat16, True)
    assert arrays.metal_values((value, 3), ("x", "n"))[0] is value


def test_torch_tensors_answer_as_torch_does() -> None:
    torch = pytest.importorskip("torch")
    t = torch.arange(60, dtype=torch.float32).reshape(6, 10)[1::2, 2:9:3]
    adapter = arrays.adapter_of(t)
    assert adapter is not None and adapter.name == "torch"
    assert adapter.element_strides(t) == list(t.stride())
    assert adapter.base_address(t) == t.data_ptr()
    as_numpy = t.numpy()
    assert arrays.element_extent(t) == _numpy_extent(as_numpy)
    flat = arrays.host_buffer(t, "t")
    assert np.shares_memory(flat, as_numpy)
    assert arrays.adapter_of(torch.float16) is None  # a dtype is no array
    assert adapter.element_of_dtype(torch.bfloat16) is tlt.bfloat16


def test_torch_imported_before_the_package() -> None:
    pytest.importorskip("torch")
    script = (
        "import torch\n"
        "from triton_metal.runtime import arrays\n"
        "assert arrays.adapter_of(torch.zeros(3)).name == 'torch'\n"
        "assert arrays.BY_TYPE[torch.Tensor].name == 'torch'\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_values_of_no_kind() -> None:
    for value in (3, 2.5, None, "s", [1.0, 2.0], np.float32(1.0), mx.float32):
        assert arrays.adapter_of(value) is None
        assert arrays.element_extent(value) == 0
    with pytest.raises(triton.LaunchError, match="argument 'p' is a list"):
        arrays.host_buffer([1.0], "p")


class Boxed:
    """An array type of no library: a NumPy array in a box (what a new kind looks like)."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array


class BoxedAdapter:
    """The whole of a new kind: delegate to the NumPy adapter through the box."""

    name = "boxed"
    written_in_place = True

    def exact_type(self) -> type:
        return Boxed

    def claims(self, value: object) -> bool:
        return isinstance(value, Boxed)

    def __getattr__(self, method: str) -> Any:
        numpy_method = getattr(NUMPY, method)
        if not callable(numpy_method):
            raise AttributeError(method)
        return lambda value, *rest: numpy_method(value.array if isinstance(value, Boxed) else value, *rest)


@pytest.fixture
def boxed_kind() -> Any:
    adapter = arrays.register(BoxedAdapter())
    yield adapter
    arrays.KINDS.remove(adapter)
    for cls in [c for c, a in arrays.BY_TYPE.items() if a is adapter]:
        del arrays.BY_TYPE[cls]


@pytest.mark.parametrize("backend", ["emulator", "interpreter"])
def test_a_new_kind_is_one_registered_adapter(
    boxed_kind: Any, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITON_METAL_BACKEND", backend)
    rng = np.random.default_rng(7)
    x = rng.standard_normal(100).astype(np.float32)
    y = rng.standard_normal(100).astype(np.float32)
    out = np.zeros(100, np.float32)
    assert specialize_arg(Boxed(x), "x") == specialize_arg(x, "x")
    axpy_kernel[(4,)](Boxed(x), y, Boxed(out), 2.0, 100, BLOCK=32)
    np.testing.assert_allclose(out, (2.0 * x.astype(np.float64) + y).astype(np.float32), rtol=1e-6)


def test_dumps_import_no_backend_for_chip_facts() -> None:
    """The chip facts live below the runtime (`triton_metal/chip.py`)."""
    source = Path(arrays.__file__).resolve().parents[1] / "dumps.py"
    imported = [
        node.module or "" for node in ast.walk(ast.parse(source.read_text()))
        if isinstance(node, ast.ImportFrom)
    ]
    assert "chip" in imported
    assert not [m for m in imported if m.startswith("backends.metal") or m == "backends"]
