"""Seeded random 2-D tile kernels agree compiled (on the emulator) and interpreted.

Each kernel family below exercises a part of the compiled pipeline that elementwise random
expressions leave thin: masked 2-D tiles whose logical sizes are not powers of two, reductions
along either axis (with and without `keep_dims`) broadcast back onto the tile, argmax/argmin,
scans along either axis, transposes and permutes feeding stores, `expand_dims`/`broadcast_to`,
`join`/`split`/`reshape`, `tl.where` with scalar and tensor operands, casts between narrow and
wide integer and float types, and loops carrying tensors with `if` on runtime scalars yielding
tensors. Each family draws its parameters (block shapes,
logical sizes, dtypes, `num_warps` from 1 to 8 so blocks are both smaller and larger than the
thread count) from a `random.Random` with a fixed seed: the cases are the same on every run, so
CI reuses its cache of compiled kernels. `differential.run_both` compares the two runs; each
test then checks the compiled results against NumPy as well. `test_random_tile_chains.py`
continues with more families (generated chains of tile operations among them) and draws its
cases with the helpers here.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from differential import run_both

import triton_metal as triton
import triton_metal.language as tl

_WARPS = (1, 2, 4, 8)
_BLOCKS = (1, 2, 4, 8, 16, 32, 64)


def _cases(seed: int, count: int, draw: Any) -> list[Any]:
    rng = random.Random(seed)
    return [draw(rng) for _ in range(count)]


def _tile(rng: random.Random, max_elems: int = 2048) -> tuple[int, int, int, int]:
    """Block shape (powers of two) and logical size (often not), within `max_elems`."""
    while True:
        br, bc = rng.choice(_BLOCKS), rng.choice(_BLOCKS)
        if br * bc <= max_elems:
            break
    m = rng.randint(1, br)
    n = rng.randint(1, bc)
    return br, bc, m, n


def _data(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype in ("float32", "float16"):
        return rng.uniform(-4, 4, shape).astype(dtype)
    info = np.iinfo(dtype)
    lo, hi = max(int(info.min), -100), min(int(info.max), 100)
    return rng.integers(lo, hi + 1, shape).astype(dtype)


# ---------------------------------------------------------------------------------------------
# reductions along either axis, broadcast back onto the tile


@triton.jit
def reduce_broadcast(x_ptr, red_ptr, out_ptr, M, N, stride, BR: tl.constexpr, BC: tl.constexpr,
                     OP: tl.constexpr, AXIS: tl.constexpr, KEEP: tl.constexpr):
    rows = tl.arange(0, BR)
    cols = tl.arange(0, BC)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=0)
    if OP == "sum":
        r = tl.sum(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "max":
        x = tl.where(mask, x, -120)
        r = tl.max(x, axis=AXIS, keep_dims=KEEP)
    else:
        x = tl.where(mask, x, 120)
        r = tl.min(x, axis=AXIS, keep_dims=KEEP)
    if AXIS == 1:
        if KEEP:
            tl.store(red_ptr + rows[:, None], r, mask=rows[:, None] < M)
            tl.store(out_ptr + rows[:, None] * stride + cols[None, :], x - r, mask=mask)
        else:
            tl.store(red_ptr + rows, r, mask=rows < M)
            tl.store(out_ptr + rows[:, None] * stride + cols[None, :], x - r[:, None], mask=mask)
    else:
        if KEEP:
            tl.store(red_ptr + cols[None, :], r, mask=cols[None, :] < N)
            tl.store(out_ptr + rows[:, None] * stride + cols[None, :], x - r, mask=mask)
        else:
            tl.store(red_ptr + cols, r, mask=cols < N)
            tl.store(out_ptr + rows[:, None] * stride + cols[None, :], x - r[None, :], mask=mask)


def _reduce_case(rng: random.Random) -> dict[str, Any]:
    br, bc, m, n = _tile(rng)
    return {"tile": (br, bc, m, n), "op": rng.choice(["sum", "max", "min"]), "axis": rng.choice([0, 1]),
            "keep": rng.choice([False, True]), "dtype": rng.choice(["float32", "int32", "int16", "float16", "int64", "int8"]),
            "warps": rng.choice(_WARPS), "seed": rng.randrange(2**16)}


@pytest.mark.parametrize("case", _cases(101, 40, _reduce_case), ids=str)
def test_reduce_and_broadcast_back(case: dict[str, Any]) -> None:
    br, bc, m, n = case["tile"]
    dtype = case["dtype"]
    x = _data(np.random.default_rng(case["seed"]), (m, n), dtype)
    red = np.zeros(n if case["axis"] == 0 else m, dtype)
    out = np.zeros((m, n), dtype)
    run_both(reduce_broadcast, (1,), num_warps=case["warps"], rtol=1e-3, atol=1e-3, x_ptr=x, red_ptr=red,
             out_ptr=out, M=m, N=n, stride=n, BR=br, BC=bc, OP=case["op"], AXIS=case["axis"], KEEP=case["keep"])
    expect = {"sum": np.sum, "max": np.max, "min": np.min}[case["op"]](x, axis=case["axis"], keepdims=True)
    if dtype != "float16":
        np.testing.assert_allclose(red, expect.reshape(-1).astype(dtype), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(out, (x - expect).astype(dtype), rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------------------
# argmax / argmin


@triton.jit
def arg_reduce(x_ptr, idx_ptr, M, N, BR: tl.constexpr, BC: tl.constexpr, MAX: tl.constexpr,
               AXIS: tl.constexpr, KEEP: tl.constexpr, LOW: tl.constexpr, HIGH: tl.constexpr):
    rows = tl.arange(0, BR)
    cols = tl.arange(0, BC)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    if MAX:
        x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=LOW)
        i = tl.argmax(x, axis=AXIS, keep_dims=KEEP)
    else:
        x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=HIGH)
        i = tl.argmin(x, axis=AXIS, keep_dims=KEEP)
    if AXIS == 1:
        if KEEP:
            tl.store(idx_ptr + rows[:, None], i, mask=rows[:, None] < M)
        else:
            tl.store(idx_ptr + rows, i, mask=rows < M)
    else:
        if KEEP:
            tl.store(idx_ptr + cols[None, :], i, mask=cols[None, :] < N)
        else:
            tl.store(idx_ptr + cols, i, mask=cols < N)


def _arg_case(rng: random.Random) -> dict[str, Any]:
    br, bc, m, n = _tile(rng)
    return {"tile": (br, bc, m, n), "max": rng.choice([False, True]), "axis": rng.choice([0, 1]),
            "keep": rng.choice([False, True]), "dtype": rng.choice(["float32", "int32", "int8", "float16", "int64", "uint32"]),
            "warps": rng.choice(_WARPS), "seed": rng.randrange(2**16)}


@pytest.mark.parametrize("case", _cases(202, 30, _arg_case), ids=str)
def test_argmax_argmin(case: dict[str, Any]) -> None:
    br, bc, m, n = case["tile"]
    x = _data(np.random.default_rng(case["seed"]), (m, n), case["dtype"])
    idx = np.full(n if case["axis"] == 0 else m, -1, np.int32)
    # masked elements hold the smallest (largest) value the data can hold: they come after the
    # valid ones, so the first index among ties is still a valid one
    low, high = (-1000, 1000) if x.dtype.kind == "f" else (int(x.min()), int(x.max()))
    run_both(arg_reduce, (1,), num_warps=case["warps"], x_ptr=x, idx_ptr=idx, M=m, N=n, BR=br, BC=bc,
             MAX=case["max"], AXIS=case["axis"], KEEP=case["keep"], LOW=low, HIGH=high)
    expect = (np.argmax if case["max"] else np.argmin)(x, axis=case["axis"])
    np.testing.assert_array_equal(idx, expect)


# ---------------------------------------------------------------------------------------------
# scans along either axis


@triton.jit
def _max_combine(a, b):
    return tl.maximum(a, b)


@triton.jit
def scan_tile(x_ptr, out_ptr, M, N, BR: tl.constexpr, BC: tl.constexpr, AXIS: tl.constexpr,
              KIND: tl.constexpr, REVERSE: tl.constexpr):
    rows = tl.arange(0, BR)
    cols = tl.arange(0, BC)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * N + cols[None, :]
    if KIND == "sum":
        x = tl.load(x_ptr + offs, mask=mask, other=0)
        y = tl.cumsum(x, axis=AXIS, reverse=REVERSE)
    else:
        x = tl.load(x_ptr + offs, mask=mask, other=-1000)
        y = tl.associative_scan(x, AXIS, _max_combine, reverse=REVERSE)
    tl.store(out_ptr + offs, y, mask=mask)


def _scan_case(rng: random.Random) -> dict[str, Any]:
    br, bc, m, n = _tile(rng, 1024)
    return {"tile": (br, bc, m, n), "axis": rng.choice([0, 1]), "kind": rng.choice(["sum", "max"]),
            "reverse": rng.random() < 0.3, "dtype": rng.choice(["float32", "int32", "int64", "int16"]),
            "warps": rng.choice(_WARPS), "seed": rng.randrange(2**16)}


@pytest.mark.parametrize("case", _cases(303, 30, _scan_case), ids=str)
def test_scan_along_axis(case: dict[str, Any]) -> None:
    br, bc, m, n = case["tile"]
    x = _data(np.random.default_rng(case["seed"]), (m, n), case["dtype"])
    out = np.zeros_like(x)
    run_both(scan_tile, (1,), num_warps=case["warps"], rtol=1e-4, atol=1e-4, x_ptr=x, out_ptr=out, M=m, N=n,
             BR=br, BC=bc, AXIS=case["axis"], KIND=case["kind"], REVERSE=case["reverse"])
    src = np.flip(x, case["axis"]) if case["reverse"] else x
    ref = np.cumsum(src, axis=case["axis"]) if case["kind"] == "sum" else np.maximum.accumulate(src, axis=case["axis"])
    if case["reverse"]:
        ref = np.flip(ref, case["axis"])
    np.testing.assert_allclose(out, ref.astype(x.dtype), rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------------------
# transposes, permutes, expand_dims / broadcast_to, join / split / reshape


@triton.jit
def transpose_store(x_ptr, out_ptr, M, N, BR: tl.constexpr, BC: tl.constexpr, HOW: tl.constexpr):
    rows = tl.arange(0, BR)
    cols = tl.arange(0, BC)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0)
    if HOW == "trans":
        y = tl.trans(x)
    elif HOW == "permute":
        y = tl.permute(x, (1, 0))
    else:
        y = x.T
    y = y * 2 + 1
    tl.store(out_ptr + cols[:, None] * M + rows[None, :], y, mask=(cols[:, None] < N) & (rows[None, :] < M))


def _trans_case(rng: random.Random) -> dict[str, Any]:
    br, bc, m, n = _tile(rng)
    return {"tile": (br, bc, m, n), "how": rng.choice(["trans", "permute", "attr"]),
            "dtype": rng.choice(["float32", "int16", "int64", "uint32"]), "warps": rng.choice(_WARPS),
            "seed": rng.randrange(2**16)}


@pytest.mark.parametrize("case", _cases(404, 30, _trans_case), ids=str)
def test_transpose_feeding_store(case: dict[str, Any]) -> None:
    br, bc, m, n = case["tile"]
    x = _data(np.random.default_rng(case["seed"]), (m, n), case["dtype"])
    out = np.zeros((n, m), x.dtype)
    run_both(transpose_store, (1,), num_warps=case["warps"], x_ptr=x, out_ptr=out, M=m, N=n, BR=br, BC=bc,
             HOW=case["how"])
    np.testing.assert_array_equal(out, (x.T * 2 + 1).astype(x.dtype))


@triton.jit
def broadcast_combo(a_ptr, b_ptr, out_ptr, M, N, BR: tl.constexpr, BC: tl.constexpr, HOW: tl.constexpr):
    rows = tl.arange(0, BR)
    cols = tl.arange(0, BC)
    a = tl.load(a_ptr + rows, mask=rows < M, other=0)
    b = tl.load(b_ptr + cols, mask=cols < N, other=0)
    if HOW == 0:
        t = tl.expand_dims(a, 1) * 3 - tl.expand_dims(b, 0)
    elif HOW == 1:
        t = tl.broadcast_to(a[:, None], (BR, BC)) * 3 - tl.broadcast_to(b[None, :], (BR, BC))
    else:
        t = tl.broadcast_to(tl.expand_dims(a, 1), BR, BC) * 3 - b[None, :]
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], t, mask=mask)


def _bcast_case(rng: random.Random) -> dict[str, Any]:
    br, bc, m, n = _tile(rng)
    return {"tile": (br, bc, m, n), "how": rng.choice([0, 1, 2]), "dtype": rng.choice(["float32", "int32", "int64"]),
            "warps": rng.choice(_WARPS), "seed": rng.randrange(2**16)}


@pytest.mark.parametrize("case", _cases(505, 20, _bcast_case), ids=str)
def test_expand_dims_broadcast_to(case: dict[str, Any]) -> None:
    br, bc, m, n = case["tile"]
    g = np.random.default_rng(case["seed"])
    a, b = _data(g, (m,), case["dtype"]), _data(g, (n,), case["dtype"])
    out = np.zeros((m, n), a.dtype)
    run_both(broadcast_combo, (1,), num_warps=case["warps"], a_ptr=a, b_ptr=b, out_ptr=out, M=m, N=n, BR=br, BC=bc,
             HOW=case["how"])
    np.testing.assert_allclose(out, a[:, None] * 3 - b[None, :], rtol=1e-6)


@triton.jit
def join_split_reshape(a_ptr, b_ptr, j_ptr, s_ptr, r_ptr, N, B: tl.constexpr, R: tl.constexpr):
    offs = tl.arange(0, B)
    mask = offs < N
    a = tl.load(a_ptr + offs, mask=mask, other=0)
    b = tl.load(b_ptr + offs, mask=mask, other=0)
    j = tl.join(a, b)  # [B, 2]
    two = tl.arange(0, 2)
    tl.store(j_ptr + offs[:, None] * 2 + two[None, :], j, mask=mask[:, None])
    lo, hi = tl.split(j * 2)
    tl.store(s_ptr + offs, hi - lo, mask=mask)
    r = tl.reshape(j, (R, (2 * B) // R))
    rr = tl.arange(0, R)
    rc = tl.arange(0, (2 * B) // R)
    flat = rr[:, None] * ((2 * B) // R) + rc[None, :]
    tl.store(r_ptr + flat, r + 1, mask=flat < 2 * N)


def _join_case(rng: random.Random) -> dict[str, Any]:
    b = rng.choice([2, 4, 8, 16, 32, 64, 128])
    r = rng.choice([d for d in (1, 2, 4, 8, 16) if d <= 2 * b])
    return {"b": b, "n": rng.randint(1, b), "r": r, "dtype": rng.choice(["float32", "int8", "int32"]),
            "warps": rng.choice(_WARPS), "seed": rng.randrange(2**16)}


@pytest.mark.parametrize("case", _cases(606, 20, _join_case), ids=str)
def test_join_split_reshape(case: dict[str, Any]) -> None:
    n = case["n"]
    g = np.random.default_rng(case["seed"])
    a, b = _data(g, (n,), case["dtype"]), _data(g, (n,), case["dtype"])
    j = np.zeros((n, 2), a.dtype)
    s = np.zeros(n, a.dtype)
    r = np.zeros(2 * n, a.dtype)
    run_both(join_split_reshape, (1,), num_warps=case["warps"], a_ptr=a, b_ptr=b, j_ptr=j, s_ptr=s, r_ptr=r, N=n,
             B=case["b"], R=case["r"])
    np.testing.assert_array_equal(j, np.stack([a, b], 1))
    np.testing.assert_array_equal(s, (b * 2 - a * 2).astype(a.dtype))
    np.testing.assert_array_equal(r, (np.stack([a, b], 1).reshape(-1) + 1).astype(a.dtype))


# ---------------------------------------------------------------------------------------------
# tl.where with scalar and tensor operands, casts between dtypes


@triton.jit
def where_cast(x_ptr, y_ptr, out_ptr, M, N, s, BR: tl.constexpr, BC: tl.constexpr, HOW: tl.constexpr,
               MID: tl.constexpr, OUT: tl.constexpr):
    rows = tl.arange(0, BR)
    cols = tl.arange(0, BC)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * N + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    y = tl.load(y_ptr + offs, mask=mask, other=0)
    c = x > y
    if HOW == 0:
        w = tl.where(c, x, s)
    elif HOW == 1:
        w = tl.where(c, s, y)
    elif HOW == 2:
        w = tl.where(s > 0, x, y)
    else:
        w = tl.where(c, 3, x - y)
    tl.store(out_ptr + offs, w.to(MID).to(OUT), mask=mask)


_CAST_TYPES = ("int8", "int16", "int32", "uint32", "int64", "float16", "float32")
_TL = {"int8": tl.int8, "int16": tl.int16, "int32": tl.int32, "uint32": tl.uint32, "int64": tl.int64,
       "float16": tl.float16, "bfloat16": tl.bfloat16, "float32": tl.float32}


def _where_case(rng: random.Random) -> dict[str, Any]:
    """Float-to-integer conversions out of range are undefined (docs/msl_shim.md), so chains whose
    float-to-integer step could see a value outside its target (negative into uint32, 200 into
    int8, a wrapped uint32 difference) are drawn again."""
    while True:
        src, mid, out = rng.choice(_CAST_TYPES), rng.choice(_CAST_TYPES + ("bfloat16",)), rng.choice(_CAST_TYPES)
        steps = [(src, mid), (mid, out)]
        to_int = [b for a, b in steps if a.startswith(("float", "bfloat")) and not b.startswith(("float", "bfloat"))]
        if not to_int or (src != "uint32" and all(b not in ("uint32", "int8") for b in to_int)):
            break
    br, bc, m, n = _tile(rng)
    return {"tile": (br, bc, m, n), "how": rng.randrange(4), "src": src, "mid": mid, "out": out,
            "s": rng.choice([-7, 0, 5]), "warps": rng.choice(_WARPS), "seed": rng.randrange(2**16)}


@pytest.mark.parametrize("case", _cases(707, 40, _where_case), ids=str)
def test_where_and_casts(case: dict[str, Any]) -> None:
    br, bc, m, n = case["tile"]
    g = np.random.default_rng(case["seed"])
    src = case["src"]
    x, y = _data(g, (m, n), src), _data(g, (m, n), src)
    out = np.zeros((m, n), case["out"])
    run_both(where_cast, (1,), num_warps=case["warps"], x_ptr=x, y_ptr=y, out_ptr=out, M=m, N=n, s=case["s"],
             BR=br, BC=bc, HOW=case["how"], MID=_TL[case["mid"]], OUT=_TL[case["out"]])


# ---------------------------------------------------------------------------------------------
# loops carrying tensors with layout changes inside; if on runtime scalars yielding tensors


@triton.jit
def loop_carry(x_ptr, out_ptr, col_ptr, M, N, steps, flag, BR: tl.constexpr, BC: tl.constexpr):
    rows = tl.arange(0, BR)
    cols = tl.arange(0, BC)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
    acc = tl.zeros((BR, BC), tl.float32)
    colacc = tl.zeros((BC,), tl.float32)
    for i in range(steps):
        rmax = tl.max(tl.where(mask, x, -1e30), axis=1)
        acc = acc + tl.where(mask, x - rmax[:, None], 0.0)
        colacc = colacc + tl.sum(tl.where(mask, x, 0.0), axis=0) * (i + 1)
        x = x * 0.5
    if flag > 0:
        res = acc + 1.0
    else:
        res = tl.trans(tl.trans(acc) * 2.0)
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], res, mask=mask)
    tl.store(col_ptr + cols, colacc, mask=cols < N)


def _loop_case(rng: random.Random) -> dict[str, Any]:
    br, bc, m, n = _tile(rng, 1024)
    return {"tile": (br, bc, m, n), "steps": rng.randint(0, 3), "flag": rng.choice([-1, 1]),
            "warps": rng.choice(_WARPS), "seed": rng.randrange(2**16)}


@pytest.mark.parametrize("case", _cases(808, 30, _loop_case), ids=str)
def test_loop_carried_tiles_and_runtime_if(case: dict[str, Any]) -> None:
    br, bc, m, n = case["tile"]
    x = _data(np.random.default_rng(case["seed"]), (m, n), "float32")
    out = np.zeros((m, n), np.float32)
    col = np.zeros(n, np.float32)
    run_both(loop_carry, (1,), num_warps=case["warps"], rtol=1e-4, atol=1e-4, x_ptr=x, out_ptr=out, col_ptr=col,
             M=m, N=n, steps=case["steps"], flag=case["flag"], BR=br, BC=bc)
    acc = np.zeros_like(x)
    colacc = np.zeros(n, np.float32)
    cur = x.copy()
    for i in range(case["steps"]):
        acc += cur - cur.max(axis=1, keepdims=True)
        colacc += cur.sum(axis=0) * (i + 1)
        cur = cur * 0.5
    np.testing.assert_allclose(out, acc + 1 if case["flag"] > 0 else acc * 2, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(col, colacc, rtol=1e-4, atol=1e-4)

