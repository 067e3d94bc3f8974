"""fp8 storage types: loads, stores and `.to()` on the emulator and in the interpreter, against a
float64 model of each format built here from its definition (sign, exponent, mantissa, bias,
special values), exhaustively over the 256 codes and over every fp16 and bf16 value."""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError


@dataclass(frozen=True)
class Model:
    """A format as its definition gives it: all 256 values as float64 (NaN where special)."""

    dtype: tl.dtype
    exponent_bits: int
    mantissa_bits: int
    bias: int
    special: str
    """"fn": no infinities, S.1111.111 is NaN; "ieee": all-ones exponent is inf/NaN;
    "fnuz": no infinities, no -0, 0x80 is the only NaN; "b15": none (Triton's fp8e4b15, every
    code a number; conversions to it as `encode_b15` below)."""

    def values(self) -> np.ndarray:
        out = np.empty(256, np.float64)
        top = (1 << self.exponent_bits) - 1
        for code in range(256):
            sign = -1.0 if code & 0x80 else 1.0
            e = (code >> self.mantissa_bits) & top
            m = code & ((1 << self.mantissa_bits) - 1)
            if e == 0:
                v = math.ldexp(m / (1 << self.mantissa_bits), 1 - self.bias)
            else:
                v = math.ldexp(1 + m / (1 << self.mantissa_bits), e - self.bias)
            if self.special == "fn" and code & 0x7F == 0x7F:
                v = math.nan
            elif self.special == "ieee" and e == top:
                v = math.inf if m == 0 else math.nan
            elif self.special == "fnuz" and code == 0x80:
                v = math.nan
            out[code] = sign * v
        return out

    def encode(self, x: np.ndarray, rtz: bool = False) -> np.ndarray:
        """Nearest value (ties to the even code), or the one toward zero; saturating at the
        largest finite value (infinities too); NaN -> the format's NaN."""
        if self.special == "b15":
            return self.encode_b15(x, rtz)
        vals = self.values()
        mags = [(vals[c], c) for c in range(128) if math.isfinite(vals[c])]
        mags.sort()
        top_value, top_code = mags[-1]
        out = np.empty(x.shape, np.uint8)
        with np.errstate(invalid="ignore"):  # signalling NaNs among the inputs
            wide = x.astype(np.float64).reshape(-1)
        for i, v in enumerate(wide):
            if math.isnan(v):
                out.reshape(-1)[i] = 0x80 if self.special == "fnuz" else 0x7F
                continue
            a = abs(v)
            if a >= top_value:
                code = top_code
            else:
                j = next(k for k in range(len(mags)) if mags[k][0] > a)  # mags[j-1] <= a < mags[j]
                (lo, lo_code), (hi, hi_code) = mags[j - 1], mags[j]
                if rtz or a - lo < hi - a:
                    code = lo_code
                elif a - lo > hi - a:
                    code = hi_code
                else:
                    code = lo_code if lo_code % 2 == 0 else hi_code
            negative = math.copysign(1.0, v) < 0
            if negative and not (self.special == "fnuz" and code == 0):
                code |= 0x80
            out.reshape(-1)[i] = code
        return out


    def encode_b15(self, x: np.ndarray, rtz: bool) -> np.ndarray:
        """Triton's conversion to fp8e4b15 (NVIDIA's `Fp16_to_Fp8E4M3B15` after float32 ->
        float16): the float16 value (nearest even, or toward zero) clamped to 1.75 (NaN and
        infinities too), then the nearest code, ties away from zero; the sign kept."""
        mags = list(self.values()[:0x7F])  # codes 0 .. 0x7E: increasing magnitudes
        out = np.empty(x.shape, np.uint8)
        with np.errstate(invalid="ignore"):
            wide = x.astype(np.float64).reshape(-1)
        for i, v in enumerate(wide):
            a = abs(v)
            if math.isfinite(a) and a > 0:  # float16: 11 significant bits, subnormal below 2^-14
                ulp = math.ldexp(1.0, max(math.frexp(a)[1] - 1, -14) - 10)
                a = (math.floor(a / ulp) if rtz else round(a / ulp)) * ulp  # round(): ties to even
            if not a < 1.75:
                code = 0x7E
            else:
                hi = bisect.bisect_left(mags, a)  # mags[hi - 1] < a <= mags[hi]
                code = hi if hi == 0 or mags[hi] - a <= a - mags[hi - 1] else hi - 1
            out.reshape(-1)[i] = code | (0x80 if math.copysign(1.0, v) < 0 else 0)
        return out


