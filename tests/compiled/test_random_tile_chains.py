"""Seeded random tile kernels, continued from `test_random_tiles.py` (whose helpers draw the cases):
programs along two grid axes, layouts changing inside loops and runtime ifs, 3-D permutes,
narrow types reduced and scanned, tuple reductions and scans, generated chains of tile
operations, reshapes, atomics from masked strided tiles, gather and histogram, special floats,
and the strict expected failure the generator found (a run-time negative loop step). Every
case compares the compiled run with the interpreter (`differential.run_both`) and with NumPy.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from differential import run_both
from test_random_tiles import _BLOCKS, _WARPS, _cases, _data, _tile

import triton_metal as triton
import triton_metal.language as tl


# ---------------------------------------------------------------------------------------------
# programs along two grid axes, chained reductions, layout changes inside loops


@triton.jit
def grid_tiles(x_ptr, out_ptr, rmax_ptr, M, N, BR: tl.constexpr, BC: tl.constexpr, KEEP: tl.constexpr):
    pr = tl.program_id(0)
    pc = tl.program_id(1)
    rows = pr * BR + tl.arange(0, BR)
    cols = pc * BC + tl.arange(0, BC)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=-1e30)
    m = tl.max(x, axis=1, keep_dims=KEEP)
    if KEEP:
        e = tl.exp(x - m)
        s = tl.sum(tl.where(mask, e, 0.0), axis=1, keep_dims=True)
        y = e / s
        tl.store(rmax_ptr + rows[:, None] * tl.num_programs(1) + pc, m, mask=rows[:, None] < M)
    else:
        e = tl.exp(x - m[:, None])
        s = tl.sum(tl.where(mask, e, 0.0), axis=1)
        y = e / s[:, None]
        tl.store(rmax_ptr + rows * tl.num_programs(1) + pc, m, mask=rows < M)
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], y, mask=mask)


def _grid_case(rng: random.Random) -> dict[str, Any]:
    br, bc = rng.choice(_BLOCKS[1:]), rng.choice(_BLOCKS[1:])
    return {"block": (br, bc), "m": rng.randint(1, 3 * br), "n": rng.randint(1, 3 * bc), "keep": rng.random() < 0.5,
            "warps": rng.choice(_WARPS), "seed": rng.randrange(2**16)}


@pytest.mark.parametrize("case", _cases(909, 16, _grid_case), ids=str)
def test_two_axis_grid_softmax_pieces(case: dict[str, Any]) -> None:
    br, bc = case["block"]
    m, n = case["m"], case["n"]
    x = _data(np.random.default_rng(case["seed"]), (m, n), "float32")
    gr, gc = triton.cdiv(m, br), triton.cdiv(n, bc)
    out = np.zeros((m, n), np.float32)
    rmax = np.zeros((m, gc), np.float32)
    run_both(grid_tiles, (gr, gc), num_warps=case["warps"], rtol=1e-4, atol=1e-5, x_ptr=x, out_ptr=out,
             rmax_ptr=rmax, M=m, N=n, BR=br, BC=bc, KEEP=case["keep"])
    for c in range(gc):
        part = x[:, c * bc:(c + 1) * bc]
        np.testing.assert_allclose(rmax[:, c], part.max(axis=1), rtol=1e-6)
        e = np.exp(part - part.max(axis=1, keepdims=True))
        np.testing.assert_allclose(out[:, c * bc:(c + 1) * bc], e / e.sum(axis=1, keepdims=True), rtol=1e-4,
                                   atol=1e-6)


@triton.jit
def loop_layouts(x_ptr, out_ptr, vec_ptr, N, steps, BS: tl.constexpr, MODE: tl.constexpr):
    r = tl.arange(0, BS)
    mask = (r[:, None] < N) & (r[None, :] < N)
    x = tl.load(x_ptr + r[:, None] * N + r[None, :], mask=mask, other=0)
    v = tl.zeros((BS,), x.dtype)
    for i in range(steps):
        if MODE == 0:
            x = tl.trans(x) + 1
        elif MODE == 1:
            x = x + tl.sum(x, axis=0)[None, :] * 0 + tl.trans(x)
        else:
            if i % 2 == 0:
                x = tl.where(mask, tl.cumsum(x, axis=0) - x, 0)
            else:
                x = tl.where(mask, tl.cumsum(x, axis=1) - x, 0)
        v = v + tl.max(tl.where(mask, x, -100000), axis=1) - tl.min(tl.trans(tl.where(mask, x, 100000)), axis=0)
        if i % 2 == 1:
            v = v * 2
    tl.store(out_ptr + r[:, None] * N + r[None, :], x, mask=mask)
    tl.store(vec_ptr + r, v, mask=r < N)


def _loop_layout_case(rng: random.Random) -> dict[str, Any]:
    bs = rng.choice([1, 2, 4, 8, 16, 32])
    return {"bs": bs, "n": rng.randint(1, bs), "steps": rng.randint(0, 4), "mode": rng.randrange(3),
            "dtype": rng.choice(["int32", "int64", "float32"]), "warps": rng.choice(_WARPS),
            "seed": rng.randrange(2**16)}


@pytest.mark.parametrize("case", _cases(1010, 20, _loop_layout_case), ids=str)
def test_layout_changes_inside_loops(case: dict[str, Any]) -> None:
    n, steps, mode = case["n"], case["steps"], case["mode"]
    x = _data(np.random.default_rng(case["seed"]), (n, n), case["dtype"])
    out = np.zeros_like(x)
    vec = np.zeros(n, x.dtype)
    run_both(loop_layouts, (1,), num_warps=case["warps"], rtol=1e-4, atol=1e-3, x_ptr=x, out_ptr=out, vec_ptr=vec,
             N=n, steps=steps, BS=case["bs"], MODE=mode)
    cur = x.copy()
    v = np.zeros(n, x.dtype)
    for i in range(steps):
        if mode == 0:
            cur = cur.T + 1
        elif mode == 1:
            cur = cur + cur.T
        else:
            cur = np.cumsum(cur, axis=i % 2).astype(x.dtype) - cur
        v = v + cur.max(axis=1) - cur.T.min(axis=0)
        if i % 2 == 1:
            v = v * 2
    np.testing.assert_allclose(out, cur, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(vec, v, rtol=1e-4, atol=1e-3)


@triton.jit
def permute_3d(x_ptr, out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, P0: tl.constexpr,
               P1: tl.constexpr, P2: tl.constexpr, RED: tl.constexpr, D0: tl.constexpr, D1: tl.constexpr,
               D2: tl.constexpr):
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + a * B * C + b * C + c)
    y = tl.permute(x, (P0, P1, P2))
    i = tl.arange(0, D0)[:, None, None]
    j = tl.arange(0, D1)[None, :, None]
    k = tl.arange(0, D2)[None, None, :]
    if RED >= 0:
        z = tl.sum(y, axis=RED, keep_dims=True) + y
    else:
        z = y
    tl.store(out_ptr + i * D1 * D2 + j * D2 + k, z)


def _permute_case(rng: random.Random) -> dict[str, Any]:
    dims = [rng.choice([1, 2, 4, 8]) for _ in range(3)]
    perm = list(range(3))
    rng.shuffle(perm)
    return {"dims": tuple(dims), "perm": tuple(perm), "red": rng.choice([-1, 0, 1, 2]),
            "dtype": rng.choice(["int32", "float32", "int16"]), "warps": rng.choice(_WARPS),
            "seed": rng.randrange(2**16)}


@pytest.mark.parametrize("case", _cases(1111, 12, _permute_case), ids=str)
def test_permute_3d_feeding_store(case: dict[str, Any]) -> None:
    a, b, c = case["dims"]
    p = case["perm"]
    x = _data(np.random.default_rng(case["seed"]), (a, b, c), case["dtype"])
    out = np.zeros(tuple(x.shape[d] for d in p), x.dtype)
    run_both(permute_3d, (1,), num_warps=case["warps"], rtol=1e-5, atol=1e-4, x_ptr=x, out_ptr=out, A=a, B=b, C=c,
             P0=p[0], P1=p[1], P2=p[2], RED=case["red"], D0=out.shape[0], D1=out.shape[1], D2=out.shape[2])
    y = np.transpose(x, p)
    expect = y + y.sum(axis=case["red"], keepdims=True) if case["red"] >= 0 else y
    np.testing.assert_allclose(out, expect.astype(x.dtype), rtol=1e-5, atol=1e-4)


# ---------------------------------------------------------------------------------------------
# narrow types reduced and scanned (promotion), whole-tile reductions, large tiles, tuple combines


@triton.jit
def narrow_reduce(x_ptr, sum_ptr, row_ptr, scan_ptr, M, N, BR: tl.constexpr, BC: tl.constexpr, AXIS: tl.constexpr):
    rows = tl.arange(0, BR)
    cols = tl.arange(0, BC)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * N + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    total = tl.sum(x)
    tl.store(sum_ptr, total)
    r = tl.sum(x, axis=AXIS)
    if AXIS == 0:
        tl.store(row_ptr + cols, r, mask=cols < N)
    else:
        tl.store(row_ptr + rows, r, mask=rows < M)
    tl.store(scan_ptr + offs, tl.cumsum(x, axis=AXIS), mask=mask)


def _narrow_case(rng: random.Random) -> dict[str, Any]:
    br, bc, m, n = _tile(rng, 4096)
    return {"tile": (br, bc, m, n), "axis": rng.choice([0, 1]),
            "dtype": rng.choice(["int8", "int16", "uint32", "float16", "bfloat16", "int64"]),
            "warps": rng.choice(_WARPS), "seed": rng.randrange(2**16)}


@pytest.mark.parametrize("case", _cases(1212, 24, _narrow_case), ids=str)
def test_narrow_types_reduced_and_scanned(case: dict[str, Any]) -> None:
    import mlx.core as mx

    br, bc, m, n = case["tile"]
    dtype = case["dtype"]
    g = np.random.default_rng(case["seed"])
    if dtype == "bfloat16":
        host = g.integers(-8, 9, (m, n)).astype(np.float32)  # exact in bfloat16, sums stay exact
        x = mx.array(host).astype(mx.bfloat16)
        out_dtype = np.float32
    else:
        x = host = _data(g, (m, n), dtype)
        if dtype == "float16":
            x = host = np.round(host).astype(np.float16)  # integers: fp16 sums stay exact below 2048
        out_dtype = np.float32 if dtype == "float16" else np.int64
    # the stored sums are converted to the output's type by the store
    total = np.zeros(1, out_dtype)
    row = np.zeros(n if case["axis"] == 0 else m, out_dtype)
    scan = np.zeros((m, n), out_dtype)
    run_both(narrow_reduce, (1,), num_warps=case["warps"], rtol=1e-3, atol=1e-3, x_ptr=x, sum_ptr=total,
             row_ptr=row, scan_ptr=scan, M=m, N=n, BR=br, BC=bc, AXIS=case["axis"])
    wide = host.astype(np.float64 if out_dtype == np.float32 else np.int64)
    if dtype == "uint32" or dtype.startswith("int"):
        # integer sums are taken in int32 (int64 stays int64), narrow types promoted first
        acc = np.int64 if dtype == "int64" else (np.uint32 if dtype == "uint32" else np.int32)
        wide = host.astype(acc)
    np.testing.assert_allclose(total[0], wide.sum(dtype=wide.dtype), rtol=1e-3)
    np.testing.assert_allclose(row, wide.sum(axis=case["axis"], dtype=wide.dtype), rtol=1e-3)
    np.testing.assert_allclose(scan, np.cumsum(wide, axis=case["axis"], dtype=wide.dtype), rtol=1e-3)


@triton.jit
def _argmax_combine(v1, i1, v2, i2):
    take = (v1 > v2) | ((v1 == v2) & (i1 < i2))
    return tl.where(take, v1, v2), tl.where(take, i1, i2)


@triton.jit
def tuple_reduce(x_ptr, v_ptr, i_ptr, cv_ptr, ci_ptr, M, N, BR: tl.constexpr, BC: tl.constexpr, AXIS: tl.constexpr):
    rows = tl.arange(0, BR)
    cols = tl.arange(0, BC)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * N + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=-1000)
    idx = tl.broadcast_to(rows[:, None] * 1000 + cols[None, :], (BR, BC))
    v, i = tl.reduce((x, idx), AXIS, _argmax_combine)
    cv, ci = tl.associative_scan((x, idx), AXIS, _argmax_combine)
    if AXIS == 0:
        tl.store(v_ptr + cols, v, mask=cols < N)
        tl.store(i_ptr + cols, i, mask=cols < N)
    else:
        tl.store(v_ptr + rows, v, mask=rows < M)
        tl.store(i_ptr + rows, i, mask=rows < M)
    tl.store(cv_ptr + offs, cv, mask=mask)
    tl.store(ci_ptr + offs, ci, mask=mask)


def _tuple_case(rng: random.Random) -> dict[str, Any]:
    br, bc, m, n = _tile(rng, 1024)
    return {"tile": (br, bc, m, n), "axis": rng.choice([0, 1]), "dtype": rng.choice(["float32", "int32", "int16"]),
            "warps": rng.choice(_WARPS), "seed": rng.randrange(2**16)}


@pytest.mark.parametrize("case", _cases(1313, 16, _tuple_case), ids=str)
def test_tuple_reduce_and_scan(case: dict[str, Any]) -> None:
    br, bc, m, n = case["tile"]
    g = np.random.default_rng(case["seed"])
    x = g.integers(-5, 6, (m, n)).astype(case["dtype"])  # many ties: the index decides
    size = n if case["axis"] == 0 else m
    v, i = np.zeros(size, x.dtype), np.zeros(size, np.int32)
    cv, ci = np.zeros_like(x), np.zeros((m, n), np.int32)
    run_both(tuple_reduce, (1,), num_warps=case["warps"], x_ptr=x, v_ptr=v, i_ptr=i, cv_ptr=cv, ci_ptr=ci, M=m, N=n,
             BR=br, BC=bc, AXIS=case["axis"])
    arg = np.argmax(x, axis=case["axis"])
    np.testing.assert_array_equal(v, x.max(axis=case["axis"]))
    expect_i = arg * 1000 + np.arange(n) if case["axis"] == 0 else np.arange(m) * 1000 + arg
    np.testing.assert_array_equal(i, expect_i)
    np.testing.assert_array_equal(cv, np.maximum.accumulate(x, axis=case["axis"]))
    # the running argmax: the first position holding the running maximum
    lines = x if case["axis"] == 1 else x.T
    running = np.zeros(lines.shape, np.int64)
    for r, line in enumerate(lines):
        for k in range(line.size):
            running[r, k] = int(np.argmax(line[:k + 1]))
    if case["axis"] == 1:
        expect_ci = np.arange(m)[:, None] * 1000 + running
    else:
        expect_ci = running.T * 1000 + np.arange(n)[None, :]
    np.testing.assert_array_equal(ci, expect_ci)


# ---------------------------------------------------------------------------------------------
# random chains of tile operations, written out as kernel source


_CHAIN_HEAD = '''
@triton.jit
def kernel(x_ptr, out_ptr, M, N, BR: tl.constexpr, BC: tl.constexpr):
    r0 = tl.arange(0, BR)
    c0 = tl.arange(0, BC)
    x = tl.load(x_ptr + r0[:, None] * N + c0[None, :], mask=(r0[:, None] < M) & (c0[None, :] < N), other=0)
'''


class _Chain:
    """Builds a kernel's body and its NumPy meaning one tile operation at a time. The tile's
    block shape and which logical size (M or N) bounds each axis are tracked, so every step can
    rebuild the mask of the current orientation; padding is zeroed after each step."""

    def __init__(self, rng: random.Random, br: int, bc: int, is_float: bool) -> None:
        self.rng, self.is_float = rng, is_float
        self.block = [("BR", br), ("BC", bc)]
        self.bound = ["M", "N"]
        self.lines: list[str] = []
        self.ops: list[Any] = []
        self.count = 0

    def _mask(self) -> str:
        self.count += 1
        a, b = f"a{self.count}", f"b{self.count}"
        self.lines.append(f"    {a} = tl.arange(0, {self.block[0][0]})")
        self.lines.append(f"    {b} = tl.arange(0, {self.block[1][0]})")
        return f"(({a}[:, None] < {self.bound[0]}) & ({b}[None, :] < {self.bound[1]}))"

    def step(self) -> None:
        kind = self.rng.choice(["trans", "permute", "reduce", "scan", "join", "affine", "where", "expand"])
        if kind in ("trans", "permute"):
            self.lines.append("    x = tl.trans(x)" if kind == "trans" else "    x = tl.permute(x, 1, 0)")
            self.block.reverse()
            self.bound.reverse()
            self.ops.append(lambda x: x.T)
            return
        mask = self._mask()
        if kind == "reduce":
            op, axis, keep = self.rng.choice(["sum", "max", "min"]), self.rng.choice([0, 1]), self.rng.random() < 0.5
            fill = {"sum": "0", "max": "-100000", "min": "100000"}[op]
            self.lines.append(f"    red = tl.{op}(tl.where({mask}, x, {fill}), axis={axis}, keep_dims={keep})")
            back = "red" if keep else ("red[None, :]" if axis == 0 else "red[:, None]")
            self.lines.append(f"    x = tl.where({mask}, x - {back}, 0)")
            fn = {"sum": np.sum, "max": np.max, "min": np.min}[op]
            self.ops.append(lambda x, fn=fn, axis=axis: x - fn(x, axis=axis, keepdims=True))
        elif kind == "scan":
            axis = self.rng.choice([0, 1])
            self.lines.append(f"    x = tl.where({mask}, tl.cumsum(x, axis={axis}) // 2, 0)" if not self.is_float else
                              f"    x = tl.where({mask}, tl.cumsum(x, axis={axis}) * 0.5, 0)")
            if self.is_float:
                self.ops.append(lambda x, axis=axis: np.cumsum(x, axis=axis, dtype=x.dtype) * x.dtype.type(0.5))
            else:
                self.ops.append(lambda x, axis=axis: _trunc_div2(np.cumsum(x, axis=axis, dtype=x.dtype)))
        elif kind == "join":
            self.lines.append("    lo, hi = tl.split(tl.join(x, x * 2 - 1))")
            self.lines.append(f"    x = tl.where({mask}, hi - lo, 0)")
            self.ops.append(lambda x: x * 2 - 1 - x)
        elif kind == "affine":
            k, c = self.rng.choice([-3, -1, 2, 3]), self.rng.choice([-5, 0, 7])
            self.lines.append(f"    x = tl.where({mask}, x * {k} + {c}, 0)")
            self.ops.append(lambda x, k=k, c=c: x * x.dtype.type(k) + x.dtype.type(c))
        elif kind == "where":
            t, s = self.rng.choice([-2, 0, 3]), self.rng.choice([-9, 4])
            self.lines.append(f"    x = tl.where({mask} & (x > {t}), x, {s})")
            self.lines.append(f"    x = tl.where({mask}, x, 0)")
            self.ops.append(lambda x, t=t, s=s: np.where(x > t, x, x.dtype.type(s)))
        else:
            # a row and a column of the tile broadcast back over it
            self.lines.append(f"    row = tl.sum(tl.where({mask}, x, 0), axis=0)")
            self.lines.append(f"    col = tl.max(tl.where({mask}, x, -100000), axis=1)")
            self.lines.append(f"    x = tl.where({mask}, x + tl.expand_dims(row, 0) - "
                              f"tl.broadcast_to(tl.expand_dims(col, 1), ({self.block[0][0]}, {self.block[1][0]})), 0)")
            self.ops.append(lambda x: x + x.sum(axis=0, keepdims=True) - x.max(axis=1, keepdims=True))

    def finish(self) -> None:
        """The store of the final tile, in its final orientation."""
        mask = self._mask()
        r, c = self.block[0][0], self.block[1][0]
        self.lines.append(f"    ro = tl.arange(0, {r})")
        self.lines.append(f"    co = tl.arange(0, {c})")
        self.lines.append(f"    tl.store(out_ptr + ro[:, None] * {self.bound[1]} + co[None, :], x, mask={mask})")

    def source(self) -> str:
        return _CHAIN_HEAD + "\n".join(self.lines) + "\n"

    def reference(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            for op in self.ops:
                x = op(x)
        return x


def _trunc_div2(x: np.ndarray) -> np.ndarray:
    """Integer division rounding toward zero, as the kernel language's `//` does on integers."""
    q = np.abs(x) // 2
    return np.where(x < 0, -q, q).astype(x.dtype)


