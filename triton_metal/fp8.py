"""The fp8 storage formats and their conversions to and from float32 (NumPy, bit by bit).

Triton's fp8 dtypes as formats of one sign bit, `exponent_bits`, `mantissa_bits` and a bias:
* `fp8e4nv` (`tl.float8e4nv`, OCP E4M3FN): bias 7, no infinities, NaN is S.1111.111, max 448;
* `fp8e5` (`tl.float8e5`, OCP E5M2): bias 15, IEEE-like infinities and NaNs, max 57344;
* `fp8e4b8` (`tl.float8e4b8`, E4M3FNUZ) and `fp8e5b16` (`tl.float8e5b16`, E5M2FNUZ): biases 8
  and 16, no infinities, no negative zero, the single NaN 0x80, max 240 and 57344;
* `fp8e4b15` (`tl.float8e4b15`): E4M3 with bias 15, the exponent range of float16, and no
  special values at all: every code is a finite number (0x7F is 1.875), as Triton's conversion
  to float16 reads it (the code's bits moved into float16's: exact).

Conversions, the same on every backend (the MSL helpers in `templates/helpers/fp8.metal` do
these steps on `uchar`):
* fp8 -> float32 is exact (every fp8 value is a float32); a NaN comes out as float32's quiet NaN
  with the code's sign bit (positive for the FNUZ formats' 0x80);
* float32 -> fp8 rounds to nearest, ties to even (or toward zero with `rtz`), and saturates as
  NVIDIA's `cvt.rn.satfinite` (which Triton emits for these conversions): a finite value past
  the largest finite fp8 value, and an infinity, become that value with the sign kept; NaN
  becomes the format's NaN (0x7F, or 0x80 for the FNUZ formats); the FNUZ formats turn -0 into +0.
Wider types (fp16, bf16) convert through float32, which is exact, so they round once.

`fp8e4b15` follows Triton's own conversion instead (NVIDIA's `Fp16_to_Fp8E4M3B15`, reached from
float32 through float16): float32 -> float16 (to nearest even, or toward zero with `rtz`), then
the magnitude clamps to 1.75 (code 0x7E: a NaN and the infinities give 1.75 with their sign)
and rounds to 3 mantissa bits to nearest, ties away from zero; the sign is kept (-0 included).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FN, IEEE, FNUZ, B15 = 0, 1, 2, 3
"""Kinds of special values: no infinities and NaN = all ones (FN); IEEE infinities and NaNs;
no infinities, no -0 and NaN = 0x80 (FNUZ); none, with Triton's float16-based rounding (B15)."""

B15_MAX_F16 = 0x3F00
"""The float16 bits of 1.75, the largest value a conversion to fp8e4b15 gives (code 0x7E)."""


@dataclass(frozen=True)
class Fp8Format:
    name: str
    mantissa_bits: int
    bias: int
    kind: int

    @property
    def exponent_bits(self) -> int:
        return 7 - self.mantissa_bits

    @property
    def max_code(self) -> int:
        """The magnitude code (low 7 bits) of the largest finite value."""
        if self.kind in (FN, B15):
            return 0x7E
        if self.kind == IEEE:
            return (((1 << self.exponent_bits) - 2) << self.mantissa_bits) | ((1 << self.mantissa_bits) - 1)
        return 0x7F

    @property
    def nan_code(self) -> int:
        return 0x80 if self.kind == FNUZ else 0x7F

    @property
    def emin(self) -> int:
        """The exponent of the smallest normal value (and the scale of the subnormals)."""
        return 1 - self.bias


FORMATS: dict[str, Fp8Format] = {
    f.name: f for f in (
        Fp8Format("fp8e4nv", 3, 7, FN),
        Fp8Format("fp8e5", 2, 15, IEEE),
        Fp8Format("fp8e4b8", 3, 8, FNUZ),
        Fp8Format("fp8e5b16", 2, 16, FNUZ),
        Fp8Format("fp8e4b15", 3, 15, B15),
    )
}
"""By Triton's dtype name (`tl.float8e4nv.name == "fp8e4nv"`)."""


