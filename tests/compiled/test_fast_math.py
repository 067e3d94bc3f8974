"""Triton's numerics at Triton's cost (docs/language.md, "Math functions"): the functions Triton
computes with approximate instructions (`tl.exp`, `exp2`, `log`, `log2`, `sqrt`, `rsqrt`,
`sigmoid`, `tl.maximum`/`minimum`) print Metal's fast counterparts, those Triton makes exact
(libdevice, `sqrt_rn`, `propagate_nan=ALL`) keep the exact forms, and `erf` is a branch-free
approximation of stated error. Each is checked against float64 within its stated bound on both
backends (the emulator computes `fast::` functions other than `divide` exactly, so the bounds
are those of the documentation, not of a Mac)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.backends.interpreter import launch as interpret_launch
from triton_metal.language import JITCallable
from triton_metal.language.extra import libdevice


@triton.jit
def _unary_kernel(x_ptr, exp_ptr, exp2_ptr, log_ptr, log2_ptr, sqrt_ptr, rsqrt_ptr, sig_ptr, erf_ptr,
                  N: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(exp_ptr + offs, tl.exp(x))
    tl.store(exp2_ptr + offs, tl.exp2(x))
    tl.store(log_ptr + offs, tl.log(x))
    tl.store(log2_ptr + offs, tl.log2(x))
    tl.store(sqrt_ptr + offs, tl.sqrt(x))
    tl.store(rsqrt_ptr + offs, tl.rsqrt(x))
    tl.store(sig_ptr + offs, tl.sigmoid(x))
    tl.store(erf_ptr + offs, tl.erf(x))


@triton.jit
def _exact_kernel(x_ptr, exp_ptr, log_ptr, sqrt_ptr, rn_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(exp_ptr + offs, libdevice.exp(x))
    tl.store(log_ptr + offs, libdevice.log(x))
    tl.store(sqrt_ptr + offs, libdevice.sqrt(x))
    tl.store(rn_ptr + offs, tl.sqrt_rn(x))


@triton.jit
def _trig_kernel(x_ptr, sin_ptr, cos_ptr, fsin_ptr, fcos_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(sin_ptr + offs, tl.sin(x))
    tl.store(cos_ptr + offs, tl.cos(x))
    tl.store(fsin_ptr + offs, libdevice.fast_sinf(x))
    tl.store(fcos_ptr + offs, libdevice.fast_cosf(x))


@triton.jit
def _minmax_kernel(a_ptr, b_ptr, max_ptr, min_ptr, maxnan_ptr, minnan_ptr, rmax_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    tl.store(max_ptr + offs, tl.maximum(a, b))
    tl.store(min_ptr + offs, tl.minimum(a, b))
    tl.store(maxnan_ptr + offs, tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL))
    tl.store(minnan_ptr + offs, tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL))
    tl.store(rmax_ptr + tl.arange(0, 1), tl.max(tl.reshape(a, [N]), 0)[None])


def _both(kernel: Any, grid: tuple[int, ...], **args: Any) -> dict[str, dict[str, np.ndarray]]:
    """Each backend's results, from fresh copies of the arrays: {"interpreter": ..., "emulator": ...}."""
    g = tuple(grid) + (1,) * (3 - len(grid))
    out: dict[str, dict[str, np.ndarray]] = {}
    for backend in ("interpreter", "emulator"):
        run = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
        if backend == "interpreter":
            interpret_launch(JITCallable(kernel.fn), (g[0], g[1], g[2]), run)
        else:
            kernel[grid](**run)
        out[backend] = {k: v for k, v in run.items() if isinstance(v, np.ndarray)}
    return out


def _ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| in units of float32's spacing at `exact` (float64), finite values."""
    return np.abs(got.astype(np.float64) - exact) / np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)


_ERF = np.vectorize(math.erf)
_UNARY_OUTS = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sig", "erf")


