"""Grids and launch options are checked and normalised before anything runs."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
from triton_metal.errors import LaunchError
from triton_metal.runtime.grid import MAX_PROGRAMS_PER_DIM, check_num_warps, normalize_grid


@pytest.mark.parametrize(
    ("grid", "expected"),
    [
        ((4,), (4, 1, 1)),
        ([4, 2], (4, 2, 1)),
        ((4, 2, 3), (4, 2, 3)),
        (7, (7, 1, 1)),
        ((np.int64(5), np.int32(2)), (5, 2, 1)),
        ((MAX_PROGRAMS_PER_DIM,), (MAX_PROGRAMS_PER_DIM, 1, 1)),
        ((0,), (0, 1, 1)),  # no programs: a launch runs nothing, as in Triton
        ((3, 0), (3, 0, 1)),
    ],
)
def test_good_grids_are_padded_to_three(grid, expected):
    assert normalize_grid(grid, "k") == expected
    assert all(type(d) is int for d in normalize_grid(grid, "k"))


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ((), "a grid has 1 to 3 dimensions"),
        ((1, 1, 1, 1), "with 4 entries; a grid has 1 to 3 dimensions"),
        ((4, -1), "entry 1 is -1, but a grid dimension cannot be negative"),
        ((2.0,), r"entry 0 \(2.0\) is not an int"),
        ((True,), r"entry 0 \(True\) is not an int"),
        (("4",), r"entry 0 \('4'\) is not an int"),
        ((MAX_PROGRAMS_PER_DIM + 1,), "over the limit of 2147483647 programs per dimension"),
        ((1, 2**32), "entry 1 is 4294967296, over the limit"),
        ("abc", "a grid is a tuple of 1 to 3 non-negative ints"),
        (None, "a grid is a tuple of 1 to 3 non-negative ints"),
    ],
)
def test_bad_grids_are_refused(grid, message):
    with pytest.raises(LaunchError, match=message):
        normalize_grid(grid, "k")


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8, 16, 32])
def test_num_warps_powers_of_two_up_to_32(num_warps):
    assert check_num_warps(num_warps, "k") == num_warps


@pytest.mark.parametrize("num_warps", [0, 3, 64, -4, 4.0, "4", True])
def test_bad_num_warps_is_refused(num_warps):
    with pytest.raises(LaunchError, match="must be a power of 2, from 1 to 32"):
        check_num_warps(num_warps, "k")
    with pytest.raises(AssertionError, match="num_warps must be a power of 2"):  # Triton's type and words
        check_num_warps(num_warps, "k")


def test_cdiv_and_next_power_of_2():
    assert [triton.cdiv(n, 4) for n in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]
    assert [triton.next_power_of_2(n) for n in (0, 1, 2, 3, 5, 1000, 1024, 1025)] == [
        0, 1, 2, 4, 8, 1024, 1024, 2048,
    ]
    assert triton.next_power_of_2(2**40 + 1) == 2**41
    with pytest.raises(ValueError):
        triton.next_power_of_2(-1)