MODELS = {
    "e4nv": Model(tl.float8e4nv, 4, 3, 7, "fn"),
    "e5": Model(tl.float8e5, 5, 2, 15, "ieee"),
    "e4b8": Model(tl.float8e4b8, 4, 3, 8, "fnuz"),
    "e5b16": Model(tl.float8e5b16, 5, 2, 16, "fnuz"),
    "e4b15": Model(tl.float8e4b15, 4, 3, 15, "b15"),
}
CODES = np.arange(256, dtype=np.uint8)


@triton.jit
def convert_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, RTZ: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if RTZ:
        y = x.to(out_ptr.dtype.element_ty, fp_downcast_rounding="rtz")
    else:
        y = x.to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + offs, y, mask=mask)


def _convert(x: object, out: object, n: int, rtz: bool = False) -> None:
    convert_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024, RTZ=rtz)


def test_models_agree_with_tritons_dtype_attributes():
    for model in MODELS.values():
        assert model.dtype.fp_mantissa_width == model.mantissa_bits
        assert model.dtype.exponent_bias == model.bias
        assert model.dtype.primitive_bitwidth == 8
    finite = {k: np.nanmax(np.where(np.isinf(m.values()), np.nan, m.values())) for k, m in MODELS.items()}
    assert finite == {"e4nv": 448.0, "e5": 57344.0, "e4b8": 240.0, "e5b16": 57344.0, "e4b15": 1.875}


@pytest.mark.parametrize("fmt", list(MODELS))
def test_every_code_converts_to_float32_exactly(each_backend: str, fmt: str):
    model = MODELS[fmt]
    out = np.full(256, 7.0, np.float32)
    _convert(triton.reinterpret(CODES, model.dtype), out, 256)
    np.testing.assert_array_equal(out.astype(np.float64), model.values())
    # signs of zeros and NaNs: -0 for 0x80 of the formats that have it; a NaN is float32's
    # quiet NaN with the code's sign (the FNUZ NaN 0x80 positive)
    bits = out.view(np.uint32)
    assert (bits[0x80] == 0x80000000) == (model.special != "fnuz")
    for code in np.flatnonzero(np.isnan(model.values())):
        negative = code >= 0x80 and model.special != "fnuz"
        assert bits[code] == (0xFFC00000 if negative else 0x7FC00000), hex(code)


@pytest.mark.parametrize("fmt", ["e4nv", "e5", "e4b15"])
@pytest.mark.parametrize("wide", ["f16", "bf16"])
def test_every_code_converts_to_half_and_bfloat_exactly(each_backend: str, fmt: str, wide: str):
    model = MODELS[fmt]
    out16 = np.zeros(256, np.uint16)
    out = out16.view(np.float16) if wide == "f16" else triton.reinterpret(out16, tl.bfloat16)
    _convert(triton.reinterpret(CODES, model.dtype), out, 256)
    ref = model.values()
    if wide == "f16":
        got = out16.view(np.float16).astype(np.float64)
    else:
        got = (out16.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    np.testing.assert_array_equal(got, ref)


def _float32_inputs(model: Model) -> np.ndarray:
    """Every value, every midpoint (the ties) and the float32 neighbours of both, past the
    largest value, infinities, NaN, signed zeros, float32 subnormals, and random values over
    the whole range, with both signs."""
    vals = np.sort(np.unique(np.abs(model.values()[np.isfinite(model.values())])))
    mids = (vals[:-1] + vals[1:]) / 2
    top = vals[-1]
    pts = np.concatenate([vals, mids, [top + (top - vals[-2]) / 2, top * 2, 1e30, np.inf, 0.0, 1e-40, 1e-45]])
    p32 = pts.astype(np.float32)
    around = np.concatenate([p32, np.nextafter(p32, np.float32(np.inf)), np.nextafter(p32, np.float32(0))])
    rng = np.random.default_rng(1)
    rand = (rng.standard_normal(2000) * np.exp2(rng.integers(-20, 18, 2000))).astype(np.float32)
    both = np.concatenate([around, rand])
    return np.concatenate([both, -both, [np.nan, -np.nan]]).astype(np.float32)


@pytest.mark.parametrize("fmt", list(MODELS))
def test_float32_rounds_to_nearest_even_and_saturates(each_backend: str, fmt: str):
    model = MODELS[fmt]
    x = _float32_inputs(model)
    out = np.zeros(x.size, np.uint8)
    _convert(x, triton.reinterpret(out, model.dtype), x.size)
    np.testing.assert_array_equal(out, model.encode(x))


@pytest.mark.parametrize("fmt", ["e4nv", "e5", "e4b15"])
def test_float32_rounds_toward_zero(each_backend: str, fmt: str):
    model = MODELS[fmt]
    x = _float32_inputs(model)
    out = np.zeros(x.size, np.uint8)
    _convert(x, triton.reinterpret(out, model.dtype), x.size, rtz=True)
    np.testing.assert_array_equal(out, model.encode(x, rtz=True))


@pytest.mark.parametrize("fmt", ["e4nv", "e5", "e4b15"])
@pytest.mark.parametrize("wide", ["f16", "bf16"])
def test_every_half_and_bfloat_value_rounds_once(each_backend: str, fmt: str, wide: str):
    model = MODELS[fmt]
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    if wide == "f16":
        x = bits.view(np.float16)
        src: object = x
        values = x.astype(np.float32)
    else:
        src = triton.reinterpret(bits, tl.bfloat16)
        values = (bits.astype(np.uint32) << 16).view(np.float32)
    out = np.zeros(bits.size, np.uint8)
    _convert(src, triton.reinterpret(out, model.dtype), bits.size)
    np.testing.assert_array_equal(out, _fast_encode(model, values))


def _fast_encode(model: Model, x: np.ndarray) -> np.ndarray:
    """`model.encode` for many values: the unique inputs through the model, then spread back."""
    uniq, inverse = np.unique(x.view(np.uint32), return_inverse=True)
    return model.encode(uniq.view(np.float32))[inverse.reshape(x.shape)]


@triton.jit
def fp8_ops_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.3)  # other: a constant converted to fp8
    big = tl.full([BLOCK], 1000.0, out_ptr.dtype.element_ty)  # saturates
    y = tl.where(offs % 3 == 0, x, big)
    y = tl.where(offs == 7, -3.3, y)  # a number beside an fp8 block becomes fp8
    tl.store(out_ptr + offs, tl.where(offs % 5 == 0, y, tl.flip(y, 0)))


