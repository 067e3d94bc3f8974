"""torch tensors as kernel arguments, without importing torch.

torch is optional: nothing here imports it. A value is a tensor when torch is already imported
(`sys.modules`) and the value is an instance of `torch.Tensor`; a process that never imports
torch never pays for the check beyond one dictionary lookup.

As in Triton, a tensor argument is a pointer to its first element: `tensor.data_ptr()`, which
includes the storage offset, and the kernel reaches the other elements through the strides the
caller passes (`x.stride(0)`), counted in elements.

* CPU tensors are seen by the emulator and the interpreter as NumPy views of their own memory
  (`host_view`): nothing is copied and the kernel's stores land in the tensor. bfloat16 travels
  as its 16-bit words (`ReinterpretedArray`), as `reinterpret(numpy_array, tl.bfloat16)` does;
  the float8 dtypes as their 8-bit codes the same way.
* MPS tensors are bound in place by the torch_mps backend (`runtime/launch_torch_mps.py`); the
  device is part of the pointer fact (`PointerArg.mps`), which selects that backend.

`tensor_spec` checks a tensor before anything runs and refuses, naming the parameter: a device
other than CPU or MPS (CUDA, meta, ...), a sparse or other non-strided layout, a quantized,
complex or float64 tensor, and a conjugate or negative view whose memory does not hold the
values it shows.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ...errors import LaunchError
from ...language import types as tlt
from ..facts import MPS_POINTER_FACTS, POINTER_FACTS, ArgumentError, PointerArg
from .base import BY_TYPE, adapter_of, register
from .numpy import ReinterpretedArray

_TORCH_TO_TL_NAMES = {
    "bool": tlt.int1, "int8": tlt.int8, "int16": tlt.int16, "int32": tlt.int32,
    "int64": tlt.int64, "uint8": tlt.uint8, "uint16": tlt.uint16, "uint32": tlt.uint32,
    "uint64": tlt.uint64, "float16": tlt.float16, "bfloat16": tlt.bfloat16,
    "float32": tlt.float32,
    # torch's fp8 dtypes are Triton's (the OCP formats and the FNUZ ones); held as 8-bit codes
    "float8_e4m3fn": tlt.float8e4nv, "float8_e5m2": tlt.float8e5,
    "float8_e4m3fnuz": tlt.float8e4b8, "float8_e5m2fnuz": tlt.float8e5b16,
}

MPS = "mps"
CPU = "cpu"


TENSOR_TYPE: list[type | None] = [None]
"""`torch.Tensor`, once a launch has seen torch imported (for `type(x) is` checks)."""


def tensor_type() -> type | None:
    """`torch.Tensor` when torch is imported, else None (never imports torch)."""
    torch = sys.modules.get("torch")
    cls = getattr(torch, "Tensor", None) if torch is not None else None
    if cls is not None and TENSOR_TYPE[0] is not cls:
        TENSOR_TYPE[0] = cls
        BY_TYPE[cls] = TORCH
    return cls


def is_tensor(value: object) -> bool:
    cls = tensor_type()
    return cls is not None and isinstance(value, cls)


def _dtype_table() -> dict[Any, tlt.dtype]:
    if not _DTYPES:
        torch = sys.modules["torch"]
        for key, ty in _TORCH_TO_TL_NAMES.items():
            if hasattr(torch, key):  # fp8 dtypes arrived in torch 2.1 (FNUZ in 2.2)
                _DTYPES[getattr(torch, key)] = ty
        _STRIDED.append(torch.strided)
    return _DTYPES


_DTYPES: dict[Any, tlt.dtype] = {}
_STRIDED: list[Any] = []


def tensor_spec(t: Any, name: str) -> tuple[Any, tlt.dtype, bool, int]:
    """(torch dtype, element type, on MPS, data address) of a tensor argument, after the checks
    of the module docstring. The launch path: a few attribute reads, no allocation."""
    dt = t.dtype
    ty = (_DTYPES or _dtype_table()).get(dt)
    if ty is None or t.layout is not _STRIDED[0] or t.is_neg():
        _refuse(t, name)
    if t.is_cpu:
        return dt, ty, False, t.data_ptr()
    if t.is_mps:
        return dt, ty, True, t.data_ptr()
    _refuse(t, name)
    raise AssertionError("unreachable")  # pragma: no cover


def _refuse(t: Any, name: str) -> None:
    """Raise the precise error for a tensor `tensor_spec` does not accept."""
    device = t.device.type
    if device not in (CPU, MPS):
        raise ArgumentError(
            f"argument '{name}' is a tensor on device '{t.device}'; Apple GPUs run MPS tensors: "
            "move it with tensor.to('mps') (or .cpu() for the emulator)"
        )
    if t.layout is not _STRIDED[0]:
        raise ArgumentError(
            f"argument '{name}' is a {str(t.layout).removeprefix('torch.')} tensor; kernels take "
            "dense (strided) tensors: pass tensor.to_dense() or its index and value tensors"
        )
    shown = str(t.dtype).removeprefix("torch.")
    if t.dtype not in _DTYPES:
        if shown in ("float64", "double"):
            raise ArgumentError(f"argument '{name}' is a float64 tensor: {tlt.FP64_REFUSAL}")
        if t.is_quantized:
            raise ArgumentError(
                f"argument '{name}' is a quantized tensor ({shown}); kernels take plain tensors: "
                "pass tensor.int_repr() and the scale and zero point as separate arguments"
            )
        raise ArgumentError(
            f"argument '{name}' is a tensor of {shown}, which a kernel cannot use (supported: "
            "bool, int8-int64, uint8-uint64, float16, bfloat16, float32)"
        )
    raise ArgumentError(
        f"argument '{name}' is a lazily conjugated or negated view whose memory does not hold "
        "the values it shows; pass tensor.resolve_conj().resolve_neg()"
    )


_POINTERS: dict[tuple[Any, bool], tuple[PointerArg, PointerArg]] = {}
"""(torch dtype, on MPS) -> the (unaligned, aligned) facts: torch dtypes hash fast, tl dtypes
do not."""


def pointer_fact(value: Any, name: str, specialize: bool, align: bool) -> PointerArg:
    """The pointer fact of a tensor: element type, alignment, and whether it is on MPS
    (`specialize_arg` calls it directly)."""
    dt, ty, mps, address = tensor_spec(value, name)
    pair = _POINTERS.get((dt, mps))
    if pair is None:
        table = MPS_POINTER_FACTS if mps else POINTER_FACTS
        pair = _POINTERS[(dt, mps)] = (table[(ty, False)], table[(ty, True)])
    return pair[specialize and align and address % 16 == 0]


def element_extent(t: Any) -> int:
    """How many elements a kernel may address from the tensor's first element."""
    n = t.numel()
    if n == 0 or t.is_contiguous():
        return n
    return 1 + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))


