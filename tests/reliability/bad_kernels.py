"""Kernels with one mistake each, for the bad-input catalogue (test_bad_inputs.py). Every kernel
takes (x_ptr, out_ptr, n, BLOCK) so the catalogue launches them all alike; `good` is the kernel
without a mistake, which the launch-argument cases misuse."""

from __future__ import annotations

import triton_metal as triton
import triton_metal.language as tl


class _NotJit:
    def __call__(self, x):
        return x


not_jit = _NotJit()  # a callable object, neither @jit nor a plain function: kernels cannot call it


@triton.jit
def helper_two(a, b):
    return a + b


@triton.jit
def good(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


@triton.jit
def two_outputs(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.full((BLOCK,), 1.0, tl.float32), mask=offs < n)
    tl.store(x_ptr + offs, tl.full((BLOCK,), 2.0, tl.float32), mask=offs < n)


@triton.jit(debug=True)
def asserting(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.device_assert(x < 1000.0, "x is too large")
    tl.store(out_ptr + offs, x, mask=offs < n)


@triton.jit
def undefined_name(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, undefined_thing + offs, mask=offs < n)  # noqa: F821


@triton.jit
def arange_not_power_of_two(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, 48)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs), mask=offs < n)


@triton.jit
def arange_runtime_bound(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, n)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


@triton.jit
def arange_reversed(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(16, 0)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


@triton.jit
def arange_too_long(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, 1 << 24)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs), mask=offs < n)


@triton.jit
def shape_mismatch(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    a = tl.arange(0, 16)
    b = tl.arange(0, 32)
    tl.store(out_ptr + a, (a + b).to(tl.float32))


@triton.jit
def load_from_scalar(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(n + offs), mask=offs < n)


@triton.jit
def static_assert_fails(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK > 4096, "BLOCK must exceed 4096")
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs), mask=offs < n)


@triton.jit
def python_assert_fails(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    assert BLOCK == 3, "BLOCK must be 3"
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs), mask=offs < n)


@triton.jit
def float_offset(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK).to(tl.float32)
    tl.store(out_ptr + offs, 1.0)


@triton.jit
def bitwise_on_floats(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x & x, mask=offs < n)


@triton.jit
def shift_on_floats(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x << 1, mask=offs < n)


