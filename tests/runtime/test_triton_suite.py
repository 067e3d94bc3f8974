"""The Triton-suite harness (`triton_metal.tools.triton_suite`): Triton's test helper API, the
host pieces Triton's test files use (`reinterpret` of torch tensors, `_unsafe_update_src`), the
JUnit counting, and the runner end to end on a small test file of our own."""

from __future__ import annotations

import textwrap
import uuid
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import triton_metal as triton  # noqa: E402
import triton_metal.language as tl  # noqa: E402
from triton_metal.runtime.arrays.torch import TensorWrapper  # noqa: E402
from triton_metal.tools.triton_suite import helpers, report, runner  # noqa: E402

HOST_BACKENDS = ["emulator", "interpret"]


@pytest.fixture(params=HOST_BACKENDS)
def host_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "interpret":
        monkeypatch.setenv("TRITON_METAL_INTERPRET", "1")
    return request.param


@triton.jit
def _halve(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) >> 1, mask=mask)


def test_reinterpreted_torch_tensors_are_read_and_written_as_the_new_type(host_backend):
    # the shift is logical for uint32 and arithmetic for int32: the view decides
    words = np.array([-2, -4, 8, -2**31], dtype=np.int32)
    x = torch.tensor(words)
    y = torch.zeros(4, dtype=torch.int32)
    _halve[(1,)](triton.reinterpret(x, tl.uint32), triton.reinterpret(y, tl.uint32), 4, BLOCK=4)
    np.testing.assert_array_equal(y.numpy(), (words.view(np.uint32) >> 1).view(np.int32))
    _halve[(1,)](x, y, 4, BLOCK=4)
    np.testing.assert_array_equal(y.numpy(), words >> 1)


def test_reinterpret_takes_torch_and_numpy_dtypes(host_backend):
    # Triton's test_conversions passes torch dtypes: the view is the same as with tl's
    words = torch.tensor([-2, -4, 8, -2**31], dtype=torch.int32)
    y = torch.zeros(4, dtype=torch.int32)
    _halve[(1,)](triton.reinterpret(words, torch.int32), triton.reinterpret(y, torch.int32), 4, BLOCK=4)
    np.testing.assert_array_equal(y.numpy(), words.numpy() >> 1)
    assert triton.reinterpret(torch.zeros(2, dtype=torch.int16), torch.bfloat16).dtype == tl.bfloat16
    assert triton.reinterpret(np.zeros(2, np.int16), np.float16).dtype == np.float16
    from triton_metal.runtime.facts import ArgumentError

    with pytest.raises(ArgumentError, match="torch.float64"):
        triton.reinterpret(words, torch.float64)


@triton.jit
def _by_mode(x_ptr, MODE: tl.constexpr):
    if MODE == "half":
        v = 0.5
    elif MODE == "twice":
        v = 2.0
    else:
        raise ValueError("unrecognized mode")
    tl.store(x_ptr + tl.arange(0, 4), tl.load(x_ptr + tl.arange(0, 4)) * v)


@triton.jit
def _raise_at_run_time(x_ptr, n):
    if n > 4:
        raise ValueError("too long")
    tl.store(x_ptr, n)


def test_raise_under_constexpr_branches_is_compiled_where_not_taken(host_backend):
    # Triton's test_conversions: an `else: raise` after `if`s on constexpr parameters
    x = np.array([1.0, 2.0, 4.0, -8.0], np.float32)
    _by_mode[(1,)](x, "twice")
    np.testing.assert_array_equal(x, [2.0, 4.0, 8.0, -16.0])
    with pytest.raises(triton.CompilationError, match="'raise' is not supported"):
        _by_mode[(1,)](x, "thrice")
    np.testing.assert_array_equal(x, [2.0, 4.0, 8.0, -16.0])
    # under a run-time condition both backends refuse it, taken or not
    with pytest.raises(triton.CompilationError, match="'raise' is not supported"):
        _raise_at_run_time[(1,)](x, 2)


