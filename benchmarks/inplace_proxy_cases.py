"""Launches kept relative by exact in-place memory, for `gpuproxy` captures:
`python benchmarks/inplace_proxy_cases.py [--previous] CASE...` (default: all).

The GPU share of what exact in-place memory costs (docs/runtime.md, "Exact in-place memory";
`benchmarks/launch.py` measures the Python share). Each case runs once through the Metal driver;
`--previous` gives each output the form the previous rule gave it (`launch.previous_rule`),
whose answers are wrong, so that one capture of each rule, replayed in one call, times both on
the same GPU:

| case | launch | exact form | previous form |
|---|---|---|---|
| `scatter_hot` | 2**22 float32 `atomic_add`s into 4,096 floats | marked: one compare-and-swap of the untouched mark per element, then hardware adds; one `where` decode | combined: native adds from 0, `old + result` on the host (rounds in another order, loses -0.0 and signalling NaNs) |
| `scatter_spread` | 2**22 float32 `atomic_add`s into 2**22 floats | as above, little contention | as above |
| `rounds` | three rounds of `x[o] = x[o] + 1` over 2**24 float32 | relative (xor): loads decode, stores encode | plain: every load reads the old array (old + 1: wrong) |

Replay with `benchmarks/inplace_proxy_refs.py` (float64 checks of Triton's in-place result).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import mlx.core as mx  # noqa: E402
import numpy as np  # noqa: E402

import triton_metal as triton  # noqa: E402
from benchmarks.launch import previous_rule, rounds, scatter_add  # noqa: E402

ADDS = 2 ** 22
ROUND_ELEMENTS = 2 ** 24


def _scatter(bins: int) -> Callable[[], None]:
    rng = np.random.default_rng(bins)
    x = mx.array(rng.standard_normal(ADDS).astype(np.float32))
    idx = mx.array(rng.integers(0, bins, ADDS).astype(np.int32))
    acc = mx.array(rng.standard_normal(bins).astype(np.float32))

    def run() -> None:
        scatter_add[(triton.cdiv(ADDS, 1024),)](x, idx, acc, ADDS, BLOCK=1024)
        mx.eval(acc)
    return run


def _rounds() -> None:
    data = mx.array(np.random.default_rng(3).standard_normal(ROUND_ELEMENTS).astype(np.float32))
    rounds[(triton.cdiv(ROUND_ELEMENTS, 1024),)](data, ROUND_ELEMENTS, ROUNDS=3, BLOCK=1024)
    mx.eval(data)


CASES: dict[str, Callable[[], Callable[[], None]]] = {
    "scatter_hot": lambda: _scatter(4096),
    "scatter_spread": lambda: _scatter(ADDS),
    "rounds": lambda: _rounds,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--previous", action="store_true", help="the previous rule's forms")
    parser.add_argument("cases", nargs="*", metavar="CASE", help=", ".join(CASES))
    options = parser.parse_args(argv)
    unknown = sorted(set(options.cases) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; the cases are {', '.join(CASES)}")
    rule = previous_rule() if options.previous else contextlib.nullcontext()
    with rule:
        for name in options.cases or CASES:
            CASES[name]()()
    return 0


if __name__ == "__main__":
    sys.exit(main())