@pytest.mark.parametrize("fmt", ["e4nv", "e5b16"])
def test_select_flip_masked_load_and_constants(each_backend: str, fmt: str):
    model = MODELS[fmt]
    codes = np.random.default_rng(2).integers(0, 256, 64).astype(np.uint8)
    out = np.zeros(64, np.uint8)
    fp8_ops_kernel[(1,)](triton.reinterpret(codes, model.dtype), triton.reinterpret(out, model.dtype), 40, BLOCK=64)
    other, big, seven = model.encode(np.array([0.3, 1000.0, -3.3], np.float32))
    offs = np.arange(64)
    x = np.where(offs < 40, codes, other)
    y = np.where(offs % 3 == 0, x, big)
    y = np.where(offs == 7, seven, y)
    np.testing.assert_array_equal(out, np.where(offs % 5 == 0, y, y[::-1]))


def test_torch_float8_tensors(each_backend: str):
    torch = pytest.importorskip("torch")
    x = torch.randn(300) * 50
    out = torch.zeros(300, dtype=torch.float8_e4m3fn)
    _convert(x, out, 300)
    # torch's own float32 -> e4m3fn conversion rounds to nearest even; it saturates only at
    # NaN (its overflow gives NaN), so compare where |x| stays in range
    inside = x.abs() <= 448
    np.testing.assert_array_equal(out.view(torch.uint8).numpy()[inside.numpy()],
                                  x.to(torch.float8_e4m3fn).view(torch.uint8).numpy()[inside.numpy()])
    back = torch.zeros(300)
    _convert(out, back, 300)
    np.testing.assert_array_equal(back.numpy(), out.to(torch.float32).numpy())


@triton.jit
def fp8_abs_kernel(x_ptr, out_ptr):
    offs = tl.arange(0, 256)
    tl.store(out_ptr + offs, tl.abs(tl.load(x_ptr + offs)))


@pytest.mark.parametrize("fmt", list(MODELS))
def test_abs_of_every_code(each_backend: str, fmt: str):
    # Triton takes `tl.abs` of fp8 values (no other arithmetic): the magnitude, as a code of the
    # same format; a NaN stays NaN (the FNUZ NaN 0x80 too, whose sign bit is no sign)
    model = MODELS[fmt]
    out = np.zeros(256, np.uint8)
    fp8_abs_kernel[(1,)](triton.reinterpret(CODES, model.dtype), triton.reinterpret(out, model.dtype))
    np.testing.assert_array_equal(model.values()[out], np.abs(model.values()))
    assert not np.any(out[~np.isnan(model.values())] & 0x80)


@triton.jit
def fp8_mixed_kernel(x_ptr, y_ptr, out_ptr):
    offs = tl.arange(0, 256)
    z = tl.load(x_ptr + offs) * tl.load(y_ptr + offs)
    tl.static_assert(z.dtype == out_ptr.dtype.element_ty)
    tl.store(out_ptr + offs, z)


