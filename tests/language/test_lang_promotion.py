"""Type promotion and operand checks of the semantic layer, against triton-semantics' rules.

The semantic layer is exercised over a builder that records calls and computes nothing, so these
tests check typing only (the interpreter tests check values)."""

from __future__ import annotations

from typing import Any

import pytest

import triton_metal.language as tl
from triton_metal.errors import CompilationError
from triton_metal.language import Semantic, tensor
from triton_metal.language.builder import BinaryOp, CastKind


class RecordingBuilder:
    """Every create_* returns an opaque token and is logged."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, name: str) -> Any:
        def method(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, args))
            return object()

        return method


def sem() -> Semantic:
    return Semantic(RecordingBuilder())


def t(ty: tl.dtype, shape: tuple[int, ...] = (8,)) -> tensor:
    return tensor(object(), tl.block_type(ty, shape) if shape else ty)


T = {
    "i1": tl.int1, "i8": tl.int8, "i16": tl.int16, "i32": tl.int32, "i64": tl.int64,
    "u8": tl.uint8, "u16": tl.uint16, "u32": tl.uint32, "u64": tl.uint64,
    "f16": tl.float16, "bf16": tl.bfloat16, "f32": tl.float32,
}

# (a, b, result of a + b): kinds bool < int < float, wider wins, same width signed+unsigned ->
# unsigned, fp16 with bf16 -> fp16, bf16 with a non-float -> fp32.
TENSOR_PAIRS = [
    ("i8", "i16", "i16"), ("i32", "i64", "i64"), ("u8", "u16", "u16"),
    ("i32", "u32", "u32"), ("i64", "u32", "i64"), ("u8", "i32", "i32"), ("u64", "i64", "u64"),
    ("i1", "i8", "i8"), ("i1", "i1", "i1"), ("i1", "f16", "f16"),
    ("f16", "f32", "f32"), ("f16", "bf16", "f16"), ("bf16", "bf16", "bf16"),
    ("bf16", "f32", "f32"), ("bf16", "i32", "f32"), ("f16", "i32", "f16"), ("i64", "f16", "f16"),
]


@pytest.mark.parametrize(("a", "b", "expected"), TENSOR_PAIRS)
def test_tensor_tensor_promotion(a: str, b: str, expected: str) -> None:
    s = sem()
    assert s.add(t(T[a]), t(T[b])).dtype == T[expected]
    assert s.add(t(T[b]), t(T[a])).dtype == T[expected]


# (tensor, python scalar, result): a scalar of the same or a lower kind is weak
SCALAR_CASES = [
    ("u8", 1, "u8"), ("i8", 100, "i8"), ("i16", 4.0, "f32"), ("f16", 2.0, "f16"), ("bf16", 2, "bf16"),
    ("i32", True, "i32"), ("f16", 3, "f16"), ("u32", 2**32 - 1, "u32"), ("i64", -(2**40), "i64"),
    ("i1", 1, "i32"), ("i1", 1.5, "f32"),
]


@pytest.mark.parametrize(("a", "scalar", "expected"), SCALAR_CASES)
def test_weak_scalar_promotion(a: str, scalar: Any, expected: str) -> None:
    s = sem()
    assert s.mul(t(T[a]), scalar).dtype == T[expected]
    assert s.mul(scalar, t(T[a])).dtype == T[expected]


def test_division_rules() -> None:
    s = sem()
    assert s.truediv(t(tl.int32), t(tl.int32)).dtype == tl.float32
    assert s.truediv(t(tl.int8), 2).dtype == tl.float32
    assert s.truediv(t(tl.float16), t(tl.float16)).dtype == tl.float32  # no native fp16 divide
    assert s.truediv(t(tl.float16), 2.0).dtype == tl.float32
    assert s.truediv(t(tl.float32), t(tl.float16)).dtype == tl.float32
    assert s.floordiv(t(tl.int16), t(tl.int8)).dtype == tl.int16
    assert s.mod(t(tl.float32), 3.0).dtype == tl.float32
    assert s.mod(t(tl.uint32), t(tl.uint8)).dtype == tl.uint32


def test_division_with_mixed_signedness_is_refused() -> None:
    with pytest.raises(CompilationError, match="different signedness"):
        sem().floordiv(t(tl.int32), t(tl.uint32))
    with pytest.raises(CompilationError, match="different signedness"):
        sem().mod(t(tl.int8), t(tl.uint8))


def test_floordiv_on_floats_is_refused() -> None:
    with pytest.raises(CompilationError, match="// is defined on integers only"):
        sem().floordiv(t(tl.float32), 2.0)


def test_scalar_out_of_range_and_negative_unsigned() -> None:
    with pytest.raises(CompilationError, match="Scalar 300 is out of range for type int8"):
        sem().add(t(tl.int8), 300)
    with pytest.raises(CompilationError, match="between an unsigned tensor and a negative scalar"):
        sem().add(t(tl.uint8), -1)


def test_python_int_types_by_value() -> None:
    s = sem()
    assert s.to_tensor(5).dtype == tl.int32
    assert s.to_tensor(2**31).dtype == tl.uint32
    assert s.to_tensor(2**32).dtype == tl.int64
    assert s.to_tensor(2**63).dtype == tl.uint64
    assert s.to_tensor(True).dtype == tl.int1
    assert s.to_tensor(1.5).dtype == tl.float32


def test_float_too_small_for_fp32_would_need_fp64_and_is_refused() -> None:
    with pytest.raises(CompilationError, match="no fp64"):
        sem().to_tensor(1e-300)
    # with a float tensor the scalar is weak and takes the tensor's type
    assert sem().mul(t(tl.float32), 1e-300).dtype == tl.float32


def test_broadcasting_shapes() -> None:
    s = sem()
    assert s.add(t(tl.float32, (4, 1)), t(tl.float32, (1, 8))).type.shape == (4, 8)
    assert s.add(t(tl.float32, (8,)), t(tl.float32, (4, 8))).type.shape == (4, 8)
    assert s.add(t(tl.float32, (4, 8)), t(tl.float32, ())).type.shape == (4, 8)
    with pytest.raises(CompilationError, match="Cannot make_shape_compatible: incompatible dimensions"):
        s.add(t(tl.float32, (4,)), t(tl.float32, (8,)))


def test_pointer_arithmetic() -> None:
    s = sem()
    p = t(tl.pointer_type(tl.float32))
    assert s.add(p, t(tl.int32)).dtype == tl.pointer_type(tl.float32)
    assert s.add(t(tl.int64), p).dtype == tl.pointer_type(tl.float32)
    assert s.sub(p, 3).dtype == tl.pointer_type(tl.float32)
    with pytest.raises(CompilationError, match="invalid operands of type .*: a pointer cannot be offset by a float"):
        s.add(p, t(tl.float32))
    with pytest.raises(CompilationError, match="cannot add pointers together"):
        s.add(p, p)
    with pytest.raises(CompilationError, match="invalid operands"):
        s.sub(p, p)


def test_comparisons_give_int1_and_pick_the_signedness() -> None:
    b = RecordingBuilder()
    s = Semantic(b)
    r = s.less_than(t(tl.uint32), 5)
    assert r.dtype == tl.int1 and r.type.shape == (8,)
    assert [c for c in b.calls if c[0] == "create_cmp"][-1][1][0].value == "ult"
    s.less_than(t(tl.int32), 5)
    assert [c for c in b.calls if c[0] == "create_cmp"][-1][1][0].value == "slt"
    s.not_equal(t(tl.float32), 5.0)
    assert [c for c in b.calls if c[0] == "create_cmp"][-1][1][0].value == "une"


def test_shift_right_is_arithmetic_on_signed_logical_on_unsigned() -> None:
    b = RecordingBuilder()
    s = Semantic(b)
    s.shr(t(tl.int32), 1)
    s.shr(t(tl.uint32), 1)
    ops = [c[1][0] for c in b.calls if c[0] == "create_binary"]
    assert ops == [BinaryOp.ASHR, BinaryOp.LSHR]


def test_cast_kinds() -> None:
    cases = [
        (tl.float32, tl.float16, CastKind.FP_TRUNC), (tl.float16, tl.float32, CastKind.FP_EXT),
        (tl.int8, tl.int32, CastKind.INT_SEXT), (tl.uint8, tl.int32, CastKind.INT_ZEXT),
        (tl.int1, tl.int32, CastKind.INT_ZEXT), (tl.int64, tl.int16, CastKind.INT_TRUNC),
        (tl.float32, tl.int32, CastKind.FP_TO_SI), (tl.float32, tl.uint8, CastKind.FP_TO_UI),
        (tl.int32, tl.float32, CastKind.SI_TO_FP), (tl.uint32, tl.float32, CastKind.UI_TO_FP),
        (tl.int32, tl.uint32, CastKind.BITCAST),
    ]
    for src, dst, kind in cases:
        b = RecordingBuilder()
        out = Semantic(b).cast(t(src), dst)
        assert out.dtype == dst
        assert [c[1][1] for c in b.calls if c[0] == "create_cast"] == [kind], (src, dst)


def test_fp16_to_bf16_goes_through_fp32() -> None:
    b = RecordingBuilder()
    Semantic(b).cast(t(tl.float16), tl.bfloat16)
    assert [c[1][1] for c in b.calls if c[0] == "create_cast"] == [CastKind.FP_EXT, CastKind.FP_TRUNC]


def test_cast_to_bool_compares_with_zero() -> None:
    b = RecordingBuilder()
    assert Semantic(b).cast(t(tl.float32), tl.int1).dtype == tl.int1
    assert any(c[0] == "create_cmp" and c[1][0].value == "une" for c in b.calls)


def test_cast_refusals() -> None:
    with pytest.raises(CompilationError, match="no fp64"):
        sem().cast(t(tl.float32), tl.float64)
    with pytest.raises(CompilationError, match="Cannot bitcast data-type of size"):
        sem().bitcast(t(tl.float32), tl.int16)
    with pytest.raises(CompilationError, match="only to narrowing float conversions"):
        sem().cast(t(tl.int32), tl.float32, "rtz")
    with pytest.raises(CompilationError, match="invalid rounding mode"):
        sem().cast(t(tl.float32), tl.float16, "up")
    with pytest.raises(CompilationError, match="fp8 is a storage type"):
        sem().add(t(tl.float8e5), t(tl.float8e5))


def test_math_requires_floats() -> None:
    from triton_metal.language.builder import MathOp

    s = sem()
    assert s.math_unary(MathOp.EXP, t(tl.float32)).dtype == tl.float32
    # Triton's math.py lists fp32 and fp64 alone for exp, sqrt, ...: half types are refused
    with pytest.raises(CompilationError, match=r"Expected dtype \['fp32', 'fp64'\] but got fp16"):
        s.math_unary(MathOp.EXP, t(tl.float16))
    with pytest.raises(CompilationError, match=r"Expected dtype \['fp32', 'fp64'\] but got bf16"):
        s.math_unary(MathOp.SQRT, t(tl.bfloat16))
    with pytest.raises(CompilationError, match=r"tl\.exp expects a floating point tensor"):
        s.math_unary(MathOp.EXP, t(tl.int32))
    with pytest.raises(CompilationError, match=r"tl\.floor expects a floating point tensor \(fp32\)"):
        s.math_unary(MathOp.FLOOR, t(tl.float16), "floor")


def test_where_promotes_the_branches() -> None:
    s = sem()
    cond = t(tl.int1)
    assert s.where(cond, t(tl.int8), t(tl.int32)).dtype == tl.int32
    assert s.where(cond, 1.0, t(tl.float16)).dtype == tl.float16
    assert s.where(t(tl.int1, (4, 1)), t(tl.float32, (1, 8)), 0.0).type.shape == (4, 8)
    assert s.where(t(tl.int1, ()), t(tl.float32, (8,)), 2).type.shape == (8,)
