"""Differential fuzzer of in-place memory: random kernels of loads, stores and atomics on shared
arrays (inplace_fuzz.py) run on the Metal path, whose `metal_kernel` outputs are fresh arrays
(the sentinel-filling stand-in of fake_mlx.py runs the exact MSL on the emulator), and in the
interpreter on NumPy arrays, which it updates in place; every array must end bit for bit the
same. Each kernel shape is compiled once and run over many array contents, sizes, scalars and
argument kinds (MLX arrays, NumPy arrays, and one array passed as both `A` and `B`, which the
Metal path runs as one buffer or refuses before launch naming the two arguments); one case in
five runs the same variant on the emulator with NumPy arrays updated in place instead.

`TRITON_METAL_FUZZ_SHAPES`, `TRITON_METAL_FUZZ_CASES` and `TRITON_METAL_FUZZ_SEED` widen a run
(the defaults are CI's: 20 shapes of 110 cases). A mismatch names the shape seed and the case,
which reproduce it alone: `TRITON_METAL_FUZZ_SEED=<seed> TRITON_METAL_FUZZ_SHAPES=1`.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import mlx.core as mx
import numpy as np
import pytest

import triton_metal as triton
from triton_metal.runtime import backend

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_mlx import FakeMx  # noqa: E402
from inplace_fuzz import KernelShape, contents, kernel_shape  # noqa: E402

SHAPES = int(os.environ.get("TRITON_METAL_FUZZ_SHAPES", "20"))
CASES = int(os.environ.get("TRITON_METAL_FUZZ_CASES", "110"))
FIRST_SEED = int(os.environ.get("TRITON_METAL_FUZZ_SEED", "0"))


def _load(shape: KernelShape, folder: Path) -> tuple[Any, int]:
    path = folder / f"inplace_fuzz_{shape.seed}.py"
    path.write_text(shape.source)
    spec = importlib.util.spec_from_file_location(f"inplace_fuzz_{shape.seed}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.kernel, module.NUM_WARPS


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.itemsize}")


_QUIET_BIT = {4: 1 << 22, 2: 1 << 9}


def _comparable(got: np.ndarray, want: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bits of both results, where a quiet NaN stands for every quiet NaN: which payload an
    operation on two NaNs returns is left to the implementation (IEEE 754 6.2.3; NumPy's float16
    adds return the other operand's). Signalling NaNs, which no operation returns, and every
    other value (signed zeros, denormals) are compared bit for bit."""
    g, w = _bits(got).copy(), _bits(want).copy()
    if got.dtype.kind == "f":
        quiet = _QUIET_BIT[got.itemsize]
        both = np.isnan(got) & np.isnan(want) & ((g & quiet) != 0) & ((w & quiet) != 0)
        g[both] = w[both]
    return g, w


def _launch(kernel: Any, grid: int, arrays: dict[str, Any], alias: bool, n: int, s: int, block: int,
            num_warps: int) -> None:
    b = arrays["A"] if alias else arrays["B"]
    kernel[(grid,)](arrays["A"], b, arrays["V"], arrays["R"], n, s, BLOCK=block, num_warps=num_warps)


@pytest.mark.parametrize("shape_seed", range(FIRST_SEED, FIRST_SEED + SHAPES))
def test_metal_path_matches_in_place_execution(shape_seed: int, metal_stand_in: FakeMx,
                                               monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    shape = kernel_shape(shape_seed)
    kernel, num_warps = _load(shape, tmp_path)
    size = shape.grid * shape.block
    compared = 0
    for case in range(CASES):
        rng = np.random.default_rng([shape_seed, case])
        start = {name: contents(rng, shape.dtype, size) for name in "ABVR"}
        n = size if rng.random() < 0.3 else int(rng.integers(max(1, size - shape.block), size + 1))
        s = int(rng.integers(0, 4))
        alias = rng.random() < 0.1
        # MLX arrays or NumPy arrays on the Metal path, or NumPy arrays the emulator updates in
        # place (the variant itself: its loads after stores read the output's own memory)
        kind = ("mlx", "mlx", "mlx", "numpy", "in place")[int(rng.integers(0, 5))]
        where = (f"shape seed {shape_seed}, case {case} ({shape.dtype}, grid {shape.grid}, BLOCK {shape.block}, "
                 f"n={n}, s={s}, {kind} arrays{', A passed as B' if alias else ''}); reproduce with "
                 f"TRITON_METAL_FUZZ_SEED={shape_seed} TRITON_METAL_FUZZ_SHAPES=1\n{shape.source}")
        want = {name: a.copy() for name, a in start.items()}
        with monkeypatch.context() as m, np.errstate(all="ignore"):
            m.setenv("TRITON_METAL_INTERPRET", "1")
            _launch(kernel, shape.grid, want, alias, n, s, shape.block, num_warps)
        given = {name: mx.array(a) if kind == "mlx" else a.copy() for name, a in start.items()}
        try:
            with monkeypatch.context() as m:
                if kind == "in place":
                    m.setattr(backend, "_metal", False)
                _launch(kernel, shape.grid, given, alias, n, s, shape.block, num_warps)
        except triton.LaunchError as error:
            text = str(error)
            assert alias and ("'A' and 'B' are" in text or "'B' and 'A' are" in text), f"{where}\n{text}"
            for name, a in given.items():  # refused before anything ran
                np.testing.assert_array_equal(_bits(np.array(a)), _bits(start[name]), err_msg=where)
            continue
        for name in "ABVR":
            got, expected = _comparable(np.array(given[name]), want[name])
            np.testing.assert_array_equal(got, expected, err_msg=f"array {name}: {where}")
        compared += 1
    assert compared >= CASES * 3 // 4  # refusals are aliased launches only (about one in ten)
