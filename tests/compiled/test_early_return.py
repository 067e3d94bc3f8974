"""`return` anywhere, store-free kernels, void conditional expressions and one-element
conditions: each runs in the interpreter and compiled on the emulator (`run_both` compares them)
and is checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError

from differential import run_both


@triton.jit
def guard_kernel(x_ptr, out_ptr, n):
    pid = tl.program_id(0)
    if pid >= n:
        return
    tl.store(out_ptr + pid, tl.load(x_ptr + pid) * 2)


def test_return_in_runtime_if_skips_the_rest():
    x = np.arange(8, dtype=np.float32)
    out = np.full(8, -1, np.float32)
    run_both(guard_kernel, (8,), x_ptr=x, out_ptr=out, n=5)
    np.testing.assert_array_equal(out, np.where(np.arange(8) < 5, x * 2, -1))


@triton.jit
def prefix_until_negative(x_ptr, out_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    acc = 0.0
    for i in range(N):
        v = tl.load(x_ptr + pid * N + i)
        if v < 0:
            tl.store(out_ptr + pid, acc)
            return
        acc += v
    tl.store(out_ptr + pid, -acc)


def test_return_inside_for_loop():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 5)).astype(np.float32)
    x[3] = np.abs(x[3])  # a row without a negative value runs to the end
    out = np.zeros(6, np.float32)
    run_both(prefix_until_negative, (6,), x_ptr=x, out_ptr=out, N=5)
    want = []
    for row in x:
        neg = np.flatnonzero(row < 0)
        want.append(row[: neg[0]].sum() if neg.size else -row.sum())
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


@triton.jit
def first_negative(x_ptr, N: tl.constexpr):
    for i in range(N):
        if tl.load(x_ptr + i) < 0:
            return i
    return -1


@triton.jit
def first_negative_kernel(x_ptr, out_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, first_negative(x_ptr + pid * N, N))


def test_helper_returns_a_value_from_inside_a_loop():
    x = np.array([[1, 2, -3, 4], [-1, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, -5]], np.float32)
    out = np.zeros(4, np.int32)
    run_both(first_negative_kernel, (4,), x_ptr=x, out_ptr=out, N=4)
    np.testing.assert_array_equal(out, [2, 0, -1, 3])


@triton.jit
def sign_of(x):
    if x > 0:
        return 1.0
    elif x < 0:
        return -1.0
    return 0.0


@triton.jit
def sign_kernel(x_ptr, out_ptr):
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, sign_of(tl.load(x_ptr + pid)))


def test_helper_returns_from_runtime_branches():
    x = np.array([1.5, -2, 0, 3, -0.0, 7], np.float32)
    out = np.full(6, 9, np.float32)
    run_both(sign_kernel, (6,), x_ptr=x, out_ptr=out)
    np.testing.assert_array_equal(out, np.sign(x))


@triton.jit
def find_kernel(x_ptr, out_ptr, n):
    pid = tl.program_id(0)
    i = 0
    while i < n:
        if tl.load(x_ptr + i) == pid:
            tl.store(out_ptr + pid, i)
            return
        i += 1
    tl.store(out_ptr + pid, -1)


def test_return_inside_while_loop_stops_it():
    x = np.array([3, 1, 0, 7], np.int32)
    out = np.zeros(5, np.int32)
    run_both(find_kernel, (5,), x_ptr=x, out_ptr=out, n=4)
    np.testing.assert_array_equal(out, [2, 1, -1, 0, -1])


@triton.jit
def countdown_kernel(out_ptr, n):
    pid = tl.program_id(0)
    i = 0
    while True:
        if i * i >= pid + n:
            tl.store(out_ptr + pid, i)
            return
        i += 1


def test_while_true_ended_by_return():
    out = np.zeros(6, np.int32)
    run_both(countdown_kernel, (6,), out_ptr=out, n=3)
    np.testing.assert_array_equal(out, np.ceil(np.sqrt(np.arange(6) + 3)).astype(np.int32))


@triton.jit
def nested_kernel(x_ptr, out_ptr, ROWS: tl.constexpr, COLS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    best = tl.zeros((BLOCK,), tl.float32)
    for r in range(ROWS):
        row = tl.load(x_ptr + pid * ROWS * COLS + r * COLS + offs, mask=offs < COLS, other=0.0)
        for c in tl.static_range(2):
            if tl.sum(row) > 100.0 + c:
                tl.store(out_ptr + pid * BLOCK + offs, row + c)
                return
        best = tl.maximum(best, row)
    tl.store(out_ptr + pid * BLOCK + offs, best)


def test_return_from_nested_loops_with_blocks():
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 10, (3, 4, 6)).astype(np.float32)
    x[1, 2] += 40  # program 1 returns in its third row
    out = np.zeros((3, 8), np.float32)
    run_both(nested_kernel, (3,), x_ptr=x, out_ptr=out, ROWS=4, COLS=6, BLOCK=8)
    want = np.zeros((3, 8), np.float32)
    for p in range(3):
        best = np.zeros(8, np.float32)
        for r in range(4):
            row = np.zeros(8, np.float32)
            row[:6] = x[p, r]
            if row.sum() > 100.0:
                best = row
                break
            best = np.maximum(best, row)
        want[p] = best
    np.testing.assert_allclose(out, want, rtol=1e-6)


@triton.jit
def two_arrays_after_return(q_ptr, k_ptr, n, NQ: tl.constexpr, NK: tl.constexpr, BLOCK: tl.constexpr):
    # after the early return, pointers into two arrays (one of them only through a loop): the
    # returned path gives each a value pointing into its own array (Liger's Llama-4 RoPE and MoE
    # backward kernels have this shape)
    pid = tl.program_id(0)
    head = tl.program_id(1)
    if pid >= n:
        return
    q_row = q_ptr + pid * NQ * BLOCK
    k_row = k_ptr + pid * NK * BLOCK
    offs = tl.arange(0, BLOCK)
    for i in range(0, 2):
        k_tile = k_row + offs
        tl.store(k_tile, tl.load(k_tile) + i + 1, mask=(offs < BLOCK) & (head < NK))
    if head < NQ:
        q_head = q_row + head * BLOCK
        tl.store(q_head + offs, tl.load(q_head + offs) * 2)


def test_pointers_into_two_arrays_after_an_early_return():
    q = np.arange(4 * 3 * 8, dtype=np.float32).reshape(4, 3, 8)
    k = np.arange(4 * 1 * 8, dtype=np.float32).reshape(4, 1, 8)
    want_q, want_k = q.copy(), k.copy()
    want_q[:3] *= 2
    want_k[:3] += 1 + 2  # head 0 of each live row adds 1, then 2
    run_both(two_arrays_after_return, (4, 3), q_ptr=q, k_ptr=k, n=3, NQ=3, NK=1, BLOCK=8)
    np.testing.assert_array_equal(q, want_q)
    np.testing.assert_array_equal(k, want_k)


@triton.jit
def sums_after_return(x_ptr, out_ptr, n, R: tl.constexpr):
    # row sums, column sums and a plain vector after the early return: three [R] values in three
    # layouts, which the returned path gives one shared zero constant (Liger's mHC Sinkhorn kernel)
    pid = tl.program_id(0)
    if pid >= n:
        return
    r = tl.arange(0, R)
    m = tl.load(x_ptr + pid * R * R + r[:, None] * R + r[None, :])
    row_sums = tl.sum(m, axis=1)
    col_sums = tl.sum(m, axis=0)
    twice = r.to(tl.float32) * 2
    base = out_ptr + pid * 3 * R
    tl.store(base + r, row_sums)
    tl.store(base + R + r, col_sums)
    tl.store(base + 2 * R + r, twice)


def test_values_of_several_layouts_after_an_early_return():
    x = np.arange(3 * 4 * 4, dtype=np.float32).reshape(3, 4, 4)
    out = np.full((3, 3, 4), -1, np.float32)
    run_both(sums_after_return, (3,), x_ptr=x, out_ptr=out, n=2, R=4)
    want = np.stack([x.sum(2), x.sum(1), np.broadcast_to(np.arange(4) * 2.0, (3, 4))], 1).astype(np.float32)
    want[2] = -1
    np.testing.assert_array_equal(out, want)


@triton.jit
def load_only_kernel(x_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.device_print("x", x)


def test_kernel_that_stores_nothing_compiles_and_runs():
    x = np.arange(4, dtype=np.float32)
    run_both(load_only_kernel, (1,), x_ptr=x, N=4)  # the compiled run must not be refused
    np.testing.assert_array_equal(x, np.arange(4, dtype=np.float32))
    compiled = load_only_kernel.warmup(x, N=4, grid=(1,))
    assert "device int32_t* unused_out" in compiled.asm["msl"]


@triton.jit
def add_one(ptr, i):
    tl.store(ptr + i, tl.load(ptr + i) + 1)


@triton.jit
def sub_one(ptr, i):
    tl.store(ptr + i, tl.load(ptr + i) - 1)


@triton.jit
def void_ifexp_kernel(a_ptr, b_ptr):
    pid = tl.program_id(0)
    add_one(a_ptr, pid) if pid % 2 == 0 else sub_one(b_ptr, pid)


def test_runtime_conditional_expression_of_void_calls():
    a = np.arange(6, dtype=np.int32) * 10
    b = np.arange(6, dtype=np.int32) * 100
    run_both(void_ifexp_kernel, (6,), a_ptr=a, b_ptr=b)
    even = np.arange(6) % 2 == 0
    np.testing.assert_array_equal(a, np.arange(6) * 10 + even)
    np.testing.assert_array_equal(b, np.arange(6) * 100 - ~even)


@triton.jit
def one_element_condition(x_ptr, out_ptr):
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid + tl.arange(0, 1))
    if v > 0:
        tl.store(out_ptr + pid, 1)
    else:
        tl.store(out_ptr + pid, 2)
    r = tl.reshape(v, (1, 1))
    y = 5 if r < 3 else 6
    tl.store(out_ptr + 8 + pid, y)


def test_one_element_block_as_condition():
    x = np.array([-1, 0, 2, 7], np.int32)
    out = np.zeros(12, np.int32)
    run_both(one_element_condition, (4,), x_ptr=x, out_ptr=out)
    np.testing.assert_array_equal(out[:4], np.where(x > 0, 1, 2))
    np.testing.assert_array_equal(out[8:], np.where(x < 3, 5, 6))


@triton.jit
def mixed_returns(x):
    if x > 0:
        return x
    tl.static_print("no value on this path")


@triton.jit
def mixed_returns_kernel(x_ptr):
    tl.store(x_ptr, mixed_returns(tl.load(x_ptr)))


def test_value_on_some_paths_only_is_refused():
    with pytest.raises(CompilationError, match="returns a value on some paths and nothing on others"):
        mixed_returns_kernel[(1,)](np.ones(1, np.float32))


@triton.jit
def two_element_condition(x_ptr):
    v = tl.load(x_ptr + tl.arange(0, 2))
    if v > 0:  # error
        tl.store(x_ptr, 1)


def test_block_of_two_elements_stays_refused():
    with pytest.raises(CompilationError, match=r"Boolean value of Tensor with more than one value is "
                                               r"ambiguous.*block of shape \[2\]"):
        two_element_condition[(1,)](np.ones(2, np.int32))


@triton.jit
def _sign_of(x):
    if x < 0:
        return 1
    return 0


@triton.jit
def _first_index_of(x_ptr, n, value):
    for i in range(n):
        if tl.load(x_ptr + i) == value:
            return i
    return -1


@triton.jit
def promoted_returns(x_ptr, out_ptr, n, C: tl.constexpr):
    # a value returned from a run-time `if` or loop is a tensor (the return slot's), from a
    # compile-time one a constexpr: the interpreter's values have the compiler's types
    tl.static_assert(_sign_of(n - 5).type == tl.int32)
    tl.static_assert(_sign_of(C).type == (1).type)  # C < 0 here
    tl.static_assert(_first_index_of(x_ptr, n, 7.0).type == tl.int32)
    tl.store(out_ptr, _sign_of(n - 5) * 10 + _first_index_of(x_ptr, n, 7.0) + _sign_of(C) * 100)


@pytest.mark.parametrize("n, expected", [(4, 1 * 10 + 2 + 100), (8, 0 + 2 + 100)])
def test_values_returned_from_run_time_constructs_are_tensors_on_both_backends(n, expected):
    x = np.array([0, 3, 7, 7, 1, 2, 3, 4], np.float32)
    out = np.zeros(1, np.int32)
    run_both(promoted_returns, (1,), x_ptr=x, out_ptr=out, n=n, C=-2)
    assert out[0] == expected


@triton.jit
def count_up_after_an_early_return(n):
    if n < 2:
        return -1
    i = 1
    while i < n:  # returns nothing itself: the value returned before it needs no slot here
        i += 1
    for _ in range(3):
        i += 2
    return i


@triton.jit
def early_then_loops_kernel(out_ptr, n):
    tl.store(out_ptr, count_up_after_an_early_return(n))


@pytest.mark.parametrize("n", [0, 5])
def test_a_loop_after_an_early_return_of_a_value(n: int) -> None:
    out = np.zeros(1, np.int32)
    run_both(early_then_loops_kernel, (1,), out_ptr=out, n=n)
    assert out[0] == (-1 if n < 2 else n + 6)
