"""Where the language once disagreed with Triton: each case against Triton's documented or
observed behaviour (its `language/*.py`, its interpreter, MLIR's `scf.for`), with an independent
NumPy or Python reference. `tests/compiled/test_interpreter_ops.py` runs every test here compiled
on the emulator too, so the two backends agree on all of them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import triton_metal.language as tl
from triton_metal.errors import CompilationError
from triton_metal.language import JITCallable

# -- tl.umulhi: the operands' bits multiplied as unsigned, whatever their type -------------------


def _umulhi(a: int, b: int, bits: int) -> int:
    mask = (1 << bits) - 1
    return ((a & mask) * (b & mask)) >> bits


@pytest.mark.parametrize(("np_ty", "bits"), [(np.int32, 32), (np.int64, 64)])
def test_umulhi_is_unsigned_on_signed_integers(run: Any, np_ty: Any, bits: int) -> None:
    info = np.iinfo(np_ty)
    a = np.array([-1, -1, info.min, 3, -7, info.max, 12345, 0], np_ty)
    b = np.array([-1, 2, info.min, -3, -9, info.max, -1, -5], np_ty)
    out = np.zeros(8, np_ty)
    folded = np.zeros(2, np_ty)

    def kernel(a_ptr, b_ptr, o_ptr, f_ptr):  # noqa: ANN001, ANN202
        offs = tl.arange(0, 8)
        tl.store(o_ptr + offs, tl.umulhi(tl.load(a_ptr + offs), tl.load(b_ptr + offs)))
        m1 = tl.full((), -1, f_ptr.dtype.element_ty)  # constants: the compiler folds these
        tl.store(f_ptr, tl.umulhi(m1, m1))
        tl.store(f_ptr + 1, tl.umulhi(m1, m1 * 0 + 2))

    run(kernel, a_ptr=a, b_ptr=b, o_ptr=out, f_ptr=folded)
    expected = [_umulhi(int(x), int(y), bits) for x, y in zip(a, b)]
    assert [int(v) & ((1 << bits) - 1) for v in out] == expected
    assert [int(v) & ((1 << bits) - 1) for v in folded] == [_umulhi(-1, -1, bits), _umulhi(-1, 2, bits)]


# -- argmax/argmin skip NaNs (Triton's interpreter: nanargmax/nanargmin) --------------------------


def test_argmax_argmin_skip_nans(run: Any) -> None:
    rng = np.random.default_rng(19)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    x[0, :5] = np.nan  # NaNs first
    x[1, 3::4] = np.nan
    x[2, :] = x[2, 0]  # ties go to the lowest index
    x[2, 7] = np.nan
    x[3, 15] = np.nan  # a NaN last
    x[:, 6][4:] = np.nan  # a column with NaNs at its end
    x[5, 0] = np.nan
    amax, amin = np.zeros(8, np.int32), np.zeros(8, np.int32)
    cmax, cmin = np.zeros(16, np.int32), np.zeros(16, np.int32)
    vmax = np.zeros(8, np.float32)

    def kernel(x_ptr, a_ptr, b_ptr, c_ptr, d_ptr, v_ptr):  # noqa: ANN001, ANN202
        r, c = tl.arange(0, 8), tl.arange(0, 16)
        v = tl.load(x_ptr + r[:, None] * 16 + c[None, :])
        tl.store(a_ptr + r, tl.argmax(v, 1))
        tl.store(b_ptr + r, tl.argmin(v, 1))
        tl.store(c_ptr + c, tl.argmax(v, 0))
        tl.store(d_ptr + c, tl.argmin(v, 0))
        m, _ = tl.max(v, 1, return_indices=True)
        tl.store(v_ptr + r, m)

    run(kernel, x_ptr=x, a_ptr=amax, b_ptr=amin, c_ptr=cmax, d_ptr=cmin, v_ptr=vmax)
    np.testing.assert_array_equal(amax, np.nanargmax(x, 1))
    np.testing.assert_array_equal(amin, np.nanargmin(x, 1))
    np.testing.assert_array_equal(cmax, np.nanargmax(x, 0))
    np.testing.assert_array_equal(cmin, np.nanargmin(x, 0))
    np.testing.assert_array_equal(vmax, np.nanmax(x, 1))


def test_argmax_of_all_nans_is_the_first_index(run: Any) -> None:
    """NumPy (and so Triton's interpreter) raises on an all-NaN slice; the language answers NaN at
    index 0, the value every reduction order gives when NaNs tie to the left."""
    x = np.full(16, np.nan, np.float32)
    out = np.full(2, -1, np.int32)
    val = np.zeros(2, np.float32)

    def kernel(x_ptr, o_ptr, v_ptr):  # noqa: ANN001, ANN202
        v = tl.load(x_ptr + tl.arange(0, 16))
        m, i = tl.max(v, 0, return_indices=True)
        n, j = tl.min(v, 0, return_indices=True)
        tl.store(o_ptr, i)
        tl.store(o_ptr + 1, j)
        tl.store(v_ptr, m)
        tl.store(v_ptr + 1, n)

    run(kernel, x_ptr=x, o_ptr=out, v_ptr=val)
    assert out.tolist() == [0, 0]
    assert np.isnan(val).all()


# -- loops: the bounds compared as signed integers of the index type (MLIR's scf.for) -------------


def test_loop_with_unsigned_start_counts_as_scf_for(run: Any) -> None:
    """Triton promotes the bounds (uint32 with int32 -> uint32) and MLIR's scf.for compares them
    signed, so a start of 0xFFFFFFFF is -1: 8 trips to 7, the index a uint32 (0xFFFFFFFF, 0, ...)."""
    trips = np.zeros(3, np.int32)
    seen = np.zeros(16, np.int64)

    def kernel(t_ptr, s_ptr, n, big):  # noqa: ANN001, ANN202
        start = tl.full((), 0xFFFFFFFF, tl.uint32)
        c = 0
        for i in range(start, n):
            tl.store(s_ptr + c, i.to(tl.int64))  # a uint32 index widens without its sign
            c += 1
        tl.store(t_ptr, c)
        d = 0
        for _ in range(start, big):  # with an int64 bound the start widens to 4294967295
            d += 1
        tl.store(t_ptr + 1, d)
        e = 0
        for _ in range(0, 3_000_000_000):  # a uint32 constant end, compared signed: negative
            e += 1
        tl.store(t_ptr + 2, e)

    run(kernel, t_ptr=trips, s_ptr=seen, n=7, big=2**32 + 2)
    assert trips.tolist() == [8, 3, 0]
    assert seen[:8].tolist() == [2**32 - 1, 0, 1, 2, 3, 4, 5, 6]


# -- tl.swizzle2d: Triton's standard.py, transcribed --------------------------------------------


def _swizzle2d(i: np.ndarray, j: np.ndarray, size_i: int, size_j: int, size_g: int) -> tuple[np.ndarray, np.ndarray]:
    ij = i * size_j + j
    size_gj = size_g * size_j
    group_id = ij // size_gj
    off_i = group_id * size_g
    g = np.minimum(size_i - off_i, size_g)
    ij = ij % size_gj
    return off_i + ij % g, ij // g


@pytest.mark.parametrize(("size_i", "size_j", "size_g"),
                         [(5, 7, 3), (4, 4, 2), (7, 3, 4), (9, 5, 2), (6, 6, 6), (3, 8, 1), (8, 2, 5)])
def test_swizzle2d_is_tritons_mapping(run: Any, size_i: int, size_j: int, size_g: int) -> None:
    new_i = np.full((16, 16), -1, np.int32)
    new_j = np.full((16, 16), -1, np.int32)

    def kernel(i_ptr, j_ptr, size_i, size_j, size_g):  # noqa: ANN001, ANN202
        i = tl.arange(0, 16)[:, None]
        j = tl.arange(0, 16)[None, :]
        ni, nj = tl.swizzle2d(i, j, size_i, size_j, size_g)
        mask = (i < size_i) & (j < size_j)
        tl.store(i_ptr + i * 16 + j, ni, mask=mask)
        tl.store(j_ptr + i * 16 + j, nj, mask=mask)

    run(kernel, i_ptr=new_i, j_ptr=new_j, size_i=size_i, size_j=size_j, size_g=size_g)
    i, j = np.meshgrid(np.arange(size_i), np.arange(size_j), indexing="ij")
    ref_i, ref_j = _swizzle2d(i, j, size_i, size_j, size_g)
    np.testing.assert_array_equal(new_i[:size_i, :size_j], ref_i)
    np.testing.assert_array_equal(new_j[:size_i, :size_j], ref_j)
    # a permutation of the grid, as the mapping promises
    moved = sorted(zip(new_i[:size_i, :size_j].ravel().tolist(), new_j[:size_i, :size_j].ravel().tolist()))
    assert moved == sorted(zip(i.ravel().tolist(), j.ravel().tolist()))


def test_swizzle2d_of_constants(run: Any) -> None:
    """Compile-time arguments go through the same formula (the issue's `swizzle2d(5, 7, 3)`)."""
    out = np.full((5, 7, 2), -1, np.int32)

    def kernel(o_ptr):  # noqa: ANN001, ANN202
        for i in tl.static_range(5):
            for j in tl.static_range(7):
                ni, nj = tl.swizzle2d(i, j, 5, 7, 3)
                tl.store(o_ptr + (i * 7 + j) * 2, ni)
                tl.store(o_ptr + (i * 7 + j) * 2 + 1, nj)

    run(kernel, o_ptr=out)
    i, j = np.meshgrid(np.arange(5), np.arange(7), indexing="ij")
    ref_i, ref_j = _swizzle2d(i, j, 5, 7, 3)
    np.testing.assert_array_equal(out[..., 0], ref_i)
    np.testing.assert_array_equal(out[..., 1], ref_j)


# -- random numbers: Triton's offset split and Philox, against a NumPy Philox ------------------


def _philox(ctr: tuple[int, ...], key: tuple[int, int], bits: int, rounds: int = 10) -> list[int]:
    """Random123's philox4xW: W-bit words, the multipliers and Weyl key increments of its spec."""
    if bits == 32:
        ma, mb, ka, kb = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
    else:
        ma, mb, ka, kb = 0xD2E7470EE14C6C93, 0xCA5A826395121157, 0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B
    mask = (1 << bits) - 1
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for _ in range(rounds):
        p0, p2 = ma * c0, mb * c2
        c0, c1, c2, c3 = ((p2 >> bits) ^ c1 ^ k0) & mask, p2 & mask, ((p0 >> bits) ^ c3 ^ k1) & mask, p0 & mask
        k0, k1 = (k0 + ka) & mask, (k1 + kb) & mask
    return [c0, c1, c2, c3]


def test_numpy_philox_meets_random123_known_answers() -> None:
    """The reference itself, pinned by Random123's kat_vectors (philox4x32-10, philox4x64-10)."""
    assert _philox((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0), 32) == [
        0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]
    assert _philox((2**64 - 1,) * 4, (2**64 - 1,) * 2, 64) == [
        0x87B092C3013FE90B, 0x438C3C67BE8D0224, 0x9CC7D7C69CD777B6, 0xA09CAEBF594F0BA0]


def test_random_with_int64_offsets_splits_the_offset(run: Any) -> None:
    """Triton's randint4x: counter (offset low 32 bits, offset high 32 bits, 0, 0) of uint32
    words; uint32 results; rand and randn built on them."""
    seed = 0x0123456789ABCDEF
    offsets = np.array([0, 1, 2**32, 2**32 + 5, 0x7FFFFFFF12345678, -1, -(2**40) - 3, 2**31], np.int64)
    ints = np.zeros((4, 8), np.uint32)
    uni = np.zeros(8, np.float32)
    nrm = np.zeros(8, np.float32)
    wide = np.zeros((4, 8), np.uint64)

    def kernel(x_ptr, i_ptr, u_ptr, n_ptr, w_ptr, seed):  # noqa: ANN001, ANN202
        k = tl.arange(0, 8)
        off = tl.load(x_ptr + k)
        a, b, c, d = tl.randint4x(seed, off)
        tl.store(i_ptr + k, a)
        tl.store(i_ptr + 8 + k, b)
        tl.store(i_ptr + 16 + k, c)
        tl.store(i_ptr + 24 + k, d)
        tl.static_assert(tl.randint(seed, off).dtype == tl.uint32)
        tl.store(u_ptr + k, tl.rand(seed, off))
        tl.store(n_ptr + k, tl.randn(seed, off))
        u = off.to(tl.uint64, bitcast=True)
        e, f, g, h = tl.philox(seed, u, u + 1, u * 3, u + 7)  # 64-bit counters: philox4x64
        tl.store(w_ptr + k, e)
        tl.store(w_ptr + 8 + k, f)
        tl.store(w_ptr + 16 + k, g)
        tl.store(w_ptr + 24 + k, h)

    run(kernel, x_ptr=offsets, i_ptr=ints, u_ptr=uni, n_ptr=nrm, w_ptr=wide, seed=seed)
    key32 = (seed & 0xFFFFFFFF, seed >> 32)
    m64 = (1 << 64) - 1
    for n, o in enumerate(int(v) & m64 for v in offsets):
        words = _philox((o & 0xFFFFFFFF, o >> 32, 0, 0), key32, 32)
        assert [int(v) for v in ints[:, n]] == words
        signed = words[0] - (1 << 32) if words[0] >= 1 << 31 else words[0]
        expected_u = np.float32(np.float32(signed if signed >= 0 else -signed - 1) * np.float32(4.6566127342e-10))
        assert uni[n] == expected_u
        w2 = words[1] - (1 << 32) if words[1] >= 1 << 31 else words[1]
        u1 = max(1.0e-7, float(expected_u))
        u2 = float(np.float32(w2 if w2 >= 0 else -w2 - 1) * np.float32(4.6566127342e-10))
        np.testing.assert_allclose(nrm[n], np.sqrt(-2.0 * np.log(u1)) * np.cos(2 * np.pi * u2), rtol=1e-4, atol=1e-5)
        assert [int(v) for v in wide[:, n]] == _philox((o, (o + 1) & m64, (o * 3) & m64, (o + 7) & m64), (seed, 0), 64)


# -- a program's loads never see its own later stores -------------------------------------------


@JITCallable
def _plus_one(x):  # noqa: ANN001, ANN202
    return x + 1


def test_load_through_an_address_read_before_the_store(run: Any) -> None:
    """Triton's test_if_call[attribute_jit]: every thread loads `Out[0]`, one thread stores it,
    and `Out + f(Out[0]) - 1` must use the value from before the store (compiled, a barrier keeps
    the other threads from reading the store: they would read `Out[1]`, past the end)."""
    out = np.zeros(1, np.int32)
    tail = np.zeros(4, np.int32)

    def kernel(out_ptr, t_ptr):  # noqa: ANN001, ANN202
        pid = tl.program_id(0)
        o = tl.load(out_ptr)
        if pid == 0:
            a = o
            a = tl.load(out_ptr + _plus_one(a) - 1).to(tl.int32) + 1
            o = a
        tl.store(out_ptr, o)
        for i in range(0, 3):  # the same across loop iterations: each reads the last one's store
            v = tl.load(t_ptr)
            tl.store(t_ptr + v + 1, v + 10)
            tl.store(t_ptr, v + 1)

    run(kernel, out_ptr=out, t_ptr=tail)
    assert out.tolist() == [1]
    assert tail.tolist() == [3, 10, 11, 12]


# -- refusals in Triton's words (Triton 3.9's core.expand_dims and tensor.__getitem__) -----------


def _duplicate_axes(p_ptr):  # noqa: ANN001, ANN202
    tl.store(p_ptr + tl.expand_dims(tl.arange(0, 8), (0, -3)), 1.0)


def _axis_out_of_range(p_ptr):  # noqa: ANN001, ANN202
    tl.store(p_ptr + tl.expand_dims(tl.arange(0, 8), (0, 3)), 1.0)


def _bounded_slice(p_ptr):  # noqa: ANN001, ANN202
    p_ptr[10:]


def _slice_before_new_axes(p_ptr):  # noqa: ANN001, ANN202
    tl.arange(0, 8)[None, 2:]


@pytest.mark.parametrize(("kernel", "words"), [
    (_duplicate_axes, r"expand_dims received duplicate axes, normalized axes = \[0, 0\]"),
    (_axis_out_of_range, r"invalid axis 3. Expected -3 <= axis < 3"),
    (_bounded_slice, r"unsupported tensor index: slice\(10, None, None\)"),
    (_slice_before_new_axes, r"unsupported tensor index: slice\(2, None, None\)"),
])
def test_shape_refusals_in_tritons_words(run: Any, kernel: Any, words: str) -> None:
    with pytest.raises(CompilationError, match=words):
        run(kernel, p_ptr=np.zeros(8, np.float32))


def test_new_axes_on_a_scalar_pointer(run: Any) -> None:
    """`p[None, None]` makes a (1, 1) block of one pointer (Triton's keep_dims store of a full
    reduction writes through it). A `:` past the rank is passed over, as Triton's
    `tensor.__getitem__` does (its test_reduce stores through `z_ptr[None, None, :]`), and so is
    one within it (`x[:, :]` of a 2-D block is the block)."""
    out, past = np.zeros(1, np.float32), np.zeros(1, np.float32)

    def kernel(x_ptr, o_ptr, p_ptr):  # noqa: ANN001, ANN202
        r = tl.arange(0, 4)
        x = tl.load(x_ptr + r[:, None] * 8 + tl.arange(0, 8)[None, :])
        s = tl.sum(x[:, :], axis=None, keep_dims=True)
        tl.store(o_ptr[None, None], s)
        tl.store(p_ptr[None, None, :], s + 1)

    x = np.arange(32, dtype=np.float32)
    run(kernel, x_ptr=x, o_ptr=out, p_ptr=past)
    assert out.tolist() == [x.sum()] and past.tolist() == [x.sum() + 1]


# -- compile-time names reach attributes, as in the front end -----------------------------------


@pytest.mark.parametrize("func", ["minimum", "maximum", "clamp"])
@pytest.mark.parametrize("propagate", ["NONE", "ALL"])
def test_getattr_with_a_constexpr_name(run: Any, func: str, propagate: str) -> None:
    """Triton's test_propagate_nan: `getattr(tl, func)` and `getattr(tl.PropagateNan, name)`."""
    a = np.array([np.nan, 2.0, -3.0, np.nan], np.float32)
    b = np.array([1.0, np.nan, 0.5, np.nan], np.float32)
    out = np.zeros(4, np.float32)

    def kernel(a_ptr, b_ptr, o_ptr, PROPAGATE: tl.constexpr, FUNC: tl.constexpr):  # noqa: ANN001, ANN202, N803
        offs = tl.arange(0, 4)
        x, y = tl.load(a_ptr + offs), tl.load(b_ptr + offs)
        mode = getattr(tl.PropagateNan, PROPAGATE)
        if hasattr(tl, FUNC) and FUNC == "clamp":
            r = getattr(tl, FUNC)(x, -tl.abs(y), tl.abs(y), propagate_nan=mode)
        else:
            r = getattr(tl, FUNC)(x, y, propagate_nan=mode)
        tl.store(o_ptr + offs, r)

    run(kernel, a_ptr=a, b_ptr=b, o_ptr=out, PROPAGATE=propagate, FUNC=func)
    if func == "clamp":
        lo, hi = -np.abs(b), np.abs(b)
        ref = np.minimum(np.maximum(a, lo), hi) if propagate == "ALL" else np.fmin(np.fmax(a, lo), hi)
    else:
        ref = {"minimum": (np.minimum, np.fmin), "maximum": (np.maximum, np.fmax)}[func][propagate == "NONE"](a, b)
    np.testing.assert_array_equal(out, ref.astype(np.float32))
