"""Specialization facts follow Triton's rules (DESIGN section 6)."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.runtime import ConstexprArg, PointerArg, ScalarArg


@triton.jit
def scalar_kernel(a, b, c):
    pass


@triton.jit
def pointer_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass


def facts(*args, kernel=scalar_kernel, **kwargs):
    return kernel.specialization(*args, **kwargs).args


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, ConstexprArg(1, "int")),
        (0, ScalarArg(tl.int32, True)),
        (16, ScalarArg(tl.int32, True)),
        (17, ScalarArg(tl.int32, False)),
        (-16, ScalarArg(tl.int32, True)),
        (2**31 - 1, ScalarArg(tl.int32, False)),
        (-(2**31), ScalarArg(tl.int32, True)),
        (2**31, ScalarArg(tl.int64, True)),
        (-(2**31) - 1, ScalarArg(tl.int64, False)),
        (2**63 - 1, ScalarArg(tl.int64, False)),
        (-(2**63), ScalarArg(tl.int64, True)),
        (2**63, ScalarArg(tl.uint64, True)),
        (2**64 - 1, ScalarArg(tl.uint64, False)),
        (True, ScalarArg(tl.int1, False)),
        (False, ScalarArg(tl.int1, False)),
        (1.0, ScalarArg(tl.float32, False)),
        (16.0, ScalarArg(tl.float32, False)),
        (None, ConstexprArg(None, "NoneType")),
        ("relu", ConstexprArg("relu", "str")),
        (tl.float16, ConstexprArg(tl.float16, "dtype")),
        (np.int64(48), ScalarArg(tl.int32, True)),
        (np.float32(2.5), ScalarArg(tl.float32, False)),
        (np.bool_(True), ScalarArg(tl.int1, False)),
    ],
)
def test_scalar_facts(value, expected):
    assert facts(value, 3, 5)[0] == expected


@pytest.mark.parametrize("value", [2**64, -(2**63) - 1, 10**30])
def test_int_out_of_64_bits_is_refused(value):
    with pytest.raises(triton.LaunchError, match="argument 'a' .* does not fit in 64 bits"):
        facts(value, 3, 5)


def test_do_not_specialize_by_name_and_index():
    @triton.jit(do_not_specialize=["a", 2])
    def k(a, b, c):
        pass

    assert facts(1, 1, 32, kernel=k) == (
        ScalarArg(tl.int32, False),  # not constexpr 1
        ConstexprArg(1, "int"),
        ScalarArg(tl.int32, False),  # no divisibility fact
    )
    assert facts(2**40, 1, 2**63, kernel=k) == (
        ScalarArg(tl.int64, False),  # the type still follows the value's range
        ConstexprArg(1, "int"),
        ScalarArg(tl.uint64, False),
    )


def test_do_not_specialize_on_alignment_keeps_one():
    @triton.jit(do_not_specialize_on_alignment=["a", "p"])
    def k(a, p):
        pass

    x = np.zeros(64, np.float32)
    assert facts(1, x, kernel=k) == (ConstexprArg(1, "int"), PointerArg(tl.float32, False))
    assert facts(32, x, kernel=k)[0] == ScalarArg(tl.int32, False)


def test_unknown_do_not_specialize_name_is_refused():
    with pytest.raises(ValueError, match="no parameter named 'zz'"):
        triton.jit(do_not_specialize=["zz"])(lambda_like)
    with pytest.raises(ValueError, match="index 5 is out of range"):
        triton.jit(do_not_specialize=[5])(lambda_like)


def lambda_like(a, b):
    pass


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [
        (np.bool_, tl.int1), (np.int8, tl.int8), (np.int16, tl.int16), (np.int32, tl.int32),
        (np.int64, tl.int64), (np.uint8, tl.uint8), (np.uint16, tl.uint16),
        (np.uint32, tl.uint32), (np.uint64, tl.uint64), (np.float16, tl.float16),
        (np.float32, tl.float32),
    ],
)
def test_numpy_pointer_element_types(dtype, expected):
    x = np.zeros(64, dtype)
    (fact, _, _) = facts(x, 7, BLOCK=4, kernel=pointer_kernel)
    assert isinstance(fact, PointerArg) and fact.element == expected
    assert fact.ty == tl.pointer_type(expected)


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [(mx.float32, tl.float32), (mx.float16, tl.float16), (mx.bfloat16, tl.bfloat16),
     (mx.int32, tl.int32), (mx.uint8, tl.uint8), (mx.bool_, tl.int1), (mx.int64, tl.int64)],
)
def test_mlx_pointer_element_types_are_assumed_aligned(dtype, expected):
    x = mx.zeros((33,), dtype=dtype)
    assert facts(x, 7, BLOCK=4, kernel=pointer_kernel)[0] == PointerArg(expected, True)


def test_alignment_of_numpy_views_follows_their_address():
    base = np.zeros(256, np.float32)
    assert base.ctypes.data % 16 == 0  # NumPy aligns allocations of this size
    for offset in range(8):
        view = base[offset:]
        expected = view.ctypes.data % 16 == 0
        assert expected == (offset % 4 == 0)
        assert facts(view, 7, BLOCK=4, kernel=pointer_kernel)[0] == PointerArg(tl.float32, expected)
    # a strided view is passed as the address of its first element
    assert facts(base[4::3], 7, BLOCK=4, kernel=pointer_kernel)[0] == PointerArg(tl.float32, True)
    # fp16 at an 8-element offset is 16-byte aligned, at 4 elements it is not
    half = np.zeros(64, np.float16)
    assert facts(half[8:], 7, BLOCK=4, kernel=pointer_kernel)[0].aligned16
    assert not facts(half[4:], 7, BLOCK=4, kernel=pointer_kernel)[0].aligned16


def test_constexpr_values_of_equal_value_but_different_type_differ():
    keys = {
        pointer_kernel.specialization(np.zeros(4, np.float32), 7, BLOCK=v)
        for v in (1, 1.0, True)
    }
    assert len(keys) == 3


def test_constexpr_parameter_unwraps_constexpr_and_numpy_scalars():
    x = np.zeros(4, np.float32)
    a = pointer_kernel.specialization(x, 7, BLOCK=tl.constexpr(64))
    b = pointer_kernel.specialization(x, 7, BLOCK=np.int32(64))
    c = pointer_kernel.specialization(x, 7, BLOCK=64)
    assert a == b == c
    assert c.args[2] == ConstexprArg(64, "int")


def test_key_includes_num_warps_debug_backend_and_version():
    x = np.zeros(4, np.float32)
    k4 = pointer_kernel.specialization(x, 7, BLOCK=64)
    k8 = pointer_kernel.specialization(x, 7, BLOCK=64, num_warps=8)
    kd = pointer_kernel.specialization(x, 7, BLOCK=64, debug=True)
    assert k4.num_warps == 4 and k8.num_warps == 8 and k4 != k8
    assert kd.debug and not k4.debug and kd != k4
    assert k4.backend == "emulator"
    assert k4.compiler_version == triton.__version__
    # the ignored launch options do not split the cache
    assert pointer_kernel.specialization(x, 7, BLOCK=64, num_stages=2, num_ctas=1, maxnreg=64) == k4
    hash(k4)


def test_equal_launches_give_equal_keys():
    x = np.zeros(64, np.float32)
    y = np.zeros(64, np.float32)
    assert pointer_kernel.specialization(x, 64, BLOCK=16) == pointer_kernel.specialization(y, 128, BLOCK=16)
    assert pointer_kernel.specialization(x, 64, BLOCK=16) != pointer_kernel.specialization(x, 65, BLOCK=16)
