"""Typing rules of loads, stores, reductions, dot and hints, over a recording builder."""

from __future__ import annotations

from typing import Any

import pytest

import triton_metal.language as tl
from triton_metal.errors import CompilationError
from triton_metal.language import Semantic, tensor
from triton_metal.language.builder import AtomicOp, HintKind


class RecordingBuilder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, name: str) -> Any:
        def method(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, args))
            if name == "create_split":
                return object(), object()
            if name in ("create_reduce", "create_scan"):
                return [object() for _ in args[0]]
            return object()

        return method


def t(ty: tl.dtype, shape: tuple[int, ...] = (8,)) -> tensor:
    return tensor(object(), tl.block_type(ty, shape) if shape else ty)


def ptr(elem: tl.dtype, shape: tuple[int, ...] = (8,)) -> tensor:
    return t(tl.pointer_type(elem), shape)


def test_load_types_and_mask_broadcast() -> None:
    b = RecordingBuilder()
    s = Semantic(b)
    v = s.load(ptr(tl.float16, (4, 8)), mask=t(tl.int1, (1, 8)), other=0)
    assert v.type == tl.block_type(tl.float16, (4, 8))
    assert s.load(ptr(tl.int8, ())).type == tl.int8  # scalar pointer -> scalar
    assert s.load(ptr(tl.int1)).dtype == tl.int1  # bool memory is bytes, read back as int1
    assert [c for c in b.calls if c[0] == "create_broadcast"]  # the mask was broadcast


def test_load_and_store_refusals() -> None:
    s = Semantic(RecordingBuilder())
    with pytest.raises(CompilationError, match="mask must be boolean"):
        s.load(ptr(tl.float32), mask=t(tl.int32))
    with pytest.raises(CompilationError, match="scalar pointer cannot take a block mask"):
        s.load(ptr(tl.float32, ()), mask=t(tl.int1))
    with pytest.raises(CompilationError, match="scalar pointer cannot take a block value"):
        s.store(ptr(tl.float32, ()), t(tl.float32))
    with pytest.raises(CompilationError, match="does not broadcast to the pointer shape"):
        s.store(ptr(tl.float32, (8,)), t(tl.float32, (4, 8)))
    with pytest.raises(CompilationError, match="cache_modifier '.xx'"):
        s.load(ptr(tl.float32), cache_modifier=".xx")
    with pytest.raises(CompilationError, match="block pointers"):
        s.load(ptr(tl.float32), boundary_check=(0,))


def test_load_hints_are_accepted() -> None:
    s = Semantic(RecordingBuilder())
    s.load(ptr(tl.float32), cache_modifier=".cg", eviction_policy="evict_last", volatile=True)
    for modifier in (".ca", ".cs", ".cv"):  # Triton's other load modifiers
        s.load(ptr(tl.float32), cache_modifier=modifier)
    s.store(ptr(tl.float32), 1.0, cache_modifier=".wb", eviction_policy="evict_first")


def test_atomic_ops_and_types() -> None:
    b = RecordingBuilder()
    s = Semantic(b)
    assert s.atomic_add(ptr(tl.float32), 1).dtype == tl.float32
    assert s.atomic_add(ptr(tl.int32), 1).dtype == tl.int32
    s.atomic_max(ptr(tl.uint32), 1)
    ops = [c[1][0] for c in b.calls if c[0] == "create_atomic_rmw"]
    assert ops == [AtomicOp.FADD, AtomicOp.ADD, AtomicOp.MAX]
    sems = [(c[1][4], c[1][5]) for c in b.calls if c[0] == "create_atomic_rmw"]
    assert sems == [("acq_rel", "gpu")] * 3


@pytest.mark.parametrize(
    ("shape", "axis", "keep_dims", "expected"),
    [((4, 8), 0, False, (8,)), ((4, 8), 1, True, (4, 1)), ((4, 8), None, False, ()),
     ((4, 8), None, True, (1, 1)), ((4, 8), -1, False, (4,)), ((8,), 0, False, ())],
)
def test_reduction_shapes(shape: tuple[int, ...], axis: Any, keep_dims: bool, expected: tuple[int, ...]) -> None:
    s = Semantic(RecordingBuilder())
    r = s.sum(t(tl.float32, shape), axis, keep_dims)
    assert (r.type.shape if r.type.is_block() else ()) == expected
    v, i = s.max(t(tl.float32, shape), axis, True, True, keep_dims)
    assert i.dtype == tl.int32 and v.dtype == tl.float32


