"""`tl.device_print` prints on the emulator: the same lines, in the same order, as the interpreter
(Triton's format: one line per element, `pid (x, y, z) idx (i, j)<prefix><value>`), with and
without `debug=True`, through the process's stdout (capfd, capsys and `redirect_stdout` see it).
The MSL stays valid Metal: the print calls exist only inside the emulator's guard."""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from collections.abc import Callable

import mlx.core as mx
import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal.errors import DeviceAssertionError
from triton_metal.language.print_format import Operand, c_hex_float, munge_prefix, print_lines


def _both(capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
          launch: Callable[[], None]) -> list[str]:
    """The lines `launch` prints compiled on the emulator, checked equal to the interpreter's."""
    capfd.readouterr()
    launch()
    compiled = capfd.readouterr().out.splitlines()
    monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    try:
        launch()
    finally:
        monkeypatch.delenv("TRITON_METAL_INTERPRET")
    interpreted = capfd.readouterr().out.splitlines()
    assert compiled == interpreted
    assert compiled  # something was printed
    return compiled


def _values(lines: list[str], prefix: str) -> list[str]:
    return [line.split(prefix, 1)[1] for line in lines if prefix in line]


# -- integers ------------------------------------------------------------------------------------

@triton.jit
def print_ints(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_print("dec", x)
    tl.device_print("hex", x, hex=True)


_INT_CASES = {
    np.int8: [-128, -1, 0, 127], np.int16: [-32768, -2, 5, 32767],
    np.int32: [-(2**31), -7, 0, 2**31 - 1], np.int64: [-(2**63), -3, 1, 2**63 - 1],
    np.uint8: [0, 1, 200, 255], np.uint16: [0, 9, 40000, 65535],
    np.uint32: [0, 3, 2**31, 2**32 - 1], np.uint64: [0, 5, 2**63, 2**64 - 1],
}


@pytest.mark.parametrize("dtype", list(_INT_CASES), ids=lambda d: np.dtype(d).name)
def test_integers_signed_and_unsigned_decimal_and_hex(dtype, capfd, monkeypatch):
    values = _INT_CASES[dtype]
    x = np.array(values * 4, dtype=dtype)
    lines = _both(capfd, monkeypatch, lambda: print_ints[(1,)](x, BLOCK=16))
    assert _values(lines, " dec: ") == [str(v) for v in values * 4]  # NumPy's own values
    nibbles = np.dtype(dtype).itemsize * 2
    assert _values(lines, " hex: ") == [f"0x{int(v) % 2 ** (8 * np.dtype(dtype).itemsize):0{nibbles}x}"
                                       for v in values * 4]
    assert lines[0] == f"pid (0, 0, 0) idx ( 0) dec: {values[0]}"  # index padded to 2 digits


@triton.jit
def print_bools(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_print("b", x > 2)


def test_booleans_print_as_zero_and_one(capfd, monkeypatch):
    x = np.arange(8, dtype=np.int32)
    lines = _both(capfd, monkeypatch, lambda: print_bools[(1,)](x, BLOCK=8))
    assert _values(lines, " b: ") == [str(int(v > 2)) for v in x]


# -- floats ----------------------------------------------------------------------------------------

@triton.jit
def print_floats(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_print("f", x)
    tl.device_print("bits", x, hex=True)
    tl.device_print("as bf16", x.to(tl.bfloat16))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_floats_as_c_percent_f_and_percent_a_in_hex(dtype, capfd, monkeypatch):
    x = np.array([1.5, -0.0, 3.25e-3, 65504.0, np.inf, -np.inf, np.nan, -2.0], dtype=dtype)
    lines = _both(capfd, monkeypatch, lambda: print_floats[(1,)](x, BLOCK=8))
    assert _values(lines, " f: ") == ["%f" % float(v) if np.isfinite(v) else str(float(v)) for v in x]
    # C's %a, read back exactly as Triton's test_print does (float.fromhex of each value)
    hexes = _values(lines, " bits: ")
    assert [float.fromhex(h) for h in hexes[:6] + hexes[7:]] == [float(v) for v in np.delete(x, 6)]
    assert hexes[1] == "-0x0p+0" and hexes[4:7] == ["inf", "-inf", "nan"] and hexes[0] == "0x1.8p+0"
    assert _values(lines, " as bf16: ")[0] == "1.500000"


def test_c_percent_a_spelling():
    # glibc's spelling of printf("%a", (double)v): trailing zero digits dropped
    assert c_hex_float(float(np.float32(0.1))) == "0x1.99999ap-4"
    assert c_hex_float(1.0) == "0x1p+0" and c_hex_float(6.0) == "0x1.8p+2" and c_hex_float(0.0) == "0x0p+0"
    assert c_hex_float(-float("nan")) == "-nan" and c_hex_float(2.0**-149) == "0x1p-149"


# -- scalars, several arguments, no argument ---------------------------------------------------------

@triton.jit
def print_scalars(x_ptr, n, scale, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK))
    tl.device_print("pid", pid)
    tl.device_print("args", n, scale)
    tl.device_print("sum", tl.sum(x, axis=0))
    tl.device_print("no operands")
    tl.device_print("x and pid", x, pid + x.to(tl.int32))


def test_scalars_several_arguments_and_none_over_a_grid(capfd, monkeypatch):
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    lines = _both(capfd, monkeypatch, lambda: print_scalars[(4,)](x, 7, 0.5, BLOCK=16))
    assert "pid (2, 0, 0) idx () pid: 2" in lines
    assert "pid (3, 0, 0) idx () args: (operand 0) 7" in lines
    assert "pid (3, 0, 0) idx () args: (operand 1) 0.500000" in lines
    assert "pid (1, 0, 0) no operands" in lines
    assert f"pid (1, 0, 0) idx () sum: {float(np.float32(x[16:32].sum())):f}" in lines
    assert "pid (0, 0, 0) idx (15) x and pid: (operand 1) 0" in lines
    # each program's lines together, programs in order: no interleaving
    programs = [int(re.match(r"pid \((\d+)", line).group(1)) for line in lines]
    assert programs == sorted(programs)
    assert len(lines) == 4 * (1 + 2 + 1 + 1 + 2 * 16)


# -- 2-D tensors, replicated layouts, loops and branches, a 2-D grid -------------------------------

@triton.jit
def print_tiles(x_ptr, M: tl.constexpr, N: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    tile = tl.load(x_ptr + (pm * M + rows) * (2 * N) + pn * N + cols)
    tl.device_print("tile", tile)
    tl.device_print("row sums", tl.sum(tile, axis=1))  # a slice layout: replicated across threads
    tl.device_print("transposed", tl.trans(tile))
    for i in range(2):
        if pm == 1:
            tl.device_print("loop", tile[:, :] * 0 + i)


@pytest.mark.parametrize("num_warps", [1, 4])
def test_two_dimensional_tensors_loops_and_a_two_dimensional_grid(num_warps, capfd, monkeypatch):
    x = np.arange(2 * 8 * 2 * 16, dtype=np.int32).reshape(16, 32)
    lines = _both(capfd, monkeypatch, lambda: print_tiles[(2, 2)](x, M=8, N=16, num_warps=num_warps))
    assert "pid (1, 1, 0) idx (7, 15) tile: 511" in lines  # x[15, 31]
    assert "pid (0, 0, 0) idx (0,  3) tile: 3" in lines  # column index padded to 2 digits
    assert f"pid (0, 1, 0) idx (2) row sums: {x[2, 16:32].sum()}" in lines
    assert "pid (1, 0, 0) idx (15, 7) transposed: 495" in lines  # tile[7, 15] = x[8 + 7, 15]
    assert sum(" loop: " in line for line in lines) == 2 * 2 * 8 * 16  # programs with pm == 1 only
    assert len(lines) == 4 * (128 + 8 + 128) + 2 * 2 * 128


# -- debug builds ----------------------------------------------------------------------------------

@triton.jit(debug=True)
def print_then_check(x_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_print("x", x)
    tl.device_assert(x < 100, "x below 100")


@triton.jit
def print_plain(x_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_print("x", x)
    tl.device_assert(x < 100, "x below 100")


def test_prints_with_and_without_debug_and_before_a_failing_assert(capfd, monkeypatch):
    x = np.arange(32, dtype=np.int32)
    plain = _both(capfd, monkeypatch, lambda: print_plain[(2,)](x, BLOCK=16))  # Triton prints regardless
    debug = _both(capfd, monkeypatch, lambda: print_then_check[(2,)](x, BLOCK=16))
    assert plain == debug and len(plain) == 32
    x[20] = 1000  # program 1 fails its assert after printing
    with pytest.raises(DeviceAssertionError, match=r"program \(1, 0, 0\)"):
        print_then_check[(2,)](x, BLOCK=16)
    out = capfd.readouterr().out
    assert "pid (1, 0, 0) idx ( 4) x: 1000" in out  # what ran is printed before the error


# -- where the output goes --------------------------------------------------------------------------

def test_output_goes_through_sys_stdout(capsys):
    x = np.arange(8, dtype=np.int32)
    print_bools[(1,)](x, BLOCK=8)
    assert capsys.readouterr().out.count(" b: ") == 8  # capsys replaces sys.stdout only
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        print_bools[(1,)](x, BLOCK=8)
    assert buffer.getvalue().splitlines()[7] == "pid (0, 0, 0) idx (7) b: 1"
    assert capsys.readouterr().out == ""


def test_mlx_arrays_on_the_emulator_print_the_same_lines(capfd, monkeypatch):
    x = np.array(_INT_CASES[np.int32] * 4, dtype=np.int32)
    lines = _both(capfd, monkeypatch, lambda: print_ints[(1,)](x, BLOCK=16))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "unavailable" warning: the emulator prints
        print_ints[(1,)](mx.array(x), BLOCK=16)
    assert capfd.readouterr().out.splitlines() == lines


@triton.jit
def print_pointer(x_ptr, BLOCK: tl.constexpr):
    tl.device_print("p", x_ptr + tl.arange(0, BLOCK))


def test_pointers_print_their_address(capfd, monkeypatch):
    x = np.zeros(4, dtype=np.float32)
    lines = _both(capfd, monkeypatch, lambda: print_pointer[(1,)](x, BLOCK=4))
    assert _values(lines, " p: ") == [f"0x{x.ctypes.data + 4 * i:016x}" for i in range(4)]


def test_a_launch_past_the_print_limit_prints_whole_prints_only_and_warns(capfd, monkeypatch):
    monkeypatch.setenv("TRITON_METAL_EMULATOR_PRINT_LIMIT", "20")
    x = np.arange(64, dtype=np.int32)
    with pytest.warns(RuntimeWarning, match=r"print_plain.*more than 20 elements.* of 64 were not printed"):
        print_plain[(4,)](x, BLOCK=16)
    lines = capfd.readouterr().out.splitlines()
    assert len(lines) in (0, 16)  # 20 records hold at most one program's whole print
    assert len({line.split(")")[0] for line in lines}) <= 1


def test_torch_mps_reports_prints_once_as_unavailable(monkeypatch, capfd):
    torch = pytest.importorskip("torch")
    from triton_metal.backends.torch_mps.standin import RecordingCompiler
    from triton_metal.runtime import device_asserts

    monkeypatch.setattr(device_asserts, "_warned", set())
    monkeypatch.setenv("TRITON_METAL_BACKEND", "torch_mps")
    x = torch.arange(16, dtype=torch.int32)
    with RecordingCompiler().installed() as recorder, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        print_ints[(1,)](x, BLOCK=16)
        print_ints[(1,)](x, BLOCK=16)
    assert recorder.calls
    said = [w for w in caught if "tl.device_print is not available on the torch_mps backend" in str(w.message)]
    assert len(said) == 1 and "'print_ints'" in str(said[0].message)
    assert " dec: " not in capfd.readouterr().out  # MPS has no console: nothing printed


# -- the generated MSL ------------------------------------------------------------------------------

def _outside_guards(msl: str) -> str:
    return re.sub(r"#ifdef TM_DEVICE_PRINT\n.*?#endif\n", "", msl, flags=re.S)


def test_the_print_exists_only_inside_the_emulator_guard():
    x = np.arange(64, dtype=np.int32)
    msl = print_tiles.warmup(x, M=8, N=16, grid=(2, 2)).asm["msl"]
    assert msl.count("#ifdef TM_DEVICE_PRINT") == 1 + 4  # the counter, then one per print
    assert "tm_device_print" in msl
    assert not re.search(r"\btm_\w+|km_print_seq", _outside_guards(msl))  # Metal sees none of it
    plain = print_ints.warmup(x, BLOCK=16, grid=(1,)).asm["msl"]
    assert "TM_DEVICE_PRINT" in plain


def test_a_kernel_without_prints_has_no_print_code():
    @triton.jit
    def copy(x_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs))

    x = np.arange(16, dtype=np.int32)
    msl = copy.warmup(x, x, BLOCK=16, grid=(1,)).asm["msl"]
    assert "TM_DEVICE_PRINT" not in msl and "tm_device_print" not in msl and "km_print_seq" not in msl


# -- the format itself ------------------------------------------------------------------------------

def test_prefix_rule_and_format_match_triton():
    assert munge_prefix("x", True) == " x: "
    assert munge_prefix("x = ", True) == " x =: "
    assert munge_prefix("value: ", True) == " value: "
    assert munge_prefix("hi", False) == "hi"
    assert munge_prefix("hello", False) == " hello"
    ops = [Operand("i32", (2, 11), np.arange(22, dtype=np.int32))]
    lines = print_lines((1, 2, 3), " t: ", False, ops)
    assert lines[0] == "pid (1, 2, 3) idx (0,  0) t: 0" and lines[-1] == "pid (1, 2, 3) idx (1, 10) t: 21"
    assert print_lines((0, 0, 0), " h: ", True, [Operand("f16", (), np.float16(1.0))]) == [
        "pid (0, 0, 0) idx () h: 0x1p+0"]  # C's %a of the value, as Triton's printf
    assert print_lines((0, 0, 0), " b: ", True, [Operand("i1", (), np.bool_(True))]) == [
        "pid (0, 0, 0) idx () b: 0x1"]


@triton.jit
def print_dot(a_ptr, b_ptr, M: tl.constexpr):
    r = tl.arange(0, M)
    a = tl.load(a_ptr + r[:, None] * M + r[None, :])
    b = tl.load(b_ptr + r[:, None] * M + r[None, :])
    tl.device_print("acc", tl.dot(a, b))  # the dot's own layout: fragments shared by SIMD groups


def test_a_dot_result_prints_every_element_once(capfd, monkeypatch):
    rng = np.random.default_rng(1)
    a = rng.integers(-4, 5, (16, 16)).astype(np.float32)
    b = rng.integers(-4, 5, (16, 16)).astype(np.float32)
    lines = _both(capfd, monkeypatch, lambda: print_dot[(1,)](a, b, M=16))
    assert _values(lines, " acc: ") == [f"{v:f}" for v in (a @ b).reshape(-1)]  # exact small integers
