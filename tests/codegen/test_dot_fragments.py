"""The `tt.dot` lowering on its own: one dot op between hand-made layouts, run on the emulator.

Each test builds a `tt.dot` whose operands and accumulator carry given layouts, binds their
registers to reads of input buffers at the coordinates the layouts give each register
(`ctx.coord`), lowers the dot with the code generator's context, stores every result register at
its coordinates, and compares the output with NumPy. This checks the mapping between BLOCK /
dot-operand registers and Metal's fragment lane layout (`thread_elements()`), the staging path
for operands in other layouts, the int8 path and the refusals, independently of the layout
passes.
"""

from __future__ import annotations

import mlx.core as mx
import numpy as np
import pytest

from triton_metal.backends.emulator import metal_kernel
from triton_metal.codegen.context import LoweringContext
from triton_metal.codegen.lower_dot import lower_dot
from triton_metal.codegen.options import CodegenOptions
from triton_metal.codegen.printer import MSLPrinter
from triton_metal.codegen.program import Apply, Assign, Index, Lit, Var
from triton_metal.codegen.scaffold import render
from triton_metal.codegen.target import DEFAULT_TARGET
from triton_metal.codegen.values import RegValue
from triton_metal.errors import CompilationError
from triton_metal.ir import Value
from triton_metal.ir.layouts import BlockLayout, CoalescedLayout, DotOperandLayout, Layout
from triton_metal.ir.ops.tt_compute import DotOp
from triton_metal.ir.types import ScalarType, TensorType, bf16, f16, f32, i8, i32

RNG = np.random.default_rng(3)
NP_TYPES = {"f32": np.float32, "f16": np.float16, "i8": np.int8, "i32": np.int32}


def _flat(ctx: LoweringContext, value: Value, r: int):
    dist = ctx.dist_of(value.type)
    cols = value.type.shape[1]  # type: ignore[attr-defined]
    return Apply("add", (Apply("mul", (ctx.coord(dist, r, 0), Lit(str(cols)))), ctx.coord(dist, r, 1)))


def build_dot(m: int, n: int, k: int, el: ScalarType, acc: ScalarType, la: Layout, lb: Layout, lc: Layout,
              num_warps: int) -> tuple[str, str, int]:
    """(body, header, threads) of a kernel computing D = A @ B + C through one lowered tt.dot."""
    a = Value(TensorType((m, k), el, la), "a")
    b = Value(TensorType((k, n), el, lb), "b")
    c = Value(TensorType((m, n), acc, lc), "c")
    op = DotOp(a=a, b=b, c=c, result_types=[TensorType((m, n), acc, lc)])
    ctx = LoweringContext(CodegenOptions(num_warps=num_warps), "dot_test")
    for v, buf in ((a, "A"), (b, "B"), (c, "C")):
        dist = ctx.dist_of(v.type)
        regs = [Index(Var(buf), _flat(ctx, v, r)) for r in range(dist.num_regs)]
        ctype = {"f32": "float", "f16": "half", "bf16": "bfloat", "i8": "char", "i32": "int"}[v.type.element.name]
        ctx.bind(v, RegValue(v.type, ctx.materialize(regs, ctype, force=True), dist))
    ctx.current_op = op
    lower_dot(ctx, op)
    res = ctx.reg(op.result)
    for r, reg in enumerate(res.regs):
        ctx.emit(Assign(Index(Var("D"), _flat(ctx, op.result, r)), reg))
    printer = MSLPrinter()
    scratch = ctx.scratch_base + ctx.own_scratch_bytes
    body = render("body.metal", threads=32 * num_warps, scratch_words=(scratch + 15) // 16,
                  prologue=printer.print_body(list(ctx.prologue.stmts)), code=printer.print_body(ctx.pop()))
    helpers = [render(f"helpers/{name}.metal") for name in sorted(ctx.helpers)]
    header = render("header.metal", kernel_name="dot_test", target=str(DEFAULT_TARGET), helpers=helpers)
    return body, header, 32 * num_warps