def test_reinterpreted_view_of_an_unsupported_type_is_refused():
    y = torch.zeros(4, dtype=torch.int64)
    with pytest.raises(TypeError, match="reinterpret: .*void is not a scalar element type"):
        triton.reinterpret(y, tl.void)
    with pytest.raises(TypeError, match="reinterpret: Apple GPUs have no fp64"):
        triton.reinterpret(y, tl.float64)


def test_tensor_wrapper_has_triton_members():
    base = torch.arange(6, dtype=torch.int16).reshape(2, 3)
    wrapped = triton.reinterpret(base, tl.uint16)
    assert isinstance(wrapped, TensorWrapper) and wrapped.base is base and wrapped.dtype is tl.uint16
    assert wrapped.shape == base.shape and wrapped.stride() == base.stride()
    assert wrapped.data_ptr() == base.data_ptr() and wrapped.element_size() == 2
    assert triton.reinterpret(wrapped, tl.int16) is base  # back to the tensor's own type
    assert triton.reinterpret(wrapped, tl.float16).dtype is tl.float16
    copy = wrapped.clone()
    assert copy.base.data_ptr() != base.data_ptr() and torch.equal(copy.base, base)
    with pytest.raises(TypeError, match="fp64"):
        triton.reinterpret(base, tl.float64)


