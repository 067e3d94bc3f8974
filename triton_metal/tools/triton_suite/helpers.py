"""`triton._internal_testing` under the Triton-suite runner: the helpers Triton's own test files
import, with the names and contracts those files rely on, answered for this package.

What a test file asks and what it gets here:

- dtype name lists (`int_dtypes`, `float_dtypes`, `dtypes_with_bfloat16`, `torch_dtypes`, ...):
  the same lists as Triton's, float64 included, so a file parametrizes the same cases and the
  count says which need fp64.
- the backend predicates: `is_interpreter()` is true under `TRITON_METAL_INTERPRET=1` (or
  Triton's `TRITON_INTERPRET=1`); every CUDA, HIP and XPU predicate is false (the target is an
  Apple GPU), so a file takes its generic path and skips what it says needs those GPUs.
- data: `numpy_random` (seeded NumPy data of a dtype name, never zero for integers),
  `to_triton` (a torch CPU tensor; unsigned integers as a `reinterpret` of the signed tensor),
  `to_numpy`, `unwrap_tensor`, `str_to_triton_dtype`, `torch_dtype_name`.
- `default_alloc_fn`: the scratch allocator `triton.set_allocator` takes (torch CPU bytes).
- capabilities: `supports_tma()` (host tensor descriptors exist on every backend here),
  `supports_ws()` and `supports_clc()` (warp specialization, cluster launch control: no).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from ... import language as tl
from ...runtime.utils import reinterpret

int_dtypes = ["int8", "int16", "int32", "int64"]
uint_dtypes = ["uint8", "uint16", "uint32", "uint64"]
integral_dtypes = int_dtypes + uint_dtypes
float_dtypes = ["float16", "float32", "float64"]
float_dtypes_with_bfloat16 = float_dtypes + ["bfloat16"]
dtypes = integral_dtypes + float_dtypes
dtypes_with_bfloat16 = dtypes + ["bfloat16"]
torch_float8_dtypes = ["float8_e4m3fn", "float8_e5m2"]
torch_dtypes = ["bool"] + int_dtypes + ["uint8"] + float_dtypes + ["bfloat16"]
tma_dtypes = sorted(set(dtypes_with_bfloat16) - {"int64", "uint64", "float64"})

_WARMUP = contextvars.ContextVar("triton_suite_compile_warmup", default=False)


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def is_interpreter() -> bool:
    """Kernels run in the NumPy interpreter (`TRITON_METAL_INTERPRET=1` or `TRITON_INTERPRET=1`)."""
    return _flag("TRITON_METAL_INTERPRET") or _flag("TRITON_INTERPRET")


def is_compile_warmup() -> bool:
    """Inside `compile_warmup()`: kernels are compiled, not run (Triton's warm-up mode)."""
    return _WARMUP.get()


@contextlib.contextmanager
def compile_warmup() -> Iterator[None]:
    token = _WARMUP.set(True)
    try:
        yield
    finally:
        _WARMUP.reset(token)


def random_int(low: int, high: int, *, warmup_value: int | None = None, **kwargs: Any) -> int:
    """A random int in [low, high), or the warm-up value while warming up."""
    if is_compile_warmup():
        return low if warmup_value is None else warmup_value
    import torch

    return int(torch.randint(low, high, size=(), **kwargs).item())


def random_float(*, warmup_value: float = 0.5, **kwargs: Any) -> float:
    """A random float in [0, 1), or the warm-up value while warming up."""
    if is_compile_warmup():
        return warmup_value
    import torch

    return float(torch.rand((), **kwargs).item())


def get_current_target() -> Any:
    """The driver's target (`GPUTarget("metal", "apple", 32)`), None in the interpreter."""
    if is_interpreter():
        return None
    from ...runtime.driver_stub import target

    return target()


def _false() -> bool:
    return False


# Every vendor predicate of Triton's: the target is an Apple GPU, never one of these.
is_cuda = is_ampere_or_newer = is_blackwell = is_blackwell_ultra = is_rubin = _false
is_hopper_or_newer = is_hopper = is_sm12x = _false
is_hip = is_hip_cdna = is_hip_cdna2 = is_hip_cdna3 = is_hip_cdna4 = is_hip_cdna3_or_newer = _false
is_hip_rdna = is_hip_rdna3 = is_hip_rdna4 = is_hip_rdna4m = is_hip_gfx1250 = _false
is_xpu = _false


def get_hip_lds_size() -> int:
    raise NotImplementedError("get_hip_lds_size: the target is an Apple GPU, not an AMD one")


def numpy_random(
    shape: int | tuple[int, ...],
    dtype_str: str,
    rs: np.random.RandomState | None = None,
    low: int | None = None,
    high: int | None = None,
) -> np.ndarray:
    """Seeded random data of a dtype name (seed 17 unless `rs` is given). Integers are uniform
    over the type's range (or [low, high)) and never zero; floats are standard normal; bfloat16
    is float32 data whose low 16 bits are zero; float8 names give int8 codes in [20, 40)."""
    if isinstance(shape, int):
        shape = (shape,)
    rs = np.random.RandomState(seed=17) if rs is None else rs
    if dtype_str in integral_dtypes:
        info = np.iinfo(np.dtype(dtype_str))
        lo = info.min if low is None else max(low, info.min)
        hi = info.max if high is None else min(high, info.max)
        values = rs.randint(lo, hi, shape, dtype=np.dtype(dtype_str))
        values[values == 0] = 1  # callers divide by these
        return values
    if dtype_str and "float8" in dtype_str:
        return rs.randint(20, 40, shape, dtype=np.int8)
    if dtype_str in float_dtypes:
        return rs.normal(0, 1, shape).astype(dtype_str)
    if dtype_str == "bfloat16":
        words = rs.normal(0, 1, shape).astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
        return words.view(np.float32)
    if dtype_str in ("bool", "int1", "bool_"):
        return rs.normal(0, 1, shape) > 0.0
    raise RuntimeError(f"Unknown dtype {dtype_str}")


def to_triton(x: np.ndarray, device: Any, dst_type: str | None = None) -> Any:
    """A torch tensor holding `x` (unsigned integers and float8 as `reinterpret` views; float32
    data becomes bfloat16 when `dst_type` says so)."""
    import torch

    name = x.dtype.name
    if name in uint_dtypes:
        signed = x.astype(np.dtype(name[1:]))
        return reinterpret(torch.tensor(signed, device=device), getattr(tl, name))
    if dst_type and "float8" in dst_type:
        return reinterpret(torch.tensor(x, device=device), getattr(tl, dst_type))
    if name == "float32" and dst_type == "bfloat16":
        return torch.tensor(x, device=device).bfloat16()
    return torch.tensor(x, device=device)


TORCH_FP8_NAMES = {
    "float8_e4m3fn": "float8e4nv", "float8_e5m2": "float8e5",
    "float8_e4m3fnuz": "float8e4b8", "float8_e5m2fnuz": "float8e5b16",
}
"""torch's names of the fp8 dtypes -> Triton's."""


def str_to_triton_dtype(name: str) -> Any:
    """The `tl` dtype a dtype name denotes, Triton's or torch's (`"float32"` -> `tl.float32`,
    `"bool"` -> `tl.int1`, `"float8_e4m3fn"` -> `tl.float8e4nv`)."""
    return tl.str_to_ty(TORCH_FP8_NAMES.get(name, name))


def torch_dtype_name(dtype: Any) -> str:
    """The bare name of a `tl` or torch dtype (`torch.int64` -> `"int64"`)."""
    if isinstance(dtype, tl.dtype):
        return dtype.name
    match = re.match(r"^torch\.(\w+)$", str(dtype))
    if match is None:
        raise TypeError(f"not a triton or torch dtype: {type(dtype)}")
    return match.group(1)


def unwrap_tensor(t: Any) -> Any:
    """The torch tensor under a `reinterpret` view, or `t` itself."""
    from ...runtime.arrays.torch import TensorWrapper

    return t.base if isinstance(t, TensorWrapper) else t


def to_numpy(x: Any) -> np.ndarray:
    """A NumPy copy of a torch tensor or `reinterpret` view (bfloat16 widened to float32)."""
    import torch

    from ...runtime.arrays.torch import TensorWrapper

    if isinstance(x, TensorWrapper):
        return x.base.cpu().numpy().astype(np.dtype(torch_dtype_name(x.dtype)))
    if isinstance(x, torch.Tensor):
        return x.cpu().float().numpy() if x.dtype is torch.bfloat16 else x.cpu().numpy()
    raise ValueError(f"Not a triton-compatible tensor: {x}")


def supports_tma(byval_only: bool = False) -> bool:
    """Host tensor descriptors (`TensorDescriptor`) work on every backend here."""
    return True


def supports_ws() -> bool:
    return False


def supports_clc() -> bool:
    return False


def tma_skip_msg(byval_only: bool = False) -> str:
    return "tensor descriptors are supported on every backend here"


requires_tma = pytest.mark.skipif(not supports_tma(), reason=tma_skip_msg())


def default_alloc_fn(size: int, align: int, stream: Any) -> Any:
    """Scratch memory for `triton.set_allocator`: `size` bytes of a torch CPU tensor."""
    import torch

    return torch.empty(size, dtype=torch.int8, device="cpu")


def run_in_process(client_fn: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None,
                   env: Any = None) -> Any:
    raise NotImplementedError("run_in_process: the Triton-suite runner runs each test in its own process "
                              "only through pytest-xdist")