def _chain_case(rng: random.Random) -> dict[str, Any]:
    br, bc, m, n = _tile(rng, 1024)
    dtype = rng.choice(["int32", "float32", "int64"])
    chain = _Chain(rng, br, bc, dtype == "float32")
    for _ in range(rng.randint(1, 7)):
        chain.step()
    chain.finish()
    return {"tile": (br, bc, m, n), "dtype": dtype, "chain": chain, "warps": rng.choice(_WARPS),
            "seed": rng.randrange(2**16)}


_CHAINS = _cases(1414, 90, _chain_case)


@pytest.mark.parametrize("index", range(len(_CHAINS)))
def test_random_tile_chain(index: int, tmp_path_factory: Any) -> None:
    from test_random_kernels import load_kernel

    case = _CHAINS[index]
    br, bc, m, n = case["tile"]
    chain: _Chain = case["chain"]
    tmp_dir = tmp_path_factory.getbasetemp() / "random_tiles"
    tmp_dir.mkdir(exist_ok=True)
    kernel = load_kernel(chain.source(), tmp_dir)
    g = np.random.default_rng(case["seed"])
    x = g.integers(-9, 10, (m, n)).astype(case["dtype"])
    expect = chain.reference(x.copy())
    out = np.zeros(expect.shape, x.dtype)
    run_both(kernel, (1,), num_warps=case["warps"], rtol=1e-4, atol=1e-3, x_ptr=x, out_ptr=out, M=m, N=n,
             BR=br, BC=bc)
    np.testing.assert_allclose(out, expect, rtol=1e-4, atol=1e-3, err_msg=chain.source())