def decode(codes: np.ndarray, fmt: Fp8Format) -> np.ndarray:
    """uint8 codes -> float32 values (exact)."""
    c = np.asarray(codes, dtype=np.uint8).astype(np.uint32)
    sign = c >> 7
    mag = c & 0x7F
    e = (mag >> fmt.mantissa_bits).astype(np.int32)
    m = (mag & ((1 << fmt.mantissa_bits) - 1)).astype(np.float64)
    normal = e > 0
    sig = np.where(normal, m + (1 << fmt.mantissa_bits), m)
    scale = np.where(normal, e, 1) - fmt.bias - fmt.mantissa_bits
    v = np.ldexp(sig, scale)
    emax = (1 << fmt.exponent_bits) - 1
    if fmt.kind == FN:
        v = np.where(mag == 0x7F, np.nan, v)
    elif fmt.kind == IEEE:
        v = np.where(e == emax, np.where(m == 0, np.inf, np.nan), v)
    v = np.where(sign == 1, -v, v)
    if fmt.kind == FNUZ:  # the one NaN, positive (its code's sign bit is not a sign)
        v = np.where(c == 0x80, np.nan, v)
    return v.astype(np.float32)


def encode(values: np.ndarray, fmt: Fp8Format, rtz: bool = False) -> np.ndarray:
    """float32 values -> uint8 codes: round to nearest even (or toward zero), saturating."""
    f = np.asarray(values, dtype=np.float32)
    if fmt.kind == B15:
        return _encode_b15(f, rtz)
    bits = f.view(np.uint32).astype(np.int64)
    sign = bits >> 31
    biased = (bits >> 23) & 0xFF
    # float32 subnormals are far below every fp8 quantum: they round to zero
    sig = np.where(biased == 0, 0, (bits & 0x7FFFFF) | 0x800000)
    exp = biased - 127
    e = np.maximum(exp, fmt.emin)
    shift = np.minimum(23 - fmt.mantissa_bits + (e - exp), 40)  # >= 20; past 26 the value is 0
    q = sig >> shift
    if not rtz:
        rem = sig & ((np.int64(1) << shift) - 1)
        half = np.int64(1) << (shift - 1)
        q = q + ((rem > half) | ((rem == half) & ((q & 1) == 1)))
    mag = ((e - fmt.emin) << fmt.mantissa_bits) + q
    mag = np.where((mag > fmt.max_code) | (biased == 0xFF), fmt.max_code, mag)
    out = (sign << 7) | mag
    if fmt.kind == FNUZ:
        out = np.where(mag == 0, 0, out)
    out = np.where(np.isnan(f), fmt.nan_code, out)
    return out.astype(np.uint8)


def encode_scalar(value: float, fmt: Fp8Format, rtz: bool = False) -> int:
    """One float (rounded to float32 first) -> its code."""
    return int(encode(np.array([value], dtype=np.float32), fmt, rtz)[0])


def _to_float16(f: np.ndarray, rtz: bool) -> np.ndarray:
    """float32 -> float16 to nearest even, or toward zero (one step back where that rounded
    away from zero; past float16's range that is its largest finite value)."""
    h = f.astype(np.float16)
    if rtz:
        away = np.isfinite(f) & (np.abs(h.astype(np.float32)) > np.abs(f))
        h = np.where(away, np.nextafter(h, np.float16(0)), h)
    return h


def _encode_b15(f: np.ndarray, rtz: bool) -> np.ndarray:
    """float32 -> fp8e4b15 codes through float16 (the module docstring)."""
    bits = _to_float16(f, rtz).view(np.uint16).astype(np.uint32)
    # NaN and infinity magnitudes lie above 1.75's as integers too: they clamp to it
    mag = np.minimum(bits & 0x7FFF, B15_MAX_F16)
    return (((bits >> 8) & 0x80) | ((mag + 0x40) >> 7)).astype(np.uint8)


SCALED_FORMATS = ("e2m1", "e4m3", "e5m2", "bf16", "fp16")
"""`tl.dot_scaled` operand formats, as Triton names them (e2m1: two 4-bit values per byte)."""


def scaled_extent(shape: tuple[int, ...] | list[int], fmt: str, pack_axis: int) -> tuple[int, int]:
    """[rows, columns] of elements of a `tl.dot_scaled` operand block (its last two axes): e2m1
    bytes hold two along `pack_axis` (0 the rows, 1 the columns)."""
    rows, cols = shape[-2], shape[-1]
    if fmt != "e2m1":
        return rows, cols
    return (2 * rows, cols) if pack_axis == 0 else (rows, 2 * cols)