@pytest.mark.parametrize("fmt, other, result", [
    ("e5", "f32", "f32"), ("e4b15", "f16", "f16"), ("e4b8", "bf16", "f32"), ("e4nv", "e5", "f16"),
])
def test_fp8_beside_a_wider_type_computes_in_tritons_type(each_backend: str, fmt: str, other: str, result: str):
    # Triton's computation types: fp8 with fp32 or bf16 -> fp32, with fp16 -> fp16, two fp8
    # types -> fp16; the fp8 values convert exactly, so the product rounds once
    rng = np.random.default_rng(4)
    x = MODELS[fmt].values()
    if other in MODELS:
        y_codes = rng.integers(0, 256, 256).astype(np.uint8)
        y_arg: object = triton.reinterpret(y_codes, MODELS[other].dtype)
        y = MODELS[other].values()[y_codes]
    elif other == "bf16":
        y_bits = (rng.standard_normal(256).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        y_arg, y = triton.reinterpret(y_bits, tl.bfloat16), (y_bits.astype(np.uint32) << 16).view(np.float32)
    else:
        y_arg = y = rng.standard_normal(256).astype(np.float16 if other == "f16" else np.float32)
    out = np.zeros(256, np.float16 if result == "f16" else np.float32)
    fp8_mixed_kernel[(1,)](triton.reinterpret(CODES, MODELS[fmt].dtype), y_arg, out)
    with np.errstate(invalid="ignore", over="ignore"):
        want = (x.astype(out.dtype) * np.asarray(y, np.float64).astype(out.dtype)).astype(out.dtype)
    np.testing.assert_array_equal(out, want)


@triton.jit
def fp8_add_kernel(x_ptr, out_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(out_ptr + tl.arange(0, 16), x + x)  # error


def test_arithmetic_is_refused_with_a_hint(each_backend: str):
    codes = np.zeros(16, np.uint8)
    with pytest.raises(CompilationError) as info:
        fp8_add_kernel[(1,)](triton.reinterpret(codes, tl.float8e5), triton.reinterpret(codes.copy(), tl.float8e5))
    text = str(info.value)
    assert "arithmetic on fp8e5 values is not supported" in text and "x + x" in text and "x.to(tl.float32)" in text


def test_reinterpret_checks_the_element_size_and_refuses_mlx():
    with pytest.raises(ValueError, match="1-byte elements"):
        triton.reinterpret(np.zeros(4, np.float16), tl.float8e4nv)
    mx = pytest.importorskip("mlx.core")
    with pytest.raises(TypeError, match="bitcast them in the kernel"):
        triton.reinterpret(mx.zeros((4,), mx.uint8), tl.float8e5)


@triton.jit
def mlx_codes_kernel(codes_ptr, x_ptr, decoded_ptr, encoded_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    # MLX keeps e4m3 as uint8 codes (mx.to_fp8): a bitcast in the kernel makes them fp8
    codes = tl.load(codes_ptr + offs).to(tl.float8e4nv, bitcast=True)
    tl.store(decoded_ptr + offs, codes.to(tl.float32))
    tl.store(encoded_ptr + offs, tl.load(x_ptr + offs).to(tl.float8e4nv).to(tl.uint8, bitcast=True))


def test_e4m3_agrees_with_mlx_to_fp8_and_from_fp8(each_backend: str):
    mx = pytest.importorskip("mlx.core")
    x = _float32_inputs(MODELS["e4nv"])[:4096]
    x = x[~np.isnan(x)]  # MLX's to_fp8 gives 0x7E for NaN (saturates it); ours gives NaN (0x7F)
    x = np.resize(x, 4096).astype(np.float32)
    codes = np.arange(4096, dtype=np.uint32).astype(np.uint8)
    decoded, encoded = np.zeros(4096, np.float32), np.zeros(4096, np.uint8)
    mlx_codes_kernel[(1,)](mx.array(codes), x, decoded, encoded, BLOCK=4096)
    np.testing.assert_array_equal(decoded, np.array(mx.from_fp8(mx.array(codes), dtype=mx.float32)))
    np.testing.assert_array_equal(encoded, np.array(mx.to_fp8(mx.array(x))))


@triton.jit
def fp8_print_kernel(x_ptr, HEX: tl.constexpr):
    tl.device_print("v", tl.load(x_ptr + tl.arange(0, 4)), hex=HEX)


@pytest.mark.parametrize("hex_", [False, True])
def test_device_print_shows_values_or_codes(each_backend: str, hex_: bool, capfd: pytest.CaptureFixture[str]):
    codes = np.array([0x38, 0x40, 0xB8, 0x7F], np.uint8)  # e4m3: 1, 2, -1, NaN
    fp8_print_kernel[(1,)](triton.reinterpret(codes, tl.float8e4nv), HEX=hex_)
    text = capfd.readouterr()
    lines = [ln.split("v: ")[1] for ln in (text.out + text.err).splitlines() if "v: " in ln]
    assert lines == (["0x38", "0x40", "0xb8", "0x7f"] if hex_ else ["1.000000", "2.000000", "-1.000000", "nan"])