# ---------------------------------------------------------------------------------------------
# if/elif on runtime scalars yielding tiles made by different ops; while loops carrying them


@triton.jit
def branches_and_while(x_ptr, o_ptr, v_ptr, M, N, f, g, BR: tl.constexpr, BC: tl.constexpr):
    r = tl.arange(0, BR)
    c = tl.arange(0, BC)
    mask = (r[:, None] < M) & (c[None, :] < N)
    x = tl.load(x_ptr + r[:, None] * N + c[None, :], mask=mask, other=0)
    v = tl.zeros((BR,), tl.int32)
    if f > 0:
        y = x * 2
        v = tl.sum(x, axis=1)
    elif f < -1:
        y = tl.cumsum(x, axis=0)
        v = tl.max(tl.where(mask, x, -1000), axis=1)
    else:
        y = tl.where(mask, x - tl.min(tl.where(mask, x, 1000), axis=0)[None, :], 0)
    k = 0
    while k < g:
        y = y + tl.sum(tl.where(mask, y, 0), axis=1, keep_dims=True) % 7
        if k % 2 == 0:
            v = v + tl.min(tl.where(mask, y, 1000), axis=1)
        k += 1
    tl.store(o_ptr + r[:, None] * N + c[None, :], y, mask=mask)
    tl.store(v_ptr + r, v, mask=r < M)


