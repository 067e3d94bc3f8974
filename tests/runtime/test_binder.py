"""The generated binder: Python does the binding, the launch path never calls `inspect`."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.runtime import ConstexprArg, PointerArg, ScalarArg
from triton_metal.runtime.binder import Param, make_binder


@triton.jit
def kernel(x_ptr, n, scale, BLOCK: tl.constexpr = 128, ACT: tl.constexpr = "none"):
    pass


def test_binds_positional_keyword_and_defaults():
    x = np.zeros(8, np.float32)
    values, facts, num_warps, num_stages, num_ctas, maxnreg, debug = kernel._binder(x, 40, 0.5)
    assert values == (x, 40, 0.5, 128, "none")
    assert facts == (
        PointerArg(tl.float32, True),
        ScalarArg(tl.int32, False),
        ScalarArg(tl.float32, False),
        ConstexprArg(128, "int"),
        ConstexprArg("none", "str"),
    )
    assert (num_warps, num_stages, num_ctas, maxnreg, debug) == (None, None, None, None, None)
    values, _, num_warps, num_stages, *_ = kernel._binder(
        scale=2.0, n=3, x_ptr=x, ACT="relu", num_warps=8, num_stages=1
    )
    assert values == (x, 3, 2.0, 128, "relu")
    assert (num_warps, num_stages) == (8, 1)


def test_binding_does_not_call_inspect(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("inspect.signature called on the launch path")

    monkeypatch.setattr(inspect, "signature", forbidden)
    x = np.zeros(8, np.float32)
    key = kernel.specialization(x, 16, 1.5, BLOCK=64)
    assert key.args[3] == ConstexprArg(64, "int")


def test_binder_source_mirrors_the_signature():
    source = kernel._binder.__doc__
    assert source.startswith("def binder(x_ptr, n, scale, BLOCK=_tm_default_3, ACT=_tm_default_4, *,")
    assert "num_warps=None" in source and "**_tm_extra" in source


def test_keyword_only_parameters():
    @triton.jit
    def k(a, *, B: tl.constexpr, c=3):
        pass

    values, facts, *_ = k._binder(5, B=2)
    assert values == (5, 2, 3)
    with pytest.raises(triton.LaunchError, match="too many positional arguments"):
        k.specialization(5, 2)


def test_parameter_named_like_a_launch_option_takes_the_value():
    @triton.jit
    def k(x, num_stages: tl.constexpr):
        pass

    values, facts, _warps, num_stages, *_ = k._binder(1.0, num_stages=3)
    assert values == (1.0, 3)
    assert facts[1] == ConstexprArg(3, "int")
    assert num_stages == 3  # the option reads the parameter, as Triton's option parsing does


def test_reserved_parameter_names_are_refused():
    def k(_tm_spec, n):
        pass

    with pytest.raises(triton.LaunchError, match="reserved"):
        make_binder("k", [Param("_tm_spec", 0, False, False, False, False)])
    with pytest.raises(triton.LaunchError, match="reserved"):
        triton.jit(k)


def test_var_keywords_are_refused_at_decoration_and_var_args_at_launch():
    def k(a, **rest):
        pass

    with pytest.raises(TypeError, match=r"\*\*rest"):
        triton.jit(k)

    def helper(a, *rest):  # a helper called from kernels takes them (a tuple); a launch cannot
        pass

    jitted = triton.jit(helper)
    assert jitted.varargs == "rest" and jitted.arg_names == ["a"]
    with pytest.raises(triton.CompilationError, match=r"has \*rest: .* not launched"):
        jitted[(1,)](np.zeros(1, np.float32), 2)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((), {}, "missing a required argument: 'x_ptr'"),
        ((np.zeros(4, np.float32),), {}, "missing a required argument: 'n'"),
        ((np.zeros(4, np.float32), 1, 2.0, 4, "a", 9), {}, "too many positional arguments"),
        ((np.zeros(4, np.float32), 1), {"n": 3}, "multiple values for argument 'n'"),
    ],
)
def test_binding_errors_name_the_parameter(args, kwargs, message):
    with pytest.raises(triton.LaunchError) as info:
        kernel.specialization(*args, **kwargs)
    text = str(info.value)
    assert message in text
    assert text.startswith("kernel: ")
    assert "x_ptr, n, scale, BLOCK, ACT" in text


def test_unknown_keyword_raises_tritons_key_error():
    with pytest.raises(KeyError, match="Keyword argument num_warp was specified but unrecognised"):
        kernel.specialization(np.zeros(4, np.float32), 1, 2.0, num_warp=4)


@triton.jit
def _scaled(x_ptr, type, int, float, len, isinstance, N: tl.constexpr):  # noqa: A002
    offs = tl.arange(0, N)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * type + int + float * len + isinstance)


@triton.jit
def _by_mode(x_ptr, n, type: tl.constexpr):  # noqa: A002 - Triton's test_call names it so
    offs = tl.arange(0, 8)
    v = tl.load(x_ptr + offs, mask=offs < n)
    if type == "double":
        v = v * 2
    else:
        v = v + 1
    tl.store(x_ptr + offs, v, mask=offs < n)


@pytest.mark.parametrize("interpret", [False, True])
def test_parameters_may_be_named_like_builtins(monkeypatch: pytest.MonkeyPatch, interpret: bool) -> None:
    """The binder reaches no builtin by its own name: parameters called `type`, `int`, `float`,
    `len` or `isinstance` bind and launch on every backend."""
    if interpret:
        monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    x = np.arange(8, dtype=np.float32)
    _scaled[(1,)](x, 3.0, 2, 0.5, 4, 1, N=8)
    np.testing.assert_array_equal(x, np.arange(8, dtype=np.float32) * 3 + 2 + 0.5 * 4 + 1)
    y = np.arange(8, dtype=np.float32)
    _by_mode[(1,)](y, 6, "double")
    _by_mode[(1,)](y, 6, type="plus")
    np.testing.assert_array_equal(y, np.where(np.arange(8) < 6, np.arange(8) * 2 + 1, np.arange(8)))
