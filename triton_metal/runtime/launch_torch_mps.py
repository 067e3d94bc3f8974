"""Compiled launches on PyTorch's MPS stream: the torch_mps backend's launcher.

`TorchMpsLauncher(msl, arg_names)` is built once per compiled variant: it writes the complete
source (`backends.torch_mps.build_source`), and on the first launch compiles it once with the
active `compile_shader` (`torch.mps.compile_shader`, or a stand-in installed with
`backends.torch_mps.use_compiler`) and keeps the kernel function. A launch then makes one call,

    function(*args, threads=[gx * T, gy, gz], group_size=[T, 1, 1])

PyTorch encodes it on its current MPS stream (`MetalKernelFunction::runCommandBlock`) with
`dispatchThreads(threads, group_size)`: one program = one threadgroup of T = 32 * num_warps
threads, as on the MLX path (`backends.metal.plan.launch_dims`, shared). Tensors are bound in
place, so stores land in them and nothing is rebound or merged afterwards.

Every argument is checked before the call, so a bad one modifies nothing: each array must be a
torch tensor on the compiler's device (MPS; the stand-in's device is the CPU, and there NumPy
arrays are bound as zero-copy CPU tensors); an MLX array next to MPS tensors is refused (two
frameworks' GPU memory in one launch).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..backends.metal.plan import LaunchPlan, launch_dims
from ..backends.torch_mps import TENSOR, SCALAR, TorchKernelSource, active_compiler, build_source
from ..backends.torch_mps.driver import _ACTIVE
from ..errors import LaunchError
from .device_asserts import warn_prints
from .arrays import flat_view
from .arrays.torch import is_tensor, tensor_type

_UNSET = object()


class TorchMpsLauncher:
    """Runs one compiled variant through `compile_shader` (module docstring)."""

    def __init__(self, msl: Any, arg_names: Sequence[str]) -> None:
        self.source: TorchKernelSource = build_source(msl, arg_names)
        self.arg_names = tuple(arg_names)
        self._plan = tuple((b.role, b.arg, b.dtype) for b in self.source.buffers)
        self._written = frozenset(b.arg for b in self.source.buffers if b.written)
        self._word_atomics = LaunchPlan.of(msl, arg_names).word_atomic_args
        """16-bit atomic outputs: updated through the 32-bit word holding each element."""
        self._function: Any = None
        self._compiled_with: object = _UNSET
        self._device = ""
        self._on_device = ""
        """The tensor attribute saying a tensor is on the compiler's device ("is_mps")."""
        self._tensor_type: type | None = None
        self._dims: dict[tuple[int, int, int], tuple[list[int], list[int]] | None] = {}
        self._prints = msl if msl.metadata.get("device_prints") else None
        """The kernel, when it has `tl.device_print`s: MPS cannot print them (said once)."""

    def _compile(self) -> Any:
        """Compile once per `compile_shader` in use (a stand-in swapped in or out recompiles)."""
        compiler, device = active_compiler()
        library = compiler(self.source.text)
        self._function = getattr(library, self.source.function)
        self._compiled_with = _ACTIVE[0]
        self._device = device
        self._on_device = f"is_{device}"
        self._tensor_type = tensor_type()
        return self._function

    def __call__(self, values: tuple[object, ...], grid: tuple[int, int, int]) -> None:
        function = self._function
        if function is None or _ACTIVE[0] is not self._compiled_with:
            function = self._compile()
        args: list[object] = []
        for arg in self._word_atomics:
            self._check_whole_words(values[arg], arg)
        for role, arg, dtype in self._plan:
            if role == TENSOR:
                args.append(self._tensor(values[arg], arg))
            elif role == SCALAR:
                args.append(_scalar(values[arg], dtype))
            else:
                args.append(list(grid))
        dims = self._dims.get(grid, _UNSET)
        if dims is _UNSET:
            threads, group = launch_dims(grid, self.source.threads_per_program, self.source.spread)
            if len(self._dims) >= 256:  # grids seen by this variant, kept small
                self._dims.clear()
            dims = self._dims[grid] = None if 0 in threads else (list(threads), list(group))
        if self._prints is not None:
            warn_prints(self._prints, "torch_mps")
        if dims is None:
            return
        function(*args, threads=dims[0], group_size=dims[1])

    def _check_whole_words(self, value: object, arg: int) -> None:
        """A float16/bfloat16 atomic updates the aligned 32-bit word holding its element, so the
        tensor must start on a 4-byte boundary and hold whole words: PyTorch binds the tensor
        itself, and the word of an odd last element (or of a first element at an odd offset)
        would reach outside it. The emulator and MLX paths pad a copy instead."""
        ptr = int(value.data_ptr())  # type: ignore[attr-defined]
        size = int(value.numel())  # type: ignore[attr-defined]
        if ptr % 4 or size % 2:
            raise LaunchError(
                f"argument '{self.arg_names[arg]}': its float16/bfloat16 atomics update 32-bit "
                f"words, so on torch_mps the tensor must start 4-byte aligned and have an even "
                f"number of elements (it has {size} at address offset {ptr % 4}); pad it by one "
                "element, or accumulate in float32"
            )

    def _tensor(self, value: object, arg: int) -> object:
        if type(value) is self._tensor_type and getattr(value, self._on_device):
            return value  # the launch path: a tensor on the compiler's device
        name = self.arg_names[arg]
        if is_tensor(value):
            if not getattr(value, self._on_device):
                device = value.device.type  # type: ignore[attr-defined]
                raise LaunchError(
                    f"argument '{name}' is a tensor on '{device}', but this launch binds "
                    f"'{self._device}' tensors: tensors on different devices cannot be mixed in "
                    "one launch"
                )
            return value
        if type(value).__module__.startswith("mlx"):
            raise LaunchError(
                f"argument '{name}' is an MLX array, but this launch runs on PyTorch's MPS stream "
                "(torch_mps): one launch runs either through PyTorch or through MLX; convert one "
                "side (torch.from_dlpack / mx.array(tensor.cpu()))"
            )
        if isinstance(value, np.ndarray) and self._device == "cpu":
            import torch

            flat = flat_view(value, name)
            if not value.flags.writeable:
                if arg in self._written:
                    raise LaunchError(
                        f"argument '{name}': the kernel stores to it but the array is read-only"
                    )
                flat = flat.copy()  # only read: a copy of the span has the same element offsets
            return torch.from_numpy(flat)
        raise LaunchError(
            f"argument '{name}' is a {type(value).__name__}; the torch_mps backend takes torch "
            f"tensors on '{self._device}'"
        )


def _scalar(value: object, dtype: str) -> object:
    """The Python value PyTorch binds for a scalar of this type (ints as their int64 bits)."""
    if isinstance(value, np.generic):
        value = value.item()
    if dtype == "float":
        return float(value)  # type: ignore[arg-type]
    v = int(value)  # type: ignore[call-overload]
    return v - 2**64 if v >= 2**63 else v
