"""Conformance with Triton's documented semantics, on the emulator and in the interpreter.

Written from Triton's language documentation and its semantic rules (not from its tests); the
reference here is NumPy plus the rules restated below, independent of the package:

* tensor with tensor: fp32 wins; then fp16; bf16 only with bf16 (bf16 with anything else is
  fp32); integers promote as C does (same signedness: the wider; otherwise the unsigned one if
  it is at least as wide, else the signed one); `/`, `//` and `%` compute floats in fp32, and
  `/` always gives fp32; integer `/`, `//`, `%` of different signedness are refused;
* tensor with a Python scalar: a scalar of the same or a lower kind (bool < int < float) takes
  the tensor's dtype; a higher kind promotes as its default type (int32, float32) would;
* comparisons give int1 after promotion; bitwise operations take integers only.

Further families: dtype facts read inside kernels, refusals in Triton's words (message, cause,
location, nothing written), the launch's order of checks, former crashes, and random programs,
valid or not, on which both backends must agree to accept or refuse.

Each family is one kernel per left dtype (all right dtypes at once), run once per backend and
shared by its cases, so the ~2,800 cases cost a few dozen launches. Results come back as
int64 bit patterns with a code for their dtype, so both the dtype and the bits are checked.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.backends.interpreter import launch as interpret_launch
from triton_metal.errors import CompilationError
from triton_metal.language import JITCallable

DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32"]
INTS = DTYPES[:8]
N = 8
OPS = ["+", "-", "*", "/", "<", "==", "&", "|", "^"]
SCALAR_EXPRS = ["x + 3", "3 - x", "x * 2.5", "2.5 - x", "x + True", "x / 2", "x < 2.5", "7 * x"]
BACKENDS = ["emulator", "interpreter"]


# -- the reference rules --------------------------------------------------------------------------


def is_float(t: str) -> bool:
    return t.startswith(("float", "bfloat"))


def int_promote(a: str, b: str) -> str:
    sa, sb = not a.startswith("u"), not b.startswith("u")
    wa, wb = np.dtype(a).itemsize, np.dtype(b).itemsize
    if sa == sb:
        return a if wa > wb else b
    (u, wu), (s, ws) = ((a, wa), (b, wb)) if not sa else ((b, wb), (a, wa))
    return u if wu >= ws else s


def promote(a: str, b: str, div: bool = False) -> str | None:
    """The computation dtype of a binary operation of two tensors; None where refused."""
    if div and (is_float(a) or is_float(b)):
        return "float32"
    for f in ("float32", "float16"):
        if f in (a, b):
            return f
    if a == b == "bfloat16":
        return a
    if "bfloat16" in (a, b):
        return "float32"
    if div and a.startswith("u") != b.startswith("u"):
        return None
    return int_promote(a, b)


def _kind(t: str) -> int:
    return 2 if is_float(t) else 1


def promote_scalar(t: str, scalar: Any, div: bool = False) -> str:
    skind = 0 if isinstance(scalar, bool) else 1 if isinstance(scalar, int) else 2
    if skind <= _kind(t):
        return "float32" if div and is_float(t) else t
    default = "int32" if skind == 1 else "float32"
    out = promote(t, default, div)
    assert out is not None
    return out


def result_dtype(op: str, a: str, b: str) -> str | None:
    if op in "&|^" and (is_float(a) or is_float(b)):
        return None
    p = promote(a, b, div=op == "/")
    if p is None:
        return None
    if op in ("<", "=="):
        return "bool"
    return "float32" if op == "/" else p


# -- values and bit patterns ----------------------------------------------------------------------


def bf16_round(x: np.ndarray) -> np.ndarray:
    """float32 -> the nearest bfloat16 (ties to even), as float32."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def as_numpy_compute(v: np.ndarray, t: str) -> np.ndarray:
    """Values converted to dtype `t` (bfloat16 kept as float32 values rounded to bfloat16)."""
    if t == "bfloat16":
        return bf16_round(v.astype(np.float32))
    return v.astype(np.float32 if t == "bfloat16" else t)


