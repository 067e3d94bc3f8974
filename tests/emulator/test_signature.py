"""`build_kernel_source` against the source MLX itself generates on this machine.

Each case calls a real `mx.fast.metal_kernel` under export tracing with `verbose=True`, captures
what MLX prints (see `mlx_capture.py`) and compares the full text, character for character, with
ours. A change in MLX's generator therefore fails here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import mlx.core as mx
import pytest

from triton_metal.backends.emulator.signature import (
    METAL_ATTRIBUTES,
    InputSpec,
    KernelSource,
    OutputSpec,
    ParamKind,
    build_kernel_source,
    type_string,
)
from triton_metal.errors import LaunchError

try:  # imported as part of a test package or as a top-level module, depending on the layout
    from .mlx_capture import MLX_SANITIZES_MINUS, mlx_kernel_source
except ImportError:
    from mlx_capture import MLX_SANITIZES_MINUS, mlx_kernel_source  # type: ignore[no-redef]

# The type strings of MLX's `get_type_string`, written out independently of the module under test.
MX_TYPES: dict[mx.Dtype, str] = {
    mx.bool_: "bool",
    mx.uint8: "uint8_t",
    mx.uint16: "uint16_t",
    mx.uint32: "uint32_t",
    mx.uint64: "uint64_t",
    mx.int8: "int8_t",
    mx.int16: "int16_t",
    mx.int32: "int32_t",
    mx.int64: "int64_t",
    mx.float16: "float16_t",
    mx.bfloat16: "bfloat16_t",
    mx.float32: "float",
    mx.complex64: "complex64_t",
}


@dataclass
class Case:
    """One `metal_kernel` call: MLX's arguments, from which both sides build the source."""

    name: str
    inputs: dict[str, Callable[[], mx.array]]
    outputs: dict[str, mx.Dtype]
    source: str
    header: str = ""
    template: Sequence[tuple[str, bool | int | mx.Dtype]] = field(default_factory=list)
    atomic_outputs: bool = False


def arr(shape: tuple[int, ...], dtype: mx.Dtype = mx.float32) -> Callable[[], mx.array]:
    return lambda: mx.zeros(shape, dtype=dtype)


def ours(case: Case) -> KernelSource:
    arrays = {n: make() for n, make in case.inputs.items()}
    return build_kernel_source(
        case.name,
        [InputSpec(n, MX_TYPES[a.dtype], a.ndim, a.size) for n, a in arrays.items()],
        [OutputSpec(n, MX_TYPES[d]) for n, d in case.outputs.items()],
        case.source,
        header=case.header,
        template=[(n, MX_TYPES[v] if isinstance(v, mx.Dtype) else v) for n, v in case.template],
        atomic_outputs=case.atomic_outputs,
    )


def theirs(case: Case) -> str:
    return mlx_kernel_source(
        case.name,
        list(case.inputs),
        list(case.outputs),
        case.source,
        [make() for make in case.inputs.values()],
        list(case.outputs.values()),
        header=case.header,
        template=case.template,
        atomic_outputs=case.atomic_outputs,
    )


TID = "uint i = thread_position_in_grid.x;\n"
ALL_DTYPES = list(MX_TYPES)

