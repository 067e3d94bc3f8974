"""Shape operations in the interpreter against NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import triton_metal
import triton_metal.language as tl
from triton_metal.errors import CompilationError


@triton_metal.jit
def idx2(rows: tl.constexpr, cols: tl.constexpr):  # noqa: ANN201
    return tl.arange(0, rows)[:, None] * cols + tl.arange(0, cols)[None, :]


def test_reshape_trans_permute_view_ravel(run: Any) -> None:
    x = np.arange(32, dtype=np.int32)
    outs = {k: np.zeros(32, np.int32) for k in ("reshape", "trans", "T", "permute", "view", "ravel")}

    def kernel(x_ptr, a, b, c, d, e, f):  # noqa: ANN001, ANN202
        v = tl.load(x_ptr + tl.arange(0, 32))
        m = tl.reshape(v, (4, 8))
        tl.store(a + idx2(4, 8), m)
        tl.store(b + idx2(8, 4), tl.trans(m))
        tl.store(c + idx2(8, 4), m.T)
        c3 = v.reshape(2, 4, 4).permute(2, 0, 1)
        r = tl.arange(0, 4)[:, None, None] * 8 + tl.arange(0, 2)[None, :, None] * 4 + tl.arange(0, 4)[None, None, :]
        tl.store(d + r, c3)
        tl.store(e + tl.arange(0, 32), tl.view(m, 32))
        tl.store(f + tl.arange(0, 32), tl.ravel(m))

    run(kernel, x_ptr=x, a=outs["reshape"], b=outs["trans"], c=outs["T"], d=outs["permute"],
        e=outs["view"], f=outs["ravel"])
    np.testing.assert_array_equal(outs["reshape"], x)
    np.testing.assert_array_equal(outs["trans"], x.reshape(4, 8).T.reshape(-1))
    np.testing.assert_array_equal(outs["T"], x.reshape(4, 8).T.reshape(-1))
    np.testing.assert_array_equal(outs["permute"], x.reshape(2, 4, 4).transpose(2, 0, 1).reshape(-1))
    np.testing.assert_array_equal(outs["view"], x)
    np.testing.assert_array_equal(outs["ravel"], x)


def test_expand_dims_broadcast_to_and_indexing(run: Any) -> None:
    out = np.zeros((4, 8), np.int32)
    out2 = np.zeros((4, 8), np.int32)

    def kernel(o_ptr, p_ptr):  # noqa: ANN001, ANN202
        r = tl.arange(0, 4)
        c = tl.arange(0, 8)
        a = tl.broadcast_to(tl.expand_dims(r, 1), (4, 8))
        b = tl.broadcast_to(c[None, :], 4, 8)
        tl.store(o_ptr + idx2(4, 8), a * 10 + b)
        e = r[:, None, None]
        tl.static_assert(len(e.shape) == 3)
        tl.store(p_ptr + idx2(4, 8), tl.reshape(e + c[None, None, :], (4, 8)) + c[..., None, :] * 0)

    run(kernel, o_ptr=out, p_ptr=out2)
    ref = np.arange(4)[:, None] * 10 + np.arange(8)[None, :]
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(out2, np.arange(4)[:, None] + np.arange(8)[None, :])


def test_join_split_interleave(run: Any) -> None:
    out_j = np.zeros((8, 2), np.float32)
    out_s = np.zeros(16, np.float32)
    out_i = np.zeros(16, np.float32)

    def kernel(j_ptr, s_ptr, i_ptr):  # noqa: ANN001, ANN202
        a = tl.arange(0, 8).to(tl.float32)
        b = a + 100
        j = tl.join(a, b)
        tl.store(j_ptr + idx2(8, 2), j)
        lo, hi = tl.split(j)
        tl.store(s_ptr + tl.arange(0, 8), hi)
        tl.store(s_ptr + 8 + tl.arange(0, 8), lo)
        tl.store(i_ptr + tl.arange(0, 16), tl.interleave(a, b))

    run(kernel, j_ptr=out_j, s_ptr=out_s, i_ptr=out_i)
    a = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(out_j, np.stack([a, a + 100], -1))
    np.testing.assert_array_equal(out_s, np.concatenate([a + 100, a]))
    np.testing.assert_array_equal(out_i, np.stack([a, a + 100], -1).reshape(-1))


def test_trans_without_dims_swaps_the_last_two_axes(run: Any) -> None:
    x = np.arange(32, dtype=np.int32)
    out = np.zeros(32, np.int32)

    def kernel(x_ptr, o_ptr):  # noqa: ANN001, ANN202
        v = tl.load(x_ptr + tl.arange(0, 32)).reshape(2, 4, 4)
        tl.store(o_ptr + tl.arange(0, 32), tl.trans(v).reshape(32))  # Triton's batched transpose

    run(kernel, x_ptr=x, o_ptr=out)
    np.testing.assert_array_equal(out, x.reshape(2, 4, 4).transpose(0, 2, 1).reshape(-1))


def test_cat_flip_gather_squeeze(run: Any) -> None:
    x = np.arange(8, dtype=np.int32) * 3
    out = np.zeros(16, np.int32)
    fl = np.zeros(8, np.int32)
    g = np.zeros(8, np.int32)
    c2 = np.zeros((4, 4), np.int32)

    def kernel(x_ptr, o_ptr, f_ptr, g_ptr, c_ptr):  # noqa: ANN001, ANN202
        offs = tl.arange(0, 8)
        v = tl.load(x_ptr + offs)
        tl.store(o_ptr + tl.arange(0, 16), tl.cat(v, v + 1, can_reorder=True))
        tl.store(f_ptr + offs, tl.flip(v))
        tl.store(g_ptr + offs, tl.gather(v, (offs * 3) % 8, 0))
        m = tl.reshape(tl.arange(0, 8), (4, 2))
        tl.store(c_ptr + idx2(4, 4), tl.cat(m, m * 10, dim=1))
        one = tl.squeeze(tl.reshape(v, (1, 8)), 0)
        tl.static_assert(one.shape == [8])

    run(kernel, x_ptr=x, o_ptr=out, f_ptr=fl, g_ptr=g, c_ptr=c2)
    np.testing.assert_array_equal(out, np.concatenate([x, x + 1]))
    np.testing.assert_array_equal(fl, x[::-1])
    np.testing.assert_array_equal(g, x[(np.arange(8) * 3) % 8])
    m = np.arange(8).reshape(4, 2)
    np.testing.assert_array_equal(c2, np.concatenate([m, m * 10], 1))


def test_histogram_and_swizzle2d(run: Any) -> None:
    x = np.array([0, 1, 1, 3, 3, 3, 7, 2] * 2, np.int32)
    h = np.zeros(8, np.int32)
    sw = np.zeros((4, 4, 2), np.int32)

    def kernel(x_ptr, h_ptr, s_ptr):  # noqa: ANN001, ANN202
        offs = tl.arange(0, 16)
        tl.store(h_ptr + tl.arange(0, 8), tl.histogram(tl.load(x_ptr + offs), 8, mask=offs < 8))
        i = tl.arange(0, 4)[:, None] + tl.zeros((4, 4), tl.int32)
        j = tl.arange(0, 4)[None, :] + tl.zeros((4, 4), tl.int32)
        ni, nj = tl.swizzle2d(i, j, 4, 4, 2)
        tl.store(s_ptr + idx2(4, 4) * 2, ni)
        tl.store(s_ptr + idx2(4, 4) * 2 + 1, nj)

    run(kernel, x_ptr=x, h_ptr=h, s_ptr=sw)
    np.testing.assert_array_equal(h, np.bincount(x[:8], minlength=8))
    # the row-major order 0..15 re-laid out in groups of 2 rows (Triton's documented example)
    order = (sw[..., 0] * 4 + sw[..., 1])
    ranks = np.empty(16, np.int32)
    ranks[order.reshape(-1)] = np.arange(16)
    np.testing.assert_array_equal(ranks.reshape(4, 4), [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]])


def test_full_zeros_zeros_like_and_cdiv(run: Any) -> None:
    out = np.zeros(8, np.float16)
    n = np.zeros(2, np.int32)

    def kernel(o_ptr, n_ptr, k):  # noqa: ANN001, ANN202
        z = tl.zeros((8,), tl.float16)
        tl.store(o_ptr + tl.arange(0, 8), tl.full((8,), 2.5, tl.float16) + tl.zeros_like(z))
        c: tl.constexpr = tl.cdiv(10, 4)  # a plain assignment would make a run-time scalar
        tl.static_assert(c == 3)
        tl.store(n_ptr, tl.cdiv(k, 4))
        tl.store(n_ptr + 1, c)

    run(kernel, o_ptr=out, n_ptr=n, k=10)
    assert out.tolist() == [2.5] * 8 and n.tolist() == [3, 3]


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("tl.arange(0, 10)", "must be a power of 2, got 10"),
        ("tl.arange(4, 4)", "arange's end argument must be greater than the start argument"),
        ("tl.arange(0, 2**32)", "arange must fit in int32"),
        ("tl.full((3, 4), 0, tl.float32)", "must be a power of 2"),
        ("tl.zeros((4,), tl.float64)", "no fp64"),
        ("tl.reshape(tl.arange(0, 8), (4, 4))", "reshape\\(\\) cannot change total number of elements in tensor"),
        ("tl.split(tl.arange(0, 8))", "last dimension of size 2"),
        ("tl.arange(0, 8)[2]", "unsupported tensor index: 2"),
        ("tl.permute(tl.zeros((2, 4), tl.int32), (0, 0))", "permutation"),
        ("tl.trans(tl.arange(0, 8))", "tl.trans invoked with a 0- or 1-dimensional tensor"),
        ("tl.cat(tl.arange(0, 8), tl.arange(0, 4))", "tl.cat requires tensors of the same shape, got \\[8\\] and \\[4\\]"),
        ("tl.cat(tl.zeros((2, 4), tl.int32), tl.arange(0, 8))", "tensors must have the same rank, got 2 and 1"),
    ],
)
def test_shape_refusals(run: Any, body: str, match: str) -> None:
    ns: dict[str, Any] = {"tl": tl}
    exec(compile(f"def kernel():\n    {body}\n", "<refusal>", "exec"), ns)
    with pytest.raises(CompilationError, match=match):
        run(ns["kernel"])