def _branch_case(rng: random.Random) -> dict[str, Any]:
    br, bc, m, n = _tile(rng, 1024)
    return {"tile": (br, bc, m, n), "f": rng.choice([-3, -1, 0, 2]), "g": rng.randint(0, 3),
            "warps": rng.choice(_WARPS), "seed": rng.randrange(2**16)}


@pytest.mark.parametrize("case", _cases(1515, 16, _branch_case), ids=str)
def test_runtime_branches_and_while_loops(case: dict[str, Any]) -> None:
    br, bc, m, n = case["tile"]
    f, g = case["f"], case["g"]
    x = np.random.default_rng(case["seed"]).integers(-9, 10, (m, n)).astype(np.int32)
    out, vec = np.zeros_like(x), np.zeros(m, np.int32)
    run_both(branches_and_while, (1,), num_warps=case["warps"], x_ptr=x, o_ptr=out, v_ptr=vec, M=m, N=n, f=f, g=g,
             BR=br, BC=bc)
    v = np.zeros(m, np.int32)
    if f > 0:
        y, v = x * 2, x.sum(axis=1, dtype=np.int32)
    elif f < -1:
        y, v = np.cumsum(x, axis=0, dtype=np.int32), x.max(axis=1)
    else:
        y = x - x.min(axis=0, keepdims=True)
    for k in range(g):
        y = y + np.fmod(y.sum(axis=1, keepdims=True), 7).astype(np.int32)  # % keeps the dividend's sign
        if k % 2 == 0:
            v = v + y.min(axis=1)
    np.testing.assert_array_equal(out, y)
    np.testing.assert_array_equal(vec, v)


