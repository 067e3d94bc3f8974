"""libdevice's `cyl_bessel_i0` / `cyl_bessel_i1`, `j0` / `j1` and `y0` / `y1` (DSL functions,
`language/extra/libdevice_bessel.py`) on both backends (`each_backend`) against float64
references (NumPy's `i0`, torch's `special.i1`, `special.bessel_j0`, `bessel_j1`, `bessel_y0`,
`bessel_y1`), over each formula's range and the switches between them; for I0 and I1 where
float32 overflows, for Y0 and Y1 at 0 and below."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError
from triton_metal.language.extra import libdevice


@triton.jit
def two_functions(x_ptr, f_ptr, g_ptr, F: tl.constexpr, G: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(f_ptr + offs, F(x))
    tl.store(g_ptr + offs, G(x))


def test_bessel_i0_i1(each_backend):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x = np.concatenate([
        rng.standard_normal(96) * 4, np.linspace(-95.0, 95.0, 24), [0.0, -0.0, 1e-20, 14.999, 15.0, 15.001, 91.0, 93.0],
    ]).astype(np.float32)
    i0, i1 = np.zeros_like(x), np.zeros_like(x)
    two_functions[(1,)](x, i0, i1, libdevice.cyl_bessel_i0, libdevice.cyl_bessel_i1, 128)
    wide = x.astype(np.float64)
    for got, ref in ((i0, np.i0(wide)), (i1, torch.special.i1(torch.from_numpy(wide)).numpy())):
        finite = np.abs(ref) < np.finfo(np.float32).max
        np.testing.assert_allclose(got[finite], ref[finite], rtol=1e-6, atol=0)
        np.testing.assert_array_equal(got[~finite], np.sign(ref[~finite]) * np.inf)  # overflows as the function does
    assert (i1[x < 0] < 0).all() and (i0 > 0).all()


def test_bessel_j0_j1(each_backend):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    x = np.concatenate([
        rng.standard_normal(96) * 5, np.linspace(-300.0, 300.0, 26), [0.0, 7.999, 8.0, 8.001, 2.404825, 3.831706],
    ]).astype(np.float32)
    j0, j1 = np.zeros_like(x), np.zeros_like(x)
    two_functions[(1,)](x, j0, j1, libdevice.j0, libdevice.j1, 128)
    wide = torch.from_numpy(x.astype(np.float64))
    # J0 and J1 cross zero: an absolute bound (float32's resolution near their maximum, 1)
    np.testing.assert_allclose(j0, torch.special.bessel_j0(wide).numpy(), rtol=0, atol=1e-6)
    np.testing.assert_allclose(j1, torch.special.bessel_j1(wide).numpy(), rtol=0, atol=1e-6)


def test_bessel_y0_y1(each_backend):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    x = np.concatenate([
        np.abs(rng.standard_normal(90)) * 3, np.linspace(0.05, 300.0, 30), [0.0, -1.0, 3.999, 4.0, 4.001, 7.999, 8.0, 8.001],
    ]).astype(np.float32)
    y0, y1 = np.zeros_like(x), np.zeros_like(x)
    two_functions[(1,)](x, y0, y1, libdevice.y0, libdevice.y1, 128)
    wide = torch.from_numpy(x.astype(np.float64))
    for got, ref in ((y0, torch.special.bessel_y0(wide).numpy()), (y1, torch.special.bessel_y1(wide).numpy())):
        # near 0 they grow like log(x) and 1/x: relative there, absolute where they cross zero
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)
    assert y0[x == 0][0] == y1[x == 0][0] == -np.inf and np.isnan(y0[x < 0]).all() and np.isnan(y1[x < 0]).all()


def test_bessel_takes_float32(each_backend):
    x = np.ones(4, np.float16)
    out = np.zeros(4, np.float16)
    with pytest.raises(CompilationError, match="libdevice's cyl_bessel_i0 and cyl_bessel_i1 take float32"):
        two_functions[(1,)](x, out, out, libdevice.cyl_bessel_i0, libdevice.cyl_bessel_i0, 4)
    assert not out.any()
