"""The layout passes' parts: the allocator, conversions staged past 32 KiB, dot tiling, default layouts and
reshapes, reduction scratch sizes, store widths."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import triton_metal.language as tl
from triton_metal import ir
from triton_metal.errors import CompilationError
from triton_metal.ir.layouts import BlockLayout, CoalescedLayout, linear_layout
from triton_metal.ir.types import TensorType
from triton_metal.passes.accelerate_dot import block_layout_for
from triton_metal.passes.allocate_threadgroup_memory import Buffer, allocate
from triton_metal.passes.coalesce import default_coalesced

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_layouts_pipeline import C, laid_out  # noqa: E402


def test_allocator_shares_only_between_disjoint_live_ranges() -> None:
    bufs = [Buffer(512, 0, 3), Buffer(256, 2, 5), Buffer(1024, 6, 6), Buffer(100, 4, 4)]
    offs = allocate(bufs)
    for i, (a, oa) in enumerate(zip(bufs, offs)):
        assert oa % 16 == 0
        for b, ob in list(zip(bufs, offs))[i + 1:]:
            if a.start <= b.end and b.start <= a.end:
                assert oa + a.size <= ob or ob + b.size <= oa, (a, b)
    # largest first: 1024 lives alone; 512 and 256 overlap in time; 100 fits below 256's bytes
    assert offs == [0, 512, 0, 0]


def too_big(x_ptr, y_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r[:, None] * N + r[None, :])
    tl.store(y_ptr + r[None, :] * N + r[:, None], x)


def test_a_conversion_over_32k_is_staged_in_pieces() -> None:
    def granted(m: ir.Module) -> list[int]:
        return [int(op.smem_bytes) for op in m.walk() if op.name == "ttg.convert_layout"]  # type: ignore[attr-defined]

    assert granted(laid_out(too_big, "*fp32/16", "*fp32/16", C(64))) == [16384]  # 16 KiB fits whole
    m = laid_out(too_big, "*fp32/16", "*fp32/16", C(128))  # a 64 KiB transpose: 16 KiB at a time
    assert granted(m) == [16384]
    assert int(m.attributes["threadgroup_memory_bytes"]) <= 32768


@pytest.mark.parametrize("shape, nw, wpc", [((32, 32), 4, (2, 2)), ((16, 64), 4, (1, 4)), ((64, 16), 4, (4, 1)),
                                           ((8, 8), 1, (1, 1)), ((128, 8), 8, (8, 1))])
def test_dot_tiling_gives_each_warp_whole_fragments(shape: tuple[int, int], nw: int, wpc: tuple[int, int]) -> None:
    blk = block_layout_for(shape, nw, None)
    assert blk.warps_per_cta == wpc
    ll = linear_layout(blk, shape, nw)
    assert not ll.is_replicated()


@pytest.mark.parametrize("shape, nw, words", [((8, 8), 4, ["8 x 8", "num_warps=4", "num_warps <= 1"]),
                                              ((12, 16), 1, ["12 x 16", "multiples of 8"]),
                                              ((2, 8, 8), 1, ["3-D"])])
def test_dot_tiling_refusals(shape: tuple[int, ...], nw: int, words: list[str]) -> None:
    with pytest.raises(CompilationError) as e:
        block_layout_for(shape, nw, None)
    for w in words:
        assert w in str(e.value)


@pytest.mark.parametrize("src, dst, nw", [((4, 8), (32,), 1), ((8, 16), (128,), 4), ((2, 4, 16), (8, 16), 4),
                                          ((4, 4), (16,), 4), ((64,), (8, 8), 2)])
def test_default_layouts_split_the_flat_index_alike(src: tuple[int, ...], dst: tuple[int, ...], nw: int) -> None:
    """Row-major reshapes between default layouts move no data: in every thread, register r of
    the result holds the element at the same flat index as some register of the source."""
    ls = linear_layout(default_coalesced(src, nw), src, nw)
    ld = linear_layout(default_coalesced(dst, nw), dst, nw)

    def flat(c: tuple[int, ...], shape: tuple[int, ...]) -> int:
        i = 0
        for x, s in zip(c, shape):
            i = i * s + x
        return i

    for w in range(nw):
        for ln in range(32):
            have = {flat(ls.coords(w, ln, r), src) for r in range(ls.registers)}
            want = {flat(ld.coords(w, ln, r), dst) for r in range(ld.registers)}
            assert want <= have


@pytest.mark.parametrize("layout, shape, axis", [
    (CoalescedLayout((1,), (32,), (4,), (0,)), (256,), 0),
    (CoalescedLayout((4,), (32,), (4,), (0,)), (1024,), 0),
    (CoalescedLayout((1, 4), (2, 16), (1, 4), (1, 0)), (16, 256), 1),
    (CoalescedLayout((1, 1), (4, 8), (2, 2), (0, 1)), (16, 64), 1),
    (BlockLayout((1, 4)), (16, 64), 1),
    (BlockLayout((2, 2)), (32, 32), 0),
])
def test_reduce_allocation_covers_what_the_lowering_uses(layout, shape, axis) -> None:  # noqa: ANN001
    """The lowering uses the passes' allocation only when it is large enough (else it brackets
    its own scratch with barriers): the allocation is exactly what it needs."""
    from triton_metal.codegen.distribution import distribution
    from triton_metal.codegen.lower_reduce import reduce_scratch_bytes
    from triton_metal.ir.ops import ReduceOp
    from triton_metal.ir.types import f32
    from triton_metal.passes.allocate_threadgroup_memory import scratch_bytes

    src = ir.Block([TensorType(shape, f32, layout)]).args[0]
    op = ReduceOp(srcs=(src,), axis=axis, result_types=[f32])
    want = reduce_scratch_bytes(distribution(layout, shape, 4), axis, [f32], 4)
    assert scratch_bytes(op, 4) == want


def test_store_only_classes_take_the_narrowest_store_width() -> None:
    from triton_metal.passes.coalesce import MemoryAccess, coalesced_for

    wide = MemoryAccess((1024,), (0,), 4, is_load=False)
    narrow = MemoryAccess((1024,), (0,), 2, is_load=False)
    assert coalesced_for((1024,), [wide, narrow], 4).size_per_thread == (2,)
    load = MemoryAccess((1024,), (0,), 4, is_load=True)
    assert coalesced_for((1024,), [narrow, load], 4).size_per_thread == (4,)
    # capped so that each of the 128 threads has work
    assert coalesced_for((256,), [load], 4).size_per_thread == (2,)