# ---------------------------------------------------------------------------------------------
# reshapes between 2-D, 1-D and 3-D tiles; where on scalars reduced from the tile


@triton.jit
def reshape_tiles(x_ptr, o_ptr, s_ptr, R: tl.constexpr, C: tl.constexpr, R2: tl.constexpr, AX: tl.constexpr,
                  C2: tl.constexpr, C3: tl.constexpr):
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    x = tl.load(x_ptr + r[:, None] * C + c[None, :])
    y = tl.reshape(x, (R2, C2))
    y = y - tl.max(y, axis=AX, keep_dims=True)
    z = tl.reshape(tl.trans(y), (C2 * R2,))
    w = tl.where(tl.sum(x) > 0, z, -z)
    w = tl.where(tl.max(z) > 3, w + 1, w)
    tl.store(o_ptr + tl.arange(0, R * C), w)
    t3 = tl.reshape(x, (R2, C3, C2 // C3))
    tl.store(s_ptr + tl.arange(0, R2), tl.sum(tl.sum(t3, axis=2), axis=1))


def _reshape_case(rng: random.Random) -> dict[str, Any]:
    r, c = rng.choice([1, 2, 4, 8, 16]), rng.choice([1, 2, 4, 8, 16, 32])
    r2 = rng.choice([d for d in (1, 2, 4, 8, 16, 32, 64) if d <= r * c])
    return {"r": r, "c": c, "r2": r2, "axis": rng.randrange(2), "warps": rng.choice(_WARPS),
            "seed": rng.randrange(2**16)}


@pytest.mark.parametrize("case", _cases(1616, 16, _reshape_case), ids=str)
def test_reshapes_and_scalar_where(case: dict[str, Any]) -> None:
    r, c, r2, axis = case["r"], case["c"], case["r2"], case["axis"]
    c2 = r * c // r2
    x = np.random.default_rng(case["seed"]).integers(-9, 10, (r, c)).astype(np.int32)
    out, sums = np.zeros(r * c, np.int32), np.zeros(r2, np.int32)
    run_both(reshape_tiles, (1,), num_warps=case["warps"], x_ptr=x, o_ptr=out, s_ptr=sums, R=r, C=c, R2=r2, AX=axis,
             C2=c2, C3=min(c2, 2))
    y = x.reshape(r2, c2)
    z = (y - y.max(axis=axis, keepdims=True)).T.reshape(-1)
    w = z if x.sum() > 0 else -z
    np.testing.assert_array_equal(out, w + 1 if z.max() > 3 else w)
    np.testing.assert_array_equal(sums, y.sum(axis=1))


# ---------------------------------------------------------------------------------------------
# atomics from masked strided 2-D tiles over several programs; gather and histogram


@triton.jit
def atomic_tiles(x_ptr, acc_ptr, cnt_ptr, mx_ptr, M, N, sxm, sxn, BR: tl.constexpr, BC: tl.constexpr):
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    c = tl.arange(0, BC)
    mask = (r[:, None] < M) & (c[None, :] < N)
    x = tl.load(x_ptr + r[:, None] * sxm + c[None, :] * sxn, mask=mask, other=0)
    tl.atomic_add(acc_ptr + c[None, :] + r[:, None] * 0, x, mask=mask)
    tl.atomic_add(cnt_ptr + (x % 4 + 4) % 4, 1, mask=mask)
    tl.atomic_max(mx_ptr + r[:, None] * 0 + c[None, :], x, mask=mask)
    tl.atomic_add(acc_ptr + BC + c, tl.sum(x, axis=0), mask=c < N)


def _atomic_case(rng: random.Random) -> dict[str, Any]:
    br, bc = rng.choice([1, 2, 4, 8, 16]), rng.choice([1, 2, 4, 8, 16, 32])
    return {"block": (br, bc), "m": rng.randint(1, 3 * br), "n": rng.randint(1, bc), "strided": rng.random() < 0.5,
            "warps": rng.choice(_WARPS), "seed": rng.randrange(2**16)}


@pytest.mark.parametrize("case", _cases(1717, 12, _atomic_case), ids=str)
def test_atomics_from_masked_strided_tiles(case: dict[str, Any]) -> None:
    br, bc = case["block"]
    m, n = case["m"], case["n"]
    wide = np.random.default_rng(case["seed"]).integers(-9, 10, (m, 2 * n)).astype(np.int32)
    x = wide[:, ::2] if case["strided"] else np.ascontiguousarray(wide[:, :n])
    acc, cnt, mxv = np.zeros(2 * bc, np.int32), np.zeros(4, np.int32), np.full(bc, -100, np.int32)
    run_both(atomic_tiles, (triton.cdiv(m, br),), num_warps=case["warps"], x_ptr=x, acc_ptr=acc, cnt_ptr=cnt,
             mx_ptr=mxv, M=m, N=n, sxm=x.strides[0] // 4, sxn=x.strides[1] // 4, BR=br, BC=bc)
    np.testing.assert_array_equal(acc[:n], x.sum(axis=0))
    np.testing.assert_array_equal(acc[bc:bc + n], x.sum(axis=0))
    np.testing.assert_array_equal(cnt, np.bincount((x % 4).reshape(-1), minlength=4))
    np.testing.assert_array_equal(mxv[:n], x.max(axis=0))


@triton.jit
def gather_histogram(x_ptr, i_ptr, o_ptr, h_ptr, BR: tl.constexpr, BC: tl.constexpr, AX: tl.constexpr,
                     NB: tl.constexpr):
    r = tl.arange(0, BR)
    c = tl.arange(0, BC)
    x = tl.load(x_ptr + r[:, None] * BC + c[None, :])
    idx = tl.load(i_ptr + r[:, None] * BC + c[None, :])
    tl.store(o_ptr + r[:, None] * BC + c[None, :], tl.gather(x, idx, AX))
    tl.store(h_ptr + tl.arange(0, NB), tl.histogram(tl.reshape(x, (BR * BC,)) % NB, NB))


def _gather_case(rng: random.Random) -> dict[str, Any]:
    return {"block": (rng.choice([1, 2, 4, 8, 16]), rng.choice([1, 2, 4, 8, 16, 32])), "axis": rng.randrange(2),
            "bins": rng.choice([2, 4, 8, 16]), "warps": rng.choice(_WARPS), "seed": rng.randrange(2**16)}


@pytest.mark.parametrize("case", _cases(1818, 12, _gather_case), ids=str)
def test_gather_and_histogram(case: dict[str, Any]) -> None:
    br, bc = case["block"]
    axis, bins = case["axis"], case["bins"]
    g = np.random.default_rng(case["seed"])
    x = g.integers(0, 50, (br, bc)).astype(np.int32)
    idx = g.integers(0, (br, bc)[axis], (br, bc)).astype(np.int32)
    out, hist = np.zeros_like(x), np.zeros(bins, np.int32)
    run_both(gather_histogram, (1,), num_warps=case["warps"], x_ptr=x, i_ptr=idx, o_ptr=out, h_ptr=hist, BR=br,
             BC=bc, AX=axis, NB=bins)
    np.testing.assert_array_equal(out, np.take_along_axis(x, idx, axis))
    np.testing.assert_array_equal(hist, np.bincount((x % bins).reshape(-1), minlength=bins))


# ---------------------------------------------------------------------------------------------
# NaN, infinities and signed zeros through min/max, where and arg-reductions


_SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.5, 3.0], np.float32)


@triton.jit
def special_floats(x_ptr, y_ptr, r_ptr, e_ptr, M, N, BR: tl.constexpr, BC: tl.constexpr, AX: tl.constexpr):
    r = tl.arange(0, BR)
    c = tl.arange(0, BC)
    mask = (r[:, None] < M) & (c[None, :] < N)
    offs = r[:, None] * N + c[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    e = tl.maximum(x, y) + tl.minimum(x, y) * 2 + tl.where(x < y, x, y) + tl.where(x != x, 1.0, 0.0)
    tl.store(e_ptr + offs, e, mask=mask)
    lo = tl.where(mask, x, -float("inf"))
    hi = tl.where(mask, x, float("inf"))
    parts = (tl.max(lo, axis=AX), tl.argmax(lo, axis=AX).to(x.dtype), tl.min(hi, axis=AX),
             tl.argmin(hi, axis=AX).to(x.dtype))
    if AX == 0:
        for k in tl.static_range(4):
            tl.store(r_ptr + k * BC + c, parts[k], mask=c < N)
    else:
        for k in tl.static_range(4):
            tl.store(r_ptr + k * BR + r, parts[k], mask=r < M)


def _special_case(rng: random.Random) -> dict[str, Any]:
    br, bc, m, n = _tile(rng, 512)
    return {"tile": (br, bc, m, n), "axis": rng.randrange(2), "dtype": rng.choice(["float32", "float16", "bfloat16"]),
            "warps": rng.choice(_WARPS), "seed": rng.randrange(2**16)}


@pytest.mark.parametrize("case", _cases(1919, 12, _special_case), ids=str)
def test_special_floats_agree(case: dict[str, Any]) -> None:
    """Compared with the interpreter only: NaN ordering in max/min is the language's own rule."""
    import mlx.core as mx

    br, bc, m, n = case["tile"]
    g = np.random.default_rng(case["seed"])
    x, y = g.choice(_SPECIALS, (m, n)), g.choice(_SPECIALS, (m, n))
    size = 4 * max(br, bc)
    if case["dtype"] == "bfloat16":
        xa, ya = mx.array(x).astype(mx.bfloat16), mx.array(y).astype(mx.bfloat16)
        e, res = mx.zeros((m, n), mx.bfloat16), mx.zeros((size,), mx.bfloat16)
    else:
        xa, ya = x.astype(case["dtype"]), y.astype(case["dtype"])
        e, res = np.zeros((m, n), case["dtype"]), np.zeros(size, case["dtype"])
    run_both(special_floats, (1,), num_warps=case["warps"], x_ptr=xa, y_ptr=ya, r_ptr=res, e_ptr=e, M=m, N=n,
             BR=br, BC=bc, AX=case["axis"])
    finite = ~np.isnan(x) & ~np.isnan(y)
    got = np.array(e.astype(mx.float32)) if isinstance(e, mx.array) else e.astype(np.float32)
    # where neither operand is NaN, the value is NumPy's (inf - inf gives NaN in both)
    with np.errstate(invalid="ignore"):
        expect = np.maximum(x, y) + np.minimum(x, y) * 2 + np.where(x < y, x, y)
    np.testing.assert_array_equal(got[finite], expect[finite])


# ---------------------------------------------------------------------------------------------
# found by the generator, not fixed: loops whose step is a run-time negative value


@triton.jit
def runtime_step_loop(o_ptr, lo, hi, st):
    acc = 0
    for i in range(lo, hi, st):
        acc += i + 10
    tl.store(o_ptr, acc)


@pytest.mark.parametrize("lo, hi, st", [(5, 0, -2), (0, 5, -1), (0, 7, 3), (7, 0, 3), (-3, -9, -4)])
def test_runtime_loop_step_counts_as_range(lo: int, hi: int, st: int) -> None:
    out = np.zeros(1, np.int32)
    runtime_step_loop[(1,)](out, lo, hi, st)
    assert out[0] == sum(i + 10 for i in range(lo, hi, st))