@triton.jit
def dot_inner_mismatch(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    a = tl.zeros((16, 32), tl.float32)
    b = tl.zeros((16, 16), tl.float32)
    c = tl.dot(a, b)
    r = tl.arange(0, 16)
    tl.store(out_ptr + r[:, None] * 16 + r[None, :], c)


@triton.jit
def dot_of_vectors(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    a = tl.zeros((16,), tl.float32)
    c = tl.dot(a, a)
    tl.store(out_ptr + tl.arange(0, 16), c)


@triton.jit
def reduce_bad_axis(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(x, axis=3))


@triton.jit
def reshape_bad_size(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    y = tl.reshape(x, (3, 5))
    tl.store(out_ptr + tl.arange(0, 16), tl.sum(y, axis=0))


@triton.jit
def try_statement(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    try:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs), mask=offs < n)
    except Exception:
        pass


@triton.jit
def with_statement(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    with open("f") as f:  # noqa: F841
        tl.store(out_ptr + offs, 1.0, mask=offs < n)


@triton.jit
def lambda_inside(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    f = lambda v: v + 1  # noqa: E731
    tl.store(out_ptr + offs, f(offs).to(tl.float32), mask=offs < n)


@triton.jit
def nested_def(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    def inner(v):
        return v
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, inner(offs).to(tl.float32), mask=offs < n)


@triton.jit
def tensor_while_condition(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    while offs < n:
        offs += 1
    tl.store(out_ptr + offs, 1.0)


@triton.jit
def calls_python_object(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, not_jit(offs).to(tl.float32), mask=offs < n)


@triton.jit
def program_id_axis_3(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(3) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, 1.0, mask=offs < n)


@triton.jit
def full_runtime_shape(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    v = tl.full((n,), 1.0, tl.float32)
    tl.store(out_ptr + tl.arange(0, BLOCK), v)


@triton.jit
def store_a_pointer(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, x_ptr + offs, mask=offs < n)


@triton.jit
def helper_wrong_arity(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, helper_two(offs).to(tl.float32), mask=offs < n)


@triton.jit
def kernel_returns_value(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, 1.0, mask=offs < n)
    return offs


@triton.jit
def where_shape_mismatch(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    a = tl.arange(0, 16)
    b = tl.arange(0, 32)
    tl.store(out_ptr + a, tl.where(a < 4, a, b).to(tl.float32))


@triton.jit
def mask_shape_mismatch(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, 16)
    m = tl.arange(0, 32) < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m))


@triton.jit
def store_to_scalar(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    tl.store(n, 1)


@triton.jit
def string_arithmetic(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs + "one", mask=offs < n)


@triton.jit
def cast_unknown_dtype(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs.to("float99"), mask=offs < n)


@triton.jit
def uses_float64(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs.to(tl.float64).to(tl.float32), mask=offs < n)


@triton.jit
def atomic_on_float16(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    half = out_ptr.to(tl.pointer_type(tl.float16))
    tl.atomic_add(half + offs, tl.full((BLOCK,), 1.0, tl.float16), mask=offs < n)


@triton.jit
def atomic_on_int8(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr.to(tl.pointer_type(tl.int8)) + offs, tl.full((BLOCK,), 1, tl.int8), mask=offs < n)


@triton.jit
def zeros_negative_shape(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    v = tl.zeros((-4,), tl.float32)
    tl.store(out_ptr + tl.arange(0, 4), v)


@triton.jit
def print_bad_prefix(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.device_print(5, offs)
    tl.store(out_ptr + offs, 1.0, mask=offs < n)


@triton.jit
def too_much_shared(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, 256)
    a = tl.load(x_ptr + r[:, None] * 256 + r[None, :])
    b = tl.trans(a)
    tl.store(out_ptr + r[:, None] * 256 + r[None, :], b)


@triton.jit
def reads_no_array(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)  # noqa: F841


@triton.jit
def subscript_tensor(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs[3].to(tl.float32), mask=offs < n)


@triton.jit
def unknown_tl_function(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.not_a_function(offs), mask=offs < n)


@triton.jit
def unknown_keyword(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, maks=offs < n), mask=offs < n)


@triton.jit
def constexpr_reassigned(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    BLOCK = n
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, 1.0)


@triton.jit
def load_bad_eviction(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n, eviction_policy="sometimes"), mask=offs < n)


@triton.jit
def other_without_mask(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, other=0.0), mask=offs < n)


@triton.jit
def sum_of_pointer(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr, tl.sum(x_ptr + offs, axis=0))


@triton.jit
def range_float_step(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = 0.0
    for i in range(0, 10, 0.5):
        acc += i
    tl.store(out_ptr, acc)


@triton.jit
def static_range_runtime(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = 0
    for i in tl.static_range(n):
        acc += i
    tl.store(out_ptr, acc.to(tl.float32))


@triton.jit
def if_changes_type(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    if n > 3:
        v = tl.arange(0, 16)
    else:
        v = tl.arange(0, 32)
    tl.store(out_ptr + tl.arange(0, 16), v.to(tl.float32))


@triton.jit
def loop_changes_type(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    v = tl.zeros((16,), tl.float32)
    for i in range(n):
        v = tl.zeros((32,), tl.float32)
    tl.store(out_ptr + tl.arange(0, 16), v)


@triton.jit
def cat_mismatched(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    a = tl.arange(0, 16)
    b = tl.arange(0, 16).to(tl.float32)
    tl.store(out_ptr + tl.arange(0, 16), tl.maximum(a, b[:, None]))


@triton.jit
def trans_of_1d_bad_perm(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    a = tl.zeros((16, 16), tl.float32)
    b = tl.permute(a, (0, 0))
    r = tl.arange(0, 16)
    tl.store(out_ptr + r[:, None] * 16 + r[None, :], b)


@triton.jit
def expand_dims_bad_axis(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    a = tl.arange(0, 16)
    b = tl.expand_dims(a, 5)
    tl.store(out_ptr + a, tl.sum(b, axis=0).to(tl.float32))


@triton.jit
def broadcast_to_bad(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    a = tl.arange(0, 16)
    b = tl.broadcast_to(a, (8,))
    tl.store(out_ptr + tl.arange(0, 8), b.to(tl.float32))


@triton.jit
def constexpr_compare_tensor_if(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if offs < 4:
        tl.store(out_ptr + offs, 1.0)


@triton.jit
def fp8_type(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = offs.to(tl.float8e4nv)  # fp8 is a storage type: the sum is refused
    tl.store(out_ptr + offs, (v + v).to(tl.float32), mask=offs < n)


@triton.jit
def multiple_of_not_power(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.multiple_of(tl.arange(0, BLOCK), 0)
    tl.store(out_ptr + offs, 1.0, mask=offs < n)


@triton.jit
def atomic_bad_sem(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr + offs, 1.0, mask=offs < n, sem="whenever")


@triton.jit
def global_keyword(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    global GLOBAL_THING
    tl.store(out_ptr, 1.0)


@triton.jit
def yield_inside(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    yield 1


@triton.jit
def float_arange(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0.0, 16)
    tl.store(out_ptr + offs, 1.0)


@triton.jit
def full_unknown_dtype(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    v = tl.full((BLOCK,), 1, "int99")
    tl.store(out_ptr + tl.arange(0, BLOCK), v)


@triton.jit
def dot_mixed_types(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    a = tl.zeros((16, 16), tl.int8)
    b = tl.zeros((16, 16), tl.float32)
    c = tl.dot(a, b)
    r = tl.arange(0, 16)
    tl.store(out_ptr + r[:, None] * 16 + r[None, :], c)


@triton.jit
def class_inside(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    class Local:
        pass
    tl.store(out_ptr, 1.0)


@triton.jit
def del_statement(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    del offs
    tl.store(out_ptr, 1.0)


@triton.jit
def raise_statement(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    if n > 1000000:
        raise ValueError("too big")
    tl.store(out_ptr, 1.0)


@triton.jit
def comprehension_inside(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    vals = {i: i for i in range(4)}
    tl.store(out_ptr, vals[0] * 1.0)


@triton.jit
def break_inside(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = 0
    for i in range(n):
        if i > 3:
            break
        acc += i
    tl.store(out_ptr, acc * 1.0)
