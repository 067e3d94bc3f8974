"""Which outputs a Metal launch provably writes in full (`runtime.coverage`), asked by the
driver when it makes a launch's recipe (`driver.py`, `recipe.py`).

`LaunchCoverage(msl, arg_names)(values, grid, sizes)` runs the code generator's coverage program
for a launch's grid, the scalar arguments it reads and the output sizes, and memoises the
verdicts per those (a seed or a float that changes every launch is not part of the key unless
the program reads it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def coverage_scalars(msl: Any, names: Sequence[str]) -> tuple[tuple[int, str], ...]:
    """(argument index, name) of the runtime scalar parameters the coverage program reads (a
    seed or a float that changes every launch must not defeat the memo)."""
    index = {n: i for i, n in enumerate(names)}
    program = msl.coverage_program
    read = _program_args(program.statements) if program is not None else set()
    return tuple((index[p.name], p.name) for p in msl.params
                 if p.kind == "scalar" and p.name in index and p.name in read)


def _program_args(statements: Sequence[Any]) -> set[str]:
    found: set[str] = set()
    for st in statements:
        if st[0] == "arg":
            found.add(st[2])
        elif st[0] == "for":
            found |= _program_args(st[6])
        elif st[0] == "if":
            found |= _program_args(st[2]) | _program_args(st[3])
    return found


class LaunchCoverage:
    """Per launch, which outputs the launch provably writes in full (`runtime.coverage`),
    memoised per grid, output sizes and scalar values: a repeated launch costs one dict lookup."""

    MEMO_LIMIT = 256

    def __init__(self, msl: Any, names: Sequence[str]) -> None:
        self.name = msl.name
        self.program = msl.coverage_program
        self.static = {c.output: c for c in msl.stored_coverage}
        self.scalars = coverage_scalars(msl, names)
        self.memo: dict[tuple[object, ...], dict[str, Any]] = {}

    def __call__(self, values: Sequence[object], grid: tuple[int, int, int],
                 sizes: dict[str, int]) -> dict[str, Any]:
        key = (grid, *sizes.values(), *[values[i] for i, _ in self.scalars])
        got = self.memo.get(key)
        if got is None:
            got = self._check(values, grid, sizes)
            if len(self.memo) >= self.MEMO_LIMIT:
                self.memo.clear()
            self.memo[key] = got
        return got

    def _check(self, values: Sequence[object], grid: tuple[int, int, int],
               sizes: dict[str, int]) -> dict[str, Any]:
        from triton_metal.runtime import dumps
        from triton_metal.runtime.coverage import Verdict, check_coverage

        verdicts: dict[str, Any] = {}
        checked: dict[str, int] = {}
        for output, size in sizes.items():
            static = self.static.get(output)
            if static is None or not static.checkable or self.program is None:
                verdicts[output] = Verdict(False, static.reason if static is not None else "no coverage facts")
            else:
                checked[output] = size
        scalars = {name: int(values[i]) for i, name in self.scalars  # type: ignore[call-overload]
                   if isinstance(values[i], (int, np.integer, np.bool_))}
        if checked:
            verdicts.update(check_coverage(self.program, grid, scalars, checked))
        dumps.record_coverage(self.name, grid, scalars, verdicts)
        return verdicts