def apply(op: str, x: Any, y: Any, p: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        if op == "+":
            r = x + y
        elif op == "-":
            r = x - y
        elif op == "*":
            r = x * y
        elif op == "/":
            return np.asarray(x, np.float32) / np.asarray(y, np.float32)
        elif op == "<":
            return np.asarray(x < y)
        elif op == "==":
            return np.asarray(x == y)
        elif op == "&":
            r = x & y
        elif op == "|":
            r = x | y
        else:
            r = x ^ y
    r = np.asarray(r)
    return bf16_round(r) if p == "bfloat16" else r.astype(p)


def bits64(values: np.ndarray, t: str) -> np.ndarray:
    if t == "bool":
        return values.astype(np.int64)
    if t == "float32":
        return values.astype(np.float32).view(np.int32).astype(np.int64)
    if t == "float16":
        return values.astype(np.float16).view(np.int16).astype(np.int64)
    if t == "bfloat16":
        return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).view(np.int16).astype(np.int64)
    return values.astype(t).astype(np.int64)


def code_of(t: str) -> int:
    if t == "bool":
        return 10
    bits = np.dtype(np.float32 if t == "bfloat16" else t).itemsize * 8
    if t == "bfloat16":
        bits = 16
    return bits * 10 + (3 if t == "bfloat16" else 2 if is_float(t) else 1 if not t.startswith("u") else 0)


