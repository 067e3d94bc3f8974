"""Loops, @jit helpers, debugging builtins, hints, error locations and refused features."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import triton_metal.language as tl
from triton_metal.errors import CompilationError, CompileTimeAssertionFailure, InterpreterError
from triton_metal.language import JITCallable


@JITCallable
def leaky_relu(x):  # noqa: ANN001, ANN201
    return tl.where(x >= 0, x, 0.01 * x)


@JITCallable
def scaled(x, factor: tl.constexpr):  # noqa: ANN001, ANN201
    if factor == 1:
        return x
    return x * factor


def test_jit_helpers_and_constexpr_branches(run: Any) -> None:
    x = np.linspace(-2, 2, 16).astype(np.float32)
    out = np.zeros(16, np.float32)

    def kernel(x_ptr, o_ptr, ACTIVATION: tl.constexpr, F: tl.constexpr):  # noqa: ANN001, ANN202, N803
        offs = tl.arange(0, 16)
        v = tl.load(x_ptr + offs)
        if ACTIVATION == "leaky_relu":
            v = leaky_relu(v)
        tl.store(o_ptr + offs, scaled(v, F))

    run(kernel, x_ptr=x, o_ptr=out, ACTIVATION="leaky_relu", F=3)
    np.testing.assert_allclose(out, np.where(x >= 0, x, 0.01 * x) * 3, rtol=1e-6)


def test_runtime_bound_loops_and_static_range(run: Any) -> None:
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(4, np.float32)

    def kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):  # noqa: ANN001, ANN202, N803
        acc = tl.zeros((BLOCK,), tl.float32)
        for start in tl.range(0, n, BLOCK, num_stages=2):
            offs = start + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        tl.store(o_ptr, tl.sum(acc))
        total = 0.0
        for i in tl.static_range(3):
            total += i
        tl.store(o_ptr + 1, total)
        k = 0
        while tl.condition(k < n // 16):
            k += 1
        tl.store(o_ptr + 2, k)
        count = tl.zeros((), tl.int32)
        for _ in range(tl.cdiv(n, BLOCK)):
            count += 1
        tl.store(o_ptr + 3, count)

    run(kernel, x_ptr=x, o_ptr=out, n=60, BLOCK=16)
    assert out.tolist() == [float(x[:60].sum()), 3.0, 3.0, 4.0]


def test_program_ids_and_num_programs_over_a_3d_grid(run: Any) -> None:
    out = np.zeros((2, 3, 4, 6), np.int32)

    def kernel(o_ptr):  # noqa: ANN001, ANN202
        x, y, z = tl.program_id(0), tl.program_id(1), tl.program_id(2)
        base = ((z * 3 + y) * 4 + x) * 6
        vals = tl.cat(tl.join(x, y), tl.join(z, tl.num_programs(0)))
        tl.store(o_ptr + base + tl.arange(0, 4), vals)
        tl.store(o_ptr + base + 4, tl.num_programs(1))
        tl.store(o_ptr + base + 5, tl.num_programs(2))

    run(kernel, (4, 3, 2), o_ptr=out)
    for z in range(2):
        for y in range(3):
            for x in range(4):
                assert out[z, y, x].tolist() == [x, y, z, 4, 3, 2]


def test_hints_pass_values_through(run: Any) -> None:
    out = np.zeros(16, np.int32)

    def kernel(o_ptr, n):  # noqa: ANN001, ANN202
        offs = tl.max_contiguous(tl.multiple_of(tl.arange(0, 16), 16), 16)
        offs = tl.max_constancy(offs, 1)
        tl.assume(n > 0)
        tl.debug_barrier()
        tl.store(o_ptr + offs, offs * 2)

    run(kernel, o_ptr=out, n=4)
    assert out.tolist() == [2 * i for i in range(16)]


def test_static_assert_and_static_print(run: Any, capsys: Any) -> None:
    def kernel(BLOCK: tl.constexpr):  # noqa: ANN202, N803
        tl.static_print("block is", BLOCK)
        tl.static_assert(BLOCK % 16 == 0, "BLOCK must be a multiple of 16")  # error

    run(kernel, BLOCK=32)
    assert "block is 32" in capsys.readouterr().out
    with pytest.raises(CompileTimeAssertionFailure) as info:
        run(kernel, BLOCK=8)
    msg = str(info.value)
    assert "BLOCK must be a multiple of 16" in msg
    assert "in kernel 'kernel'" in msg
    assert "# error" in msg


def test_device_print_and_assert(run: Any, capsys: Any) -> None:
    x = np.array([1, 2, 3, 4], np.int32)

    def kernel(x_ptr):  # noqa: ANN001, ANN202
        v = tl.load(x_ptr + tl.arange(0, 4))
        tl.device_print("v=", v)
        tl.device_assert(v < 4, "value too large", mask=v != 4)
        tl.device_assert(v > 1, "must exceed one")  # error

    with pytest.raises(InterpreterError) as info:
        run(kernel, (2,), x_ptr=x)
    assert capsys.readouterr().out.splitlines() == [f"pid (0, 0, 0) idx ({i}) v=: {i + 1}" for i in range(4)]
    assert "device_assert failed at index (0,): must exceed one" in str(info.value)
    assert "# error" in str(info.value)


def test_errors_in_helpers_point_into_the_helper(run: Any) -> None:
    @JITCallable
    def bad_helper(x):  # noqa: ANN001, ANN202
        return tl.exp(x)  # error: ints are refused

    def kernel():  # noqa: ANN202
        bad_helper(tl.arange(0, 4))

    with pytest.raises(CompilationError) as info:
        run(kernel)
    msg = str(info.value)
    assert "tl.exp expects a floating point tensor" in msg
    assert "hint: cast first" in msg
    assert "return tl.exp(x)  # error" in msg


def test_python_errors_in_the_body_keep_their_cause(run: Any) -> None:
    def kernel():  # noqa: ANN202
        d = {}
        d["missing"]  # error  # noqa: B018

    with pytest.raises(InterpreterError) as info:
        run(kernel)
    assert "KeyError" in str(info.value) and "# error" in str(info.value)
    assert isinstance(info.value.__cause__, KeyError)


def test_tensor_truth_value_works_for_scalars_only(run: Any) -> None:
    out = np.zeros(1, np.int32)

    def ok(o_ptr, n):  # noqa: ANN001, ANN202
        if n > 3:
            tl.store(o_ptr, 1)

    run(ok, o_ptr=out, n=5)
    assert out[0] == 1

    def ambiguous():  # noqa: ANN202
        if tl.arange(0, 4) > 1:
            pass

    with pytest.raises(CompilationError, match="ambiguous"):
        run(ambiguous)


REFUSED = [
    ("tl.make_block_ptr(None, (1,), (1,), (0,), (1,), (0,))", "expected `base` to be a scalar pointer"),
    ("p = tl.advance(None, (0,))", "expected a block pointer"),
    ("tl.make_tensor_descriptor(None, [1], [1], [1])", "scalar pointer as its base"),
    ("tl.dot_scaled(tl.zeros((16, 16), tl.uint8), None, 'e3m3', tl.zeros((16, 16), tl.uint8), None, 'e4m3')",
     "NYI: lhs_format e3m3"),
    ("tl.inline_asm_elementwise('', '', [], tl.float32, True, 1)", "inline PTX"),
    ("tl.extra.libdevice.log1p(1.0)", "the Metal standard library has no such function"),
    ("tl.zeros((4,), tl.float8e4nv) * 2.0", "arithmetic on fp8e4nv values is not supported"),
    ("tl.arange(0, 4).to(tl.float64)", "no fp64"),
    ("tl.load(tl.arange(0, 4))", "needs a pointer"),
    ("tl.atomic_add(tl.arange(0, 4), 1)", "needs a pointer"),
    ("tl.static_assert(tl.arange(0, 4))", "compile-time condition"),
    ("tl.program_id(3)", "program_id axis must be 0, 1, or 2 but got 3"),
]


@pytest.mark.parametrize(("body", "match"), REFUSED, ids=[r[0].split("(")[0] for r in REFUSED])
def test_refused_features_say_why(run: Any, body: str, match: str) -> None:
    ns: dict[str, Any] = {"tl": tl}
    exec(compile(f"def kernel():\n    {body}\n", "<refusal>", "exec"), ns)
    with pytest.raises(CompilationError, match=match) as info:
        run(ns["kernel"])
    assert "hint:" in str(info.value) or "program_id" in body or "static_assert" in body


def test_print_shows_values_in_the_interpreter(run: Any, capsys: Any) -> None:
    def kernel():  # noqa: ANN202
        print(tl.arange(0, 4) * 2)
        print(tl.program_id(0))

    run(kernel)
    out = capsys.readouterr().out
    assert "tensor(tensor<4xi32>, array([0, 2, 4, 6]" in out
    assert "tensor(i32, 0)" in out
