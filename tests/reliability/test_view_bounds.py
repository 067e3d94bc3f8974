"""Out-of-bounds accesses that stay inside a larger base array: an access leaving an argument's
view is out of bounds even where the memory belongs to another argument (a view of the same
base array right next to it). Each case runs on the emulator (bounds checks compiled into the
kernel) and in the interpreter (pointers tagged with their argument), and must raise the same
`OutOfBoundsError` with the same text (kernel, argument, first offending index, extent, line,
program) and leave the neighbouring view as it was; the interpreter, which checks every access
before it writes, leaves every array as it was. `TRITON_METAL_EMULATOR_CHECKS=0` turns the
checks off on both alike."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import mlx.core as mx
import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from reliability_support import BACKENDS, on_backend
from triton_metal.errors import OutOfBoundsError


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(src + offs, mask=offs < n)  # load
    tl.store(dst + offs, v + 1, mask=offs < n)  # store


@triton.jit
def _tail_store(dst, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offs, offs.to(tl.float32))  # tail store


@triton.jit
def _tail_load(src, dst, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs))  # tail load


@triton.jit
def _shifted(src, dst, shift, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst + shift + offs, tl.load(src + shift + offs, mask=offs < n), mask=offs < n)  # shifted


@triton.jit
def _strided(src, dst, stride, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs * stride, mask=offs < n), mask=offs < n)  # strided


@triton.jit
def _rows(src, dst, rows, stride, COLS: tl.constexpr, ROWS: tl.constexpr):
    r = tl.arange(0, ROWS)[:, None]
    c = tl.arange(0, COLS)[None, :]
    v = tl.load(src + r * stride + c, mask=r < rows)  # rows
    tl.store(dst + r * COLS + c, v, mask=r < rows)


@triton.jit
def _add_at(acc, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(acc + offs, 1.0, mask=offs < n)  # atomic


@triton.jit
def _max_tail(acc, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_max(acc + offs, 7)  # atomic tail


@triton.jit
def _swap_at(acc, i):
    tl.atomic_xchg(acc + i, 5.0)  # exchange


@triton.jit
def _cas_at(acc, i):
    tl.atomic_cas(acc + i, 0, 9)  # compare


@triton.jit
def _store_at(dst, i, value):
    tl.store(dst + i, value)  # helper store


@triton.jit
def _through_helper(dst, n, BLOCK: tl.constexpr):
    _store_at(dst, n, 3.0)


def _line(fn: Any, tag: str) -> int:
    lines, start = inspect.getsourcelines(fn.fn)
    return start + next(i for i, text in enumerate(lines) if f"# {tag}" in text)


def _run_both(launch: Callable[[], dict[str, Any]], call: Callable[[dict[str, Any]], None]) -> dict[str, tuple[str, dict[str, Any]]]:
    """backend -> (the error's text, the arrays after the launch); `launch` makes fresh arrays."""
    seen: dict[str, tuple[str, dict[str, Any]]] = {}
    for backend in BACKENDS:
        arrays = launch()
        with on_backend(backend), pytest.raises(OutOfBoundsError) as info:
            call(arrays)
        seen[backend] = (str(info.value), arrays)
    return seen


def _same_error(seen: dict[str, tuple[str, dict[str, Any]]], kernel: Any, tag: str, argument: str,
                index: int, extent: int, program: tuple[int, int, int] = (0, 0, 0)) -> None:
    texts = {backend: text for backend, (text, _) in seen.items()}
    assert len(set(texts.values())) == 1, texts
    line = _line(kernel, tag)
    head = (f"kernel '{kernel.__name__}': out-of-bounds access to '{argument}' at index {index} "
            f"(the buffer has {extent} elements) at {__file__}:{line}, program {program}")
    text = texts["emulator"]
    assert text.startswith(head + "\n"), (text, head)
    assert text.endswith(f"# {tag}"), text


def _neighbours() -> dict[str, Any]:
    base = np.full(200, -1.0, np.float32)
    return {"base": base, "a": base[:100], "b": base[100:], "out": np.full(128, 5.0, np.float32)}


def _untouched_in_interpreter(seen: dict[str, tuple[str, dict[str, Any]]], name: str, value: float) -> None:
    assert (seen["interpreter"][1][name] == value).all()


# -- loads and stores, masked and not ---------------------------------------------------------


def test_mask_less_store_past_a_view_into_the_next() -> None:
    seen = _run_both(_neighbours, lambda v: _tail_store[(1,)](v["a"], BLOCK=128))
    _same_error(seen, _tail_store, "tail store", "dst", 100, 100)
    for _, arrays in seen.values():
        assert (arrays["b"] == -1.0).all()  # the neighbour: untouched on both
    _untouched_in_interpreter(seen, "base", -1.0)


def test_store_past_a_view_from_a_later_program() -> None:
    seen = _run_both(_neighbours, lambda v: _tail_store[(2,)](v["a"], BLOCK=64))
    _same_error(seen, _tail_store, "tail store", "dst", 100, 100, (1, 0, 0))
    for _, arrays in seen.values():
        assert (arrays["b"] == -1.0).all()
    _untouched_in_interpreter(seen, "base", -1.0)  # program 0's stores are undone


def test_masked_store_with_a_bound_past_the_view() -> None:
    seen = _run_both(_neighbours, lambda v: _copy[(1,)](v["out"], v["a"], 128, BLOCK=128))
    _same_error(seen, _copy, "store", "dst", 100, 100)
    for _, arrays in seen.values():
        assert (arrays["b"] == -1.0).all()
    _untouched_in_interpreter(seen, "base", -1.0)


def test_mask_less_load_past_a_view_reads_nothing_of_the_next() -> None:
    seen = _run_both(_neighbours, lambda v: _tail_load[(1,)](v["a"], v["out"], BLOCK=128))
    _same_error(seen, _tail_load, "tail load", "src", 100, 100)
    for _, arrays in seen.values():
        assert (arrays["base"] == -1.0).all()
    _untouched_in_interpreter(seen, "out", 5.0)  # the emulator's earlier threads have stored


def test_a_vector_load_names_its_first_element_past_the_view() -> None:
    """512 lanes of 128 threads: each thread loads 4 elements at once (a float4); the one over
    elements 96..99 of a 98-element view reports index 98, as one element at a time would."""

    def views() -> dict[str, Any]:
        base = np.full(200, -1.0, np.float32)
        return {"base": base, "a": base[:98], "b": base[98:]}

    seen = _run_both(views, lambda v: _tail_load[(1,)](v["a"], np.zeros(512, np.float32), BLOCK=512))
    _same_error(seen, _tail_load, "tail load", "src", 98, 98)


def test_masked_load_with_a_bound_past_the_view() -> None:
    seen = _run_both(_neighbours, lambda v: _copy[(1,)](v["a"], v["out"], 101, BLOCK=128))
    _same_error(seen, _copy, "load", "src", 100, 100)
    for _, arrays in seen.values():
        assert (arrays["base"] == -1.0).all()
    _untouched_in_interpreter(seen, "out", 5.0)


def test_negative_offsets_into_the_previous_view() -> None:
    seen = _run_both(_neighbours, lambda v: _shifted[(1,)](v["b"], v["b"], -1, 4, BLOCK=4))
    _same_error(seen, _shifted, "shifted", "src", -1, 100)
    for _, arrays in seen.values():
        assert (arrays["base"] == -1.0).all()


def test_in_bounds_neighbours_still_run() -> None:
    for backend in BACKENDS:
        arrays = _neighbours()
        arrays["b"][:] = np.arange(100)
        with on_backend(backend):
            _copy[(1,)](arrays["b"], arrays["a"], 100, BLOCK=128)
        np.testing.assert_array_equal(arrays["a"], np.arange(100) + 1)


# -- strided views ------------------------------------------------------------------------------


def _interleaved() -> dict[str, Any]:
    base = np.arange(200, dtype=np.float32)
    return {"base": base, "even": base[0:100:2], "tail": base[100:], "out": np.zeros(64, np.float32)}


def test_strided_view_reaches_its_last_element_only() -> None:
    """`base[0:100:2]` spans 99 elements of the base (its first to its last); the 51st strided
    element is base[100], the first element of the next argument."""
    seen = _run_both(_interleaved, lambda v: _strided[(1,)](v["even"], v["out"], 2, 51, BLOCK=64))
    _same_error(seen, _strided, "strided", "src", 100, 99)
    for backend in BACKENDS:  # 50 elements are fine, and agree
        arrays = _interleaved()
        with on_backend(backend):
            _strided[(1,)](arrays["even"], arrays["out"], 2, 50, BLOCK=64)
        np.testing.assert_array_equal(arrays["out"][:50], np.arange(0, 100, 2))


def _blocks() -> dict[str, Any]:
    base = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)
    return {"base": base, "top": base[:4, :8], "bottom": base[4:, :8], "out": np.zeros(64, np.float32)}


