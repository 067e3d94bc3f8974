"""Compiled 1-D kernels against NumPy on the emulator: arithmetic, math, casts, masks, dtypes."""

from __future__ import annotations

import re

import mlx.core as mx
import numpy as np
import pytest
from harness import C, compile_1d, run

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.language.extra import libdevice

RNG = np.random.default_rng(0)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
@pytest.mark.parametrize("n", [1, 100, 1000, 4096])
def test_vector_add_fp32_masked_tails(num_warps: int, n: int):
    block = 256
    k = compile_1d(add_kernel, "*fp32/16", "*fp32/16", "*fp32/16", "i32", C(block), num_warps=num_warps, spt=2)
    x = RNG.standard_normal(n).astype(np.float32)
    y = RNG.standard_normal(n).astype(np.float32)
    out = run(k, (triton.cdiv(n, block),), x_ptr=x, y_ptr=y, out_ptr=np.zeros(n, np.float32), n=n)["out_ptr"]
    np.testing.assert_array_equal(out, x + y)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_vector_add_half_types(dtype: str):
    n, block = 777, 128
    k = compile_1d(add_kernel, f"*{dtype}", f"*{dtype}", f"*{dtype}", "i32", C(block), spt=4)
    mxt = mx.float16 if dtype == "fp16" else mx.bfloat16
    x = mx.array(RNG.standard_normal(n).astype(np.float32)).astype(mxt)
    y = mx.array(RNG.standard_normal(n).astype(np.float32)).astype(mxt)
    out = run(k, (triton.cdiv(n, block),), x_ptr=x, y_ptr=y, out_ptr=mx.zeros((n,), mxt), n=n)["out_ptr"]
    # one rounding of the exact sum to the storage type
    want = (x.astype(mx.float32) + y.astype(mx.float32)).astype(mxt).astype(mx.float32)
    np.testing.assert_array_equal(out, np.array(want))


def test_vector_add_golden_vector_accesses_no_threadgroup_memory():
    k = compile_1d(add_kernel, "*fp32/16", "*fp32/16", "*fp32/16", "i32/16", C(1024), spt=4)
    src = k.source
    # 2 float4 loads per input and 2 float4 stores per thread (8 registers of 4-element runs)
    assert src.count("((const device float4*)(x_ptr_in + ") == 2
    assert src.count("((const device float4*)(y_ptr_in + ") == 2
    assert src.count("((device float4*)(output_ptr_out + ") == 0
    assert src.count("((device float4*)(out_ptr_out + ") == 2
    assert "km_smem" not in src and not re.search(r"^\s*threadgroup ", src, re.M)
    assert "barrier" not in src and "simd_" not in src
    assert "thread_position_in_grid" in src
    assert k.metadata["threadgroup_memory_bytes"] == 0 and k.metadata["vector_inputs"] == ("x_ptr_in", "y_ptr_in")
    assert re.search(r'#line \d+ ".*test_compiled_elementwise.py"', src)
    n = 4096 + 16
    x = RNG.standard_normal(n).astype(np.float32)
    y = RNG.standard_normal(n).astype(np.float32)
    out = run(k, (triton.cdiv(n, 1024),), x_ptr=x, y_ptr=y, out_ptr=np.zeros(n, np.float32), n=n)["out_ptr"]
    np.testing.assert_array_equal(out, x + y)


def test_unaligned_pointers_get_scalar_accesses():
    k = compile_1d(add_kernel, "*fp32", "*fp32", "*fp32", "i32/16", C(1024), spt=4)
    assert "float4" not in k.source


@triton.jit
def int_ops_kernel(a_ptr, b_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=1)
    b = tl.load(b_ptr + offs, mask=mask, other=1)
    if OP == "div":
        r = a // b
    elif OP == "mod":
        r = a % b
    elif OP == "shl":
        r = a << b
    elif OP == "shr":
        r = a >> b
    elif OP == "and":
        r = a & b
    elif OP == "xor":
        r = a ^ b
    elif OP == "min":
        r = tl.minimum(a, b)
    elif OP == "mul":
        r = a * b
    else:
        r = a - b
    tl.store(out_ptr + offs, r, mask=mask)