def test_reduction_axis_out_of_range() -> None:
    with pytest.raises(CompilationError, match="invalid axis 2. Expected -"):
        Semantic(RecordingBuilder()).sum(t(tl.float32, (4, 8)), 2)


def test_dot_result_types() -> None:
    s = Semantic(RecordingBuilder())
    a16, b16 = t(tl.float16, (32, 16)), t(tl.float16, (16, 64))
    assert s.dot(a16, b16).type == tl.block_type(tl.float32, (32, 64))
    assert s.dot(a16, b16, out_dtype=tl.float16).dtype == tl.float16
    # Triton's rule: without out_dtype, a float16 accumulator gives a float16 dot
    assert s.dot(a16, b16, t(tl.float16, (32, 64))).dtype == tl.float16
    assert s.dot(a16, b16, t(tl.float32, (32, 64))).dtype == tl.float32
    e5 = t(tl.float8e5, (16, 16))
    assert s.dot(e5, e5, t(tl.float16, (16, 16))).dtype == tl.float16  # fp8 dots take the fp16 rule
    with pytest.raises(CompilationError, match="accumulator has type"):
        s.dot(t(tl.bfloat16, (16, 16)), t(tl.bfloat16, (16, 16)), t(tl.float16, (16, 16)))  # bf16 dots are fp32
    with pytest.raises(CompilationError, match="accumulator has type"):
        s.dot(a16, b16, t(tl.float16, (32, 64)), out_dtype=tl.float32)  # the two disagree
    with pytest.raises(CompilationError, match="accumulator has type"):
        s.dot(t(tl.float32, (16, 16)), t(tl.float32, (16, 16)), t(tl.float16, (16, 16)))  # fp32 dots are fp32
    assert s.dot(t(tl.int8, (16, 16)), t(tl.int8, (16, 16))).dtype == tl.int32
    assert s.dot(t(tl.bfloat16, (16, 16)), t(tl.bfloat16, (16, 16))).dtype == tl.float32
    batched = s.dot(t(tl.float32, (2, 16, 32)), t(tl.float32, (2, 32, 16)))
    assert batched.type.shape == (2, 16, 16)
    with pytest.raises(CompilationError, match="not available on Apple GPUs"):
        s.dot(a16, b16, input_precision="fp16x2")
    for precision in ("tf32", "tf32x3", "bf16x3", "bf16x6"):  # computed in full fp32
        assert s.dot(t(tl.float32, (16, 16)), t(tl.float32, (16, 16)), input_precision=precision).dtype == tl.float32
    with pytest.raises(CompilationError, match="does not support"):
        s.dot(t(tl.uint8, (16, 16)), t(tl.uint8, (16, 16)))


def test_hints_check_their_values() -> None:
    b = RecordingBuilder()
    s = Semantic(b)
    s.hint(t(tl.int32, (4, 8)), HintKind.MULTIPLE_OF, 16)
    assert [c[1][2] for c in b.calls if c[0] == "create_hint"] == [(16, 16)]
    with pytest.raises(CompilationError, match="positive compile-time integers"):
        s.hint(t(tl.int32), HintKind.MAX_CONTIGUOUS, 0)
    with pytest.raises(CompilationError, match="needs 1 values"):
        s.hint(t(tl.int32), HintKind.MAX_CONTIGUOUS, (4, 4))


def test_scan_and_cumsum_types() -> None:
    s = Semantic(RecordingBuilder())
    assert s.cumsum(t(tl.int16, (4, 8)), 1).type == tl.block_type(tl.int32, (4, 8))
    assert s.cumsum(t(tl.float16), 0).dtype == tl.float16
    assert s.cumsum(t(tl.bfloat16), 0).dtype == tl.float32
    assert s.cumsum(t(tl.int8), 0, dtype_=tl.int64).dtype == tl.int64
    with pytest.raises(CompilationError, match="a scan needs an axis"):
        s.cumsum(t(tl.int32), None)


def test_combine_function_result_types_are_checked() -> None:
    s = Semantic(RecordingBuilder())
    region = s._region([tl.int32], lambda a, b: [s.cast(s.add(a[0], b[0]), tl.int64)], "reduce")
    with pytest.raises(CompilationError, match=r"returned triton_metal\.language\.int64 for operand 0, expected triton_metal\.language\.int32"):
        region([object()], [object()])
    region2 = s._region([tl.int32, tl.int32], lambda a, b: [a[0]], "reduce")
    with pytest.raises(CompilationError, match="returned 1 values, expected 2"):
        region2([object(), object()], [object(), object()])
