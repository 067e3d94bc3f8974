"""`picker(indices)`: the launch path's way to take some of a launch's values, done in C."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any


def picker(indices: Sequence[int]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """`seq -> tuple(seq[i] for i in indices)` for a tuple `seq`, done in C: `itemgetter` of
    the indices, or of a slice for none or one (`itemgetter(i)` returns a bare element)."""
    if len(indices) > 1:
        return itemgetter(*indices)
    start = indices[0] if indices else 0
    return itemgetter(slice(start, start + len(indices)))
