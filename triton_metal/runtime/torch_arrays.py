"""torch tensors as kernel arguments, without importing torch.

torch is optional: nothing here imports it. A value is a tensor when torch is already imported
(`sys.modules`) and the value is an instance of `torch.Tensor`; a process that never imports
torch never pays for the check beyond one dictionary lookup.

As in Triton, a tensor argument is a pointer to its first element: `tensor.data_ptr()`, which
includes the storage offset, and the kernel reaches the other elements through the strides the
caller passes (`x.stride(0)`), counted in elements.

* CPU tensors are seen by the emulator and the interpreter as NumPy views of their own memory
  (`host_view`): nothing is copied and the kernel's stores land in the tensor. bfloat16 travels
  as its 16-bit words (`ReinterpretedArray`), as `reinterpret(numpy_array, tl.bfloat16)` does.
* MPS tensors are bound in place by the torch_mps backend (`backends/torch_mps`).

`tensor_spec` checks a tensor before anything runs and refuses, naming the parameter: a device
other than CPU or MPS (CUDA, meta, ...), a sparse or other non-strided layout, a quantized,
complex or float64 tensor, and a conjugate or negative view whose memory does not hold the
values it shows.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ..errors import LaunchError
from ..language import types as tlt

_TORCH_TO_TL_NAMES = {
    "bool": tlt.int1, "int8": tlt.int8, "int16": tlt.int16, "int32": tlt.int32,
    "int64": tlt.int64, "uint8": tlt.uint8, "uint16": tlt.uint16, "uint32": tlt.uint32,
    "uint64": tlt.uint64, "float16": tlt.float16, "bfloat16": tlt.bfloat16,
    "float32": tlt.float32,
}
_dtype_table: dict[Any, tlt.dtype] = {}

MPS = "mps"
CPU = "cpu"


def tensor_type() -> type | None:
    """`torch.Tensor` when torch is imported, else None (never imports torch)."""
    torch = sys.modules.get("torch")
    return getattr(torch, "Tensor", None) if torch is not None else None


def is_tensor(value: object) -> bool:
    cls = tensor_type()
    return cls is not None and isinstance(value, cls)


def _tl_dtype(t: Any, name: str) -> tlt.dtype:
    if not _dtype_table:
        import torch

        for key, ty in _TORCH_TO_TL_NAMES.items():
            _dtype_table[getattr(torch, key)] = ty
    ty = _dtype_table.get(t.dtype)
    if ty is not None:
        return ty
    from .specialization import ArgumentError

    shown = str(t.dtype).removeprefix("torch.")
    if shown in ("float64", "double"):
        raise ArgumentError(f"argument '{name}' is a float64 tensor: {tlt.FP64_REFUSAL}")
    if t.is_quantized:
        raise ArgumentError(
            f"argument '{name}' is a quantized tensor ({shown}); kernels take plain tensors: pass "
            "tensor.int_repr() and the scale and zero point as separate arguments"
        )
    raise ArgumentError(
        f"argument '{name}' is a tensor of {shown}, which a kernel cannot use (supported: bool, "
        "int8-int64, uint8-uint64, float16, bfloat16, float32)"
    )


def tensor_spec(t: Any, name: str) -> tuple[tlt.dtype, str, int]:
    """(element type, device type "cpu" or "mps", data address) of a tensor argument, after the
    checks of the module docstring."""
    from .specialization import ArgumentError

    device = t.device.type
    if device not in (CPU, MPS):
        hint = (
            "; Apple GPUs run MPS tensors: move it with tensor.to('mps') (or .cpu() for the emulator)"
        )
        raise ArgumentError(f"argument '{name}' is a tensor on device '{t.device}'{hint}")
    if t.layout is not _strided():
        raise ArgumentError(
            f"argument '{name}' is a {str(t.layout).removeprefix('torch.')} tensor; kernels take "
            "dense (strided) tensors: pass tensor.to_dense() or its index and value tensors"
        )
    ty = _tl_dtype(t, name)
    if t.is_conj() or t.is_neg():
        raise ArgumentError(
            f"argument '{name}' is a lazily conjugated or negated view whose memory does not hold "
            "the values it shows; pass tensor.resolve_conj().resolve_neg()"
        )
    return ty, device, int(t.data_ptr())


def _strided() -> Any:
    return sys.modules["torch"].strided


def element_extent(t: Any) -> int:
    """How many elements a kernel may address from the tensor's first element."""
    if t.numel() == 0:
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))


def host_view(t: Any, name: str) -> Any:
    """The NumPy view of a CPU tensor's memory (bfloat16 as a `ReinterpretedArray` of its
    words); the same memory, so stores land in the tensor."""
    if t.device.type != CPU:
        raise LaunchError(
            f"argument '{name}' is a tensor on '{t.device}', but this launch runs on the host "
            "(emulator or interpreter); pass CPU tensors, or MPS tensors only, on a Mac"
        )
    t = t.detach()
    if _tl_dtype(t, name) is tlt.bfloat16:
        import torch

        from .specialization import ReinterpretedArray

        return ReinterpretedArray(t.view(torch.int16).numpy().view(np.uint16), tlt.bfloat16)
    return t.numpy()