def run_dot(m: int, n: int, k: int, el: ScalarType, acc: ScalarType, la: Layout, lb: Layout, lc: Layout,
            num_warps: int, c_near: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    body, header, threads = build_dot(m, n, k, el, acc, la, lb, lc, num_warps)
    if el.name == "i8":
        a = RNG.integers(-128, 128, (m, k)).astype(np.int8)
        b = RNG.integers(-128, 128, (k, n)).astype(np.int8)
        c = (c_near + RNG.integers(-1000, 1000, (m, n))).astype(np.int32)
    else:
        a = RNG.integers(-4, 5, (m, k)).astype(np.float32) / 4
        b = RNG.integers(-4, 5, (k, n)).astype(np.float32) / 4
        c = RNG.integers(-4, 5, (m, n)).astype(np.float32)
    inputs = []
    for x, t in ((a, el), (b, el), (c, acc)):
        if t.name == "bf16":
            inputs.append(mx.array(x).astype(mx.bfloat16))
        else:
            inputs.append(x.astype(NP_TYPES[t.name]))
    out_dtype = {"f32": mx.float32, "f16": mx.float16, "i32": mx.int32}[acc.name]
    kernel = metal_kernel("dot_test", ["A", "B", "C"], ["D"], body, header=header)
    (d,) = kernel(inputs=inputs, output_shapes=[(m, n)], output_dtypes=[out_dtype],
                  grid=(threads, 1, 1), threadgroup=(threads, 1, 1))
    return np.array(d.astype(mx.float32) if acc.name != "i32" else d), a, b, c


def reference(a: np.ndarray, b: np.ndarray, c: np.ndarray, integer: bool) -> np.ndarray:
    if integer:
        return (a.astype(np.int64) @ b.astype(np.int64) + c).astype(np.int64).astype(np.int32)
    return a.astype(np.float64) @ b.astype(np.float64) + c


def block_operands(wpc: tuple[int, int]) -> tuple[Layout, Layout, Layout]:
    parent = BlockLayout(wpc)
    return DotOperandLayout(0, parent), DotOperandLayout(1, parent), parent


# Small-integer inputs make every product and partial sum exact in fp16/bf16/fp32, so the results
# must equal the float64 reference exactly whatever the order of accumulation.
@pytest.mark.parametrize("el", [f32, f16, bf16], ids=str)
@pytest.mark.parametrize("m,n,k,wpc", [(16, 16, 16, (1, 1)), (32, 32, 16, (2, 2)), (64, 32, 32, (4, 1)),
                                       (32, 64, 8, (1, 2)), (16, 16, 32, (2, 2)), (64, 64, 16, (2, 4))])
def test_fragment_dot_from_operand_layouts(el, m, n, k, wpc):
    la, lb, lc = block_operands(wpc)
    d, a, b, c = run_dot(m, n, k, el, f32, la, lb, lc, wpc[0] * wpc[1])
    np.testing.assert_array_equal(d, reference(a, b, c, False))


@pytest.mark.parametrize("wpc", [(4, 2), (2, 4), (8, 1)])
def test_more_warps_than_fragments_replicate(wpc):
    # a 16 x 16 result has 2 x 2 fragments: extra warps hold copies and compute the same values
    la, lb, lc = block_operands(wpc)
    d, a, b, c = run_dot(16, 16, 16, f16, f32, la, lb, lc, wpc[0] * wpc[1])
    np.testing.assert_array_equal(d, reference(a, b, c, False))


def test_fp16_accumulator():
    la, lb, lc = block_operands((2, 2))
    d, a, b, c = run_dot(32, 32, 32, f16, f16, la, lb, lc, 4)
    np.testing.assert_array_equal(d, reference(a, b, c, False))


COALESCED_A = CoalescedLayout((1, 4), (8, 4), (4, 1), (1, 0))
COALESCED_B = CoalescedLayout((1, 4), (4, 8), (2, 2), (1, 0))


@pytest.mark.parametrize("el", [f32, f16], ids=str)
@pytest.mark.parametrize("staged", ["a", "b", "both"])
def test_staged_operands(el, staged):
    la, lb, lc = block_operands((2, 2))
    if staged in ("a", "both"):
        la = COALESCED_A
    if staged in ("b", "both"):
        lb = COALESCED_B
    d, a, b, c = run_dot(32, 32, 32, el, f32, la, lb, lc, 4)
    np.testing.assert_array_equal(d, reference(a, b, c, False))


@pytest.mark.parametrize("la,lb", [(None, None), (COALESCED_A, COALESCED_B)])
def test_int8_dot_accumulates_exactly_in_int32(la, lb):
    pa, pb, lc = block_operands((2, 2))
    d, a, b, c = run_dot(32, 32, 64, i8, i32, la or pa, lb or pb, lc, 4)
    np.testing.assert_array_equal(d, reference(a, b, c, True))


@pytest.mark.parametrize("c_near", [2**31 - 1000, -(2**31) + 1000])
def test_int8_dot_wraps_like_int32(c_near):
    pa, pb, lc = block_operands((1, 2))
    d, a, b, c = run_dot(16, 32, 32, i8, i32, pa, pb, lc, 2, c_near=c_near)
    ref = reference(a, b, c, True)
    wide = a.astype(np.int64) @ b.astype(np.int64) + c
    assert ((wide > 2**31 - 1) | (wide < -(2**31))).any()  # some sums do overflow
    np.testing.assert_array_equal(d, ref)


def test_msl_uses_simdgroup_matrices():
    la, lb, lc = block_operands((2, 2))
    body, header, _ = build_dot(32, 32, 16, f16, f32, la, lb, lc, 4)
    assert body.count("simdgroup_multiply_accumulate(") == 2 * 2 * 2  # 2x2 fragments per warp, 2 K steps
    assert "simdgroup_matrix<half, 8, 8>" in body and "simdgroup_matrix<float, 8, 8>" in body
    assert "thread_elements()" in header
    assert "threadgroup_barrier" not in body  # operands already in fragment layouts
    staged, _, _ = build_dot(32, 32, 16, f16, f32, COALESCED_A, lb, lc, 4)
    assert "simdgroup_load(" in staged and "threadgroup_barrier" in staged


@pytest.mark.parametrize("shape_a,shape_b,el,acc,match", [
    ((16, 12), (12, 16), f32, f32, "K to be a multiple of 8"),
    ((16, 16), (16, 16), f32, f16, "cannot accumulate in f16"),
    ((16, 16), (16, 16), bf16, f16, "cannot accumulate in f16"),
    ((16, 16), (16, 16), i32, i32, "no Apple GPU path for i32"),
    ((20, 16), (16, 16), f16, f32, "M to be a multiple of 8"),
    ((2, 16, 16), (2, 16, 16), f32, f32, "batched \\(3-D\\) tl.dot"),
])
def test_refusals(shape_a, shape_b, el, acc, match):
    flat = len(shape_a) == 2
    la, lb, lc = block_operands((1, 1)) if flat else (None, None, None)
    m, n = shape_a[-2], shape_b[-1]
    layout_a = la if shape_a[-1] % 8 == 0 else None
    a = Value(TensorType(shape_a, el, layout_a), "a")
    b = Value(TensorType(shape_b, el, lb if shape_b[-2] % 8 == 0 else None), "b")
    c_shape = (*shape_a[:-1], n)
    c = Value(TensorType(c_shape, acc, lc), "c")
    op = DotOp(a=a, b=b, c=c, result_types=[TensorType(c_shape, acc, lc)])
    ctx = LoweringContext(CodegenOptions(num_warps=1), "dot_test")
    ctx.current_op = op
    with pytest.raises(CompilationError, match=match):
        lower_dot(ctx, op)


def test_staging_over_threadgroup_memory_is_refused():
    _, _, lc = block_operands((2, 2))
    a_layout = CoalescedLayout((1, 4), (8, 4), (4, 1), (1, 0))
    with pytest.raises(CompilationError, match="stages 131072 bytes") as info:
        build_dot(128, 128, 128, f32, f32, a_layout, a_layout, lc, 4)
    assert "smaller BLOCK sizes" in str(info.value)
