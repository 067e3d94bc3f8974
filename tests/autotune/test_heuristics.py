"""`heuristics`, the `autotune` over `heuristics` stack, and the seed form `jit(autotune=True)`."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl

from autotune_kernels import ScriptedBench, fill_block, grid_of

N = 300


@triton.jit
def fill_pair(out_ptr, n, BLOCK: tl.constexpr, VALUE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.full((BLOCK,), VALUE, tl.int32), mask=offs < n)


def test_heuristic_values_come_from_the_arguments():
    seen = []

    def value(args):
        seen.append(dict(args))
        return args["n"] % 7 + args["BLOCK"]

    kernel = triton.heuristics({"VALUE": value})(fill_pair)
    out = np.zeros(N, np.int32)
    kernel[grid_of(N)](out, N, BLOCK=64)
    np.testing.assert_array_equal(out, np.full(N, N % 7 + 64))
    assert seen[0]["out_ptr"] is out and seen[0]["n"] == N


def test_later_heuristics_see_earlier_ones():
    kernel = triton.heuristics({"BLOCK": lambda a: 32 if a["n"] < 100 else 128,
                                "VALUE": lambda a: a["BLOCK"] * 2})(fill_pair)
    out = np.zeros(N, np.int32)
    kernel[grid_of(N)](out, N)
    np.testing.assert_array_equal(out, np.full(N, 256))


def test_autotune_over_heuristics():
    cfgs = [triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})]
    bench = ScriptedBench([[2, 2, 2], [1, 1, 1]])
    kernel = triton.autotune(cfgs, key=["n"], do_bench=bench)(
        triton.heuristics({"VALUE": lambda a: a["BLOCK"] + 1})(fill_pair))
    out = np.zeros(N, np.int32)
    kernel[grid_of(N)](out, N)
    np.testing.assert_array_equal(out, np.full(N, 65))
    assert kernel.cache_key == fill_pair.cache_key


def test_heuristics_refuse_unknown_names_and_non_functions():
    with pytest.raises(ValueError, match="'NOPE' is not a parameter"):
        triton.heuristics({"NOPE": lambda a: 1})(fill_pair)
    with pytest.raises(TypeError, match="function of the arguments"):
        triton.heuristics({"VALUE": 3})(fill_pair)


def test_jit_seed_form_tunes():
    def body(out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.full((BLOCK,), BLOCK, tl.int32), mask=offs < n)

    kernel = triton.jit(autotune=True, configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})],
                        key=["n"])(body)
    assert isinstance(kernel, triton.Autotuner) and kernel.keys == ["n"]
    out = np.zeros(N, np.int32)
    kernel[grid_of(N)](out, N)
    assert kernel.last_origin == "benchmark"
    np.testing.assert_array_equal(out, np.full(N, kernel.best_config.kwargs["BLOCK"]))
    # without a key only the dtypes select the tuning; jit(fn, autotune=True) works too
    plain = triton.jit(body, autotune=True, configs=[triton.Config({"BLOCK": 32})])
    assert isinstance(plain, triton.Autotuner) and plain.keys == []


def test_jit_configs_without_autotune_are_refused():
    with pytest.raises(ValueError, match="autotune=True"):
        triton.jit(configs=[triton.Config({"BLOCK": 32})])


def test_plain_jit_is_unchanged():
    assert isinstance(fill_block, triton.JITFunction)