def test_rows_of_a_2d_view_past_its_last_row() -> None:
    """`base[:4, :8]` of a 8x16 array spans 3 * 16 + 8 = 56 elements; its fifth row starts at
    index 64, in the next argument's rows."""
    seen = _run_both(_blocks, lambda v: _rows[(1,)](v["top"], v["out"], 5, 16, COLS=8, ROWS=8))
    _same_error(seen, _rows, "rows", "src", 64, 56)
    for _, arrays in seen.values():
        np.testing.assert_array_equal(arrays["base"], np.arange(128).reshape(8, 16))
    _untouched_in_interpreter(seen, "out", 0.0)


def test_torch_tensor_views() -> None:
    torch = pytest.importorskip("torch")

    def tensors() -> dict[str, Any]:
        base = torch.full((200,), -1.0)
        return {"base": base, "a": base[:100], "b": base[100:]}

    seen = _run_both(tensors, lambda v: _tail_store[(1,)](v["a"], BLOCK=128))
    _same_error(seen, _tail_store, "tail store", "dst", 100, 100)
    for _, arrays in seen.values():
        assert bool((arrays["b"] == -1.0).all())
    assert bool((seen["interpreter"][1]["base"] == -1.0).all())


# -- MLX arrays ---------------------------------------------------------------------------------


