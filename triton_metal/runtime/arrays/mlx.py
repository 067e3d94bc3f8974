"""MLX arrays as kernel arguments.

MLX arrays do not expose an address: their buffers come from MLX's allocator, which aligns
every allocation (to at least 16 bytes), and a view with an offset is copied by MLX before a
custom kernel sees it unless it is row-contiguous, so MLX arrays are specialized as aligned.
(A row-contiguous MLX view at an odd element offset is the one case this can be wrong:
`docs/runtime.md`.) A kernel receives a row-major array, so its strides are the row-major ones.

MLX arrays are immutable: the Metal driver (`backends/metal/driver.py`), on a Mac and on the
emulator alike, gives the kernel fresh outputs and rebinds the caller's array to the result
(`written_in_place` is False). The interpreter reads and writes them itself
(`backends/interpreter/launch.py`).

MLX is a dependency, but the interpreter and the tests must work where it fails to load:
`ARRAY_TYPE` is then None and no value is an MLX array.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import LaunchError
from ...language import types as tlt
from ..facts import POINTER_FACTS, PointerArg, bad_dtype
from .base import register

try:
    import mlx.core as _mx
except ImportError:  # pragma: no cover - exercised only on machines without MLX
    _mx = None

ARRAY_TYPE: type | None = _mx.array if _mx is not None else None
"""`mlx.core.array` (None without MLX), for the launch path's `type(x) is` tests."""

DTYPES: dict[Any, tlt.dtype] = {}
if _mx is not None:
    DTYPES = {
        _mx.bool_: tlt.int1,
        _mx.int8: tlt.int8,
        _mx.int16: tlt.int16,
        _mx.int32: tlt.int32,
        _mx.int64: tlt.int64,
        _mx.uint8: tlt.uint8,
        _mx.uint16: tlt.uint16,
        _mx.uint32: tlt.uint32,
        _mx.uint64: tlt.uint64,
        _mx.float16: tlt.float16,
        _mx.bfloat16: tlt.bfloat16,
        _mx.float32: tlt.float32,
    }
_MLX_OF: dict[tlt.dtype, Any] = {ty: dt for dt, ty in DTYPES.items()}

POINTER_FACTS_OF: dict[Any, tuple[PointerArg, PointerArg]] = {
    dt: (POINTER_FACTS[(ty, False)], POINTER_FACTS[(ty, True)]) for dt, ty in DTYPES.items()
}
"""MLX dtype -> the (unaligned, aligned) facts, looked up by the MLX dtype (hashed in C; the
generated binder and `specialize_arg` read this table themselves)."""


def tl_dtype_of_mlx(dt: Any, name: str) -> tlt.dtype:
    """The `tl` element type of an MLX dtype, or an error naming parameter `name`."""
    ty = DTYPES.get(dt)
    if ty is not None:
        return ty
    raise bad_dtype(str(dt).removeprefix("mlx.core."), name)


def is_mlx(value: object) -> bool:
    return ARRAY_TYPE is not None and isinstance(value, ARRAY_TYPE)


class MlxAdapter:
    """`mlx.core.array` (module docstring)."""

    name = "mlx"
    written_in_place = False

    def exact_type(self) -> type | None:
        return ARRAY_TYPE

    def claims(self, value: object) -> bool:
        return is_mlx(value)

    def element_extent(self, value: Any) -> int:
        return int(value.size)

    def element_strides(self, value: Any) -> list[int]:
        strides, step = [], 1
        for n in reversed(tuple(value.shape)):
            strides.append(step)
            step *= int(n)
        return strides[::-1]

    def base_address(self, value: Any) -> int:
        return 0  # hidden by MLX; its allocations are aligned (module docstring)

    def pointer_fact(self, value: Any, name: str, specialize: bool, align: bool) -> PointerArg:
        pair = POINTER_FACTS_OF.get(value.dtype)
        if pair is None:
            tl_dtype_of_mlx(value.dtype, name)  # raises, naming the parameter
        return pair[specialize and align]  # type: ignore[index]

    def element_of_dtype(self, dtype: object) -> tlt.dtype | None:
        if _mx is not None and isinstance(dtype, _mx.Dtype):
            return tl_dtype_of_mlx(dtype, "warmup")
        return None

    def is_fp64(self, value: Any) -> bool:
        return value.dtype == _mx.float64  # type: ignore[union-attr]

    def host_view(self, value: Any, name: str) -> object:
        return value  # the interpreter binds MLX arrays itself

    def host_buffer(self, value: Any, name: str) -> np.ndarray:
        # the emulator's launcher sends launches with MLX arrays down the Metal driver's path;
        # a copy here would lose the kernel's stores
        raise LaunchError(
            f"argument '{name}' is an MLX array, which is launched through the Metal driver's path, "
            "not as host memory"
        )

    def metal_value(self, value: Any, name: str) -> object:
        return value

    def reinterpret(self, value: Any, ty: tlt.dtype) -> object:
        if ty.is_fp8():
            raise TypeError(f"reinterpret: MLX has no fp8 arrays to view as {ty!r}; pass the uint8 "
                            "codes (mx.to_fp8) and bitcast them in the kernel: "
                            "tl.load(ptr + offs).to(tl.float8e4nv, bitcast=True)")
        return _mx.view(value, _MLX_OF[ty])  # type: ignore[union-attr]


MLX = register(MlxAdapter())