def host_view(t: Any, name: str) -> Any:
    """The NumPy view of a CPU tensor's memory (bfloat16 as a `ReinterpretedArray` of its
    words); the same memory, so stores land in the tensor."""
    if t.device.type != CPU:
        raise LaunchError(
            f"argument '{name}' is a tensor on '{t.device}', but this launch runs on the host "
            "(emulator or interpreter); pass CPU tensors, or MPS tensors only, on a Mac"
        )
    t = t.detach()
    ty = (_DTYPES or _dtype_table()).get(t.dtype)
    if ty is tlt.bfloat16 or (ty is not None and ty.is_fp8()):
        import torch

        if ty.is_fp8():  # NumPy has no fp8: the codes as bytes
            return ReinterpretedArray(t.view(torch.uint8).numpy(), ty)
        return ReinterpretedArray(t.view(torch.int16).numpy().view(np.uint16), tlt.bfloat16)
    return t.numpy()


class TorchAdapter:
    """`torch.Tensor` on the CPU or MPS (module docstring)."""

    name = "torch"
    written_in_place = True

    def exact_type(self) -> type | None:
        return tensor_type()

    def claims(self, value: object) -> bool:
        return is_tensor(value)

    element_extent = staticmethod(element_extent)
    pointer_fact = staticmethod(pointer_fact)

    def element_strides(self, value: Any) -> list[int]:
        return [int(s) for s in value.stride()]

    def base_address(self, value: Any) -> int:
        return int(value.data_ptr())

    def element_of_dtype(self, dtype: object) -> tlt.dtype | None:
        torch = sys.modules.get("torch")
        if torch is None or not isinstance(dtype, torch.dtype):
            return None
        ty = (_DTYPES or _dtype_table()).get(dtype)
        if ty is None:
            raise ArgumentError(f"a kernel cannot take tensors of {dtype}")
        return ty

    def is_fp64(self, value: Any) -> bool:
        return str(value.dtype) == "torch.float64"

    def host_view(self, value: Any, name: str) -> object:
        view = host_view(value, name)
        return adapter_of(view).host_view(view, name)  # type: ignore[union-attr]

    def host_buffer(self, value: Any, name: str) -> np.ndarray:
        view = host_view(value, name)
        return adapter_of(view).host_buffer(view, name)  # type: ignore[union-attr]

    metal_value = host_buffer

    def reinterpret(self, value: Any, ty: tlt.dtype) -> object | None:
        return TensorWrapper(value, ty)


