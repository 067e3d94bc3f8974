"""The bad-input catalogue (`bad_inputs.py`, 130 kinds of mistake: launch arguments, scalars,
constexprs, grids, launch options, array types and views, and kernel bodies the compiler must
refuse), each launched on the emulator and in the interpreter: every one is refused with a clear
error naming the kernel or the argument and the reason, and leaves every array as it was.
`test_figures` prints the totals (`-s`): tried, clear, silent, unclear, crashed, corrupted."""

from __future__ import annotations

import collections
import warnings

import pytest

import bad_inputs
from bad_inputs import CASES, run

TALLY: collections.Counter[str] = collections.Counter()


@pytest.fixture(autouse=True)
def _plain(monkeypatch):
    for name in ("TRITON_METAL_INTERPRET", "TRITON_METAL_DEBUG", "TRITON_METAL_BACKEND"):
        monkeypatch.delenv(name, raising=False)


def test_the_catalogue_is_large_and_its_kinds_distinct():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names)) and len(CASES) >= 120


def test_the_good_launch_runs():
    x_out = bad_inputs.np.linspace(-1, 1, bad_inputs.N, dtype=bad_inputs.np.float32)
    out = bad_inputs.np.zeros_like(x_out)
    bad_inputs.K.good[(1,)](x_out, out, bad_inputs.N, BLOCK=bad_inputs.N)
    bad_inputs.np.testing.assert_array_equal(out, x_out * 2)


@pytest.mark.parametrize("backend", ["emulator", "interpreter"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_bad_input_gets_a_clear_error_and_changes_nothing(case, backend):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome = run(case, backend == "interpreter")
    TALLY["tried"] += 1
    TALLY[outcome.kind] += 1
    assert outcome.kind == "clear", outcome.message


def test_figures():
    """The suite's figures (`-s` shows them), over the launches this process ran."""
    print(
        f"\nbad inputs: kinds {len(CASES)}, launches tried {TALLY['tried']} (emulator and "
        f"interpreter), clear errors {TALLY['clear']}, silent results {TALLY['silent']}, "
        f"unclear {TALLY['unclear']}, crashes {TALLY['crash']}, corrupted arrays "
        f"{TALLY['corrupted']}, hangs 0 (every launch returned)"
    )
    assert TALLY["tried"] == TALLY["clear"]
