"""`>>`, `<<`, `//` and `%` over every pair of integer dtypes, against NumPy with Triton's rules.

The reference is written here from Triton's documented semantics, independently of the package:

* both operands are converted to the promoted type (C's usual arithmetic conversions: same
  signedness -> the wider; otherwise the unsigned one if it is at least as wide, else the signed);
* `>>` is arithmetic when the *left* operand is signed before promotion, logical otherwise;
* `//` and `%` truncate toward zero (C), and refuse operands of different signedness;
* results wrap to the promoted type.

Shift amounts stay below the promoted width and divisors are non-zero (Triton leaves those cases
undefined, and division by zero and INT_MIN // -1 are another test's business). One kernel per
left dtype computes its shifts with all eight right dtypes and its divisions with the four of the
same signedness, on the emulator and in the interpreter.
"""

from __future__ import annotations

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.backends.interpreter import launch as interpret_launch
from triton_metal.errors import CompilationError, InterpreterError
from triton_metal.language import JITCallable

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
N = 32


def promote(a: str, b: str) -> str:
    sa, sb = not a.startswith("u"), not b.startswith("u")
    wa, wb = np.dtype(a).itemsize, np.dtype(b).itemsize
    if sa == sb:
        return a if wa > wb else b
    unsigned, signed = (a, b) if not sa else (b, a)
    wu, ws = np.dtype(unsigned).itemsize, np.dtype(signed).itemsize
    return unsigned if wu >= ws else signed