TORCH = TorchAdapter()  # named before `register`, whose `exact_type` may already find torch
register(TORCH)


class TensorWrapper:
    """A torch tensor seen through another element type: `reinterpret(tensor, tl.uint32)`, as
    Triton's `triton.runtime.jit.TensorWrapper` (the same members). The kernel receives the
    tensor's first element as a pointer to `dtype`; torch itself keeps its own dtype, which is
    how unsigned and float8 data travel in Triton's tests."""

    def __init__(self, base: Any, dtype: tlt.dtype) -> None:
        self.dtype = dtype
        self.base = base
        self.data = base.data
        self.device = base.device
        self.shape = base.shape

    def data_ptr(self) -> int:
        return int(self.base.data_ptr())

    def stride(self, *args: Any) -> Any:
        return self.base.stride(*args)

    def __str__(self) -> str:
        return f"TensorWrapper[{self.dtype}]({self.base})"

    def element_size(self) -> int:
        return int(self.base.element_size())

    def cpu(self) -> TensorWrapper:
        return TensorWrapper(self.base.cpu(), self.dtype)

    def copy_(self, other: TensorWrapper) -> None:
        self.base.copy_(other.base)

    def clone(self) -> TensorWrapper:
        return TensorWrapper(self.base.clone(), self.dtype)

    def to(self, device: Any) -> TensorWrapper:
        return TensorWrapper(self.base.to(device), self.dtype)

    def new_empty(self, sizes: Any) -> TensorWrapper:
        return TensorWrapper(self.base.new_empty(sizes), self.dtype)


def _wrapped_view(value: TensorWrapper, name: str) -> object:
    """The host memory of a wrapped CPU tensor seen as its `dtype` (a NumPy view, or a
    `ReinterpretedArray` for the types NumPy lacks)."""
    from .numpy import reinterpret as numpy_reinterpret

    base = host_view(value.base, name)
    words = base.base if isinstance(base, ReinterpretedArray) else base
    return numpy_reinterpret(words, value.dtype)


class TensorWrapperAdapter:
    """`TensorWrapper`: a CPU tensor's memory with a `tl` element type (host backends only; an
    MPS tensor is reinterpreted with torch's own `tensor.view(dtype)`)."""

    name = "torch-reinterpreted"
    written_in_place = True

    def exact_type(self) -> type:
        return TensorWrapper

    def claims(self, value: object) -> bool:
        return isinstance(value, TensorWrapper)

    def _view_adapter(self, value: TensorWrapper, name: str) -> tuple[object, Any]:
        view = _wrapped_view(value, name)
        return view, adapter_of(view)

    def element_extent(self, value: TensorWrapper) -> int:
        view, adapter = self._view_adapter(value, "tensor")
        return int(adapter.element_extent(view))

    def element_strides(self, value: TensorWrapper) -> list[int]:
        view, adapter = self._view_adapter(value, "tensor")
        return list(adapter.element_strides(view))

    def base_address(self, value: TensorWrapper) -> int:
        return value.data_ptr()

    def pointer_fact(self, value: TensorWrapper, name: str, specialize: bool, align: bool) -> PointerArg:
        tensor_spec(value.base, name)  # the base tensor's own checks (device, layout, dtype)
        if value.dtype.is_fp64():
            raise ArgumentError(f"argument '{name}' is a float64 view: {tlt.FP64_REFUSAL}")
        if value.base.device.type != CPU:
            raise ArgumentError(
                f"argument '{name}' reinterprets a tensor on '{value.base.device}'; on MPS, "
                "reinterpret with torch's own tensor.view(dtype)"
            )
        aligned = specialize and align and value.data_ptr() % 16 == 0
        return POINTER_FACTS[(value.dtype, aligned)]

    def element_of_dtype(self, dtype: object) -> tlt.dtype | None:
        return None

    def is_fp64(self, value: TensorWrapper) -> bool:
        return False  # refused by `pointer_fact`

    def host_view(self, value: TensorWrapper, name: str) -> object:
        view, adapter = self._view_adapter(value, name)
        return adapter.host_view(view, name)

    def host_buffer(self, value: TensorWrapper, name: str) -> np.ndarray:
        view, adapter = self._view_adapter(value, name)
        return adapter.host_buffer(view, name)

    metal_value = host_buffer

    def reinterpret(self, value: TensorWrapper, ty: tlt.dtype) -> object:
        base_ty = (_DTYPES or _dtype_table()).get(value.base.dtype)
        return value.base if ty is base_ty else TensorWrapper(value.base, ty)


register(TensorWrapperAdapter())