def _c_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's truncating division, 0 for a zero divisor (the interpreter's definition)."""
    safe = np.where(b == 0, 1, b)
    q = np.trunc(a.astype(np.float64) / safe).astype(a.dtype)
    return np.where(b == 0, 0, q).astype(a.dtype)


@pytest.mark.parametrize("dtype", ["int32", "int8", "uint32", "int64"])
@pytest.mark.parametrize("op", ["div", "mod", "shl", "shr", "and", "xor", "min", "mul", "sub"])
def test_integer_ops(dtype: str, op: str):
    n, block = 300, 128
    np_t = np.dtype(dtype)
    info = np.iinfo(np_t)
    a = RNG.integers(max(info.min, -1000), min(info.max, 1000), n).astype(np_t)
    b = RNG.integers(max(info.min, -20), min(info.max, 20), n).astype(np_t)
    b[::7] = 0
    if op in ("shl", "shr"):
        b = RNG.integers(0, np_t.itemsize * 8 + 3, n).astype(np_t)
    name = {"int32": "i32", "int8": "i8", "uint32": "u32", "int64": "i64"}[dtype]
    k = compile_1d(int_ops_kernel, f"*{name}", f"*{name}", f"*{name}", "i32", C(op), C(block))
    out = run(k, (triton.cdiv(n, block),), a_ptr=a, b_ptr=b, out_ptr=np.zeros(n, np_t), n=n)["out_ptr"]
    with np.errstate(all="ignore"):
        if op == "div":
            want = _c_div(a, b)
        elif op == "mod":
            want = np.where(b == 0, 0, a - _c_div(a, b) * b).astype(np_t)
        elif op == "shl":
            bits = np_t.itemsize * 8
            want = np.where(b >= bits, 0, a.astype(np.uint64) << np.minimum(b, bits - 1).astype(np.uint64)).astype(np_t)
        elif op == "shr":
            bits = np_t.itemsize * 8
            fill = np.where(a < 0, -1, 0).astype(np_t) if np.issubdtype(np_t, np.signedinteger) else np.zeros(n, np_t)
            want = np.where(b >= bits, fill, a >> np.minimum(b, bits - 1).astype(np_t)).astype(np_t)
        elif op == "and":
            want = a & b
        elif op == "xor":
            want = a ^ b
        elif op == "min":
            want = np.minimum(a, b)
        elif op == "mul":
            want = (a * b).astype(np_t)
        else:
            want = (a - b).astype(np_t)
    np.testing.assert_array_equal(out, want)


@triton.jit
def math_kernel(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    if FN == "exp":
        y = tl.exp(x)
    elif FN == "log":
        y = tl.log(x)
    elif FN == "sqrt":
        y = tl.sqrt(x)
    elif FN == "rsqrt":
        y = tl.rsqrt(x)
    elif FN == "sin":
        y = tl.sin(x)
    elif FN == "erf":
        y = tl.erf(x)
    elif FN == "floor":
        y = tl.floor(x)
    elif FN == "sigmoid":
        y = tl.sigmoid(x)
    elif FN == "abs":
        y = tl.abs(x)
    elif FN == "tanh":
        y = libdevice.tanh(x)
    elif FN == "fma":
        y = tl.fma(x, x, x)
    else:
        y = tl.maximum(x, 0.5)
    tl.store(out_ptr + offs, y, mask=mask)


def _erf(x: np.ndarray) -> np.ndarray:
    import math

    return np.array([math.erf(float(v)) for v in x], dtype=np.float64)


@pytest.mark.parametrize("mode", ["safe", "relaxed", "fast"])
@pytest.mark.parametrize("fn", ["exp", "log", "sqrt", "rsqrt", "sin", "erf", "floor", "sigmoid", "abs", "fma", "max"])
def test_math_functions_fp32(fn: str, mode: str):
    n, block = 500, 256
    x = (RNG.random(n) * 4 + 0.01).astype(np.float32)
    if fn in ("sin", "erf", "floor", "abs", "max", "fma"):
        x = (RNG.standard_normal(n) * 2).astype(np.float32)
    k = compile_1d(math_kernel, "*fp32", "*fp32", "i32", C(fn), C(block), math_mode=mode)
    out = run(k, (triton.cdiv(n, block),), x_ptr=x, out_ptr=np.zeros(n, np.float32), n=n)["out_ptr"]
    xd = x.astype(np.float64)
    want = {
        "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda v: 1 / np.sqrt(v),
        "sin": np.sin, "erf": _erf, "floor": np.floor, "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
        "abs": np.abs, "fma": lambda v: v * v + v, "max": lambda v: np.maximum(v, 0.5),
    }[fn](xd)
    np.testing.assert_allclose(out, want, rtol=2e-6, atol=2e-6)


def test_math_modes_pick_namespaces():
    # functions Triton computes exactly (sin here) follow the math mode; tl.exp is Triton's
    # approximate instruction, fast:: whatever the mode
    safe = compile_1d(math_kernel, "*fp32", "*fp32", "i32", C("sin"), C(128), math_mode="safe")
    fast = compile_1d(math_kernel, "*fp32", "*fp32", "i32", C("sin"), C(128), math_mode="fast")
    relaxed = compile_1d(math_kernel, "*fp32", "*fp32", "i32", C("sin"), C(128), math_mode="relaxed")
    assert "precise::sin(" in safe.source
    assert "fast::sin(" in fast.source
    assert "precise::sin(" not in relaxed.source and "fast::sin(" not in relaxed.source
    assert safe.name != fast.name
    for mode in ("safe", "relaxed", "fast"):
        exp = compile_1d(math_kernel, "*fp32", "*fp32", "i32", C("exp"), C(128), math_mode=mode)
        assert "fast::exp(" in exp.source and "precise::exp(" not in exp.source


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_math_on_half_types_rounds_once(dtype: str):
    n, block = 200, 128
    mxt = mx.float16 if dtype == "fp16" else mx.bfloat16
    x = mx.array((RNG.random(n) * 3).astype(np.float32)).astype(mxt)
    # libdevice's functions take half types (tl.exp does not, as in Triton: tests/interpreter/
    # test_interp_casts_math.py)
    k = compile_1d(math_kernel, f"*{dtype}", f"*{dtype}", "i32", C("tanh"), C(block))
    out = run(k, (triton.cdiv(n, block),), x_ptr=x, out_ptr=mx.zeros((n,), mxt), n=n)["out_ptr"]
    want = np.array(mx.tanh(x.astype(mx.float32)).astype(mxt).astype(mx.float32))
    np.testing.assert_allclose(out, want, rtol=1e-2 if dtype == "bf16" else 1e-3)


@triton.jit
def cast_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x.to(out_ptr.dtype.element_ty), mask=mask)


@pytest.mark.parametrize("src,dst", [
    ("fp32", "i32"), ("i32", "fp32"), ("fp32", "fp16"), ("fp16", "fp32"), ("fp32", "bf16"),
    ("bf16", "fp32"), ("fp16", "bf16"), ("i32", "i8"), ("i8", "i32"), ("u8", "i32"), ("fp32", "u8"),
    ("i32", "i1"), ("i1", "fp32"),
])
def test_casts(src: str, dst: str):
    n, block = 300, 128
    mx_of = {"fp32": mx.float32, "fp16": mx.float16, "bf16": mx.bfloat16, "i32": mx.int32, "i8": mx.int8,
             "u8": mx.uint8, "i1": mx.bool_}
    if src.startswith("fp") or src == "bf16":
        base = (RNG.standard_normal(n) * 50).astype(np.float32)
        if dst == "u8":
            base = np.abs(base)
    elif src == "i1":
        base = RNG.integers(0, 2, n).astype(np.bool_)
    else:
        base = RNG.integers(-100, 100, n).astype(np.int32)
        if src == "u8":
            base = np.abs(base)
        if src == "i32" and dst == "i8":
            base = RNG.integers(-100000, 100000, n).astype(np.int32)
    x = mx.array(base).astype(mx_of[src])
    k = compile_1d(cast_kernel, f"*{src}", f"*{dst}", "i32", C(block))
    out = run(k, (triton.cdiv(n, block),), x_ptr=x, out_ptr=mx.zeros((n,), mx_of[dst]), n=n)["out_ptr"]
    if dst == "i8" and src == "i32":
        want = np.array(x).astype(np.int64).astype(np.int8)  # wrap-around
    elif dst == "i1":
        want = np.array(x) != 0
    else:
        want = np.array(x.astype(mx_of[dst]).astype(mx.float32 if dst in ("bf16",) else mx_of[dst]))
    np.testing.assert_array_equal(out, want)


@triton.jit
def where_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.where((x > 0) & (offs % 3 != 0), x * 2.0, -x)
    y = y + tl.num_programs(0) + pid.to(tl.float32)
    tl.store(out_ptr + offs, y, mask=mask)


def test_where_compare_program_ids():
    n, block = 1000, 128
    x = RNG.standard_normal(n).astype(np.float32)
    k = compile_1d(where_kernel, "*fp32", "*fp32", "i32", C(block))
    grid = triton.cdiv(n, block)
    out = run(k, (grid,), x_ptr=x, out_ptr=np.zeros(n, np.float32), n=n)["out_ptr"]
    idx = np.arange(n)
    want = np.where((x > 0) & (idx % 3 != 0), x * 2, -x) + grid + idx // block
    np.testing.assert_allclose(out, want.astype(np.float32), rtol=1e-6)


@pytest.mark.parametrize("dtype,spt,num_warps,vec", [
    ("fp16", 8, 4, "uint4"), ("bf16", 8, 4, "uint4"), ("fp16", 8, 2, "half4"), ("bf16", 8, 2, "bfloat4"),
    ("bf16", 4, 4, "bfloat4"), ("i8", 4, 4, "char4"), ("i32", 2, 4, "int2")])
def test_vector_accesses_for_narrow_types(dtype: str, spt: int, num_warps: int, vec: str):
    n, block = 4096 + 64, 1024
    k = compile_1d(add_kernel, f"*{dtype}/16", f"*{dtype}/16", f"*{dtype}/16", "i32/16", C(block), spt=spt,
                   num_warps=num_warps)
    # bf16 moves exactly as fp16 does; runs of 8 16-bit elements as one 16-byte access from 4 warps
    # up, two 8-byte vectors below; no scalar 16-bit accesses left
    assert f"const device {vec}*" in k.source and f"(device {vec}*)" in k.source
    if vec == "uint4":
        half = "half" if dtype == "fp16" else "bfloat"
        assert "x_ptr_in[" not in k.source and f"{half}4*)" not in k.source and f"as_type<{half}4>(" in k.source
    if dtype == "bf16":
        assert "const device half4*" not in k.source and "x_ptr_in[" not in k.source
        x = RNG.integers(-50, 50, n).astype(np.float32)
        y = RNG.integers(-50, 50, n).astype(np.float32)
        out = run(k, (triton.cdiv(n, block),), x_ptr=mx.array(x).astype(mx.bfloat16),
                  y_ptr=mx.array(y).astype(mx.bfloat16), out_ptr=mx.zeros((n,), mx.bfloat16), n=n)["out_ptr"]
        np.testing.assert_array_equal(out, x + y)  # small integers: exact in bfloat16
        return
    np_t = {"fp16": np.float16, "i8": np.int8, "i32": np.int32}[dtype]
    x = RNG.integers(-50, 50, n).astype(np_t)
    y = RNG.integers(-50, 50, n).astype(np_t)
    out = run(k, (triton.cdiv(n, block),), x_ptr=x, y_ptr=y, out_ptr=np.zeros(n, np_t), n=n)["out_ptr"]
    np.testing.assert_array_equal(out, (x + y).astype(np_t))


@triton.jit
def tail_other_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=-3.0)
    tl.store(out_ptr + offs, x * 2.0)


@pytest.mark.parametrize("n", [16, 1008, 2032])
def test_16_byte_loads_fill_masked_runs_with_other(n: int):
    # runs of 8 wholly past n (a multiple of 16) read `other`; random data in front of them shows a swapped half or
    # lane; the unmasked 16-byte stores write every element of the grid
    block = 1024
    k = compile_1d(tail_other_kernel, "*fp16/16", "*fp16/16", "i32/16", C(block), spt=8)
    assert "const device uint4*" in k.source and "(device uint4*)" in k.source
    x = RNG.standard_normal(n).astype(np.float16)
    grid = triton.cdiv(n, block)
    out = run(k, (grid,), x_ptr=x, out_ptr=np.zeros(grid * block, np.float16), n=n)["out_ptr"]
    offs = np.arange(grid * block)
    want = np.where(offs < n, np.concatenate([x, np.zeros(grid * block - n, np.float16)]), np.float16(-3))
    np.testing.assert_array_equal(out, (want.astype(np.float16) * np.float16(2)).astype(np.float16))
