"""constexpr folding, tensor protocol refusals and builtins outside kernels."""

from __future__ import annotations

import pytest

import triton_metal.language as tl
from triton_metal.errors import CompilationError
from triton_metal.language import JITCallable, constexpr


def test_constexpr_arithmetic_folds_to_constexpr() -> None:
    a, b = constexpr(7), constexpr(2)
    for result, expected in [
        (a + b, 9), (a - b, 5), (a * b, 14), (a // b, 3), (a % b, 1), (a / b, 3.5),
        (a ** b, 49), (a << b, 28), (a >> 1, 3), (a & 3, 3), (a | 8, 15), (a ^ 1, 6),
        (-a, -7), (~a, -8), (3 + a, 10), (20 - a, 13), (2 * a, 14),
    ]:
        assert isinstance(result, constexpr)
        assert result.value == expected


def test_constexpr_comparisons_and_python_protocols() -> None:
    a = constexpr(4)
    assert isinstance(a < 5, constexpr) and (a < 5).value is True
    assert (a == 4).value is True and (a != 4).value is False
    assert bool(constexpr(0)) is False
    assert list(range(constexpr(3))) == [0, 1, 2]
    assert constexpr(constexpr(5)).value == 5
    assert hash(constexpr(5)) == hash(5)
    assert constexpr(tl.float16).is_floating()  # attribute access reaches the value


def test_constexpr_floor_division_is_python_semantics() -> None:
    # scalars follow Python, tensors follow C (see the interpreter tests)
    assert (constexpr(-7) // 2).value == -4
    assert (constexpr(-7) % 2).value == 1


def test_builtin_outside_kernel_is_refused() -> None:
    with pytest.raises(RuntimeError, match=r"tl\.arange can only be called inside a @jit kernel"):
        tl.arange(0, 4)
    with pytest.raises(RuntimeError, match=r"tl\.load can only be called inside a @jit kernel"):
        tl.load(None)


def test_jit_callable_outside_kernel_is_refused() -> None:
    def helper(x):  # noqa: ANN001, ANN202
        return x

    f = JITCallable(helper)
    with pytest.raises(RuntimeError, match="cannot be called directly"):
        f(1)


def test_jit_callable_attributes() -> None:
    def kernel(x_ptr, n, BLOCK: tl.constexpr):  # noqa: ANN001, ANN202, N803
        pass

    f = JITCallable(kernel, do_not_specialize=["n"], noinline=True)
    assert f.fn is kernel
    assert f.__name__ == "kernel"
    assert f.arg_names == ["x_ptr", "n", "BLOCK"]
    assert f.noinline is True
    assert f.do_not_specialize == ["n"]
    assert f.src.startswith("def kernel(")
    assert f.starting_line == kernel.__code__.co_firstlineno
    assert f.__globals__ is kernel.__globals__


def test_tensor_bool_refused_outside_interpreter() -> None:
    t = tl.tensor(None, tl.int1)
    with pytest.raises(CompilationError, match="truth value is not known"):
        bool(t)
    with pytest.raises(CompilationError, match="cannot be used as a Python integer"):
        range(t)  # type: ignore[call-overload]


def test_static_range_requires_constexpr_bounds() -> None:
    assert list(tl.static_range(2, 8, 3)) == [2, 5]
    with pytest.raises(CompilationError, match="static_range end must be a constexpr integer"):
        tl.static_range(0, 2.5)


def test_range_accepts_and_ignores_pipelining_hints() -> None:
    r = tl.range(0, 10, 4, num_stages=3, loop_unroll_factor=2, flatten=True, warp_specialize=True,
                 disallow_acc_multi_buffer=True, disable_licm=True)
    assert list(r) == [0, 4, 8]
