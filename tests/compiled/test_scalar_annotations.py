"""Run-time scalar parameters annotated with a `tl` type (`v: tl.uint8`, `x: tl.float16`, or
the string `"tl.uint8"`) take that type in the kernel, as in Triton, on both backends
(`each_backend`): arithmetic wraps and rounds in the annotated type (NumPy gives the expected
values); values the type cannot hold are refused naming the argument."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import LaunchError


def _annotated(ty: object) -> triton.JITFunction:
    expected_type = tl.constexpr(ty if isinstance(ty, tl.dtype) else tl.str_to_ty(ty.split(".")[-1]))

    def doubled(out, v):
        tl.static_assert(v.dtype == expected_type)
        tl.store(out, (v + v).to(tl.float32))

    doubled.__annotations__ = {"v": ty}
    return triton.jit(doubled)


def _doubled(np_type: type, value: float) -> float:
    """`value + value` in a NumPy type (integers wrap)."""
    with np.errstate(over="ignore"):
        return float(np_type(value) + np_type(value))


CASES = [  # annotation, argument, v + v computed in the annotated type
    ("tl.uint8", 200, _doubled(np.uint8, 200)),
    (tl.int16, -20000, _doubled(np.int16, -20000)),
    ("tl.uint32", 3_000_000_000, _doubled(np.uint32, 3_000_000_000)),
    (tl.int64, 2**40, float(2**41)),
    ("tl.int1", 0, 0.0),  # a bool: 0 is never "divisible by 16"
    (tl.float16, 2049.0, _doubled(np.float16, 2049.0)),
    (tl.bfloat16, 1.0 + 2**-9, 2.0),  # rounds to 1.0 in bfloat16 (8 bits of mantissa)
]


@pytest.mark.parametrize("ty, value, expected", CASES, ids=[str(c[0]) for c in CASES])
def test_annotated_scalars_take_their_type(each_backend, ty, value, expected):
    out = np.zeros(1, np.float32)
    _annotated(ty)[(1,)](out, value)
    assert out[0] == np.float32(expected)


@pytest.mark.parametrize("ty, value, message", [
    ("tl.uint8", 256, "argument 'v' = 256 does not fit in uint8 \\(its annotation\\)"),
    (tl.int8, 2.5, "argument 'v' is annotated int8 but was given the float 2.5"),
    (tl.float64, 1.0, "argument 'v' is annotated float64: Apple GPUs have no fp64"),
    (tl.float8e5, 1.0, "argument 'v' is annotated fp8e5: a run-time scalar may be annotated"),
])
def test_values_the_annotation_cannot_take_are_refused(each_backend, ty, value, message):
    out = np.zeros(1, np.float32)
    with pytest.raises(LaunchError, match=message):
        _annotated(ty)[(1,)](out, value)
    assert out[0] == 0
