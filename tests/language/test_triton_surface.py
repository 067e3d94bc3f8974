"""`triton_metal.language` against the public surface of Triton 3.9.0's `triton.language`.

The names and dtype facts are data read from the released wheel (see the header of each file in
`data/`). Every Triton name is either present here or listed in `REFUSED` with the reason; a
refused name that appears later, or a present one listed as refused, fails the test, so the list
cannot go stale.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import triton_metal.language as tl

DATA = Path(__file__).parent / "data"

REFUSED: dict[str, str] = {
    "slice": "Triton's IR value type for slices; kernels index with Python slices "
    "(x[:, None], x[None, :]), which work on both backends",
    "target_info": "queries of NVIDIA/AMD targets (is_cuda, cuda_capability_geq, is_hip_cdna3, ...); "
    "no NVIDIA or AMD target exists on Apple GPUs",
}
"""Triton 3.9.0 names this package does not have, and why."""

def _lines(name: str) -> list[list[str]]:
    out = []
    for line in (DATA / name).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out.append(line.split())
    return out


TRITON_NAMES = [row[0] for row in _lines("triton_3_9_0_language_names.txt")]
DTYPE_ROWS = _lines("triton_3_9_0_dtype.txt")


def test_the_name_list_is_the_whole_surface() -> None:
    assert len(TRITON_NAMES) == 150 and len(set(TRITON_NAMES)) == 150
    assert {"dtype", "load", "store", "dot", "extra", "math"} <= set(TRITON_NAMES)


@pytest.mark.parametrize("name", TRITON_NAMES)
def test_every_triton_name_is_present_or_refused_with_a_reason(name: str) -> None:
    if name in REFUSED:
        assert not hasattr(tl, name), f"tl.{name} now exists: drop it from REFUSED"
        assert len(REFUSED[name]) > 20
    else:
        assert hasattr(tl, name), f"tl.{name} is missing and not in REFUSED"


def test_refusal_list_names_only_triton_names() -> None:
    assert set(REFUSED) <= set(TRITON_NAMES)


_LIBDEVICE = ("tanh sinh cosh tan asin acos atan asinh acosh atanh log10 trunc rint nearbyint round exp exp2 "
              "log log2 sqrt rsqrt sin cos erf floor ceil fabs abs fma pow powf fmod fmin fmax isnan isinf "
              "div_rn sqrt_rn fast_dividef finitef fast_expf fast_logf fast_log2f fast_sinf fast_cosf fast_tanf").split()


@pytest.mark.parametrize("name", _LIBDEVICE)
def test_libdevice_function_exists_with_a_docstring(name: str) -> None:
    fn = getattr(tl.extra.libdevice, name)
    assert callable(fn) and "libdevice" in (fn.__doc__ or ""), name


def test_libdevice_functions_compute_what_numpy_computes(run) -> None:
    ld = tl.extra.libdevice

    def kernel(x_ptr, y_ptr, out_ptr, flags_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        y = tl.load(y_ptr + offs)
        rows = [ld.exp(x), ld.log(ld.fabs(x) + 1), ld.sqrt(ld.abs(x)), ld.rsqrt(ld.fabs(x) + 1),
                ld.fma(x, y, 0.5), ld.fmin(x, y), ld.fmax(x, y), ld.div_rn(x, y + 4.0),
                ld.floor(x * 3), ld.ceil(x * 3), ld.erf(x), ld.fast_expf(x), ld.nearbyint(x * 3),
                ld.fast_dividef(x, y + 4.0)]
        for i in tl.static_range(14):
            tl.store(out_ptr + i * BLOCK + offs, rows[i])
        z = x / (x - x)  # nan at 0, +-inf elsewhere
        tl.store(flags_ptr + offs, ld.isnan(z).to(tl.int32) + 2 * ld.isinf(z).to(tl.int32)
                 + 4 * ld.finitef(x / z).to(tl.int32))

    x = np.linspace(-1.5, 1.5, 16).astype(np.float32)
    x[7] = 0.0
    y = np.linspace(1.0, -1.0, 16).astype(np.float32)
    out = np.zeros((14, 16), np.float32)
    flags = np.zeros(16, np.int32)
    with np.errstate(divide="ignore", invalid="ignore"):
        run(kernel, x_ptr=x, y_ptr=y, out_ptr=out, flags_ptr=flags, BLOCK=16)
    from math import erf

    a, b = x.astype(np.float64), y.astype(np.float64)
    expected = np.stack([np.exp(a), np.log(np.abs(a) + 1), np.sqrt(np.abs(a)), 1 / np.sqrt(np.abs(a) + 1),
                         a * b + 0.5, np.fmin(a, b), np.fmax(a, b), a / (b + 4), np.floor(a * 3),
                         np.ceil(a * 3), [erf(v) for v in a], np.exp(a), np.rint(a * 3), a / (b + 4)])
    np.testing.assert_allclose(out, expected.astype(np.float32), rtol=2e-6, atol=2e-6)
    # x / z: nan at 0 (0 / nan), +-0 elsewhere (finite)
    np.testing.assert_array_equal(flags, np.where(x == 0, 1, 2 + 4))


def test_libdevice_refuses_what_msl_lacks_with_an_alternative() -> None:
    from triton_metal.errors import UnsupportedLanguageConstruct

    with pytest.raises(UnsupportedLanguageConstruct, match="no such function") as info:
        tl.extra.libdevice.log1p
    assert "tl.log(1 + x)" in str(info.value)
    with pytest.raises(UnsupportedLanguageConstruct, match="no such function"):
        tl.extra.libdevice.lgamma


# -- tl.dtype -------------------------------------------------------------------------------------

_BY_NAME = {v.name: v for v in vars(tl).values() if isinstance(v, tl.dtype) and not v.is_ptr()}


@pytest.mark.parametrize("member", [r[1] for r in DTYPE_ROWS if r[0] == "member"])
def test_dtype_member(member: str) -> None:
    assert hasattr(tl.dtype, member) or hasattr(tl.int32, member), member


@pytest.mark.parametrize("row", [r for r in DTYPE_ROWS if r[0] == "list"], ids=lambda r: r[1])
def test_dtype_class_lists(row: list[str]) -> None:
    assert list(getattr(tl.dtype, row[1])) == row[2:]


@pytest.mark.parametrize("row", [r for r in DTYPE_ROWS if r[0] == "format"], ids=lambda r: r[1])
def test_dtype_format(row: list[str]) -> None:
    _, name, bits, itemsize, mantissa, bias = row
    ty = _BY_NAME[name]
    assert ty.primitive_bitwidth == int(bits)
    assert ty.itemsize == int(itemsize)
    if mantissa == "-":
        assert not hasattr(ty, "fp_mantissa_width") and not hasattr(ty, "exponent_bias")
        assert ty.is_int() and ty.int_bitwidth == int(bits)
        assert ty.int_signedness == (
            tl.dtype.SIGNEDNESS.SIGNED if name in tl.dtype.SINT_TYPES else tl.dtype.SIGNEDNESS.UNSIGNED
        )
    else:
        assert (ty.fp_mantissa_width, ty.exponent_bias) == (int(mantissa), int(bias))
        assert ty.is_floating() and not ty.is_int()
        assert ty.is_fp8() == name.startswith("fp8")
        assert ty.is_standard_floating() == (name in tl.dtype.STANDARD_FP_TYPES)


_PREDICATES = ["int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "fp16", "bf16", "fp32", "fp64", "fp8e4nv", "fp8e4b8", "fp8e4b15", "fp8e5", "fp8e5b16"]


@pytest.mark.parametrize("name", sorted(_BY_NAME))
def test_each_is_predicate_answers_for_its_own_dtype_only(name: str) -> None:
    ty = _BY_NAME[name]
    for other in _PREDICATES:
        assert getattr(ty, f"is_{other}")() == (other == name), (name, other)
    assert ty.kind() == (
        tl.dtype.KIND.BOOLEAN if name == "int1" else
        tl.dtype.KIND.INTEGRAL if ty.is_int() else
        tl.dtype.KIND.FLOATING if ty.is_floating() else None
    ) or name == "void"


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"])
def test_integer_limits_match_numpy(name: str) -> None:
    info = np.iinfo(np.dtype(name))
    assert (_BY_NAME[name].get_int_min_value(), _BY_NAME[name].get_int_max_value()) == (info.min, info.max)


@pytest.mark.parametrize("name", sorted(_BY_NAME))
def test_dtype_equals_its_constexpr_both_ways(name: str) -> None:
    ty = _BY_NAME[name]
    assert ty == tl.constexpr(ty)
    assert tl.constexpr(ty) == ty
    assert not (ty != tl.constexpr(ty))
    assert ty != tl.constexpr(tl.int32 if name != "int32" else tl.int64)


def test_codegen_names_are_the_public_names() -> None:
    for name, ty in _BY_NAME.items():
        assert getattr(tl, ty.codegen_name()) == ty, name


def test_str_to_ty_reads_signature_strings() -> None:
    assert tl.str_to_ty("fp32") == tl.float32
    assert tl.str_to_ty("i64") == tl.int64 and tl.str_to_ty("u8") == tl.uint8
    assert tl.str_to_ty("B") == tl.int1
    ptr = tl.str_to_ty("*kfp16")
    assert ptr.is_ptr() and ptr.element_ty == tl.float16 and ptr.const
    assert tl.str_to_ty("constexpr", 3) == tl.constexpr_type(3) != tl.constexpr_type(4)