CASES: list[Case] = [
    Case("vadd", {"a": arr((1024,)), "b": arr((1024,))}, {"out": mx.float32},
         TID + "out[i] = a[i] + b[i];"),
    Case("dtypes", {f"x{j}": arr((16,), d) for j, d in enumerate(ALL_DTYPES)},
         {f"y{j}": d for j, d in enumerate(ALL_DTYPES)}, TID),
    Case("sizes", {"big": arr((8,)), "small": arr((7,), mx.int32), "one": arr((1,)),
                   "mat": arr((2, 3), mx.float16), "empty": arr((0,)), "s_i": arr((), mx.int32),
                   "s_f": arr((), mx.float32), "s_b": arr((), mx.bool_), "s_l": arr((), mx.int64)},
         {"out": mx.float32}, TID),
    Case("shapes", {"a": arr((16, 16)), "b": arr((4,), mx.int32), "c": arr((), mx.int32),
                    "d": arr((3, 3, 3))},
         {"out": mx.float32},
         TID + "int n = a_shape[0] * a_strides[1] + b_ndim + c_shape + d_ndim + d_strides[0];"),
    Case("shapes_no_attr", {"a": arr((16, 16)), "b": arr((9,))}, {"out": mx.float32},
         "out[0] = a_shape[0] + a_ndim + b_strides[0];"),
    Case("prefix_names", {"x": arr((16,)), "x_2": arr((16,))}, {"out": mx.float32},
         TID + "out[i] = x_2_shape[0] + x_2_ndim;"),
    Case("three_outputs", {"a": arr((64,))}, {"o1": mx.float32, "o2": mx.int32, "o3": mx.float16},
         TID + "o1[i] = a[i]; o2[i] = a_shape[0]; o3[i] = a[i];"),
    Case("atomic", {"a": arr((64,))}, {"acc": mx.float32, "cnt": mx.int32, "hist": mx.uint32},
         TID + "atomic_fetch_add_explicit(&acc[0], a[i], memory_order_relaxed);",
         atomic_outputs=True),
    Case("templated", {"a": arr((64,), mx.float16), "n": arr((), mx.int32)}, {"out": mx.float16},
         TID + "out[i] = T(a[i]) * N;",
         template=[("T", mx.float32), ("N", 4), ("B", True), ("F", False), ("NEG", -3),
                   ("LO", -(2**31)), ("HI", 2**31 - 1), ("U", mx.uint8), ("H", mx.bfloat16)]),
    Case("template_one", {"a": arr((64,))}, {"out": mx.float32}, TID, template=[("BLOCK", 128)]),
    Case("all_attributes", {"a": arr((64,))}, {"out": mx.float32},
         "\n".join(f"(void){attr};" for attr, _ in reversed(METAL_ATTRIBUTES))),
    Case("substrings", {"a": arr((64,))}, {"out": mx.float32},
         "// my_grid_size_x and dispatch_threads_per_threadgroup in a comment\n" + TID),
    Case("header", {"x": arr((64,))}, {"out": mx.float32},
         TID + "out[i] = helper(x[i]);",
         header="#include <metal_simdgroup>\n"
                "template <typename T> T helper(T v) { return v; } // x_shape x_ndim\n"
                "// thread_index_in_simdgroup grid_origin\n"),
    Case("header_no_newline", {"x": arr((64,))}, {"out": mx.float32}, TID,
         header="constant int K = 3;"),
    Case("empty_body", {"x": arr((64,))}, {"out": mx.float32}, ""),
    Case("no_inputs", {}, {"out": mx.float32}, TID + "out[i] = 1.0f;"),
    Case("multiline_body", {"x": arr((64,))}, {"out": mx.float32},
         "\n  " + TID + "  if (i < 64) {\n    out[i] = x[i];\n  }\n"),
    Case("digits_9", {"x": arr((64,), mx.bfloat16)}, {"out": mx.bfloat16}, TID),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_source_matches_mlx(case: Case) -> None:
    negative = any(isinstance(v, int) and not isinstance(v, bool) and v < 0 for _, v in case.template)
    if negative and not MLX_SANITIZES_MINUS:
        pytest.skip(f"MLX {mx.__version__} keeps '-' of negative template arguments in kernel names")
    assert ours(case).text == theirs(case)


@pytest.mark.parametrize("attr", [a for a, _ in METAL_ATTRIBUTES])
def test_each_attribute_matches_mlx(attr: str) -> None:
    case = Case("attr", {"a": arr((64,))}, {"out": mx.float32}, f"(void){attr};")
    text = ours(case).text
    assert text == theirs(case)
    assert f" {attr} [[{attr}]]" in text


@pytest.mark.parametrize("atomic", [False, True])
@pytest.mark.parametrize("n_outputs", [1, 2, 3])
def test_shape_params_without_attribute(atomic: bool, n_outputs: int) -> None:
    """MLX's separator bug: broken text exactly when we refuse, identical text otherwise."""
    case = Case("commas", {"a": arr((64,)), "b": arr((3,))}, {f"o{j}": mx.float32 for j in range(n_outputs)},
                "o0[0] = a_shape[0];", atomic_outputs=atomic)
    mlx_text = theirs(case)
    if n_outputs == 1:
        assert ours(case).text == mlx_text
        return
    # MLX closes the parameter list before the last output and declares the rest in the body.
    assert "]]) {\n  device " in mlx_text
    assert mlx_text.count(") {\n") == 2
    with pytest.raises(LaunchError, match="broken signature"):
        ours(case)


def test_no_attribute_no_shape_several_outputs_is_fine() -> None:
    case = Case("commas_ok", {"a": arr((64,))}, {"o0": mx.float32, "o1": mx.float32}, "o0[0] = a[0];")
    assert ours(case).text == theirs(case)


def test_float64_refused_like_mlx() -> None:
    case = Case("f64", {"a": arr((64,), mx.float64)}, {"out": mx.float32}, TID)
    with pytest.raises(ValueError, match="float64"):
        theirs(case)
    with pytest.raises(LaunchError, match="double"):
        build_kernel_source("f64", [InputSpec("a", "double", 1, 64)], [OutputSpec("out", "float")], TID)
    with pytest.raises(LaunchError, match="double"):
        build_kernel_source("f64", [], [OutputSpec("out", "double")], TID)
    with pytest.raises(LaunchError, match="double"):
        build_kernel_source("f64", [], [OutputSpec("out", "float")], TID, template=[("T", "double")])


def test_parameter_name_clash_refused() -> None:
    """MLX declares `grid_size` twice (input and attribute); Metal rejects it, so do we."""
    case = Case("clash", {"grid_size": arr((64,))}, {"out": mx.float32}, TID + "out[i] = grid_size[i];")
    mlx_text = theirs(case)
    assert mlx_text.count("grid_size [[") == 2
    arrays = [InputSpec("grid_size", "float", 1, 64)]
    with pytest.raises(LaunchError, match="two parameters named 'grid_size'.*attribute"):
        build_kernel_source("clash", arrays, [OutputSpec("out", "float")], case.source)
    with pytest.raises(LaunchError, match="two parameters named 'x_shape'"):
        build_kernel_source(
            "clash", [InputSpec("x", "float", 1, 64), InputSpec("x_shape", "int32_t", 1, 2)],
            [OutputSpec("out", "float")], TID + "x_shape[0];",
        )
    with pytest.raises(LaunchError, match="two parameters named 'x'"):
        build_kernel_source("clash", [InputSpec("x", "float", 1, 64)], [OutputSpec("x", "float")], TID)


@pytest.mark.parametrize("dtype", ["float16_t", "bfloat16_t", "int8_t", "int64_t", "uint16_t"])
def test_atomic_output_without_metal_atomic_refused(dtype: str) -> None:
    with pytest.raises(LaunchError, match=f"atomic<{dtype}>"):
        build_kernel_source("at", [], [OutputSpec("out", dtype)], TID, atomic_outputs=True)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "a-b"}, "kernel name 'a-b'"),
        ({"name": "f.<locals>"}, "kernel name"),
        ({"inputs": [InputSpec("1x", "float", 1, 8)]}, "input name '1x'"),
        ({"outputs": [OutputSpec("o-1", "float")]}, "output name 'o-1'"),
        ({"outputs": []}, "at least one output"),
        ({"inputs": [InputSpec("x", "float32", 1, 8)]}, "not an MLX type string"),
        ({"inputs": [InputSpec("x", "float", 0, 4)]}, "impossible shape"),
        ({"template": [("N", 2**31)]}, "32-bit"),
        ({"template": [("N", 1), ("N", 2)]}, "not a new C\\+\\+ identifier"),
        ({"template": [("T", "half")]}, "not an MLX type string"),
        ({"template": [("X", 1.5)]}, "expected a bool, an int or a type string"),
    ],
)
def test_refusals(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {
        "name": "k", "inputs": [InputSpec("x", "float", 1, 8)], "outputs": [OutputSpec("out", "float")],
        "source": TID,
    }
    args.update(kwargs)
    with pytest.raises(LaunchError, match=message):
        build_kernel_source(**args)  # type: ignore[arg-type]


def test_mlx_does_not_sanitize_names() -> None:
    """MLX pastes the name into the identifier unchanged: Metal would fail, so we refuse early."""
    case = Case("a-b", {"x": arr((64,))}, {"out": mx.float32}, TID)
    assert "custom_kernel_a-b_float_float(" in theirs(case)


def test_params_describe_every_parameter() -> None:
    src = build_kernel_source(
        "k",
        [InputSpec("a", "float16_t", 2, 64), InputSpec("n", "int32_t", 0, 1), InputSpec("t", "float", 1, 4)],
        [OutputSpec("out", "float"), OutputSpec("cnt", "int32_t")],
        TID + "a_strides[0]; a_ndim; t_shape[0]; threadgroup_position_in_grid;",
        template=[("T", "float"), ("N", -2)],
    )
    got = [(p.kind, p.ctype, p.name, p.buffer, p.attribute, p.element, p.arg, p.by_reference) for p in src.params]
    K = ParamKind
    assert got == [
        (K.INPUT, "const device float16_t*", "a", 0, None, "float16_t", 0, False),
        (K.STRIDES, "const constant int64_t*", "a_strides", 1, None, "int64_t", 0, False),
        (K.NDIM, "const constant int&", "a_ndim", 2, None, "int", 0, True),
        (K.INPUT, "const constant int32_t&", "n", 3, None, "int32_t", 1, True),
        (K.INPUT, "const constant float*", "t", 4, None, "float", 2, False),
        (K.SHAPE, "const constant int*", "t_shape", 5, None, "int", 2, False),
        (K.OUTPUT, "device float*", "out", 6, None, "float", 0, False),
        (K.OUTPUT, "device int32_t*", "cnt", 7, None, "int32_t", 1, False),
        (K.ATTRIBUTE, "uint3", "thread_position_in_grid", None, "thread_position_in_grid", "uint3", None, False),
        (K.ATTRIBUTE, "uint3", "threadgroup_position_in_grid", None, "threadgroup_position_in_grid", "uint3",
         None, False),
    ]
    assert K.INPUT == "input" and K.ATTRIBUTE == "attribute"
    name = "custom_kernel_k__float__2_float16_t_int32_ts_floatc_float_int32_t"
    assert src.kernel_name == name
    assert src.instance == name + "<float, -2>"
    assert src.text.splitlines()[src.body_line - 1] == TID.rstrip("\n")


def test_body_line_with_header() -> None:
    header = "// one\n// two\n#define K 3\n"
    src = build_kernel_source("k", [], [OutputSpec("o", "float")], "BODY_FIRST_LINE;\nx;", header=header)
    assert src.text.splitlines()[src.body_line - 1] == "BODY_FIRST_LINE;"
    assert src.instance == src.kernel_name
    assert src.text.startswith(header + "[[kernel]] void ")


def test_type_string() -> None:
    assert type_string("float32") == "float"
    assert type_string("float16") == "float16_t"
    assert type_string("bfloat16") == "bfloat16_t"
    assert type_string("bool") == "bool"
    for dtype, expected in MX_TYPES.items():
        assert type_string(str(dtype).removeprefix("mlx.core.").rstrip("_")) == expected
    with pytest.raises(LaunchError, match="no Metal type"):
        type_string("float8")
