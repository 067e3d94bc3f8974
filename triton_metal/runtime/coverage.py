"""The numeric half of the store-coverage proof: does this launch write every output element?

`check_coverage(program, grid, scalars, sizes) -> {output: Verdict}` runs a
`passes.coverage_program.CoverageProgram` for every program of the launch at once, with NumPy:
each scalar is an array over *instances* (a program, times the iterations of the loops around
the statement); a `for` repeats the instances once per iteration (its trip count computed per
instance, as `range` counts), an `if` keeps those whose condition holds. A tile value is affine
in its indices: `base + sum_d coef_d * i_d`, `0 <= i_d < shape_d`, with a base and coefficients
per instance; a mask is a conjunction of per-dimension bounds `lo_d <= i_d < hi_d` and a flag.
A store then writes, per instance, a box of indices mapped affinely to element offsets: rows of
consecutive elements along a dimension of coefficient 1, single elements otherwise. The union
of all such intervals of an output is sorted and swept; the output is covered when it contains
`[0, size)`.

Soundness: scalar arithmetic is done in the kernel's types (two's complement wrap, C division);
tile arithmetic is exact and only ring operations (+, -, * by a uniform value) are folded, which
agree with wrapped arithmetic modulo 2**bits, so every comparison, cast and final offset checks
that the exact values over the whole tile fit the type (else the verdict is "not proven"). Any
operation outside this algebra, a division by zero, or more than `LIMIT` instances or intervals
also gives "not proven". Extra writes never matter: only elements proven written count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

LIMIT = 1 << 24
"""Most instances, or intervals, one check enumerates."""


@dataclass(frozen=True)
class Verdict:
    proven: bool
    reason: str = ""


class _NotProven(Exception):
    pass


@dataclass
class _Tile:
    """An integer tile `base + sum coef_d * i_d`; `coefs[d]` None means 0."""

    base: np.ndarray
    coefs: list[np.ndarray | None]
    shape: tuple[int, ...]

    def take(self, idx: np.ndarray) -> _Tile:
        return _Tile(self.base[idx], [None if c is None else c[idx] for c in self.coefs], self.shape)

    def span(self) -> tuple[np.ndarray, np.ndarray]:
        """Per instance, the least and greatest value over the tile (exact; float guard)."""
        lo = self.base.copy()
        hi = self.base.copy()
        for c, n in zip(self.coefs, self.shape):
            if c is not None and n > 1:
                reach = c * (n - 1)
                lo = lo + np.minimum(reach, 0)
                hi = hi + np.maximum(reach, 0)
        return lo, hi

    def uniform(self) -> bool:
        return all(c is None for c, n in zip(self.coefs, self.shape) if n > 1)


@dataclass
class _Mask:
    """`ok & all(lo_d <= i_d < hi_d)`; None bounds are unconstrained."""

    ok: np.ndarray
    lo: list[np.ndarray | None]
    hi: list[np.ndarray | None]
    shape: tuple[int, ...]

    def take(self, idx: np.ndarray) -> _Mask:
        pick = lambda xs: [None if x is None else x[idx] for x in xs]  # noqa: E731
        return _Mask(self.ok[idx], pick(self.lo), pick(self.hi), self.shape)


@dataclass
class _Ptr:
    param: str
    off: np.ndarray | _Tile
    wide: bool

    def take(self, idx: np.ndarray) -> _Ptr:
        return _Ptr(self.param, self.off[idx] if isinstance(self.off, np.ndarray) else self.off.take(idx), self.wide)


def _wrap(x: np.ndarray, bits: int, signed: bool) -> np.ndarray:
    if bits >= 64:
        return x
    if bits == 1:
        return x & 1
    m = (1 << bits) - 1
    if signed:
        half = 1 << (bits - 1)
        return ((x + half) & m) - half
    return x & m


def _fits(lo: np.ndarray, hi: np.ndarray, bits: int, signed: bool) -> bool:
    if bits == 1:
        return bool((lo >= 0).all() and (hi <= 1).all())
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if bits >= 64:
        low, high = -(1 << 62), (1 << 62)
    return bool((lo >= low).all() and (hi <= high).all())


def _check_tile(t: _Tile, bits: int, signed: bool, what: str) -> None:
    guard = np.abs(t.base).astype(np.float64)
    for c, n in zip(t.coefs, t.shape):
        if c is not None:
            guard = guard + np.abs(c).astype(np.float64) * n
    if (guard > 2.0**61).any():
        raise _NotProven(f"{what} grows past 2**61")
    lo, hi = t.span()
    if not _fits(lo, hi, bits, signed):
        raise _NotProven(f"{what} may wrap around in {'' if signed else 'u'}int{bits}")


def _divs(a: np.ndarray, b: np.ndarray, rem: bool) -> np.ndarray:
    q = a // b
    q = q + (((a % b) != 0) & ((a < 0) != (b < 0)))
    return a - b * q if rem else q


def _scalar_bin(kind: str, a: np.ndarray, b: np.ndarray, bits: int, signed: bool) -> np.ndarray:
    if kind in ("divs", "divu", "rems", "remu") and (b == 0).any():
        raise _NotProven("a division by zero")
    if kind in ("divu", "remu", "minu", "maxu", "shru"):
        a, b = _wrap(a, bits, False), _wrap(b, bits, False)
        if bits >= 64 and ((a < 0) | (b < 0)).any():
            raise _NotProven("64-bit unsigned values past 2**63")
    if kind in ("shl", "shrs", "shru") and ((b < 0) | (b >= bits)).any():
        raise _NotProven("a shift by more than the type's width")
    ops = {
        "add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
        "divs": lambda: _divs(a, b, False), "rems": lambda: _divs(a, b, True),
        "divu": lambda: a // b, "remu": lambda: a % b, "mins": lambda: np.minimum(a, b),
        "maxs": lambda: np.maximum(a, b), "minu": lambda: np.minimum(a, b),
        "maxu": lambda: np.maximum(a, b), "and": lambda: a & b, "or": lambda: a | b,
        "xor": lambda: a ^ b, "shl": lambda: a << b, "shrs": lambda: a >> b, "shru": lambda: a >> b,
    }
    with np.errstate(over="ignore"):
        return _wrap(ops[kind](), bits, signed)


def _cmp(pred: str, a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray:
    if pred.startswith("u"):
        a, b = _wrap(a, bits, False), _wrap(b, bits, False)
        if bits >= 64 and ((a < 0) | (b < 0)).any():
            raise _NotProven("64-bit unsigned values past 2**63")
    op = pred[1:] if pred[0] in "su" else pred
    return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b, "ne": a != b}[op]


def _shape(v: Any) -> tuple[int, ...]:
    """The tile shape of a value (a scalar's per-instance array has none)."""
    return v.shape if isinstance(v, (_Tile, _Mask)) else ()


def _as_tile(v: Any, shape: tuple[int, ...]) -> _Tile:
    if isinstance(v, _Tile):
        return v if v.shape or not shape else _Tile(v.base, [None] * len(shape), shape)
    return _Tile(v, [None] * len(shape), shape)


class _Run:
    def __init__(self, program: Any, grid: tuple[int, int, int], scalars: dict[str, int]) -> None:
        self.grid = grid
        self.scalars = scalars
        self.index_bits = program.index_bits
        self.starts: dict[str, list[np.ndarray]] = {}
        self.ends: dict[str, list[np.ndarray]] = {}
        self.failed: dict[str, str] = {}
        self.lines: dict[str, dict[str, None]] = {}

    # -- one statement over n instances --------------------------------------------------------
    def block(self, stmts: Any, env: dict[int, Any], n: int, pids: tuple[np.ndarray, ...]) -> None:
        for st in stmts:
            tag = st[0]
            if tag == "store":
                try:
                    self.store(st, env, n)
                except _NotProven as why:
                    self.failed.setdefault(st[1], f"{st[4]}: {why}")
            elif tag == "for":
                self.loop(st, env, n, pids)
            elif tag == "if":
                try:
                    cond = self.get(env, st[1]) != 0
                except _NotProven as why:
                    self._fail_all([*st[2], *st[3]], f"its 'if' condition: {why}")
                    continue
                for keep, body in ((cond, st[2]), (~cond, st[3])):
                    idx = np.nonzero(keep)[0]
                    if body and idx.size:
                        self.block(body, self._take(env, idx), idx.size, tuple(p[idx] for p in pids))
            else:
                try:
                    env[st[1]] = self.define(st, env, n, pids)
                except _NotProven as why:
                    env[st[1]] = why  # fails the statements that use it

    def _take(self, env: dict[int, Any], idx: np.ndarray) -> dict[int, Any]:
        return {k: (v if isinstance(v, _NotProven) else v.take(idx) if not isinstance(v, np.ndarray) else v[idx])
                for k, v in env.items()}

    def loop(self, st: Any, env: dict[int, Any], n: int, pids: tuple[np.ndarray, ...]) -> None:
        _, iv, lb, ub, step, _bits, body = st
        try:
            lo, hi, by = (self.get(env, x) for x in (lb, ub, step))
        except _NotProven as why:
            return self._fail_all(body, f"its loop's bounds: {why}")
        up = by > 0
        down = by < 0
        safe = np.where(by == 0, 1, np.abs(by))
        trips = np.where(up, -((lo - hi) // safe), np.where(down, -((hi - lo) // safe), 0))
        trips = np.maximum(trips, 0)
        total = int(trips.sum())
        if total > LIMIT:
            return self._fail_all(body, f"{total} loop iterations to check (more than {LIMIT})")
        if total == 0:
            return None
        rep = np.repeat(np.arange(n), trips)
        first = np.cumsum(trips) - trips
        k = np.arange(total) - first[rep]
        inner = self._take(env, rep)
        inner[iv] = lo[rep] + k * by[rep]
        self.block(body, inner, total, tuple(p[rep] for p in pids))
        return None

    def _fail_all(self, body: Any, reason: str) -> None:
        for st in body:
            if st[0] == "store":
                self.failed.setdefault(st[1], f"{st[4]}: {reason}")
            elif st[0] == "for":
                self._fail_all(st[6], reason)
            elif st[0] == "if":
                self._fail_all(st[2], reason)
                self._fail_all(st[3], reason)

    def get(self, env: dict[int, Any], i: int) -> Any:
        v = env[i]
        if isinstance(v, _NotProven):
            raise v
        return v

    def define(self, st: Any, env: dict[int, Any], n: int, pids: tuple[np.ndarray, ...]) -> Any:
        tag = st[0]
        if tag == "arg":
            if st[2] not in self.scalars:
                raise _NotProven(f"the scalar '{st[2]}' is not an integer at this launch")
            return np.full(n, self.scalars[st[2]], np.int64)
        if tag == "const":
            return np.full(n, st[2], bool if isinstance(st[2], bool) else np.int64)
        if tag == "pid":
            return pids[st[2]]
        if tag == "nprog":
            return np.full(n, self.grid[st[2]], np.int64)
        if tag == "ptr":
            return _Ptr(st[2], np.zeros(n, np.int64), self.index_bits == 64)
        if tag == "range":
            return _Tile(np.full(n, st[2], np.int64), [np.ones(n, np.int64)], (st[3] - st[2],))
        a = self.get(env, st[3] if tag == "cast" else st[2]) if tag not in ("bin", "cmp", "select") else None
        if tag == "splat":
            shape = tuple(st[3])
            if isinstance(a, _Ptr):
                return _Ptr(a.param, _as_tile(a.off, shape), a.wide)
            if isinstance(a, np.ndarray) and a.dtype == bool:
                return _Mask(a, [None] * len(shape), [None] * len(shape), shape)
            return _as_tile(a, shape)
        if tag in ("expand", "bcast"):
            return _reshape(a, tag, st[3])
        if tag == "bin":
            return self.binary(st, self.get(env, st[3]), self.get(env, st[4]))
        if tag == "cmp":
            return self.compare(st, self.get(env, st[3]), self.get(env, st[4]))
        if tag == "select":
            c, x, y = (self.get(env, k) for k in st[2:5])
            if not all(isinstance(v, np.ndarray) for v in (c, x, y)):
                raise _NotProven("a select over a tile")
            return np.where(c != 0, x, y)
        if tag == "cast":
            _, _, kind, _, src, dst, signed = st
            if isinstance(a, _Tile):
                _check_tile(a, src, kind != "extui", "an index before a cast")
                _check_tile(a, dst, signed, "an index cast")
                return a
            if not isinstance(a, np.ndarray):  # a mask or pointer tile turned into a value
                raise _NotProven(f"a cast of a {'mask' if isinstance(a, _Mask) else 'pointer'} tile")
            if kind == "extui":
                return _wrap(_wrap(a, src, False), dst, signed)
            return _wrap(a, dst, signed)
        if tag == "addptr":
            return self.addptr(st, a, self.get(env, st[3]))
        raise _NotProven(f"unknown statement {tag}")

    def binary(self, st: Any, a: Any, b: Any) -> Any:
        _, _, kind, _, _, bits, signed = st
        if isinstance(a, _Mask) or isinstance(b, _Mask):
            if kind != "and" or not (isinstance(a, _Mask) and isinstance(b, _Mask)):
                raise _NotProven(f"a mask combined by '{kind}'")
            return _Mask(a.ok & b.ok, [_join(x, y, np.maximum) for x, y in zip(a.lo, b.lo)],
                         [_join(x, y, np.minimum) for x, y in zip(a.hi, b.hi)], a.shape)
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            if a.dtype == bool and b.dtype == bool and kind in ("and", "or", "xor"):
                return {"and": a & b, "or": a | b, "xor": a ^ b}[kind]
            if a.dtype == bool or b.dtype == bool:
                a, b = a.astype(np.int64), b.astype(np.int64)
            return _scalar_bin(kind, a, b, bits, signed)
        ta, tb = _as_tile(a, _shape(b)), _as_tile(b, _shape(a))
        if ta.uniform() and tb.uniform():
            return _Tile(_scalar_bin(kind, ta.base, tb.base, bits, signed), [None] * len(ta.shape), ta.shape)
        if kind in ("add", "sub"):
            sign = 1 if kind == "add" else -1
            coefs = [_join(x, None if y is None else sign * y, np.add) for x, y in zip(ta.coefs, tb.coefs)]
            out = _Tile(ta.base + sign * tb.base, coefs, ta.shape)
        elif kind in ("mul", "shl"):
            if ta.uniform():
                ta, tb = tb, ta
            if not tb.uniform():
                raise _NotProven("a product of two index tiles")
            k = tb.base if kind == "mul" else _scalar_bin("shl", np.ones_like(tb.base), tb.base, bits, signed)
            out = _Tile(ta.base * k, [None if c is None else c * k for c in ta.coefs], ta.shape)
        else:
            raise _NotProven(f"'{kind}' of an index tile")
        _check_tile(out, 64, True, "an index")
        return out

    def compare(self, st: Any, a: Any, b: Any) -> Any:
        _, _, pred, _, _, bits, signed = st
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return _cmp(pred, a, b, bits)
        ta, tb = _as_tile(a, _shape(b)), _as_tile(b, _shape(a))
        unsigned = pred.startswith("u") or not signed
        for t in (ta, tb):
            _check_tile(t, bits, signed, "a compared index")
            if unsigned and (t.span()[0] < 0).any():
                raise _NotProven("an unsigned comparison of negative indices")
        shape, rank = ta.shape, len(ta.shape)
        if ta.uniform() and tb.uniform():
            return _Mask(_cmp(pred, ta.base, tb.base, 64), [None] * rank, [None] * rank, shape)
        kind = pred[1:] if pred[0] in "su" else pred
        if kind in ("eq", "ne"):
            raise _NotProven(f"a mask by '{pred}'")
        # diff = k + sum c_d i_d; normalised to diff < 0
        k = ta.base - tb.base
        cs = [_join(x, None if y is None else -y, np.add) for x, y in zip(ta.coefs, tb.coefs)]
        cs = [c if n > 1 else None for c, n in zip(cs, shape)]
        if kind == "le":
            k = k - 1
        elif kind in ("gt", "ge"):
            k, cs = (-k if kind == "gt" else -k - 1), [None if c is None else -c for c in cs]
        dims = [d for d, c in enumerate(cs) if c is not None]
        if not dims:
            return _Mask(k < 0, [None] * rank, [None] * rank, shape)
        if len(dims) != 1:
            raise _NotProven("a mask comparing two dimensions of the tile")
        d = dims[0]
        c = cs[d]
        safe = np.where(c == 0, 1, np.abs(c))
        lo: list[np.ndarray | None] = [None] * rank
        hi: list[np.ndarray | None] = [None] * rank
        big = np.int64(1 << 62)
        hi[d] = np.where(c > 0, (-k - 1) // safe + 1, big)
        lo[d] = np.where(c < 0, k // safe + 1, -big)
        return _Mask(np.where(c == 0, k < 0, True), lo, hi, shape)

    def addptr(self, st: Any, p: Any, off: Any) -> _Ptr:
        _, _, _, _, bits, unsigned = st
        if not isinstance(p, _Ptr):
            raise _NotProven("pointer arithmetic on a non-pointer")
        wide = p.wide or bits == 64 or (unsigned and bits == 32)
        if isinstance(off, _Tile):
            _check_tile(off, bits, not unsigned, "an offset")
        shape = off.shape if isinstance(off, _Tile) else _shape(p.off)
        if isinstance(off, np.ndarray) and unsigned:
            off = _wrap(off, bits, False)
        ta, tb = _as_tile(p.off, shape), _as_tile(off, shape)
        coefs = [_join(x, y, np.add) for x, y in zip(ta.coefs, tb.coefs)]
        total = _Tile(ta.base + tb.base, coefs, shape)
        _check_tile(total, 64 if wide else 32, True, "a pointer offset")
        return _Ptr(p.param, total if shape else total.base, wide)

    # -- stores --------------------------------------------------------------------------------
    def store(self, st: Any, env: dict[int, Any], n: int) -> None:
        _, name, pi, mi, line = st
        self.lines.setdefault(name, {})[line] = None
        p = self.get(env, pi)
        off = _as_tile(p.off, ())
        shape = off.shape
        ok = np.ones(n, bool)
        lo = [np.zeros(n, np.int64) for _ in shape]
        hi = [np.full(n, s, np.int64) for s in shape]
        if mi is not None:
            m = self.get(env, mi)
            if isinstance(m, np.ndarray):
                m = _Mask(m != 0, [None] * len(shape), [None] * len(shape), shape)
            ok &= m.ok
            for d in range(len(shape)):
                if m.lo[d] is not None:
                    lo[d] = np.maximum(lo[d], m.lo[d])
                if m.hi[d] is not None:
                    hi[d] = np.minimum(hi[d], m.hi[d])
        for d in range(len(shape)):
            ok &= hi[d] > lo[d]
        idx = np.nonzero(ok)[0]
        off = off.take(idx)
        lo, hi = [x[idx] for x in lo], [x[idx] for x in hi]
        coefs = [np.zeros(idx.size, np.int64) if c is None else c for c in off.coefs]
        run = next((d for d in range(len(shape)) if shape[d] > 1 and (coefs[d] == 1).all()), None)
        others = [d for d in range(len(shape)) if d != run and shape[d] > 1 and (coefs[d] != 0).any()]
        count = idx.size * int(np.prod([shape[d] for d in others], dtype=np.float64))
        if count > LIMIT:
            raise _NotProven(f"{count} intervals to check (more than {LIMIT})")
        start = off.base + sum((coefs[d] * lo[d] for d in range(len(shape)) if d not in others), np.int64(0))
        length = (hi[run] - lo[run]) if run is not None else np.ones(idx.size, np.int64)
        for k, d in enumerate(others):  # one interval per index along the other dimensions
            i = np.arange(shape[d], dtype=np.int64)
            inside = (i[None, :] >= lo[d][:, None]) & (i[None, :] < hi[d][:, None])
            start = (start[:, None] + coefs[d][:, None] * i[None, :])[inside]
            counts = inside.sum(axis=1)
            length = np.repeat(length, counts)
            for e in others[k + 1:]:  # the dimensions still to expand follow their rows
                lo[e], hi[e], coefs[e] = np.repeat(lo[e], counts), np.repeat(hi[e], counts), np.repeat(coefs[e], counts)
        self.starts.setdefault(name, []).append(start)
        self.ends.setdefault(name, []).append(start + length)


def _join(x: np.ndarray | None, y: np.ndarray | None, f: Any) -> np.ndarray | None:
    if x is None:
        return y
    if y is None:
        return x
    return f(x, y)


def _reshape(a: Any, tag: str, arg: Any) -> Any:
    """expand_dims (arg: axis) or broadcast (arg: shape) of a tile, mask or pointer."""
    if isinstance(a, _Ptr):
        off = a.off if isinstance(a.off, _Tile) else _as_tile(a.off, ())
        return _Ptr(a.param, _reshape(off, tag, arg), a.wide)
    if tag == "expand":
        shape = a.shape[:arg] + (1,) + a.shape[arg:]
        if isinstance(a, _Tile):
            return _Tile(a.base, a.coefs[:arg] + [None] + a.coefs[arg:], shape)
        return _Mask(a.ok, a.lo[:arg] + [None] + a.lo[arg:], a.hi[:arg] + [None] + a.hi[arg:], shape)
    shape = tuple(arg)
    grown = [old == 1 and new != 1 for old, new in zip(a.shape, shape)]
    if isinstance(a, _Tile):
        return _Tile(a.base, [None if g else c for c, g in zip(a.coefs, grown)], shape)
    ok = a.ok.copy()
    for d, g in enumerate(grown):  # the one index 0 must pass for every index to
        if g and a.lo[d] is not None:
            ok &= a.lo[d] <= 0
        if g and a.hi[d] is not None:
            ok &= a.hi[d] > 0
    return _Mask(ok, [None if g else x for x, g in zip(a.lo, grown)],
                 [None if g else x for x, g in zip(a.hi, grown)], shape)


def _union_covers(starts: list[np.ndarray], ends: list[np.ndarray], size: int) -> int | None:
    """None when the intervals cover [0, size); else the first element not covered."""
    if size == 0:
        return None
    s = np.concatenate(starts) if starts else np.zeros(0, np.int64)
    e = np.concatenate(ends) if ends else np.zeros(0, np.int64)
    s, e = np.maximum(s, 0), np.minimum(e, size)
    keep = e > s
    s, e = s[keep], e[keep]
    if s.size == 0:
        return 0
    order = np.argsort(s)
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    if s[0] > 0:
        return 0
    gaps = np.nonzero(s[1:] > reach[:-1])[0]
    if gaps.size:
        return int(reach[gaps[0]])
    return None if reach[-1] >= size else int(reach[-1])


def check_coverage(program: Any, grid: tuple[int, int, int], scalars: dict[str, int],
                   sizes: dict[str, int]) -> dict[str, Verdict]:
    """Per output in `sizes`, whether the launch provably writes all its elements (module
    docstring); `scalars` maps the integer scalar parameters to their launch values."""
    total = grid[0] * grid[1] * grid[2]
    verdicts: dict[str, Verdict] = {}
    if total > LIMIT:
        return {o: Verdict(False, f"{total} programs to check (more than {LIMIT})") for o in sizes}
    flat = np.arange(total, dtype=np.int64)
    pids = (flat % grid[0], (flat // grid[0]) % grid[1], flat // (grid[0] * grid[1]))
    run = _Run(program, grid, scalars)
    with np.errstate(over="ignore"):
        run.block(program.statements, {}, total, pids)
    left = {}
    for output, at, why in program.left_out:
        left.setdefault(output, f"{at}: {why}")
    for output, size in sizes.items():
        gap = _union_covers(run.starts.get(output, []), run.ends.get(output, []), size)
        if gap is None:
            verdicts[output] = Verdict(True)
            continue
        why = run.failed.get(output) or left.get(output)
        if why is None:
            lines = run.lines.get(output)
            why = (f"no store reaches it: {'; '.join(lines)}" if lines
                   else "no store to it runs at this launch")
        verdicts[output] = Verdict(False, f"element {gap} of {size} is not proven written; {why}")
    return verdicts
