"""Loads, stores, the checked memory model, MLX arguments and atomics in the interpreter."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import triton_metal.language as tl
from triton_metal.errors import CompilationError, InterpreterError


def test_vector_add_over_many_programs(run: Any) -> None:
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):  # noqa: ANN001, ANN202, N803
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x + y, mask=mask)

    rng = np.random.default_rng(0)
    x = rng.standard_normal(1000).astype(np.float32)
    y = rng.standard_normal(1000).astype(np.float32)
    out = np.zeros(1000, np.float32)
    run(add_kernel, (8,), x_ptr=x, y_ptr=y, out_ptr=out, n=1000, BLOCK=128)
    np.testing.assert_array_equal(out, x + y)


def test_masked_load_other_is_cast_to_the_element_type(run: Any) -> None:
    x = np.arange(8, dtype=np.int16)
    out = np.zeros(16, np.int16)

    def kernel(x_ptr, o_ptr, n):  # noqa: ANN001, ANN202
        offs = tl.arange(0, 16)
        v = tl.load(x_ptr + offs, mask=offs < n, other=-1.7)  # -1.7 -> int16 -1
        tl.static_assert(v.dtype == tl.int16)
        tl.store(o_ptr + offs, v)

    run(kernel, x_ptr=x, o_ptr=out, n=8)
    assert list(out) == list(range(8)) + [-1] * 8


def test_masked_off_lanes_never_touch_memory(run: Any) -> None:
    x = np.arange(4, dtype=np.float32)
    out = np.full(4, 9.0, np.float32)

    def kernel(x_ptr, o_ptr):  # noqa: ANN001, ANN202
        offs = tl.arange(0, 1024)  # far past the end of both arrays
        m = offs < 4
        tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m, other=0.0) * 2, mask=m)

    run(kernel, x_ptr=x, o_ptr=out)
    assert list(out) == [0.0, 2.0, 4.0, 6.0]


def test_mask_broadcasts_to_the_pointer_shape(run: Any) -> None:
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    out = np.zeros((4, 4), np.float32)

    def kernel(a_ptr, o_ptr):  # noqa: ANN001, ANN202
        r = tl.arange(0, 4)
        ptrs = r[:, None] * 4 + r[None, :]
        v = tl.load(a_ptr + ptrs, mask=r[None, :] < 2, other=-1.0)
        tl.store(o_ptr + ptrs, v, mask=r[:, None] >= 1)

    run(kernel, a_ptr=a, o_ptr=out)
    ref = np.where(np.arange(4)[None, :] < 2, a, -1.0)
    ref[0] = 0.0
    np.testing.assert_array_equal(out, ref)


def test_scalar_load_store_and_bool_memory(run: Any) -> None:
    x = np.array([5], np.int32)
    flags = np.array([True, False, True, False], np.bool_)
    out = np.zeros(4, np.bool_)
    total = np.zeros(1, np.int32)

    def kernel(x_ptr, f_ptr, o_ptr, t_ptr):  # noqa: ANN001, ANN202
        v = tl.load(x_ptr)
        offs = tl.arange(0, 4)
        f = tl.load(f_ptr + offs)
        tl.static_assert(f.dtype == tl.int1)
        tl.store(o_ptr + offs, ~f)
        tl.store(t_ptr, v + tl.sum(f.to(tl.int32)))

    run(kernel, x_ptr=x, f_ptr=flags, o_ptr=out, t_ptr=total)
    assert list(out) == [False, True, False, True]
    assert total[0] == 7


def test_views_pass_the_address_of_their_first_element(run: Any) -> None:
    base = np.arange(32, dtype=np.float32)
    view = base[8:]
    strided = base[::4]
    out = np.zeros(8, np.float32)

    def kernel(v_ptr, s_ptr, stride, o_ptr):  # noqa: ANN001, ANN202
        offs = tl.arange(0, 8)
        tl.store(o_ptr + offs, tl.load(v_ptr + offs) + tl.load(s_ptr + offs * stride))

    run(kernel, v_ptr=view, s_ptr=strided, stride=strided.strides[0] // 4, o_ptr=out)
    np.testing.assert_array_equal(out, base[8:16] + base[::4])
    # a view reaches its own elements only, as the compiled backends' buffers do: view[-8]
    # (base[0]) is out of bounds although the allocation holds it

    def back(v_ptr, o_ptr):  # noqa: ANN001, ANN202
        offs = tl.arange(0, 8)
        tl.store(o_ptr + offs, tl.load(v_ptr - 8 + offs))

    with pytest.raises(InterpreterError, match=r"'v_ptr' at index -8 \(the buffer has 24 elements\)"):
        run(back, v_ptr=view, o_ptr=out)


def test_out_of_bounds_load_names_kernel_line_and_argument(run: Any) -> None:
    x = np.zeros(10, np.float32)

    def oob_kernel(x_ptr):  # noqa: ANN001, ANN202
        offs = tl.arange(0, 16)
        v = tl.load(x_ptr + offs)  # error
        tl.store(x_ptr, tl.sum(v))

    with pytest.raises(InterpreterError) as info:
        run(oob_kernel, x_ptr=x)
    msg = str(info.value)
    line = oob_kernel.__code__.co_firstlineno + 2
    assert msg.startswith("kernel 'oob_kernel': out-of-bounds access to 'x_ptr' at index 10 (the buffer has "
                          f"10 elements) at {__file__}:{line}, program (0, 0, 0)\n"), msg
    assert msg.endswith(f"\n    {line} | v = tl.load(x_ptr + offs)  # error"), msg
    assert isinstance(info.value.__cause__, InterpreterError)


def test_unaligned_access_is_refused(run: Any) -> None:
    x = np.zeros(8, np.int32)

    def kernel(x_ptr):  # noqa: ANN001, ANN202
        p = (x_ptr.to(tl.int64) + 2).to(tl.pointer_type(tl.int32))
        tl.store(p, 1)

    with pytest.raises(InterpreterError, match="unaligned store"):
        run(kernel, x_ptr=x)


def test_store_to_read_only_array_is_refused(run: Any) -> None:
    x = np.zeros(4, np.float32)
    x.setflags(write=False)

    def kernel(x_ptr):  # noqa: ANN001, ANN202
        tl.store(x_ptr + tl.arange(0, 4), 1.0)

    with pytest.raises(InterpreterError, match="read-only"):
        run(kernel, x_ptr=x)


def test_load_other_without_mask_is_refused(run: Any) -> None:
    x = np.zeros(4, np.float32)

    def kernel(x_ptr):  # noqa: ANN001, ANN202
        tl.load(x_ptr + tl.arange(0, 4), other=0.0)

    with pytest.raises(CompilationError, match="`other` cannot be provided without `mask`"):
        run(kernel, x_ptr=x)


def test_store_value_is_cast_to_the_element_type(run: Any) -> None:
    out = np.zeros(4, np.uint8)

    def kernel(o_ptr):  # noqa: ANN001, ANN202
        offs = tl.arange(0, 4)
        tl.store(o_ptr + offs, offs.to(tl.float32) * 1.9)

    run(kernel, o_ptr=out)
    assert list(out) == [0, 1, 3, 5]


def test_pointer_cast_from_loaded_int64(run: Any) -> None:
    data = np.arange(4, dtype=np.float32) + 10
    addrs = np.array([data.ctypes.data], np.int64)
    out = np.zeros(4, np.float32)

    def kernel(a_ptr, d_ptr, o_ptr):  # noqa: ANN001, ANN202
        p = tl.load(a_ptr).to(tl.pointer_type(tl.float32))
        tl.store(o_ptr + tl.arange(0, 4), tl.load(p + tl.arange(0, 4)))

    run(kernel, a_ptr=addrs, d_ptr=data, o_ptr=out)
    np.testing.assert_array_equal(out, data)


def test_mlx_arrays_are_rebound_after_a_store(run: Any) -> None:
    mx = pytest.importorskip("mlx.core", reason="MLX is needed for MLX array arguments")
    x = mx.arange(8, dtype=mx.float32)
    out = mx.zeros((8,), dtype=mx.float32)
    alias = out
    untouched = mx.ones((8,), dtype=mx.float32)

    def kernel(x_ptr, o_ptr, u_ptr):  # noqa: ANN001, ANN202
        offs = tl.arange(0, 8)
        tl.store(o_ptr + offs, tl.load(x_ptr + offs) * 2 + tl.load(u_ptr + offs))

    run(kernel, x_ptr=x, o_ptr=out, u_ptr=untouched)
    assert np.array(alias).tolist() == [2 * i + 1 for i in range(8)]
    assert np.array(untouched).tolist() == [1.0] * 8


def test_mlx_bfloat16_round_trip(run: Any) -> None:
    mx = pytest.importorskip("mlx.core", reason="MLX is needed for bfloat16 arrays")
    x = mx.array([1.0, 2.5, -3.0, 0.125], dtype=mx.bfloat16)
    out = mx.zeros((4,), dtype=mx.bfloat16)

    def kernel(x_ptr, o_ptr):  # noqa: ANN001, ANN202
        offs = tl.arange(0, 4)
        v = tl.load(x_ptr + offs)
        tl.static_assert(v.dtype == tl.bfloat16)
        tl.store(o_ptr + offs, v * 2)

    run(kernel, x_ptr=x, o_ptr=out)
    assert np.array(out.astype(mx.float32)).tolist() == [2.0, 5.0, -6.0, 0.25]


def test_float64_arrays_are_refused(run: Any) -> None:
    def kernel(x_ptr):  # noqa: ANN001, ANN202
        pass

    with pytest.raises(ValueError, match="no fp64"):
        run(kernel, x_ptr=np.zeros(4))


# -- atomics ------------------------------------------------------------------------------------


def test_atomic_add_with_colliding_addresses_is_exact(run: Any) -> None:
    counter = np.zeros(2, np.int32)
    olds = np.zeros((4, 64), np.int32)

    def kernel(c_ptr, o_ptr):  # noqa: ANN001, ANN202
        pid = tl.program_id(0)
        offs = tl.arange(0, 64)
        old = tl.atomic_add(c_ptr + offs % 2, 1)
        tl.store(o_ptr + pid * 64 + offs, old)

    # which program sees which old values depends on the order programs run in
    kernel.program_order_dependent = ("o_ptr",)  # type: ignore[attr-defined]
    run(kernel, (4,), c_ptr=counter, o_ptr=olds)
    assert list(counter) == [128, 128]
    assert sorted(olds[:, 0::2].reshape(-1).tolist()) == list(range(128))


def test_atomic_float_add_and_mask(run: Any) -> None:
    acc = np.zeros(4, np.float32)

    def kernel(a_ptr):  # noqa: ANN001, ANN202
        offs = tl.arange(0, 8)
        tl.atomic_add(a_ptr + offs % 4, 0.5, mask=offs < 6, sem="relaxed", scope="gpu")

    run(kernel, (3,), a_ptr=acc)
    assert acc.tolist() == [3.0, 3.0, 1.5, 1.5]


@pytest.mark.parametrize(
    ("fn", "ref"),
    [
        ("atomic_max", np.maximum), ("atomic_min", np.minimum), ("atomic_and", np.bitwise_and),
        ("atomic_or", np.bitwise_or), ("atomic_xor", np.bitwise_xor), ("atomic_xchg", lambda a, b: b),
    ],
)
def test_atomic_rmw_ops_return_old_values(run: Any, fn: str, ref: Any) -> None:
    rng = np.random.default_rng(1)
    mem = rng.integers(-1000, 1000, 16).astype(np.int32)
    val = rng.integers(-1000, 1000, 16).astype(np.int32)
    start = mem.copy()
    old = np.zeros(16, np.int32)
    op = getattr(tl, fn)

    def kernel(m_ptr, v_ptr, o_ptr):  # noqa: ANN001, ANN202
        offs = tl.arange(0, 16)
        tl.store(o_ptr + offs, op(m_ptr + offs, tl.load(v_ptr + offs)))

    run(kernel, m_ptr=mem, v_ptr=val, o_ptr=old)
    np.testing.assert_array_equal(old, start)
    np.testing.assert_array_equal(mem, ref(start, val))


def test_atomic_max_on_floats(run: Any) -> None:
    mem = np.array([1.0, -5.0, 2.0, 0.0], np.float32)

    def kernel(m_ptr):  # noqa: ANN001, ANN202
        offs = tl.arange(0, 4)
        tl.atomic_max(m_ptr + offs, offs.to(tl.float32) - 1.5)

    run(kernel, m_ptr=mem)
    assert mem.tolist() == [1.0, -0.5, 2.0, 1.5]


def test_atomic_cas_spin_lock_pattern(run: Any) -> None:
    lock = np.zeros(1, np.int32)
    total = np.zeros(1, np.float32)

    def kernel(lock_ptr, t_ptr):  # noqa: ANN001, ANN202
        while tl.atomic_cas(lock_ptr, 0, 1) == 1:
            pass
        tl.store(t_ptr, tl.load(t_ptr) + 1.0)
        tl.atomic_xchg(lock_ptr, 0)

    run(kernel, (5,), lock_ptr=lock, t_ptr=total)
    assert total[0] == 5.0 and lock[0] == 0


def test_atomic_cas_block(run: Any) -> None:
    mem = np.array([0, 1, 0, 1], np.int32)
    old = np.zeros(4, np.int32)

    def kernel(m_ptr, o_ptr):  # noqa: ANN001, ANN202
        offs = tl.arange(0, 4)
        tl.store(o_ptr + offs, tl.atomic_cas(m_ptr + offs, 0, 7))

    run(kernel, m_ptr=mem, o_ptr=old)
    assert old.tolist() == [0, 1, 0, 1]
    assert mem.tolist() == [7, 1, 7, 1]


@pytest.mark.parametrize(
    ("dt", "fn", "match"),
    [
        (np.int16, "atomic_add", "atomics need 32- or 64-bit elements"),
        (np.float32, "atomic_and", "atomic_and is not defined on"),
    ],
)
def test_atomic_refusals(run: Any, dt: Any, fn: str, match: str) -> None:
    op = getattr(tl, fn)

    def kernel(m_ptr):  # noqa: ANN001, ANN202
        op(m_ptr + tl.arange(0, 4), 1)

    with pytest.raises(CompilationError, match=match):
        run(kernel, m_ptr=np.zeros(4, dt))


def test_atomic_sem_and_scope_are_validated(run: Any) -> None:
    def kernel(m_ptr):  # noqa: ANN001, ANN202
        tl.atomic_add(m_ptr, 1, sem="sequential")

    with pytest.raises(CompilationError, match="atomic sem 'sequential'"):
        run(kernel, m_ptr=np.zeros(1, np.int32))

    def kernel2(m_ptr):  # noqa: ANN001, ANN202
        tl.atomic_add(m_ptr, 1, scope="world")

    with pytest.raises(CompilationError, match="atomic scope 'world'"):
        run(kernel2, m_ptr=np.zeros(1, np.int32))