def _wrap(v: int, ty: str) -> int:
    bits = np.dtype(ty).itemsize * 8
    v &= (1 << bits) - 1
    if not ty.startswith("u") and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def reference(op: str, a: str, b: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    p = promote(a, b)
    bits = np.dtype(p).itemsize * 8
    out = []
    for xi, yi in zip(x.tolist(), y.tolist()):
        xp, yp = _wrap(xi, p), _wrap(yi, p)
        if op == ">>":
            if not a.startswith("u"):  # arithmetic: shift the bits read as signed
                r = _wrap(xp, "int" + str(bits)) >> yp
            else:
                r = (xp & ((1 << bits) - 1)) >> yp
        elif op == "<<":
            r = xp << yp
        else:
            q = abs(xp) // abs(yp) * (1 if (xp >= 0) == (yp >= 0) else -1)
            r = q if op == "//" else xp - yp * q
        out.append(_wrap(_wrap(r, p), "int64"))  # the kernel stores every result as int64
    return np.array(out, np.int64)


def _helpers() -> tuple[object, object]:
    @triton.jit
    def shifts(x, ys_ptr, offs, out_ptr, slot: tl.constexpr, N: tl.constexpr):
        ys = tl.load(ys_ptr + offs)
        tl.store(out_ptr + (2 * slot) * N + offs, (x >> ys).to(tl.int64))
        tl.store(out_ptr + (2 * slot + 1) * N + offs, (x << ys).to(tl.int64))

    @triton.jit
    def divs(x, yd_ptr, offs, out_ptr, slot: tl.constexpr, N: tl.constexpr):
        yd = tl.load(yd_ptr + offs)
        tl.store(out_ptr + (16 + 2 * slot) * N + offs, (x // yd).to(tl.int64))
        tl.store(out_ptr + (16 + 2 * slot + 1) * N + offs, (x % yd).to(tl.int64))

    return shifts, divs


_shifts, _divs = _helpers()


@triton.jit
def pairs_kernel(x_ptr, s0, s1, s2, s3, s4, s5, s6, s7, d0, d1, d2, d3, out_ptr,
                 N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    _shifts(x, s0, offs, out_ptr, 0, N)
    _shifts(x, s1, offs, out_ptr, 1, N)
    _shifts(x, s2, offs, out_ptr, 2, N)
    _shifts(x, s3, offs, out_ptr, 3, N)
    _shifts(x, s4, offs, out_ptr, 4, N)
    _shifts(x, s5, offs, out_ptr, 5, N)
    _shifts(x, s6, offs, out_ptr, 6, N)
    _shifts(x, s7, offs, out_ptr, 7, N)
    _divs(x, d0, offs, out_ptr, 0, N)
    _divs(x, d1, offs, out_ptr, 1, N)
    _divs(x, d2, offs, out_ptr, 2, N)
    _divs(x, d3, offs, out_ptr, 3, N)


def _inputs(a: str, seed: int) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray], list[str]]:
    rng = np.random.default_rng(seed)
    info = np.iinfo(a)
    edges = [info.min, info.max, 0, 1, info.max // 2 + 1]
    if info.min < 0:
        edges += [-1, -100 if info.min <= -100 else -2]
    x = np.concatenate([np.array(edges, np.int64 if info.min < 0 else np.uint64),
                        rng.integers(info.min, info.max, N - len(edges), endpoint=True, dtype=a)]).astype(a)
    shift_amounts = []
    for b in INTS:
        limit = min(np.dtype(promote(a, b)).itemsize * 8 - 1, int(np.iinfo(b).max))
        s = rng.integers(0, limit, N, endpoint=True)
        s[:4] = [0, 1, limit, limit // 2]
        shift_amounts.append(s.astype(b))
    same = [b for b in INTS if b.startswith("u") == a.startswith("u")]
    divisors = []
    for b in same:
        bi = np.iinfo(b)
        d = rng.integers(bi.min, bi.max, N, endpoint=True, dtype=b).astype(object)
        d[:6] = [1, 3, 7, bi.max, bi.max if bi.min == 0 else -1, 2 if bi.min == 0 else -7]
        d[d == 0] = 5
        if bi.min < 0:
            d[(x.astype(object) == np.iinfo(a).min) & (d == -1)] = 3  # INT_MIN // -1 is not ours
        divisors.append(np.array(d.tolist(), b))
    return x, shift_amounts, divisors, same


def _run(a: str, interpret: bool) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray], list[str], np.ndarray]:
    x, s, d, same = _inputs(a, INTS.index(a))
    out = np.zeros(24 * N, np.int64)
    args = dict(x_ptr=x, **{f"s{i}": v for i, v in enumerate(s)}, **{f"d{i}": v for i, v in enumerate(d)},
                out_ptr=out, N=N)
    if interpret:
        interpret_launch(JITCallable(pairs_kernel.fn), (1, 1, 1), args)
    else:
        pairs_kernel[(1,)](**args)
    return x, s, d, same, out.reshape(24, N)


@pytest.mark.parametrize("interpret", [False, True], ids=["emulator", "interpreter"])
@pytest.mark.parametrize("a", INTS)
def test_every_right_dtype(a: str, interpret: bool) -> None:
    x, s, d, same, out = _run(a, interpret)
    for i, b in enumerate(INTS):
        np.testing.assert_array_equal(out[2 * i], reference(">>", a, b, x, s[i]), err_msg=f"{a} >> {b}")
        np.testing.assert_array_equal(out[2 * i + 1], reference("<<", a, b, x, s[i]), err_msg=f"{a} << {b}")
    for i, b in enumerate(same):
        np.testing.assert_array_equal(out[16 + 2 * i], reference("//", a, b, x, d[i]), err_msg=f"{a} // {b}")
        np.testing.assert_array_equal(out[17 + 2 * i], reference("%", a, b, x, d[i]), err_msg=f"{a} % {b}")


def test_the_issue_example() -> None:
    x = np.array([-128, -100, -1, 100], np.int8)
    got = reference(">>", "int8", "uint32", x, np.array([1, 4, 8, 2], np.uint32))
    assert got.tolist() == [4294967232, 4294967289, 4294967295, 25]


@triton.jit
def _mixed_kernel(x_ptr, y_ptr, o_ptr, OP: tl.constexpr):
    offs = tl.arange(0, 4)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == "//":
        tl.store(o_ptr + offs, x // y)
    else:
        tl.store(o_ptr + offs, x % y)


MIXED = [(a, b) for a in INTS for b in INTS if a.startswith("u") != b.startswith("u")]


@pytest.mark.parametrize("op", ["//", "%"])
@pytest.mark.parametrize(("a", "b"), MIXED)
def test_mixed_signedness_division_is_refused_on_both(a: str, b: str, op: str) -> None:
    x, y = np.ones(4, a), np.ones(4, b)
    o = np.zeros(4, promote(a, b))
    with pytest.raises((CompilationError, InterpreterError), match="different signedness") as interp:
        interpret_launch(JITCallable(_mixed_kernel.fn), (1, 1, 1), dict(x_ptr=x, y_ptr=y, o_ptr=o, OP=op))
    with pytest.raises(CompilationError, match="different signedness") as comp:
        _mixed_kernel[(1,)](x, y, o, OP=op)
    assert type(interp.value) is type(comp.value)
    assert (o == 0).all()
