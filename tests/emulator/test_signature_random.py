"""Random `metal_kernel` calls: our source equals MLX's, or we refuse what MLX writes wrong.

Hypothesis draws inputs (dtype, shape), outputs, templates, a body mentioning random attributes
and shape/strides/ndim names, and a header. For each call either `build_kernel_source` returns
exactly the text MLX prints, or it raises `LaunchError` and MLX's text is indeed one Metal would
reject (a parameter list closed twice, or two parameters with one name).
"""

from __future__ import annotations

import re

import mlx.core as mx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triton_metal.backends.emulator.signature import (
    METAL_ATTRIBUTES,
    InputSpec,
    OutputSpec,
    build_kernel_source,
)
from triton_metal.errors import LaunchError

try:  # imported as part of a test package or as a top-level module, depending on the layout
    from .mlx_capture import MLX_SANITIZES_MINUS, mlx_kernel_source
    from .test_signature import MX_TYPES
except ImportError:
    from mlx_capture import MLX_SANITIZES_MINUS, mlx_kernel_source  # type: ignore[no-redef]
    from test_signature import MX_TYPES  # type: ignore[no-redef]

DTYPES = list(MX_TYPES)
ATOMIC_DTYPES = [mx.float32, mx.int32, mx.uint32]
NAMES = ["a", "b", "x", "inp", "w", "out", "y", "acc", "idx", "v", "p", "q"]
# Names that can clash: with an attribute the body mentions, or with `a`'s shape parameter.
CLASHING_NAMES = ["grid_size", "a_shape"]
SHAPES = [(), (1,), (3,), (7,), (8,), (2, 3), (4, 4), (0,), (2, 2, 2), (64,)]
ATTRS = [a for a, _ in METAL_ATTRIBUTES]
# Negative template arguments only where MLX names them as we do (see MLX_SANITIZES_MINUS).
INT_MIN = -(2**31) if MLX_SANITIZES_MINUS else 0


@st.composite
def calls(draw: st.DrawFn) -> dict[str, object]:
    n_in = draw(st.integers(0, 4))
    n_out = draw(st.integers(1, 3))
    pool = NAMES + CLASHING_NAMES if draw(st.integers(0, 9)) == 0 else NAMES
    names = draw(st.lists(st.sampled_from(pool), min_size=n_in + n_out, max_size=n_in + n_out, unique=True))
    atomic = draw(st.booleans())
    inputs = [(names[i], draw(st.sampled_from(SHAPES)), draw(st.sampled_from(DTYPES))) for i in range(n_in)]
    outputs = [(names[n_in + j], draw(st.sampled_from(ATOMIC_DTYPES if atomic else DTYPES))) for j in range(n_out)]
    words = [*ATTRS, *(f"{n}{s}" for n in NAMES for s in ("_shape", "_strides", "_ndim"))]
    body = "\n".join(draw(st.lists(st.sampled_from(words), max_size=6)))
    header = draw(st.sampled_from(["", "// x_shape thread_position_in_grid\n", "#define K 4\n"]))
    template = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["T", "N", "B", "U"]),
                st.one_of(st.integers(INT_MIN, 2**31 - 1), st.booleans(), st.sampled_from(DTYPES)),
            ),
            max_size=3,
            unique_by=lambda t: t[0],
        )
    )
    return {"inputs": inputs, "outputs": outputs, "body": body, "header": header,
            "template": template, "atomic": atomic}


def declared_names(text: str) -> list[str]:
    return re.findall(r"^  [^\n]*? (\w+) \[\[", text, re.MULTILINE)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(call=calls())
def test_random_calls_match_mlx(call: dict[str, object]) -> None:
    inputs: list[tuple[str, tuple[int, ...], mx.Dtype]] = call["inputs"]  # type: ignore[assignment]
    outputs: list[tuple[str, mx.Dtype]] = call["outputs"]  # type: ignore[assignment]
    template: list[tuple[str, object]] = call["template"]  # type: ignore[assignment]
    arrays = [mx.zeros(shape, dtype=dtype) for _, shape, dtype in inputs]
    mlx_text = mlx_kernel_source(
        "rnd", [n for n, _, _ in inputs], [n for n, _ in outputs], str(call["body"]), arrays,
        [d for _, d in outputs], header=str(call["header"]), template=template,  # type: ignore[arg-type]
        atomic_outputs=bool(call["atomic"]),
    )
    try:
        ours = build_kernel_source(
            "rnd",
            [InputSpec(n, MX_TYPES[a.dtype], a.ndim, a.size) for (n, _, _), a in zip(inputs, arrays)],
            [OutputSpec(n, MX_TYPES[d]) for n, d in outputs],
            str(call["body"]),
            header=str(call["header"]),
            template=[(n, MX_TYPES[v] if isinstance(v, mx.Dtype) else v) for n, v in template],  # type: ignore[misc]
            atomic_outputs=bool(call["atomic"]),
        )
    except LaunchError as refusal:
        names = declared_names(mlx_text)
        closed_twice = mlx_text.count(") {\n") > 1
        duplicated = len(names) != len(set(names))
        assert closed_twice or duplicated, f"refused ({refusal}) although MLX wrote:\n{mlx_text}"
        return
    assert ours.text == mlx_text