@triton.jit
def _template(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = GENERATE_TEST_HERE  # noqa: F821 - replaced before the launch
    tl.store(y_ptr + offs, y)


def test_unsafe_update_src_compiles_the_new_body():
    # compiled backends only: under the interpreter Triton's tests exec the substituted source
    kernel = triton.JITFunction(_template.fn)
    kernel._unsafe_update_src(kernel.src.replace("GENERATE_TEST_HERE", "x * 3 + 1"))
    x = torch.arange(8, dtype=torch.float32)
    y = torch.empty(8)
    kernel[(1,)](x, y, BLOCK=8)
    np.testing.assert_array_equal(y.numpy(), x.numpy() * 3 + 1)
    # a second substitution drops the compiled variant of the first
    kernel._unsafe_update_src(kernel.src.replace("x * 3 + 1", "x - 5"))
    kernel[(1,)](x, y, BLOCK=8)
    np.testing.assert_array_equal(y.numpy(), x.numpy() - 5)


def test_unsafe_update_src_refuses_other_parameters():
    kernel = triton.JITFunction(_template.fn)
    with pytest.raises(ValueError, match="same parameters"):
        kernel._unsafe_update_src("def _template(x_ptr, BLOCK: tl.constexpr):\n    pass\n")


@pytest.mark.parametrize("name", helpers.integral_dtypes + ["float16", "float32", "bfloat16", "bool"])
def test_numpy_random_contract(name):
    values = helpers.numpy_random((64,), name)
    again = helpers.numpy_random((64,), name)
    np.testing.assert_array_equal(values, again)  # seeded
    if name in helpers.integral_dtypes:
        assert values.dtype == np.dtype(name) and not (values == 0).any()
    elif name == "bfloat16":
        assert values.dtype == np.float32 and not (values.view(np.uint32) & 0xFFFF).any()
    elif name == "bool":
        assert values.dtype == np.bool_ and values.any() and not values.all()
    bounded = helpers.numpy_random(256, "int8", low=-3, high=3) if name == "int8" else None
    if bounded is not None:
        assert bounded.min() >= -3 and bounded.max() < 3


@pytest.mark.parametrize("name", ["uint8", "uint32", "uint64", "int16", "float16", "float32"])
def test_to_triton_to_numpy_round_trip(name):
    data = helpers.numpy_random((5, 3), name)
    tensor = helpers.to_triton(data, "cpu")
    assert isinstance(tensor, TensorWrapper) == name.startswith("u")
    back = helpers.to_numpy(tensor)
    assert back.dtype == data.dtype
    np.testing.assert_array_equal(back, data)


def test_bfloat16_to_triton():
    data = helpers.numpy_random(16, "bfloat16")
    tensor = helpers.to_triton(data, "cpu", dst_type="bfloat16")
    assert tensor.dtype == torch.bfloat16
    np.testing.assert_array_equal(helpers.to_numpy(tensor), data)  # exact: low bits are zero


def test_backend_predicates(monkeypatch):
    for name in ("TRITON_METAL_INTERPRET", "TRITON_INTERPRET"):
        monkeypatch.delenv(name, raising=False)
    assert not helpers.is_interpreter()
    assert helpers.get_current_target().backend == "metal"
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert helpers.is_interpreter() and helpers.get_current_target() is None
    assert not any(p() for p in (helpers.is_cuda, helpers.is_hip, helpers.is_hopper, helpers.is_xpu))
    assert helpers.str_to_triton_dtype("bool") is tl.int1
    assert helpers.str_to_triton_dtype("float8_e4m3fn") is tl.float8e4nv
    assert helpers.torch_dtype_name(torch.int64) == "int64" and helpers.torch_dtype_name(tl.uint8) == "uint8"


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="test_x" name="test_a[1]"/>
<testcase classname="test_x" name="test_a[2]"><failure message="triton_metal.errors.CompilationError: f.py:3:1: in kernel 'k'&#10;    y = 1&#10;error: no such op&#10;hint: none">tb</failure></testcase>
<testcase classname="test_x" name="test_a[3]"><failure message="AssertionError: at 0x7f00ab">tb</failure></testcase>
<testcase classname="test_x.TestC" name="test_b"><skipped type="pytest.skip" message="needs CUDA"/></testcase>
<testcase classname="test_x" name="test_c"><error message="">E   RuntimeError: boom
</error></testcase>
<testcase classname="test_x" name="test_d"><failure message="AssertionError: at 0x7f11cd">tb</failure></testcase>
</testsuite></testsuites>"""


@pytest.mark.parametrize("reason, expected", [
    ("ArgumentError: kernel 'k': argument 'Z' is a float64 tensor: Apple GPUs have no fp64", "fp64"),
    ("CompilationError: atomic_cas on u64 is not supported: Metal atomics work on 32-bit", "64-bit atomics"),
    ("CompilationError: atomic add on i64 is not supported", "64-bit atomics"),
    ("CompilationError: converting between pointers and integers is not supported", "integer-to-pointer"),
    ("bfloat16 is not supported in the interpreter", "Triton's interpreter"),
    ("Only for cuda or HIP", "NVIDIA or AMD"),
    ("Requires compute capability >= 9 for NV", "NVIDIA or AMD"),
    ("KeyError: 'ttir'", "compiler output"),
    ("Skipped due to insufficient shared memory on this GPU.", "threadgroup memory"),
    ("CompilationError: tl.full's shape must be compile-time integers", "other"),
])
def test_report_categories(reason, expected):
    assert expected in report.category(reason)


def test_report_counts_and_groups():
    found = report.outcomes(JUNIT)
    assert [o.test_id for o in found][:1] == ["test_x.py::test_a[1]"]
    assert found[3].test_id == "test_x.py::TestC::test_b" and found[3].reason == "needs CUDA"
    assert found[1].reason == "triton_metal.errors.CompilationError: no such op"
    assert found[4].status == report.ERROR and found[4].reason == "RuntimeError: boom"
    assert report.counts(found) == report.Counts(collected=6, passed=1, failed=3, skipped=1, errors=1)
    assert report.grouped(found, (report.FAILED,))[0] == ("AssertionError: at 0x…", 2)
    lines = report.failure_list(found).splitlines()
    assert len(lines) == 4 and lines[0].startswith("test_x.py::test_a[2]\t")


SMALL_TRITON_FILE = '''
import pytest
import torch
import triton
import triton.language as tl
from triton._internal_testing import is_interpreter, numpy_random, to_triton, to_numpy


@triton.jit
def copy(x, y, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(y + offs, tl.load(x + offs) + 1)


@pytest.mark.parametrize("dtype", ["uint8", "int32", "float32"])
def test_copy(dtype, device):
    x = numpy_random(16, dtype)
    y = to_triton(x * 0, device)
    copy[(1,)](to_triton(x, device), y, 16)
    assert (to_numpy(y) == x + 1).all()


def test_interpreter_flag():
    assert is_interpreter()


def test_needs_cuda():
    pytest.skip("Only for cuda")
'''


def test_runner_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    test_file = tmp_path / "test_small.py"
    test_file.write_text(textwrap.dedent(SMALL_TRITON_FILE))
    failures = tmp_path / "out" / "failures.txt"
    status = runner.main([str(test_file), "--backend", "interpreter", "--failures", str(failures), "-p", "no:xdist"])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert "test_small.py on the interpreter: collected 5, passed 4, failed 0, errors 0, skipped 1" in printed
    assert "Only for cuda" in printed and failures.read_text() == ""
    # one test function, every parametrization of it
    status = runner.main([str(test_file), "--test", "test_copy", "-p", "no:xdist"])
    assert "collected 3, passed 3," in capsys.readouterr().out


def test_runner_samples_are_disjoint(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    # --suite-every 2 from offsets 0 and 1: the five tests split 3 and 2, none run twice
    test_file = tmp_path / "test_small.py"
    test_file.write_text(textwrap.dedent(SMALL_TRITON_FILE))
    ran = []
    for offset, counts in (("0", "collected 3, passed 2, failed 0, errors 0, skipped 1"),
                           ("1", "collected 2, passed 2, failed 0, errors 0, skipped 0")):
        xml = tmp_path / f"sample{offset}.xml"
        status = runner.main([str(test_file), "--suite-every", "2", "--suite-offset", offset,
                              "--junitxml", str(xml), "-p", "no:xdist"])
        assert status == 0 and counts in capsys.readouterr().out
        ran.append({case.get("name") for case in ElementTree.parse(xml).iter("testcase")})
    assert not ran[0] & ran[1] and len(ran[0] | ran[1]) == 5


def test_runner_environment():
    env = runner.backend_environment({"TRITON_INTERPRET": "1", "KEEP": "x"}, "emulator", "apple7:3.1")
    assert "TRITON_INTERPRET" not in env and env["KEEP"] == "x" and env["TRITON_METAL_TARGET"] == "apple7:3.1"
    env = runner.backend_environment({}, "interpreter", None)
    assert env["TRITON_METAL_INTERPRET"] == env["TRITON_INTERPRET"] == "1"


def test_mxfp4_codes_round_to_nearest_even_and_clamp():
    from triton_metal.tools.mxfp import MXFP4Tensor

    codes = torch.arange(16, dtype=torch.uint8)
    tensor = MXFP4Tensor(size=(16,))
    tensor.data = codes
    magnitudes = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]  # E2M1 (OCP MX spec)
    expected = torch.tensor(magnitudes + [-m for m in magnitudes])
    assert torch.equal(tensor.to(torch.float32), expected)
    assert torch.equal(MXFP4Tensor(expected).data, codes)  # exact values keep their codes
    # ties go to the even code; beyond 6 (and Inf, NaN) clamp with the sign kept
    values = torch.tensor([0.25, 0.75, 2.5, 5.0, 1.2, 7.0, float("inf"), -float("inf"), -0.0, -0.3])
    decoded = MXFP4Tensor(values).to(torch.float32)
    assert decoded.tolist() == [0.0, 1.0, 2.0, 4.0, 1.0, 6.0, 6.0, -6.0, -0.0, -0.5]


@pytest.mark.parametrize("shape, dim", [((4, 6), 0), ((4, 6), 1), ((5, 3), 0), ((3, 5), 1)])
def test_mxfp4_packing_round_trip(shape, dim):
    from triton_metal.tools.mxfp import MXFP4Tensor

    tensor = MXFP4Tensor(size=shape).random()
    packed = tensor.to_packed_tensor(dim)
    assert packed.shape[dim] == (shape[dim] + 1) // 2 and packed.dtype == torch.uint8
    first = packed.select(dim, 0) & 0xF  # element 0 along dim sits in the low nibble
    assert torch.equal(first, tensor.data.select(dim, 0))
    assert torch.equal(tensor.unpack_packed_tensor(packed, dim, shape), tensor.data)
    with pytest.raises(AssertionError):
        tensor.to_packed_tensor(2)


def test_e8m0_scales():
    from triton_metal.tools.mxfp import MXScaleTensor

    scales = MXScaleTensor(torch.tensor([1.0, 0.75, 3.0, 2.0**-127, 0.0, -1.0, float("nan")]))
    assert scales.data.tolist() == [127, 126, 128, 0, 255, 255, 255]
    values = scales.to(torch.float32)
    assert values[:4].tolist() == [1.0, 0.5, 2.0, 2.0**-127] and torch.isnan(values[4:]).all()
    drawn = MXScaleTensor(size=(1000,)).random(low=0.5, high=8.0).data
    assert int(drawn.min()) >= 126 and int(drawn.max()) <= 130


KERNEL_TEXT = '''
@triton.jit
def twice(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)
'''


def test_plugin_exec_keeps_kernel_source_readable(host_backend):
    # as Triton's `patch_kernel` does under the interpreter: a kernel defined by exec of text
    from triton_metal.tools.triton_suite.plugin import exec_with_source

    namespace: dict[str, object] = {}
    exec_with_source(KERNEL_TEXT, {"triton": triton, "tl": tl}, namespace)
    kernel = namespace["twice"]
    assert "tl.load(x_ptr + offs) * 2" in kernel.src
    x = torch.arange(8, dtype=torch.float32)
    kernel[(1,)](x, BLOCK=8)
    np.testing.assert_array_equal(x.numpy(), np.arange(8) * 2)


def test_plugin_exec_without_namespaces_uses_the_callers():
    from triton_metal.tools.triton_suite.plugin import exec_with_source

    local_value = 41
    found: dict[str, int] = {}
    exec_with_source("found['v'] = local_value + 1")
    assert found == {"v": 42} and local_value == 41


def test_jit_repr_hook_names_the_compiled_kernel():
    # Triton's `repr=`: the hook sees the parameters' signature types and compile-time values
    seen = []

    def name_of(specialization):
        seen.append(specialization)
        return "k_" + "_".join(f"{k}{v}" for k, v in specialization.signature.items())

    @triton.jit(repr=name_of)
    def kernel(value, is_one, x_ptr, BLOCK: tl.constexpr):
        pass

    x = torch.zeros(4)
    for value, expected in ((-1, "i32"), (2**31, "i64"), (2**63, "u64")):
        compiled = kernel.warmup(value, 1, x, 8, grid=(1,))
        assert compiled.name == f"k_value{expected}_is_oneconstexpr_x_ptr*fp32_BLOCKconstexpr"
    assert seen[-1].constants == {"is_one": 1, "BLOCK": 8}
    assert kernel.warmup(3, 2, x, 8, grid=(1,)).name.startswith("k_valuei32_is_onei32_")


@triton.jit
def _tuple_constexpr_element(out_ptr, pair):
    for _ in range(1):
        tl.static_assert(pair[1] == 3)  # a compile-time element of a tuple argument
    tl.store(out_ptr, pair[0] + pair[1])


def test_compile_time_element_of_a_tuple_argument(host_backend):
    out = torch.zeros(1, dtype=torch.int32)
    _tuple_constexpr_element[(1,)](out, (8, tl.constexpr(3)))
    assert out.item() == 11


@triton.jit
def _finite_or_lgamma(x_ptr, out_ptr, LGAMMA: tl.constexpr):
    offs = tl.arange(0, 8)
    x = tl.load(x_ptr + offs)
    if LGAMMA:
        y = tl.extra.libdevice.lgamma(x)  # MSL has no lgamma: refused only if compiled
    else:
        y = tl.extra.libdevice.finitef(x)
    tl.store(out_ptr + offs, y)


def test_a_refused_function_in_a_compile_time_dead_branch(host_backend):
    from triton_metal.errors import UnsupportedLanguageConstruct

    x = torch.tensor([1.0, -1.0, 0.0, -0.0, float("inf"), -float("inf"), float("nan"), 2.0])
    out = torch.zeros(8, dtype=torch.bool)
    _finite_or_lgamma[(1,)](x, out, LGAMMA=False)
    assert out.tolist() == [True, True, True, True, False, False, False, True]
    with pytest.raises(UnsupportedLanguageConstruct, match="libdevice.lgamma: the Metal standard library has no such"):
        _finite_or_lgamma[(1,)](x, out, LGAMMA=True)


@triton.jit
def _literal_types(out_ptr, C: tl.constexpr):
    tl.static_assert(C.type == (3).type)  # Triton's constexpr_type: equal when the values are
    tl.static_assert(C.type != (4).type)
    v = C  # a plain assignment makes a tensor
    tl.static_assert(v.type == tl.int32)
    tl.store(out_ptr, v)


def test_type_of_a_compile_time_value(host_backend):
    out = torch.zeros(1, dtype=torch.int32)
    _literal_types[(1,)](out, 3)
    assert out.item() == 3
    with pytest.raises(triton.CompilationError, match="static_assert"):
        _literal_types[(1,)](out, 5)


@triton.jit
def _tuple_types(out_ptr, SHAPE: tl.constexpr):
    declared: tl.constexpr = (5, 6, 7)
    # Triton's tuple_type: the elements' types, a literal's being constexpr_types
    tl.static_assert(declared.type == ((5, 6, 7)).type)
    tl.static_assert(SHAPE.type == ((5, 6, 7)).type)
    tl.static_assert(SHAPE.type == tl.tuple_type([(5).type, (6).type, (7).type]))
    tl.static_assert(((5, 6)).type != ((5, 7)).type)
    pair = (tl.load(out_ptr), tl.load(out_ptr + 1).to(tl.float32))
    tl.static_assert(pair.type == tl.tuple_type([tl.int32, tl.float32]))
    tl.static_assert(len(pair.type) == 2 and pair.type[1] == tl.float32)
    tl.store(out_ptr, pair[0] + SHAPE[0] * 100 + SHAPE[1] * 10 + SHAPE[2])


def test_type_of_a_tuple(host_backend):
    # Triton's test_constexpr_assignment: `((5, 6, 7)).type` of a literal, a constexpr parameter
    # and a name declared `tl.constexpr` are one tuple_type
    out = torch.tensor([1, 2], dtype=torch.int32)
    _tuple_types[(1,)](out, (5, 6, 7))
    assert out.tolist() == [568, 2]
    with pytest.raises(triton.CompilationError, match="static_assert"):
        _tuple_types[(1,)](out, (5, 6, 8))
    assert tl.tuple_type([tl.int32]) != tl.tuple_type([tl.int32], ["x"])  # a named tuple's fields count


@triton.jit
def _static_prints(x_ptr, BLOCK: tl.constexpr, TAG: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.static_print("", x, tl.sum(x, axis=0), TAG)
    tl.store(x_ptr + tl.arange(0, BLOCK), x + 1)


def test_static_print_shows_tensors_as_triton_once(host_backend, capfd):
    # Triton's str(tensor): the dtype's name and the shape's constexprs (test_print's static
    # case); the interpreter prints it when the body runs, not again in its legality compile
    tag = str(uuid.uuid4())  # a new variant: the compile is not read from the disk cache
    x = torch.zeros(8, dtype=torch.int16)
    _static_prints[(1,)](x, BLOCK=8, TAG=tag)
    # (tl.sum of int16 values is int32, as in Triton)
    assert capfd.readouterr().out.splitlines() == [f" int16[constexpr[8]] int32[] {tag}"]
    assert x.tolist() == [1] * 8
