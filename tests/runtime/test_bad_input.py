"""Bad launches are refused before anything runs, with messages naming the parameter, and leave
every array as it was."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest
from runtime_kernels import axpy_kernel

import triton_metal as triton
from triton_metal.errors import CompilationError, LaunchError

N = 40


@pytest.fixture
def arrays():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(N).astype(np.float32)
    y = rng.standard_normal(N).astype(np.float32)
    out = np.full(N, 7.0, np.float32)
    return x, y, out


def launch(x, y, out, *rest, grid=(1,), **kwargs):
    args = rest or (1.5, N)
    kwargs.setdefault("BLOCK", 64)
    axpy_kernel[grid](x, y, out, *args, **kwargs)


def assert_untouched(x, y, out, before):
    np.testing.assert_array_equal(x, before[0])
    np.testing.assert_array_equal(y, before[1])
    np.testing.assert_array_equal(out, before[2])


def test_the_good_launch_writes(arrays):
    x, y, out = arrays
    launch(x, y, out)
    np.testing.assert_array_equal(out, np.float32(1.5) * x + y)


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        # argument count and names
        (lambda x, y, o: ((x, y), {}), LaunchError, "missing a required argument: 'out_ptr'"),
        (lambda x, y, o: ((x, y, o, 1.5, N, 64, 5), {}), LaunchError, "too many positional arguments"),
        (lambda x, y, o: ((x, y, o, 1.5, N), {"BLOCK": 64, "alpah": 2.0}), KeyError,
         "Keyword argument alpah was specified but unrecognised"),
        (lambda x, y, o: ((x, y, o, 1.5), {"BLOCK": 64, "x_ptr": x}), LaunchError,
         "multiple values for argument 'x_ptr'"),
        # a non-array where an array is expected
        (lambda x, y, o: (([1.0] * N, y, o, 1.5, N), {"BLOCK": 64}), LaunchError,
         "argument 'x_ptr' is a Python list; pass an array or a tensor"),
        (lambda x, y, o: ((x, "y", o, 1.5, N), {"BLOCK": 64}), None, None),  # str: a constexpr
        (lambda x, y, o: ((x, y, object(), 1.5, N), {"BLOCK": 64}), TypeError,
         "argument 'out_ptr' has unsupported type builtins.object"),
        # element types
        (lambda x, y, o: ((x.astype(np.float64), y, o, 1.5, N), {"BLOCK": 64}), LaunchError,
         "argument 'x_ptr' is a float64 array: Apple GPUs have no fp64"),
        (lambda x, y, o: ((x, y.astype(np.complex64), o, 1.5, N), {"BLOCK": 64}), LaunchError,
         "argument 'y_ptr' has element type complex64, which a kernel cannot use"),
        (lambda x, y, o: ((x, y, o, 1.5 + 2j, N), {"BLOCK": 64}), TypeError,
         "argument 'alpha' is a complex number"),
        (lambda x, y, o: ((x, y, o, 1.5, 2**70), {"BLOCK": 64}), LaunchError,
         "argument 'n' = 1180591620717411303424 does not fit in 64 bits"),
        (lambda x, y, o: ((x, y, o, 1.5, N), {"BLOCK": x}), LaunchError,
         "argument 'BLOCK' is a tl.constexpr parameter but was given an array"),
        (lambda x, y, o: ((x, y, o, 1.5, N), {"BLOCK": {"a": 1}}), LaunchError,
         "argument 'BLOCK' is a tl.constexpr parameter but its value of type dict is not hashable"),
        # launch options
        (lambda x, y, o: ((x, y, o, 1.5, N), {"BLOCK": 64, "num_warps": 3}), LaunchError,
         "num_warps=3; num_warps must be a power of 2, from 1 to 32"),
        (lambda x, y, o: ((x, y, o, 1.5, N), {"BLOCK": 64, "num_warps": 64}), LaunchError,
         "num_warps=64"),
    ],
)
def test_bad_arguments(arrays, change, error, message):
    x, y, out = arrays
    before = (x.copy(), y.copy(), out.copy())
    args, kwargs = change(x, y, out)
    if error is None:
        # a string for a pointer parameter is a constexpr; the front end then refuses to
        # dereference it, still before anything runs
        with pytest.raises(CompilationError):
            axpy_kernel[(1,)](*args, **kwargs)
    else:
        with pytest.raises(error, match=message):
            axpy_kernel[(1,)](*args, **kwargs)
    assert_untouched(x, y, out, before)


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ((-2,), "entry 0 is -2, but a grid dimension cannot be negative"),
        ((1.5,), r"entry 0 \(1.5\) is not an int"),
        ((1, 1, 1, 1), "a grid has 1 to 3 dimensions"),
        ((2**31,), "over the limit of 2147483647 programs per dimension"),
        (lambda meta: (-1,), "the grid function returned \\(-1,\\)"),
        (lambda meta: "x", "the grid function returned 'x'"),
    ],
)
def test_bad_grids(arrays, grid, message):
    x, y, out = arrays
    before = (x.copy(), y.copy(), out.copy())
    with pytest.raises(LaunchError, match=message):
        launch(x, y, out, grid=grid)
    assert_untouched(x, y, out, before)


@pytest.mark.parametrize("grid", [(0,), (2, 0), lambda meta: (triton.cdiv(0, meta["BLOCK"]),)])
def test_a_grid_without_programs_runs_nothing(arrays, grid):
    """As Triton's launcher: a zero dimension (an empty batch) compiles the kernel and runs no
    program, so every array is left as it was."""
    x, y, out = arrays
    before = (x.copy(), y.copy(), out.copy())
    launch(x, y, out, grid=grid)
    assert_untouched(x, y, out, before)


def test_scalar_for_a_dereferenced_parameter_fails_to_compile(arrays):
    x, y, out = arrays
    before = (x.copy(), y.copy(), out.copy())
    with pytest.raises(CompilationError) as info:
        axpy_kernel[(1,)](x, 3, out, 1.5, N, BLOCK=64)
    assert "axpy_kernel" in str(info.value)
    assert_untouched(x, y, out, before)


def test_mlx_float64_is_refused():
    x = mx.zeros((N,), dtype=mx.float32)
    with pytest.raises(LaunchError, match="argument 'y_ptr' is a float64 array: Apple GPUs have no fp64"):
        axpy_kernel[(1,)](x, mx.zeros((N,), dtype=mx.float64), x, 1.0, N, BLOCK=64)


def test_non_constexpr_value_for_a_constexpr_parameter_is_its_value(arrays):
    x, y, out = arrays
    axpy_kernel[(1,)](x, y, out, 1.5, N, np.int64(64))
    np.testing.assert_array_equal(out, np.float32(1.5) * x + y)


def test_bad_input_is_refused_in_interpret_mode_too(arrays, monkeypatch):
    monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    x, y, out = arrays
    before = (x.copy(), y.copy(), out.copy())
    with pytest.raises(LaunchError, match="float64"):
        launch(x.astype(np.float64), y, out)
    with pytest.raises(LaunchError, match="cannot be negative"):
        launch(x, y, out, grid=(-1,))
    launch(x, y, out, grid=(0,))  # no programs: nothing runs, as compiled
    assert_untouched(x, y, out, before)