def _run_unary(x: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """`_unary_kernel` over `x` (a multiple of 1024 elements) on both backends."""
    outs = {f"{k}_ptr": np.zeros(x.size, np.float32) for k in _UNARY_OUTS}
    with np.errstate(all="ignore"):
        return _both(_unary_kernel, (x.size // 1024,), x_ptr=x, N=1024, **outs)


def _erf_points() -> np.ndarray:
    dense = np.linspace(-6.0, 6.0, 1 << 20, dtype=np.float32)
    decades = (np.float32(2.0) ** np.arange(-149, 3, 0.05)).astype(np.float32)
    pts = np.concatenate([dense, decades, -decades, np.float32([0.0, -0.0, 1.0, -1.0, 4.0, 1e30])])
    return np.concatenate([pts, np.full(-pts.size % 1024, 0.5, np.float32)])  # whole programs of 1024


def test_erf_is_within_its_stated_bound_everywhere():
    x = _erf_points()
    res = _run_unary(x)
    exact = _ERF(x.astype(np.float64))
    for backend, r in res.items():
        got = r["erf_ptr"]
        err = np.abs(got.astype(np.float64) - exact)
        # templates/helpers/erf.metal: 1.4e-7 absolute and 2.5 ulp (the interpreter rounds erf)
        assert err.max() <= 1.4e-7, (backend, x[err.argmax()], err.max())
        assert _ulps(got, exact).max() <= 2.5, backend
        np.testing.assert_array_equal(np.signbit(got), np.signbit(x), err_msg=backend)  # odd, erf(-0) = -0
    for backend, r in _run_unary(np.float32([np.nan, np.inf, -np.inf] + [0.5] * 1021)).items():
        np.testing.assert_array_equal(r["erf_ptr"][:3], np.float32([np.nan, 1.0, -1.0]), err_msg=backend)


# (function, reference, bound in ulp from the MSL specification's fast-math table, domain)
_FAST = [
    ("exp", np.exp, lambda x: 3 + np.floor(1.16 * np.abs(x)), (-80.0, 80.0)),
    ("exp2", np.exp2, lambda x: 3 + np.floor(1.16 * np.abs(x)), (-120.0, 120.0)),
    ("log", np.log, lambda x: np.full_like(x, 3.0), (1e-30, 1e30)),
    ("log2", np.log2, lambda x: np.full_like(x, 2.0), (1e-30, 1e30)),
    ("sqrt", np.sqrt, lambda x: np.full_like(x, 3.0), (1e-30, 1e30)),
    ("rsqrt", lambda x: 1 / np.sqrt(x), lambda x: np.full_like(x, 2.0), (1e-30, 1e30)),
]


@pytest.mark.parametrize("name,ref,bound,domain", _FAST, ids=[f[0] for f in _FAST])
def test_fast_functions_within_documented_bounds(name: str, ref: Any, bound: Any, domain: tuple[float, float]):
    rng = np.random.default_rng(11)
    lo, hi = domain
    if lo > 0:  # log-uniform over positive ranges
        x = np.exp(rng.uniform(np.log(lo), np.log(hi), 4096)).astype(np.float32)
    else:
        x = rng.uniform(lo, hi, 4096).astype(np.float32)
    res = _run_unary(x)
    exact = ref(x.astype(np.float64))
    # log/log2 near 1: the table's absolute bounds (2^-21, 2^-22) apply in [0.5, 2]
    absolute = {"log": 2.0**-21, "log2": 2.0**-22}.get(name)
    for backend, r in res.items():
        got = r[f"{name}_ptr"].astype(np.float64)
        finite = np.isfinite(exact) & (np.abs(exact) < 3.4e38) & (np.abs(exact) > 1.2e-38)
        ok = _ulps(got[finite].astype(np.float32), exact[finite]) <= bound(x[finite].astype(np.float64))
        if absolute is not None:
            near_one = (x[finite] >= 0.5) & (x[finite] <= 2.0)
            ok |= near_one & (np.abs(got[finite] - exact[finite]) <= absolute)
        assert ok.all(), (backend, name, x[finite][~ok][:4])


def test_sigmoid_special_values_and_accuracy():
    x = np.concatenate([np.float32([np.inf, -np.inf, 0.0, 100.0, -100.0, -1e30]),
                        np.linspace(-30, 30, 1018, dtype=np.float32)])
    res = _run_unary(x)
    with np.errstate(over="ignore"):
        exact = 1 / (1 + np.exp(-x.astype(np.float64)))
    for backend, r in res.items():
        s = r["sig_ptr"]
        # 1 / inf takes the IEEE division: exact zeros; 1 / 1 is fast::divide's (2.5 ulp)
        np.testing.assert_array_equal(s[[1, 4, 5]], np.float32([0.0, 0.0, 0.0]), err_msg=backend)
        # exp's bound (3 + 1.16|x| ulp) then fast::divide's (2.5 ulp) after the sum's rounding
        xs = np.minimum(np.abs(x), 100)
        tol = (3 + 1.16 * xs + 4) * np.spacing(np.abs(exact).astype(np.float32))
        assert (np.abs(s - exact) <= tol).all(), backend


def test_libdevice_and_sqrt_rn_stay_exact_forms():
    x = np.exp(np.random.default_rng(2).uniform(-20, 20, 256)).astype(np.float32)
    res = _both(_exact_kernel, (1,), x_ptr=x, exp_ptr=np.zeros(256, np.float32), log_ptr=np.zeros(256, np.float32),
                sqrt_ptr=np.zeros(256, np.float32), rn_ptr=np.zeros(256, np.float32), N=256)
    for backend, r in res.items():
        np.testing.assert_array_equal(r["rn_ptr"], np.sqrt(x), err_msg=backend)  # correctly rounded
        np.testing.assert_allclose(r["sqrt_ptr"], np.sqrt(x), rtol=1.2e-7, err_msg=backend)
        np.testing.assert_allclose(r["log_ptr"], np.log(x.astype(np.float64)), rtol=2.4e-7, atol=1e-7, err_msg=backend)
        with np.errstate(over="ignore"):
            e = np.exp(x.astype(np.float64))
        small = e < 3e38
        np.testing.assert_allclose(r["exp_ptr"][small], e[small], rtol=2.4e-7, err_msg=backend)


def test_lowering_picks_fast_and_exact_forms():
    x = np.ones(1024, np.float32)
    fast = _unary_kernel.warmup(*([x] * 9), N=1024, grid=(1,)).asm["msl"]
    for fn in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt"):
        assert f"fast::{fn}(" in fast and f"precise::{fn}(" not in fast, fn
    assert "km_erf(" in fast and "km_div_fast(" in fast  # erf; sigmoid's division
    exact = _exact_kernel.warmup(*([x] * 5), N=1024, grid=(1,)).asm["msl"]
    assert "precise::exp(" in exact and "precise::log(" in exact and "precise::sqrt(" in exact
    assert "fast::" not in exact
    mm = _minmax_kernel.warmup(*([x] * 7), N=1024, grid=(1,)).asm["msl"]
    assert "fmax(" in mm and "fmin(" in mm and "km_fmaximum(" in mm and "km_fminimum(" in mm


def test_fast_sin_and_cos_are_metal_fast_forms():
    # libdevice's fast_sinf/fast_cosf are Triton's sin.approx/cos.approx: Metal's fast:: forms;
    # tl.sin/tl.cos stay accurate. Both backends compute the fast forms exactly here (a Mac's
    # fast::sin is bounded on [-pi, pi] only), so the values are checked there, and against
    # float64's
    x = np.linspace(-np.pi, np.pi, 1024, dtype=np.float32)
    outs = {f"{k}_ptr": np.zeros(1024, np.float32) for k in ("sin", "cos", "fsin", "fcos")}
    for backend, r in _both(_trig_kernel, (1,), x_ptr=x, N=1024, **outs).items():
        for name, ref in (("sin", np.sin), ("cos", np.cos)):
            exact = ref(x.astype(np.float64))
            np.testing.assert_allclose(r[f"{name}_ptr"], exact, atol=2e-7, err_msg=backend)
            np.testing.assert_allclose(r[f"f{name}_ptr"], exact, atol=2e-7, err_msg=backend)
    msl = _trig_kernel.warmup(*([x] * 5), N=1024, grid=(1,)).asm["msl"]
    for fn in ("sin", "cos"):
        # one of each per element a thread holds
        assert msl.count(f"fast::{fn}(") == msl.count(f"precise::{fn}(") > 0, fn


def test_maximum_minimum_nan_and_signed_zero_rules():
    nan, inf = np.float32(np.nan), np.float32(np.inf)
    a = np.float32([nan, 1.0, nan, -0.0, 0.0, -inf, 2.0, -3.0])
    b = np.float32([1.0, nan, nan, 0.0, -0.0, 5.0, 2.0, 4.0])
    n = 1024
    a = np.resize(a, n)
    b = np.resize(b, n)
    outs = {f"{k}_ptr": np.zeros(n, np.float32) for k in ("max", "min", "maxnan", "minnan")}
    res = _both(_minmax_kernel, (1,), a_ptr=a, b_ptr=b, rmax_ptr=np.zeros(1, np.float32), N=n, **outs)
    for backend, r in res.items():
        # Triton's max.f32/min.f32: a NaN operand gives the other one (np.fmax/np.fmin)
        np.testing.assert_array_equal(r["max_ptr"], np.fmax(a, b), err_msg=backend)
        np.testing.assert_array_equal(r["min_ptr"], np.fmin(a, b), err_msg=backend)
        # propagate_nan=ALL: NaN wins (np.maximum/np.minimum), -0.0 < +0.0 in either order
        np.testing.assert_array_equal(r["maxnan_ptr"], np.maximum(a, b), err_msg=backend)
        np.testing.assert_array_equal(r["minnan_ptr"], np.minimum(a, b), err_msg=backend)
        zeros = (a == 0) & (b == 0)
        assert not np.signbit(r["maxnan_ptr"][zeros]).any() and np.signbit(r["minnan_ptr"][zeros]).all()
        assert r["rmax_ptr"][0] == 2.0  # the reduction ignores NaN
    # MSL leaves the zero of fmax(-0.0, +0.0) open; the two backends here give one answer
    for name in ("max_ptr", "min_ptr"):
        np.testing.assert_array_equal(np.signbit(res["emulator"][name]), np.signbit(res["interpreter"][name]))
