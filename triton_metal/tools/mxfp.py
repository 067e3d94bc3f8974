"""`triton.tools.mxfp`: host-side torch helpers for the OCP microscaling (MX) formats, with the
class names and members of Triton's module of that name (`MXFP4Tensor`, `MXScaleTensor`), which
Triton's tests and scaled-matmul code build their operands and references with.

* `MXFP4Tensor`: E2M1 codes, one per uint8 (`data`, the code in the low 4 bits): sign, 2-bit
  exponent (bias 1), 1-bit mantissa; magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6; no Inf or NaN.
  From float32: round to nearest, ties to the even code; beyond 6 (Inf and NaN included) the
  largest magnitude with the value's sign. `to_packed_tensor(dim)` puts two codes in a byte
  along `dim` (the first in the low nibble, an odd size padded with a zero code).
* `MXScaleTensor`: E8M0 scales, one per uint8 (`data`): 2**(code - 127); 255 is NaN. From
  float32: floor(log2(value)) clamped to codes 0..254; zero, negative, Inf and NaN become 255.

Misuse (a wrong dimension or dtype, data that is not a torch tensor) raises `AssertionError`
with Triton's wording, as Triton's helpers do. torch is imported on use.
"""

from __future__ import annotations

from typing import Any

E2M1_MAGNITUDES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
"""The magnitude of each 3-bit E2M1 code (exponent and mantissa bits)."""
E8M0_BIAS = 127
E8M0_NAN = 255


def _torch() -> Any:
    import torch

    return torch


def _shape(size: Any) -> tuple[int, ...]:
    return tuple(size) if isinstance(size, (tuple, list)) else (size,)


class _MXCodes:
    """One code per uint8 in `data`: converted from float32 `data`, or of `size` to fill with
    `random()` (the members both of Triton's classes share)."""

    def __init__(self, data: Any = None, size: Any = None, device: Any = None) -> None:
        self.device = device
        if data is not None:
            if not isinstance(data, _torch().Tensor):
                raise AssertionError("Parameter data must be a torch tensor")
            self.device = data.device
            self.data = self._from_float(data)
        elif size is not None:
            self.size = _shape(size)
        else:
            raise ValueError("Either parameter data or size must be provided")

    def _from_float(self, values: Any) -> Any:
        raise NotImplementedError


class MXFP4Tensor(_MXCodes):
    """E2M1 data (module docstring)."""

    def random(self) -> MXFP4Tensor:
        """Every one of the 16 codes equally likely."""
        torch = _torch()
        self.data = torch.randint(0, 16, self.size, dtype=torch.uint8, device=self.device)
        return self

    def to(self, dtype: Any) -> Any:
        """The values as float32 (the only conversion offered)."""
        torch = _torch()
        if dtype != torch.float32:
            raise AssertionError("Currently only float32 is supported for fp4e2m1 to float conversion")
        table = torch.tensor(E2M1_MAGNITUDES, dtype=torch.float32, device=self.data.device)
        magnitude = table[(self.data & 0x7).long()]
        negative = (self.data & 0x8) != 0
        return torch.where(negative, -magnitude, magnitude)

    def _from_float(self, values: Any) -> Any:
        torch = _torch()
        values = values.to(torch.float32)
        sign = torch.signbit(values).to(torch.uint8) << 3
        magnitude = values.abs()
        magnitude = torch.where(torch.isfinite(magnitude), magnitude, torch.full_like(magnitude, 6.0))
        table = torch.tensor(E2M1_MAGNITUDES, dtype=torch.float32, device=values.device)
        distance = (magnitude.unsqueeze(-1) - table).abs()
        nearest = distance.min(dim=-1, keepdim=True).values
        # among the codes at the nearest distance, the even one (mantissa bit 0) wins a tie
        tied = distance == nearest
        codes = torch.arange(8, device=values.device)
        rank = torch.where(tied, (codes % 2) * 8 + codes, torch.full_like(codes, 1 << 20))
        code = rank.argmin(dim=-1).to(torch.uint8)
        return sign | code

    def to_packed_tensor(self, dim: int) -> Any:
        """Two codes per byte along `dim`: element 2i in the low nibble, 2i+1 in the high one."""
        torch = _torch()
        data = self.data
        if not 0 <= dim < data.ndim:
            raise AssertionError("The dimension to pack along is not within the range of tensor dimensions")
        if data.size(dim) % 2:
            pad = list(data.shape)
            pad[dim] = 1
            data = torch.cat([data, torch.zeros(pad, dtype=data.dtype, device=data.device)], dim=dim)
        pairs = data.unflatten(dim, (-1, 2))
        low, high = pairs.select(dim + 1, 0), pairs.select(dim + 1, 1)
        return (high << 4) | low

    def unpack_packed_tensor(self, packed_tensor: Any, dim: int, original_shape: Any) -> Any:
        """The codes of a packed tensor, one per byte, padding removed."""
        torch = _torch()
        pairs = torch.stack((packed_tensor & 0xF, (packed_tensor >> 4) & 0xF), dim=dim + 1)
        data = pairs.flatten(dim, dim + 1)
        return data.narrow(dim, 0, original_shape[dim]).to(torch.uint8)


class MXScaleTensor(_MXCodes):
    """E8M0 scales (module docstring)."""

    def random(self, low: float | None = None, high: float | None = None) -> MXScaleTensor:
        """Codes uniform between those of `low` and `high` (floor of log2; default the whole
        finite range 0..254, never NaN)."""
        import math

        torch = _torch()
        lowest = 0 if low is None else max(0, math.floor(math.log2(low)) + E8M0_BIAS)
        highest = 254 if high is None else min(254, max(0, math.floor(math.log2(high)) + E8M0_BIAS))
        if lowest > highest:
            raise AssertionError("Low must be less than or equal to high")
        self.data = torch.randint(lowest, highest + 1, self.size, dtype=torch.uint8, device=self.device)
        return self

    def to(self, dtype: Any) -> Any:
        """The scales as float32 (code 255: NaN)."""
        torch = _torch()
        if dtype != torch.float32:
            raise AssertionError("Currently only float32 is supported for f8e8m0 to float conversion")
        exponent = self.data.to(torch.float32) - E8M0_BIAS
        value = torch.pow(torch.tensor(2.0, device=self.data.device), exponent)
        return torch.where(self.data == E8M0_NAN, torch.full_like(value, float("nan")), value)

    def _from_float(self, values: Any) -> Any:
        torch = _torch()
        values = values.to(torch.float32)
        invalid = ~torch.isfinite(values) | (values <= 0)
        safe = torch.where(invalid, torch.ones_like(values), values)
        code = (torch.floor(torch.log2(safe)) + E8M0_BIAS).clamp(0, 254).to(torch.uint8)
        return torch.where(invalid, torch.full_like(code, E8M0_NAN), code)
