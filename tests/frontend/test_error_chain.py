"""Errors inside `@jit` helpers and builtins are chained as Triton chains them: the error at the
call's site has the callee's error as its `__cause__` (located in the callee), and a builtin's
error has a cause whose traceback runs through the builtin's own code, not the front end's. The
message at the call site still names the innermost line. The same on both backends."""

from __future__ import annotations

import inspect
import traceback

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError


@triton.jit
def inner_helper(x):
    return x + undefined_name  # noqa: F821  # error


@triton.jit
def middle_helper(x):
    return inner_helper(x) * 2  # middle call


@triton.jit
def chained_kernel(x_ptr):
    x = tl.load(x_ptr)
    tl.store(x_ptr, middle_helper(x))  # kernel call


@triton.jit
def builtin_kernel(x_ptr):
    tl.store(x_ptr, tl.expand_dims(None, -1))  # builtin call


def line_of(fn: object, marker: str) -> int:
    lines, first = inspect.getsourcelines(getattr(fn, "fn", fn))  # type: ignore[arg-type]
    return first + next(i for i, line in enumerate(lines) if marker in line)


def frames(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, chain=False))


def test_callee_errors_are_the_causes_of_call_site_errors(backend: str) -> None:
    x = np.ones(1, np.float32)
    with pytest.raises(CompilationError) as info:
        chained_kernel[(1,)](x)
    outer = info.value
    middle = outer.__cause__
    inner = middle.__cause__ if isinstance(middle, CompilationError) else None
    assert isinstance(middle, CompilationError) and isinstance(inner, CompilationError)
    assert [e.loc.line for e in (outer, middle, inner)] == [  # type: ignore[union-attr]
        line_of(chained_kernel, "# kernel call"), line_of(middle_helper, "# middle call"),
        line_of(inner_helper, "# error"),
    ]
    assert all("name 'undefined_name' is not defined" == e.reason for e in (outer, middle, inner))
    assert outer.innermost is inner and inner.callee is None
    # each call site's message names the function holding the mistake with that function's line,
    # and the calls that lead there from the site
    assert (f"the error is in 'inner_helper' at {inner.loc} (at 2:15), reached through 'middle_helper' "
            "(called here) -> 'inner_helper'; that error ends this one's chain of causes") in str(outer)
    assert f"the error is in 'inner_helper' (called here) at {inner.loc} (at 2:15); that error is this one's cause" in str(middle)
    assert "'middle_helper' (called here) at" not in str(outer)
    assert "at 2:15:" in str(inner)  # Triton's position within inner_helper
    assert x[0] == 1.0
    for error in (outer, middle, inner):
        assert "code_generator.py" not in frames(error) and "calls.py" not in frames(error)


def test_builtin_errors_carry_the_builtins_frames(backend: str) -> None:
    with pytest.raises(CompilationError) as info:
        builtin_kernel[(1,)](np.ones(1, np.float32))
    assert info.value.loc is not None and info.value.loc.line == line_of(builtin_kernel, "# builtin call")
    cause = info.value.__cause__
    assert isinstance(cause, TypeError)
    text = frames(cause)
    assert "shape_ops.py" in text and "core.py" in text  # tl.expand_dims and the builtin wrapper
    assert "triton_metal/frontend" not in text


@triton.jit
def returns_two_shapes(n):  # definition
    if n == 0:  # the if
        return tl.arange(0, 4)
    else:
        return tl.arange(0, 8)


@triton.jit
def two_shapes_kernel(x_ptr, n):
    tl.store(x_ptr + tl.arange(0, 4), returns_two_shapes(n))  # kernel call


def test_a_return_type_mismatch_is_reported_at_the_definition(backend: str) -> None:
    """As Triton: the callee's error points at its `def` (its `at 1:0`); the hint names the `if`."""
    x = np.ones(4, np.float32)
    with pytest.raises(CompilationError) as info:
        two_shapes_kernel[(1,)](x, 0)
    outer, inner = info.value, info.value.__cause__
    assert isinstance(inner, CompilationError)
    assert outer.loc.line == line_of(two_shapes_kernel, "# kernel call")  # type: ignore[union-attr]
    assert inner.loc.line == line_of(returns_two_shapes, "# definition")  # type: ignore[union-attr]
    assert "at 1:0:" in str(inner) and "def returns_two_shapes(n):" in str(inner)
    assert inner.reason.startswith("Return type mismatch: tensor<4xi32> is returned on one path")
    assert f"the 'if' at line {line_of(returns_two_shapes, '# the if')} differ" in inner.hint  # type: ignore[operator]
    assert (x == 1.0).all()
