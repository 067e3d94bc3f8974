"""The layout passes on real kernels: every tensor laid out, the IR valid, and the compiled MSL
right on the emulator (against NumPy). The passes' parts: test_layouts_pieces.py."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import triton_metal.language as tl
from triton_metal import ir
from triton_metal.errors import CompilationError
from triton_metal.ir.layouts import BlockLayout, CoalescedLayout
from triton_metal.ir.types import TensorType
from triton_metal.passes import PASS_REGISTRY, default_pipeline

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "codegen"))
sys.path.insert(0, str(TESTS / "frontend"))
from harness import C, compile_kernel, compile_source, run  # noqa: E402


def laid_out(fn, *params, num_warps: int = 4) -> ir.Module:  # noqa: ANN001
    m = compile_kernel(fn, *params, num_warps=num_warps)
    default_pipeline().apply(None, m)
    m.verify()
    for op in m.walk():
        values = list(op.results) + [a for r in op.regions for a in r.block.args]
        for v in values:
            if isinstance(v.type, TensorType):
                assert v.type.layout is not None, f"{op.name} result without a layout"
    text = ir.print_module(m)
    assert ir.print_module(ir.parse_module(text)) == text
    return m


def count(m: ir.Module, name: str) -> int:
    return sum(1 for op in m.walk() if op.name == name)


def test_layout_passes_are_registered_in_order() -> None:
    names = [p.name for p in default_pipeline().passes]
    order = ["assign-layouts", "remove-layout-conversions", "stage-dot-operands", "allocate-threadgroup-memory",
             "order-device-accesses", "insert-barriers"]
    assert all(n in PASS_REGISTRY for n in order)
    assert [n for n in names if n in order] == order


# -- kernels ------------------------------------------------------------------------------------


def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def test_vector_add_has_no_conversion_and_no_barrier() -> None:
    m = laid_out(add, "*fp32/16", "*fp32/16", "*fp32/16", "i32", C(1024))
    assert count(m, "ttg.convert_layout") == 0 and count(m, "ttg.barrier") == 0
    assert m.attributes["threadgroup_memory_bytes"] == 0
    loads = [op for op in m.walk() if op.name == "tt.load"]
    assert all(op.results[0].type.layout == CoalescedLayout((4,), (32,), (4,), (0,)) for op in loads)
    k = compile_source(add, "*fp32/16", "*fp32/16", "*fp32/16", "i32", C(1024))
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(2500).astype(np.float32), rng.standard_normal(2500).astype(np.float32)
    out = run(k, (3,), x_ptr=x, y_ptr=y, out_ptr=np.zeros(2500, np.float32), n=2500)
    np.testing.assert_array_equal(out["out_ptr"], x + y)


def transpose(x_ptr, y_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    tl.store(y_ptr + rn[None, :] * M + rm[:, None], x * 2.0)


def test_transpose_converts_once_and_is_right() -> None:
    m = laid_out(transpose, "*fp32/16", "*fp32/16", C(32), C(64))
    assert count(m, "ttg.convert_layout") == 1
    k = compile_source(transpose, "*fp32/16", "*fp32/16", C(32), C(64))
    x = np.random.default_rng(2).standard_normal((32, 64)).astype(np.float32)
    out = run(k, (1,), x_ptr=x, y_ptr=np.zeros((64, 32), np.float32))
    np.testing.assert_array_equal(out["y_ptr"], (x * 2).T)


def row_stats(x_ptr, s_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    s = tl.sum(x, axis=1)
    tl.store(s_ptr + rm, s)
    c = tl.max(x, axis=0)
    tl.store(z_ptr + rm[:, None] * N + rn[None, :], x - s[:, None] + c[None, :])


@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_reductions_over_rows_and_columns(num_warps: int) -> None:
    params = ("*fp32/16", "*fp32/16", "*fp32/16", C(16), C(64))
    laid_out(row_stats, *params, num_warps=num_warps)
    k = compile_source(row_stats, *params, num_warps=num_warps)
    x = np.random.default_rng(3).standard_normal((16, 64)).astype(np.float32)
    out = run(k, (1,), x_ptr=x, s_ptr=np.zeros(16, np.float32), z_ptr=np.zeros((16, 64), np.float32))
    np.testing.assert_allclose(out["s_ptr"], x.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["z_ptr"], x - x.sum(1)[:, None] + x.max(0)[None, :], rtol=1e-5, atol=1e-5)


def matmul(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, BK)
    acc = tl.zeros((M, N), dtype=tl.float32)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    for _ in range(0, K, BK):
        acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
        a_ptrs += BK
        b_ptrs += BK * N
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@pytest.mark.parametrize("num_warps, shape", [(4, (32, 32)), (2, (16, 64)), (1, (16, 16)), (8, (64, 32))])
def test_dot_in_a_loop(num_warps: int, shape: tuple[int, int]) -> None:
    mm, nn = shape
    params = ("*fp16/16", "*fp16/16", "*fp32/16", C(mm), C(nn), C(32), C(16))
    m = laid_out(matmul, *params, num_warps=num_warps)
    dot = next(op for op in m.walk() if op.name == "tt.dot")
    blk = dot.results[0].type.layout
    assert isinstance(blk, BlockLayout) and blk.num_warps == num_warps
    k = compile_source(matmul, *params, num_warps=num_warps)
    rng = np.random.default_rng(4)
    a = rng.standard_normal((mm, 32)).astype(np.float16)
    b = rng.standard_normal((32, nn)).astype(np.float16)
    out = run(k, (1,), a_ptr=a, b_ptr=b, c_ptr=np.zeros((mm, nn), np.float32))
    np.testing.assert_allclose(out["c_ptr"], a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)


def shapes(x_ptr, i_ptr, o_ptr):
    r = tl.arange(0, 8)
    x = tl.load(x_ptr + r[:, None] * 4 + tl.arange(0, 4)[None, :])
    t = tl.trans(x)
    y = tl.reshape(t, (32,))
    a, b = tl.split(tl.join(y, y * 10.0))
    c = tl.cat(a, b, can_reorder=True)
    idx = tl.load(i_ptr + r)
    g = tl.gather(r.to(tl.float32), idx, 0)
    h = tl.histogram(idx, 8)
    tl.store(o_ptr + tl.arange(0, 64), c)
    tl.store(o_ptr + 64 + tl.arange(0, 32)[:, None] * 0 + tl.arange(0, 32)[:, None], y[:, None])
    tl.store(o_ptr + 96 + r, g)
    tl.store(o_ptr + 104 + r, h.to(tl.float32))


def test_shape_ops_keep_their_data_in_thread() -> None:
    m = laid_out(shapes, "*fp32", "*i32", "*fp32")
    for op in m.walk():
        if op.name in ("tt.trans", "tt.reshape", "tt.join", "tt.split", "tt.cat"):
            assert all(isinstance(v.type.layout, CoalescedLayout) for v in (*op.operands, *op.results))
    k = compile_source(shapes, "*fp32", "*i32", "*fp32")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((8, 4)).astype(np.float32)
    idx = rng.integers(0, 8, 8).astype(np.int32)
    out = run(k, (1,), x_ptr=x, i_ptr=idx, o_ptr=np.zeros(112, np.float32))["o_ptr"]
    y = x.T.reshape(32)
    np.testing.assert_array_equal(out[:64], np.concatenate([y, y * 10]))
    np.testing.assert_array_equal(out[64:96], y)
    np.testing.assert_array_equal(out[96:104], np.arange(8, dtype=np.float32)[idx])
    np.testing.assert_array_equal(out[104:112], np.bincount(idx, minlength=8).astype(np.float32))


def softmax_loop(out_ptr, in_ptr, stride, n_rows, n_cols, BLOCK: tl.constexpr):
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        cols = tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


def test_cross_warp_reductions_get_scratch_and_barriers() -> None:
    params = ("*fp32/16", "*fp32/16", "i32", "i32", "i32", C(256))
    m = laid_out(softmax_loop, *params)
    reduces = [op for op in m.walk() if op.name == "tt.reduce"]
    # one f32 partial per SIMD group (the 32 lanes of each reduce among themselves first)
    assert [op.smem_bytes for op in reduces] == [4 * 4] * 2
    # consecutive reductions get disjoint bytes: each one's own barrier completes the other's
    # reads, so no barrier is needed, not even for the next row
    assert sorted(op.smem_offset for op in reduces) == [0, 16]
    assert count(m, "ttg.barrier") == 0
    k = compile_source(softmax_loop, *params)
    x = np.random.default_rng(6).standard_normal((5, 200)).astype(np.float32)
    out = run(k, (2,), out_ptr=np.zeros((5, 200), np.float32), in_ptr=x, stride=200, n_rows=5, n_cols=200)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out["out_ptr"], e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)


def chained(q_ptr, k_ptr, v_ptr, o_ptr, M: tl.constexpr, D: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rd = tl.arange(0, D)
    rn = tl.arange(0, N)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    k = tl.load(k_ptr + rd[:, None] * N + rn[None, :])
    s = tl.dot(q, k)
    p = tl.exp(s - tl.max(s, axis=1)[:, None]).to(tl.float16)
    v = tl.load(v_ptr + rn[:, None] * D + rd[None, :])
    o = tl.dot(p, v)
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], o / tl.sum(p.to(tl.float32), axis=1)[:, None])


def test_chained_dots_share_the_row_split() -> None:
    """Attention-like: with two dots all warps go along M, so the row maxima stay in their
    warps (no scratch) and the first product feeds the second without moving."""
    params = ("*fp16/16", "*fp16/16", "*fp16/16", "*fp32/16", C(32), C(16), C(32))
    m = laid_out(chained, *params)
    dots = [op for op in m.walk() if op.name == "tt.dot"]
    assert [d.results[0].type.layout for d in dots] == [BlockLayout((4, 1))] * 2
    assert all(op.smem_bytes is None for op in m.walk() if op.name == "tt.reduce")
    p_conv = dots[1].operands[0].op
    assert p_conv.name == "ttg.convert_layout" and p_conv.smem_bytes is None
    k = compile_source(chained, *params)
    rng = np.random.default_rng(7)
    q = rng.standard_normal((32, 16)).astype(np.float16)
    kk = rng.standard_normal((16, 32)).astype(np.float16)
    v = rng.standard_normal((32, 16)).astype(np.float16)
    out = run(k, (1,), q_ptr=q, k_ptr=kk, v_ptr=v, o_ptr=np.zeros((32, 16), np.float32))["o_ptr"]
    s = q.astype(np.float32) @ kk.astype(np.float32)
    p = np.exp(s - s.max(1, keepdims=True)).astype(np.float16).astype(np.float32)
    np.testing.assert_allclose(out, (p @ v.astype(np.float32)) / p.sum(1, keepdims=True), rtol=2e-3, atol=2e-3)


def control(x_ptr, o_ptr, n, flag, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r)
    i = 0
    acc = tl.zeros((BLOCK,), tl.float32)
    while i < n:
        acc = acc * 0.5 + x
        i += 1
    if flag > 0:
        y = acc + tl.sum(x, axis=0)
    else:
        y = tl.cumsum(acc, 0)
    tl.store(o_ptr + r, y)


@pytest.mark.parametrize("flag", [0, 1])
def test_loops_and_branches_carry_layouts(flag: int) -> None:
    params = ("*fp32/16", "*fp32/16", "i32", "i32", C(256))
    m = laid_out(control, *params)
    assert count(m, "scf.while") == 1 and count(m, "scf.if") == 1
    k = compile_source(control, *params)
    x = np.random.default_rng(8).standard_normal(256).astype(np.float32)
    out = run(k, (1,), x_ptr=x, o_ptr=np.zeros(256, np.float32), n=3, flag=flag)["o_ptr"]
    acc = np.zeros(256, np.float32)
    for _ in range(3):
        acc = acc * np.float32(0.5) + x
    want = acc + x.sum() if flag else np.cumsum(acc)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


def hinted(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], layout="BLOCK")
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], layout="COALESCED")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b), layout="BLOCK")


def test_layout_hint_overrides_the_choice() -> None:
    from triton_metal.ir.layouts import DotOperandLayout

    params = ("*fp32/16", "*fp32/16", "*fp32/16", C(32), C(32), C(16))
    raw = compile_kernel(hinted, *params)
    hints = [(op.name, op.layout) for op in raw.walk() if op.name in ("tt.load", "tt.store")]
    assert hints == [("tt.load", "BLOCK"), ("tt.load", "COALESCED"), ("tt.store", "BLOCK")]
    assert 'layout = "BLOCK"' in ir.print_module(raw)
    m = laid_out(hinted, *params)
    loads = [op for op in m.walk() if op.name == "tt.load"]
    assert isinstance(loads[0].results[0].type.layout, DotOperandLayout)  # loaded as fragments
    assert isinstance(loads[1].results[0].type.layout, CoalescedLayout)
    store = next(op for op in m.walk() if op.name == "tt.store")
    assert isinstance(store.value.type.layout, BlockLayout)  # stored from the fragments, no conversion
    k = compile_source(hinted, *params)
    rng = np.random.default_rng(9)
    a = rng.standard_normal((32, 16)).astype(np.float32)
    b = rng.standard_normal((16, 32)).astype(np.float32)
    out = run(k, (1,), a_ptr=a, b_ptr=b, c_ptr=np.zeros((32, 32), np.float32))["c_ptr"]
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)


def test_layout_hint_is_checked_and_ignored_by_the_interpreter() -> None:
    from triton_metal.backends.interpreter.launch import launch
    from triton_metal.language.jit_marker import JITCallable

    rng = np.random.default_rng(10)
    a = rng.standard_normal((32, 16)).astype(np.float32)
    b = rng.standard_normal((16, 32)).astype(np.float32)
    c = np.zeros((32, 32), np.float32)
    launch(JITCallable(hinted), (1, 1, 1), {"a_ptr": a, "b_ptr": b, "c_ptr": c, "M": 32, "N": 32, "K": 16})
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)

    def bad(x_ptr):
        tl.store(x_ptr + tl.arange(0, 32), 1.0, layout="ROWS")

    with pytest.raises(CompilationError, match="layout must be one of"):
        compile_kernel(bad, "*fp32")

    def scalar(x_ptr):
        tl.store(x_ptr, 1.0, layout="BLOCK")

    with pytest.raises(CompilationError, match="applies to blocks"):
        compile_kernel(scalar, "*fp32")


@pytest.mark.parametrize("block", [16, 128, 4096])
@pytest.mark.parametrize("num_warps", [1, 8])
def test_vector_add_sizes_and_warps(block: int, num_warps: int) -> None:
    params = ("*fp32/16", "*fp32/16", "*fp32/16", "i32", C(block))
    laid_out(add, *params, num_warps=num_warps)
    k = compile_source(add, *params, num_warps=num_warps)
    n = block * 2 + 3
    rng = np.random.default_rng(block + num_warps)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = run(k, (3,), x_ptr=x, y_ptr=y, out_ptr=np.zeros(n, np.float32), n=n)
    np.testing.assert_array_equal(out["out_ptr"], x + y)


@pytest.mark.parametrize("shape", [(1, 64), (2, 32), (64, 2), (32, 128)])
@pytest.mark.parametrize("num_warps", [2, 8])
def test_tile_shapes_and_warps(shape: tuple[int, int], num_warps: int) -> None:
    mm, nn = shape
    params = ("*fp32/16", "*fp32/16", "*fp32/16", C(mm), C(nn))
    laid_out(row_stats, *params, num_warps=num_warps)
    k = compile_source(row_stats, *params, num_warps=num_warps)
    x = np.random.default_rng(mm * nn).standard_normal(shape).astype(np.float32)
    out = run(k, (1,), x_ptr=x, s_ptr=np.zeros(mm, np.float32), z_ptr=np.zeros(shape, np.float32))
    np.testing.assert_allclose(out["s_ptr"], x.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["z_ptr"], x - x.sum(1)[:, None] + x.max(0)[None, :], rtol=1e-5, atol=1e-5)


def add_transposed(x_ptr, y_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    y = tl.load(y_ptr + rn[None, :] * M + rm[:, None])  # y is stored N x M
    tl.store(z_ptr + rm[:, None] * N + rn[None, :], x + y)


def test_each_load_reads_along_its_own_contiguous_dim() -> None:
    params = ("*fp32/16", "*fp32/16", "*fp32/16", C(32), C(64))
    m = laid_out(add_transposed, *params)
    loads = [op for op in m.walk() if op.name == "tt.load"]
    orders = [op.results[0].type.layout.order for op in loads]
    assert orders == [(1, 0), (0, 1)]
    assert count(m, "ttg.convert_layout") == 1
    k = compile_source(add_transposed, *params)
    rng = np.random.default_rng(11)
    x = rng.standard_normal((32, 64)).astype(np.float32)
    y = rng.standard_normal((64, 32)).astype(np.float32)
    out = run(k, (1,), x_ptr=x, y_ptr=y, z_ptr=np.zeros((32, 64), np.float32))["z_ptr"]
    np.testing.assert_array_equal(out, x + y.T)


def test_block_hint_on_a_tile_without_whole_fragments_is_refused() -> None:
    def small(x_ptr):
        r = tl.arange(0, 4)
        c = tl.arange(0, 16)
        x = tl.load(x_ptr + r[:, None] * 16 + c[None, :], layout="BLOCK")
        tl.store(x_ptr + r[:, None] * 16 + c[None, :], x + 1.0)

    with pytest.raises(CompilationError, match=r'layout="BLOCK" block of 4 x 16 is not made of 8x8'):
        laid_out(small, "*fp32/16")


def scalars(x_ptr, o_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(o_ptr, tl.sum(x, axis=0))
    tl.atomic_add(o_ptr + 1, 1.0)
    tl.store(o_ptr + 2, tl.load(x_ptr + 5))


def test_scalar_memory_ops_need_no_layout() -> None:
    laid_out(scalars, "*fp32", "*fp32", C(64))
    k = compile_source(scalars, "*fp32", "*fp32", C(64))
    x = np.arange(64, dtype=np.float32)
    out = run(k, (1,), x_ptr=x, o_ptr=np.zeros(3, np.float32))["o_ptr"]
    np.testing.assert_array_equal(out, [x.sum(), 1.0, 5.0])


def chained_hinted(q_ptr, k_ptr, v_ptr, o_ptr, M: tl.constexpr, D: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rd = tl.arange(0, D)
    rn = tl.arange(0, N)
    s = tl.dot(tl.load(q_ptr + rm[:, None] * D + rd[None, :]), tl.load(k_ptr + rd[:, None] * N + rn[None, :]))
    o = tl.dot(s.to(tl.float16), tl.load(v_ptr + rn[:, None] * D + rd[None, :]))
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], o, layout="BLOCK")


def test_block_hint_on_a_store_keeps_the_dot_fragments() -> None:
    params = ("*fp16/16", "*fp16/16", "*fp16/16", "*fp32/16", C(32), C(16), C(32))
    m = laid_out(chained_hinted, *params)
    store = next(op for op in m.walk() if op.name == "tt.store")
    assert store.value.type.layout == BlockLayout((4, 1))
    assert store.value.op.name == "tt.dot"  # no conversion before the store
    k = compile_source(chained_hinted, *params)
    rng = np.random.default_rng(12)
    q = rng.standard_normal((32, 16)).astype(np.float16)
    kk = rng.standard_normal((16, 32)).astype(np.float16)
    v = rng.standard_normal((32, 16)).astype(np.float16)
    out = run(k, (1,), q_ptr=q, k_ptr=kk, v_ptr=v, o_ptr=np.zeros((32, 16), np.float32))["o_ptr"]
    s = (q.astype(np.float32) @ kk.astype(np.float32)).astype(np.float16).astype(np.float32)
    np.testing.assert_allclose(out, s @ v.astype(np.float32), rtol=2e-2, atol=2e-2)


def tile_3d(x_ptr, o_ptr, a_ptr, A: tl.constexpr, B: tl.constexpr, D: tl.constexpr):
    ra = tl.arange(0, A)
    rb = tl.arange(0, B)
    rd = tl.arange(0, D)
    x = tl.load(x_ptr + ra[:, None, None] * (B * D) + rb[None, :, None] * D + rd[None, None, :])
    tl.store(o_ptr + rb, tl.sum(tl.sum(x, axis=2), axis=0))  # a slice of a slice
    tl.store(a_ptr, tl.argmax(tl.reshape(x, (A * B * D,)), 0))


def test_3d_tile_with_slices_of_slices() -> None:
    params = ("*fp32/16", "*fp32/16", "*i32", C(4), C(8), C(16))
    laid_out(tile_3d, *params)
    x = np.random.default_rng(13).standard_normal((4, 8, 16)).astype(np.float32)
    out = run(compile_source(tile_3d, *params), (1,), x_ptr=x, o_ptr=np.zeros(8, np.float32), a_ptr=np.zeros(1, np.int32))
    np.testing.assert_allclose(out["o_ptr"], x.sum(2).sum(0), rtol=1e-5, atol=1e-4)
    assert out["a_ptr"][0] == x.argmax()


def dot_then_shapes(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    c = tl.trans(tl.dot(tl.load(a_ptr + rm[:, None] * K + rk[None, :]), tl.load(b_ptr + rk[:, None] * N + rn[None, :])))
    lo, hi = tl.split(tl.reshape(c, (N, M // 2, 2)))
    tl.store(c_ptr + rn[:, None] * (M // 2) + tl.arange(0, M // 2)[None, :], lo + hi)


def test_shape_ops_on_a_dot_result() -> None:
    params = ("*fp32/16", "*fp32/16", "*fp32/16", C(32), C(32), C(16))
    laid_out(dot_then_shapes, *params)
    rng = np.random.default_rng(14)
    a = rng.standard_normal((32, 16)).astype(np.float32)
    b = rng.standard_normal((16, 32)).astype(np.float32)
    out = run(compile_source(dot_then_shapes, *params), (1,), a_ptr=a, b_ptr=b, c_ptr=np.zeros((32, 16), np.float32))
    ct = (a @ b).T.reshape(32, 16, 2)
    np.testing.assert_allclose(out["c_ptr"], ct[..., 0] + ct[..., 1], rtol=1e-4, atol=1e-4)


def transposes(x_ptr, y_ptr, n_tiles, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    for t in range(0, n_tiles):
        x = tl.load(x_ptr + t * M * N + rm[:, None] * N + rn[None, :])
        tl.store(y_ptr + t * M * N + rn[None, :] * M + rm[:, None], x)


def test_a_conversion_in_a_loop_waits_for_its_previous_iteration() -> None:
    """One conversion per tile: the next tile's writes overwrite the buffer the previous tile is
    read from, so a barrier before the conversion. (Without it the emulator, which runs each
    thread until it waits, gives wrong tiles: checked when this test was written.)"""
    params = ("*fp32/16", "*fp32/16", "i32", C(32), C(64))
    m = laid_out(transposes, *params)
    body = next(op for op in m.walk() if op.name == "scf.for").regions[0].block
    names = [op.name for op in body.ops]
    assert count(m, "ttg.barrier") == 1 and names[names.index("ttg.barrier") + 1] == "ttg.convert_layout"
    x = np.random.default_rng(15).standard_normal((5, 32, 64)).astype(np.float32)
    out = run(compile_source(transposes, *params), (1,), x_ptr=x, y_ptr=np.zeros((5, 64, 32), np.float32), n_tiles=5)
    np.testing.assert_array_equal(out["y_ptr"], x.transpose(0, 2, 1))
