"""`[expr for name in values]` over a compile-time tuple in a kernel (as Triton's
`tl.tuple([v + 1 for v in values])`): unrolled by the front end, run as Python by the
interpreter, the same values on both; one whose iterable or filter is known only at run time
is refused by both, through the same checks (frontend/comprehensions.py)."""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import CompilationError


@triton.jit
def _scaled(values, k):
    return tl.tuple([v * k + 1 for v in values])


@triton.jit
def store_scaled(out_ptrs, v_ptr, values, k):
    v = k * 10
    scaled = _scaled(values, k)
    negated = [-v for v in scaled]
    for i in tl.static_range(len(scaled)):
        tl.store(out_ptrs[i], scaled[i] + negated[i] * 0.5)
    tl.store(v_ptr, v)  # the comprehension's `v` is its own: this is still k * 10


@triton.jit
def comprehension_over_range(out_ptr, n):
    xs = [i for i in range(n)]
    tl.store(out_ptr, xs[0])


@triton.jit
def filtered_comprehension(out_ptr, values):
    xs = [v for v in values if v > 0]
    tl.store(out_ptr, xs[0])


def test_comprehension_over_a_tuple(backend):
    outs = tuple(np.zeros(1, np.float32) for _ in range(3))
    v_out = np.zeros(1, np.float32)
    store_scaled[(1,)](outs, v_out, (1.5, 2.0, -3.0), 2.0)
    assert [o[0] for o in outs] == [2.0, 2.5, -2.5] and v_out[0] == 20.0


@pytest.mark.parametrize("kernel, args, why", [
    (comprehension_over_range, (5,), "static_range end must be a constexpr integer"),
    (filtered_comprehension, ((1.0, 2.0),), "'if' must be a compile-time condition"),
])
def test_comprehensions_known_only_at_run_time_are_refused(backend, kernel, args, why):
    # unrolled when the kernel is compiled: a run-time bound or filter is refused, on both backends
    out = np.zeros(1, np.float32)
    with pytest.raises(CompilationError, match=why):
        kernel[(1,)](out, *args)