def _mlx() -> dict[str, Any]:
    return {"x": mx.arange(100, dtype=mx.float32), "out": mx.zeros((100,), dtype=mx.float32)}


def test_mlx_store_and_load_past_the_end() -> None:
    def evaluated(launch: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
        def call(v: dict[str, Any]) -> None:
            launch(v)
            mx.eval(v["out"])  # on the emulator the launch is lazy: it runs (and faults) here

        return call

    seen = _run_both(_mlx, evaluated(lambda v: _tail_store[(1,)](v["out"], BLOCK=128)))
    _same_error(seen, _tail_store, "tail store", "dst", 100, 100)
    seen = _run_both(_mlx, evaluated(lambda v: _copy[(1,)](v["x"], v["out"], 128, BLOCK=128)))
    _same_error(seen, _copy, "load", "src", 100, 100)
    assert (np.array(seen["interpreter"][1]["out"]) == 0.0).all()
    # on the emulator `out` stands for the faulting launch: read again it faults again (MLX
    # evaluates it anew) or, counted as evaluated, holds all bits set (NaN), never what the
    # kernel wrote before its fault
    try:
        faulted = np.array(seen["emulator"][1]["out"])
    except OutOfBoundsError:
        return
    assert (faulted.view(np.uint32) == 0xFFFFFFFF).all()


# -- atomics ------------------------------------------------------------------------------------


def test_masked_atomic_past_a_view() -> None:
    seen = _run_both(_neighbours, lambda v: _add_at[(1,)](v["a"], 101, BLOCK=128))
    _same_error(seen, _add_at, "atomic", "acc", 100, 100)
    for _, arrays in seen.values():
        assert (arrays["b"] == -1.0).all()
    _untouched_in_interpreter(seen, "base", -1.0)


def test_mask_less_integer_atomic_past_a_view() -> None:
    def ints() -> dict[str, Any]:
        base = np.zeros(64, np.int32)
        return {"base": base, "a": base[:40], "b": base[40:]}

    seen = _run_both(ints, lambda v: _max_tail[(1,)](v["a"], BLOCK=64))
    _same_error(seen, _max_tail, "atomic tail", "acc", 40, 40)
    for _, arrays in seen.values():
        assert (arrays["b"] == 0).all()
    _untouched_in_interpreter(seen, "base", 0)


@pytest.mark.parametrize("kernel, tag", [(_swap_at, "exchange"), (_cas_at, "compare")])
def test_scalar_atomics_one_past_the_end(kernel: Any, tag: str) -> None:
    def halves() -> dict[str, Any]:
        base = np.zeros(16, np.float32 if kernel is _swap_at else np.int32)
        return {"base": base, "a": base[:8], "b": base[8:]}

    seen = _run_both(halves, lambda v: kernel[(1,)](v["a"], 8))
    _same_error(seen, kernel, tag, "acc", 8, 8)
    for _, arrays in seen.values():
        assert (arrays["base"] == 0).all()


def test_an_access_inside_a_jit_helper_names_the_helper_line() -> None:
    seen = _run_both(_neighbours, lambda v: _through_helper[(1,)](v["a"], 100, BLOCK=4))
    texts = {text for text, _ in seen.values()}
    assert len(texts) == 1, texts
    text = texts.pop()
    assert text.startswith("kernel '_through_helper': out-of-bounds access to 'dst' at index 100 "
                           f"(the buffer has 100 elements) at {__file__}:{_line(_store_at, 'helper store')}, "), text
    for _, arrays in seen.values():
        assert (arrays["b"] == -1.0).all()


# -- the opt-out --------------------------------------------------------------------------------


def test_checks_turned_off_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unchecked, an access past a view reaches the memory behind it on both backends (here the
    next view, which is what the checks exist to catch)."""
    monkeypatch.setenv("TRITON_METAL_EMULATOR_CHECKS", "0")
    results = {}
    for backend in BACKENDS:
        arrays = _neighbours()
        arrays["b"][:] = np.arange(100, 200)
        with on_backend(backend):
            _copy[(1,)](arrays["a"], arrays["out"], 128, BLOCK=128)  # reads b[:28] through a
            _tail_store[(1,)](arrays["a"], BLOCK=128)  # writes b[:28] through a
        results[backend] = arrays
    for arrays in results.values():
        np.testing.assert_array_equal(arrays["out"][100:], np.arange(100, 128) + 1)
        np.testing.assert_array_equal(arrays["base"][:128], np.arange(128))
        np.testing.assert_array_equal(arrays["base"][128:], np.arange(128, 200))


@triton.jit
def _half_add(acc, i, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(acc + i + offs, 1.0, mask=offs < n)  # half atomic


@pytest.mark.parametrize("start, count, index", [(5, 1, 5), (0, 6, 5)])
def test_half_atomic_one_past_an_odd_sized_array(start: int, count: int, index: int) -> None:
    """A float16 atomic updates the 32-bit word holding its element: the element itself is
    checked, so the word's other half past the end is no way around the checks."""

    def halves() -> dict[str, Any]:
        base = np.zeros(8, np.float16)
        return {"base": base, "a": base[:5]}

    seen = _run_both(halves, lambda v: _half_add[(1,)](v["a"], start, count, BLOCK=8))
    _same_error(seen, _half_add, "half atomic", "acc", index, 5)
    for _, arrays in seen.values():
        assert (arrays["base"][5:] == 0).all()
    _untouched_in_interpreter(seen, "base", 0)
    for backend in BACKENDS:  # the last element itself is fine, and agrees
        arrays = halves()
        with on_backend(backend):
            _half_add[(1,)](arrays["a"], 0, 5, BLOCK=8)
        assert arrays["base"].tolist() == [1, 1, 1, 1, 1, 0, 0, 0]