def inputs(t: str, seed: int, nonzero: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if is_float(t):
        v = rng.integers(-40, 41, N) / 4.0
        if nonzero:
            v[v == 0] = 1.25
        return v.astype(np.float32 if t == "bfloat16" else t)
    lo, hi = (0, 200) if t == "uint8" else (0, 1000) if t.startswith("u") else (-100, 100)
    v = rng.integers(lo, hi, N, endpoint=True)
    if nonzero:
        v[v == 0] = 3
    return v.astype(t)


def device_array(v: np.ndarray, t: str) -> Any:
    if t == "bfloat16":
        return triton.reinterpret((v.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16), tl.bfloat16)
    return v


# -- the kernels ----------------------------------------------------------------------------------


@triton.jit
def _bits64(r):
    if r.dtype.is_floating():
        if r.dtype.primitive_bitwidth == 32:
            out = r.to(tl.int32, bitcast=True).to(tl.int64)
        else:
            out = r.to(tl.int16, bitcast=True).to(tl.int64)
    else:
        out = r.to(tl.int64)
    return out


@triton.jit
def _put(r, out_ptr, code_ptr, slot: tl.constexpr, offs, N: tl.constexpr):
    code: tl.constexpr = r.dtype.primitive_bitwidth * 10 + (
        3 if r.dtype.is_bf16() else 2 if r.dtype.is_floating() else 1 if r.dtype.is_int_signed() else 0)
    tl.store(out_ptr + slot * N + offs, _bits64(r))
    tl.store(code_ptr + slot, code)


@triton.jit
def _pair(x, y_ptr, out_ptr, code_ptr, j: tl.constexpr, offs, N: tl.constexpr):
    y = tl.load(y_ptr + offs)
    base: tl.constexpr = j * 9
    _put(x + y, out_ptr, code_ptr, base + 0, offs, N)
    _put(x - y, out_ptr, code_ptr, base + 1, offs, N)
    _put(x * y, out_ptr, code_ptr, base + 2, offs, N)
    mixed: tl.constexpr = x.dtype.is_int() and y.dtype.is_int() and x.dtype.is_int_signed() != y.dtype.is_int_signed()
    if not mixed:
        _put(x / y, out_ptr, code_ptr, base + 3, offs, N)
    _put(x < y, out_ptr, code_ptr, base + 4, offs, N)
    _put(x == y, out_ptr, code_ptr, base + 5, offs, N)
    if x.dtype.is_int() and y.dtype.is_int():
        _put(x & y, out_ptr, code_ptr, base + 6, offs, N)
        _put(x | y, out_ptr, code_ptr, base + 7, offs, N)
        _put(x ^ y, out_ptr, code_ptr, base + 8, offs, N)


@triton.jit
def binary_kernel(x_ptr, y0, y1, y2, y3, y4, y5, y6, y7, y8, y9, y10, out_ptr, code_ptr,
                  N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    _pair(x, y0, out_ptr, code_ptr, 0, offs, N)
    _pair(x, y1, out_ptr, code_ptr, 1, offs, N)
    _pair(x, y2, out_ptr, code_ptr, 2, offs, N)
    _pair(x, y3, out_ptr, code_ptr, 3, offs, N)
    _pair(x, y4, out_ptr, code_ptr, 4, offs, N)
    _pair(x, y5, out_ptr, code_ptr, 5, offs, N)
    _pair(x, y6, out_ptr, code_ptr, 6, offs, N)
    _pair(x, y7, out_ptr, code_ptr, 7, offs, N)
    _pair(x, y8, out_ptr, code_ptr, 8, offs, N)
    _pair(x, y9, out_ptr, code_ptr, 9, offs, N)
    _pair(x, y10, out_ptr, code_ptr, 10, offs, N)
    base: tl.constexpr = 99
    _put(x + 3, out_ptr, code_ptr, base + 0, offs, N)
    _put(3 - x, out_ptr, code_ptr, base + 1, offs, N)
    _put(x * 2.5, out_ptr, code_ptr, base + 2, offs, N)
    _put(2.5 - x, out_ptr, code_ptr, base + 3, offs, N)
    _put(x + True, out_ptr, code_ptr, base + 4, offs, N)
    _put(x / 2, out_ptr, code_ptr, base + 5, offs, N)
    _put(x < 2.5, out_ptr, code_ptr, base + 6, offs, N)
    _put(7 * x, out_ptr, code_ptr, base + 7, offs, N)


SLOTS = 99 + len(SCALAR_EXPRS)


def _launch(kernel: Any, backend: str, args: dict[str, Any]) -> None:
    if backend == "interpreter":
        interpret_launch(JITCallable(kernel.fn), (1, 1, 1), dict(args))
    else:
        kernel[(1,)](**args)


@functools.lru_cache(maxsize=None)
def binary_run(a: str, backend: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
    x = inputs(a, DTYPES.index(a), nonzero=False)
    ys = [inputs(b, 100 + DTYPES.index(b), nonzero=True) for b in DTYPES]
    out = np.full((SLOTS, N), -7, np.int64)
    codes = np.full(SLOTS, -1, np.int32)
    args = dict(x_ptr=device_array(x, a), **{f"y{j}": device_array(y, b) for j, (y, b) in enumerate(zip(ys, DTYPES))},
                out_ptr=out, code_ptr=codes, N=N)
    _launch(binary_kernel, backend, args)
    return out, codes, x, ys


def _check_slot(out: np.ndarray, codes: np.ndarray, slot: int, expected_t: str | None,
                expected: np.ndarray | None, approx: bool) -> None:
    if expected_t is None:
        assert codes[slot] == -1 and (out[slot] == -7).all(), "a refused operation produced a value"
        return
    assert codes[slot] == code_of(expected_t), f"dtype code {codes[slot]}, expected {expected_t}"
    assert expected is not None
    if approx:  # fp32 division: Triton's GPU division is within 2 ulp of the exact quotient
        got = out[slot].astype(np.int32).view(np.float32)
        np.testing.assert_allclose(got, expected.astype(np.float32), rtol=3e-7)
    else:
        np.testing.assert_array_equal(out[slot], bits64(expected, expected_t))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("b", DTYPES)
@pytest.mark.parametrize("a", DTYPES)
def test_binary_tensor_tensor(a: str, b: str, op: str, backend: str) -> None:
    out, codes, x, ys = binary_run(a, backend)
    j, k = DTYPES.index(b), OPS.index(op)
    t = result_dtype(op, a, b)
    expected = None
    if t is not None:
        p = "float32" if op == "/" else promote(a, b)
        assert p is not None
        expected = apply(op, as_numpy_compute(x, p), as_numpy_compute(ys[j], p), p)
    _check_slot(out, codes, j * 9 + k, t, expected, approx=op == "/")


_SCALARS: dict[str, tuple[str, Any, bool]] = {
    "x + 3": ("+", 3, False), "3 - x": ("-", 3, True), "x * 2.5": ("*", 2.5, False),
    "2.5 - x": ("-", 2.5, True), "x + True": ("+", True, False), "x / 2": ("/", 2, False),
    "x < 2.5": ("<", 2.5, False), "7 * x": ("*", 7, True),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("expr", SCALAR_EXPRS)
@pytest.mark.parametrize("a", DTYPES)
def test_binary_tensor_scalar(a: str, expr: str, backend: str) -> None:
    out, codes, x, _ = binary_run(a, backend)
    op, scalar, reflected = _SCALARS[expr]
    p = promote_scalar(a, scalar, div=op == "/")
    p = "float32" if op == "/" else p
    xs = as_numpy_compute(x, p)
    s = as_numpy_compute(np.array([scalar] * N), p)
    expected = apply(op, s, xs, p) if reflected else apply(op, xs, s, p)
    t = "bool" if op == "<" else p
    _check_slot(out, codes, 99 + SCALAR_EXPRS.index(expr), t, expected, approx=op == "/")


# -- dtype facts inside kernels -------------------------------------------------------------------

ATTRS = ["primitive_bitwidth", "is_int64", "is_fp16", "is_int_signed", "is_floating", "is_standard_floating",
         "exponent_bias", "fp_mantissa_width"]


@triton.jit
def dtype_facts_kernel(out_ptr, DT: tl.constexpr):
    # a dtype is a tl.constexpr in a kernel and in the helpers it is passed to, as in Triton
    tl.store(out_ptr + 0, DT.value.primitive_bitwidth)
    tl.store(out_ptr + 1, DT.is_int64())
    tl.store(out_ptr + 2, DT.is_fp16())
    tl.store(out_ptr + 3, DT.is_int_signed())
    tl.store(out_ptr + 4, DT.is_floating())
    tl.store(out_ptr + 5, DT.is_standard_floating())
    if DT.is_floating():
        tl.store(out_ptr + 6, DT.exponent_bias)
        tl.store(out_ptr + 7, DT.fp_mantissa_width)
    if DT == tl.constexpr(tl.float32):
        tl.store(out_ptr + 8, 1)


@functools.lru_cache(maxsize=None)
def facts_run(name: str, backend: str) -> np.ndarray:
    out = np.full(9, -1, np.int32)
    _launch(dtype_facts_kernel, backend, dict(out_ptr=out, DT=getattr(tl, name)))
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("attr", ATTRS)
@pytest.mark.parametrize("name", DTYPES)
def test_dtype_facts_in_kernel(name: str, attr: str, backend: str) -> None:
    out = facts_run(name, backend)
    ty = getattr(tl, name)
    i = ATTRS.index(attr)
    if attr in ("exponent_bias", "fp_mantissa_width"):
        bias_and_mantissa = {"float16": (15, 10), "bfloat16": (127, 7), "float32": (127, 23)}
        expected = bias_and_mantissa[name][i - 6] if name in bias_and_mantissa else -1
    elif attr == "primitive_bitwidth":
        expected = 16 if name == "bfloat16" else np.dtype(name).itemsize * 8
    else:
        expected = int(getattr(ty, attr)())
    assert out[i] == expected
    assert out[8] == (1 if name == "float32" else -1)


# -- refusals in Triton's words -------------------------------------------------------------------

REFUSALS: list[tuple[str, str, type[Exception]]] = [
    ("xf & xf", "invalid operands of type", TypeError),
    ("xf | 1", "invalid operands of type", TypeError),
    ("xf << 2", "invalid operands of type", TypeError),
    ("p + 1.5", "invalid operands of type", TypeError),
    ("p * 2", "invalid operands of type", TypeError),
    ("p + p", "cannot add pointers together", TypeError),
    ("xi8 // xu8", "Cannot use /, #, or % with .* because they have different signedness", TypeError),
    ("xi % xu", "Cannot use /, #, or % with .* because they have different signedness", TypeError),
    ("xi / xu", "Cannot use /, #, or % with .* because they have different signedness", TypeError),
    ("xu + -1", "Cannot perform a binary operation between an unsigned tensor and a negative scalar", ValueError),
    ("xi8 + 300", "Scalar 300 is out of range for type int8", ValueError),
    ("tl.program_id(3)", "program_id axis must be 0, 1, or 2 but got 3", ValueError),
    ("tl.num_programs(-1)", "num_programs axis must be 0, 1, or 2 but got -1", ValueError),
    ("tl.sum(xf, axis=1)", r"invalid axis 1. Expected -1 <= axis < 1", ValueError),
    ("tl.max(xf, axis=-2)", "invalid axis -2", ValueError),
    ("tl.cumsum(xf, axis=4)", "invalid axis 4", ValueError),
    ("tl.expand_dims(xf, 3)", "invalid axis 3", ValueError),
    ("xf[0]", "unsupported tensor index: 0", ValueError),
    ("tl.arange(0, 10)", "arange's range must be a power of 2", ValueError),
    ("tl.arange(8, 8)", "arange's end argument must be greater than the start argument", ValueError),
    ("-p", "wrong type argument to unary minus", ValueError),
    ("~xf", "wrong type argument to unary invert", ValueError),
    ("tl.reshape(xf, (2, 2))", r"reshape\(\) cannot change total number of elements in tensor", ValueError),
    ("tl.permute(tl.reshape(xf, (2, 4)), (0, 0))", "permute dims must be a permutation of 0, 1, ..., n-1, but were",
     ValueError),
    ("xf + tl.zeros((16,), tl.float32)", "Cannot make_shape_compatible: incompatible dimensions at index 0",
     ValueError),
    ("xi.to(tl.float16, bitcast=True)", "Cannot bitcast data-type of size 32 to data-type of size 16", ValueError),
    ("tl.exp(xi)", r"Expected dtype \[.*\] but got int32", ValueError),
    ("xf // xf", "unexpected type fp32", TypeError),
    ("(xi > 0) and xi", "Cannot bitcast data-type of size 32 to data-type of size 1", ValueError),
    ("not xf", "Cannot bitcast data-type of size 32 to data-type of size 1", ValueError),
    ("tl.load(p + tl.arange(0, 8), other=0.0)", "`other` cannot be provided without `mask`", ValueError),
]


def _refusal_source(expr: str) -> str:
    return (
        "def refused(p, xi_ptr, xu_ptr, xi8_ptr, xu8_ptr):\n"
        "    offs = tl.arange(0, 8)\n"
        "    xf = tl.load(p + offs)\n"
        "    xi = tl.load(xi_ptr + offs)\n"
        "    xu = tl.load(xu_ptr + offs)\n"
        "    xi8 = tl.load(xi8_ptr + offs)\n"
        "    xu8 = tl.load(xu8_ptr + offs)\n"
        f"    r = {expr}  # the refused line\n"
        "    tl.store(p + offs, xf)\n"
    )


@functools.lru_cache(maxsize=None)
def _refusal_kernel(expr: str) -> Any:
    import linecache

    src = _refusal_source(expr)
    name = f"<refusal {expr}>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    ns: dict[str, Any] = {"tl": tl}
    exec(compile(src, name, "exec"), ns)  # noqa: S102 - the test's own kernel source
    return triton.jit(ns["refused"])


@pytest.mark.filterwarnings("ignore:Logical operators")
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("expr", "phrase", "cause"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusal_in_tritons_words(expr: str, phrase: str, cause: type[Exception], backend: str) -> None:
    kernel = _refusal_kernel(expr)
    p = np.arange(8, dtype=np.float32)
    args = dict(p=p, xi_ptr=np.arange(8, dtype=np.int32), xu_ptr=np.arange(8, dtype=np.uint32),
                xi8_ptr=np.arange(8, dtype=np.int8), xu8_ptr=np.arange(8, dtype=np.uint8))
    with pytest.raises(CompilationError, match=phrase) as info:
        _launch(kernel, backend, args)
    err = info.value
    assert isinstance(err.__cause__, cause) and err.__cause__ is not err
    assert str(err.__cause__) in err.reason or phrase.split(".")[0] in str(err.__cause__)
    text = str(err)
    assert f"r = {expr}  # the refused line" in text and "^" in text  # the source line and caret
    assert err.loc is not None and err.loc.line == 8
    np.testing.assert_array_equal(p, np.arange(8, dtype=np.float32))  # nothing was written


@pytest.mark.filterwarnings("ignore:Logical operators")
@pytest.mark.parametrize("expr", [r[0] for r in REFUSALS])
def test_both_backends_refuse_with_the_same_words(expr: str) -> None:
    kernel = _refusal_kernel(expr)
    reasons = []
    for backend in BACKENDS:
        args = dict(p=np.zeros(8, np.float32), xi_ptr=np.zeros(8, np.int32), xu_ptr=np.zeros(8, np.uint32),
                    xi8_ptr=np.zeros(8, np.int8), xu8_ptr=np.zeros(8, np.uint8))
        with pytest.raises(CompilationError) as info:
            _launch(kernel, backend, args)
        reasons.append((type(info.value), info.value.reason, type(info.value.__cause__)))
    assert reasons[0] == reasons[1]


def test_type_error_comes_before_the_float64_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = _refusal_kernel("xf & xf")
    args = dict(p=np.zeros(8, np.float64), xi_ptr=np.zeros(8, np.int32), xu_ptr=np.zeros(8, np.uint32),
                xi8_ptr=np.zeros(8, np.int8), xu8_ptr=np.zeros(8, np.uint8))
    for interpret in ("0", "1"):
        monkeypatch.setenv("TRITON_METAL_INTERPRET", interpret)
        with pytest.raises(CompilationError, match="invalid operands of type"):
            kernel[(1,)](**args)
    ok = _refusal_kernel("xf + 1.0")
    with pytest.raises(TypeError, match="float64"):
        ok[(1,)](**args)


@pytest.mark.parametrize("value", [2**64, -(2**63) - 1, 2**70])
@pytest.mark.parametrize("interpret", ["0", "1"])
def test_integer_argument_that_does_not_fit_is_an_overflow_error(
        monkeypatch: pytest.MonkeyPatch, value: int, interpret: str) -> None:
    monkeypatch.setenv("TRITON_METAL_INTERPRET", interpret)
    out = np.zeros(4, np.int64)
    with pytest.raises(OverflowError):
        _scalar_store[(1,)](out, value)
    assert not out.any()


@triton.jit
def _scalar_store(out_ptr, v):
    tl.store(out_ptr + tl.arange(0, 4), v)


# -- language behaviour that used to crash or differ ----------------------------------------------


@triton.jit
def _width_of(DT):
    return DT.value.primitive_bitwidth  # a dtype argument is a tl.constexpr inside the helper


@triton.jit
def behaviour_kernel(x_ptr, m_ptr, out_ptr, DT: tl.constexpr):
    offs = tl.arange(0, 8)
    x = tl.load(x_ptr + offs)
    a, b = tl.split(tl.load(x_ptr + tl.arange(0, 2)))  # a pair into two scalars
    tl.store(out_ptr + 0, a.to(tl.float32))
    tl.store(out_ptr + 1, b.to(tl.float32))
    acc = 0  # an integer literal bound to a name is a tl scalar
    acc = acc.to(tl.int64)
    for i in range(4):
        acc += i
    tl.store(out_ptr + 2, acc.to(tl.float32))
    v = 5
    tl.store(out_ptr + 3, v.dtype.primitive_bitwidth)
    tl.store(out_ptr + 4, _width_of(DT))
    if x.dtype == tl.constexpr(DT):
        tl.store(out_ptr + 5, 1.0)
    m = tl.load(m_ptr + offs) != 0
    pos = x > 0
    tl.store(out_ptr + 8 + offs, (pos and m).to(tl.float32))
    tl.store(out_ptr + 16 + offs, (pos or m).to(tl.float32))
    tl.store(out_ptr + 24 + offs, (not m).to(tl.float32))
    tl.store(out_ptr + 32 + offs, (pos and True and m).to(tl.float32))


BEHAVIOUR_DTYPES = ["float32", "float16", "int32", "int8"]
BEHAVIOURS = ["split_pair", "literal_is_scalar", "literal_dtype", "helper_constexpr", "dtype_eq_constexpr",
              "and", "or", "not", "and_with_constant"]


@functools.lru_cache(maxsize=None)
def behaviour_run(name: str, backend: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = np.array([3, -2, 0, 5, -7, 1, 4, -1], dtype=name)
    m = np.array([1, 1, 0, 0, 1, 0, 1, 0], np.int8)
    out = np.full(40, -9.0, np.float32)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Triton's warning for `and`/`or` on blocks
        _launch(behaviour_kernel, backend, dict(x_ptr=x, m_ptr=m, out_ptr=out, DT=getattr(tl, name)))
    return out, x, m


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("what", BEHAVIOURS)
@pytest.mark.parametrize("name", BEHAVIOUR_DTYPES)
def test_language_behaviour(name: str, what: str, backend: str) -> None:
    out, x, m = behaviour_run(name, backend)
    pos, mb = x > 0, m != 0
    expected: dict[str, Any] = {
        "split_pair": (out[:2], x[:2].astype(np.float32)),
        "literal_is_scalar": (out[2], 6.0),
        "literal_dtype": (out[3], 32.0),
        "helper_constexpr": (out[4], float(np.dtype(name).itemsize * 8)),
        "dtype_eq_constexpr": (out[5], 1.0),
        "and": (out[8:16], (pos & mb).astype(np.float32)),
        "or": (out[16:24], (pos | mb).astype(np.float32)),
        "not": (out[24:32], (~mb).astype(np.float32)),
        "and_with_constant": (out[32:40], (pos & mb).astype(np.float32)),
    }
    got, want = expected[what]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_and_on_blocks_warns_as_triton_does(backend: str) -> None:
    """Compiled, the warning comes from the front end (as in Triton, when the kernel compiles)."""
    from triton_metal.runtime.compiler import type_check

    args = dict(x_ptr=np.arange(8, dtype=np.float32), m_ptr=np.ones(8, np.int8),
                out_ptr=np.zeros(40, np.float32), DT=tl.float32)
    with pytest.warns(UserWarning, match="Logical operators 'and' and 'or' are deprecated for non-scalar tensors"):
        if backend == "interpreter":
            _launch(behaviour_kernel, backend, args)
        else:
            type_check(behaviour_kernel, behaviour_kernel.specialization(**args))


# -- random programs, valid or not: both backends accept or refuse them alike ---------------------

_OPERANDS = {"f": "xf", "i": "xi", "u": "xu", "b": "xi8", "c": "xu8"}
_BINARY_OPS = ["+", "-", "*", "/", "//", "%", "&", "|", "^", "<<", ">>", "<", "=="]
_UNARY = ["-{}", "~{}", "tl.exp({})", "tl.abs({})", "({} + 1)", "({} * 2.5)", "({} - 3)"]


def _random_expression(seed: int) -> str:
    import random

    rng = random.Random(seed)
    expr = rng.choice(list(_OPERANDS.values()))
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.3:
            expr = rng.choice(_UNARY).format(expr)
        else:
            other = rng.choice(list(_OPERANDS.values()))
            expr = f"({expr} {rng.choice(_BINARY_OPS)} {other})" if rng.random() < 0.5 else \
                f"({other} {rng.choice(_BINARY_OPS)} {expr})"
    return expr


def _outcome(run: Any) -> tuple[str, str]:
    try:
        run()
    except CompilationError as err:
        return "refused", err.reason
    return "accepted", ""


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("seed", range(80))
def test_random_programs_agree_on_accept_refuse(seed: int) -> None:
    """The interpreter runs it, the compiler compiles it to MSL (the step that refuses; the
    toolchain never does): both accept, or both refuse with the same words."""
    from triton_metal.runtime.compiler import compile_msl

    expr = _random_expression(seed)
    kernel = _refusal_kernel(expr)
    args = dict(p=np.ones(8, np.float32), xi_ptr=np.arange(1, 9, dtype=np.int32),
                xu_ptr=np.arange(1, 9, dtype=np.uint32), xi8_ptr=np.arange(1, 9, dtype=np.int8),
                xu8_ptr=np.arange(1, 9, dtype=np.uint8))
    interpreted = _outcome(lambda: interpret_launch(JITCallable(kernel.fn), (1, 1, 1), dict(args)))
    compiled = _outcome(lambda: compile_msl(kernel, kernel.specialization(**args)))
    assert interpreted == compiled, expr
