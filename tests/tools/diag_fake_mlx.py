"""A fake of exactly the MLX calls the diagnostics make (mlx_api.md sections 4 and 7).

`FakeMX(architecture=..., device_name=..., metal=True)` answers `mx.metal.is_available()`,
`mx.device_info(mx.gpu)`, `mx.eval(*arrays)` and `mx.synchronize()`, has `mx.array` (a class
the fake's arrays belong to), `mx.gpu` and `__version__`, and records every call in `calls`.
"""

from __future__ import annotations

from typing import Any


class FakeArray:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"FakeArray({self.name})"


class _Metal:
    def __init__(self, owner: "FakeMX", available: bool) -> None:
        self.owner = owner
        self.available = available

    def is_available(self) -> bool:
        self.owner.calls.append(("metal.is_available",))
        return self.available


class FakeMX:
    array = FakeArray
    gpu = "gpu"

    def __init__(self, architecture: str = "applegpu_g15s", device_name: str = "Apple M3 Max",
                 metal: bool = True, version: str = "0.32.1", extra: dict[str, Any] | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.metal = _Metal(self, metal)
        self.__version__ = version
        self.info: dict[str, Any] = {"architecture": architecture, "device_name": device_name}
        self.info.update(extra or {})

    def device_info(self, device: object = None) -> dict[str, Any]:
        self.calls.append(("device_info", device))
        return dict(self.info)

    def eval(self, *arrays: object) -> None:
        self.calls.append(("eval", *arrays))

    def synchronize(self) -> None:
        self.calls.append(("synchronize",))
