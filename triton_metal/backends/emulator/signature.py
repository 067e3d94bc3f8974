"""The full kernel source that `mx.fast.metal_kernel` would hand to the Metal compiler.

`mx.fast.metal_kernel` receives only a kernel body; MLX writes the rest (its `write_signature`,
`write_template` and kernel naming). The emulator must compile exactly that text, so this module
reproduces MLX's rules character for character:

- the `header`, verbatim, comes first;
- with template arguments, `template <int N, bool B, typename T>` in argument order;
- `[[kernel]] void <kernel name>(` then one parameter per line, indented by two spaces:
  each input as `const <space> <type><ref> <name> [[buffer(i)]]`, where `<space>` is `constant`
  for inputs of fewer than 8 elements and `device` otherwise and `<ref>` is `&` for 0-d inputs
  and `*` otherwise; after an input with `ndim > 0`, `<name>_shape`, `<name>_strides` and
  `<name>_ndim` parameters when that exact substring occurs in the body (never the header);
  each output as `device <type>*` (`device atomic<type>*` for all outputs with
  `atomic_outputs`); then each of Metal's 20 thread-position attributes whose name occurs in the
  body as a substring, in MLX's fixed order, typed `uint` or `uint3`;
- the body, verbatim, then `\\n}\\n`;
- with template arguments, an explicit instantiation
  `template [[host_name("<name>")]] [[kernel]] decltype(<name><args>) <name><args>;`.

The kernel name is `custom_kernel_` + name, then `_` + the template hash (the instantiation text
`<float, 4, 1>` with `<`, `>`, `", "` and `-` turned into `_`, last character dropped), then per
input `_<type>` plus `s` (0-d) or `c` (fewer than 8 elements), then per output `_<type>`.

Where MLX would produce text that Metal cannot compile, this module refuses with a `LaunchError`
that says why, instead of letting the emulator fail later with a confusing C++ diagnostic:
float64 (`double`) anywhere, names that are not identifiers, two parameters with one name (an
input named like an attribute the body uses, `x` next to `x_shape`, ...), atomic outputs of types
Metal has no atomics for, and MLX's comma bug (a body with no attribute, a shape/strides/ndim
parameter and two or more outputs closes the parameter list early; see `_check_comma_bug`).

`text` does not contain MLX's `metal::utils()` preamble (`#include <metal_stdlib>`,
`using namespace metal;`, the `float16_t`/`bfloat16_t` typedefs, ...), which MLX prepends only at
library-build time and never prints: whoever compiles `text` supplies an equivalent prelude.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass

from triton_metal.errors import LaunchError

MAX_CONSTANT_ARRAY_SIZE = 8
"""Inputs with fewer elements than this are passed in the `constant` address space."""

METAL_ATTRIBUTES: tuple[tuple[str, str], ...] = (
    ("dispatch_quadgroups_per_threadgroup", "uint"),
    ("dispatch_simdgroups_per_threadgroup", "uint"),
    ("dispatch_threads_per_threadgroup", "uint3"),
    ("grid_origin", "uint3"),
    ("grid_size", "uint3"),
    ("quadgroup_index_in_threadgroup", "uint"),
    ("quadgroups_per_threadgroup", "uint"),
    ("simdgroup_index_in_threadgroup", "uint"),
    ("simdgroups_per_threadgroup", "uint"),
    ("thread_execution_width", "uint"),
    ("thread_index_in_quadgroup", "uint"),
    ("thread_index_in_simdgroup", "uint"),
    ("thread_index_in_threadgroup", "uint"),
    ("thread_position_in_grid", "uint3"),
    ("thread_position_in_threadgroup", "uint3"),
    ("threadgroup_position_in_grid", "uint3"),
    ("threadgroups_per_grid", "uint3"),
    ("threads_per_grid", "uint3"),
    ("threads_per_simdgroup", "uint"),
    ("threads_per_threadgroup", "uint3"),
)
"""The attributes MLX detects in a body, with their parameter types, in MLX's order."""

TYPE_STRINGS: dict[str, str] = {
    "bool": "bool",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "float16": "float16_t",
    "bfloat16": "bfloat16_t",
    "float32": "float",
    "float64": "double",
    "complex64": "complex64_t",
}
"""MLX dtype name -> the type string MLX writes into kernel sources (its `get_type_string`)."""

_METAL_TYPES = frozenset(TYPE_STRINGS.values()) - {"double"}
# Metal atomics exist for int, uint, bool and float (and 64-bit unsigned min/max on recent chips);
# `atomic<half>` and friends do not compile.
_ATOMIC_TYPES = frozenset({"int32_t", "uint32_t", "bool", "float", "uint64_t"})
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME_FRAGMENT = re.compile(r"[A-Za-z0-9_]*")
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


class ParamKind(str, enum.Enum):
    """What a kernel parameter carries; the values are the strings of the source contract."""

    INPUT = "input"
    SHAPE = "shape"
    STRIDES = "strides"
    NDIM = "ndim"
    OUTPUT = "output"
    ATTRIBUTE = "attribute"


@dataclass(frozen=True)
class InputSpec:
    """One input array as MLX sees it at call time."""

    name: str
    dtype: str
    """MLX type string: "float", "float16_t", "int32_t", "bool", ..."""
    ndim: int
    size: int
    """Number of elements (decides `constant` against `device`)."""


@dataclass(frozen=True)
class OutputSpec:
    """One output array (always freshly allocated and row-contiguous)."""

    name: str
    dtype: str


@dataclass(frozen=True)
class Param:
    """One parameter of the generated kernel, in declaration order."""

    kind: ParamKind
    ctype: str
    """The declared type as written: "const constant float16_t&", "device atomic<int32_t>*", "uint3"."""
    name: str
    buffer: int | None
    """`[[buffer(i)]]` index for inputs, shape/strides/ndim and outputs; None for attributes."""
    attribute: str | None
    """The `[[attribute]]` name for attributes (equal to `name`); None otherwise."""
    element: str
    """Element type: the array's type string, "int" (shape, ndim), "int64_t" (strides), "uint"/"uint3"."""
    arg: int | None
    """Index into `inputs` (input, shape, strides, ndim) or `outputs` (output); None for attributes."""
    by_reference: bool = False
    """True for `&` parameters (0-d inputs and `_ndim`): the kernel sees a value, not a pointer."""


@dataclass(frozen=True)
class KernelSource:
    """The complete source of one kernel, as MLX prints it with `verbose=True`."""

    kernel_name: str
    text: str
    params: tuple[Param, ...]
    instance: str
    """C++ expression naming the function to call: `kernel_name`, or `kernel_name<args>` if templated."""
    body_line: int
    """1-based line of `text` on which the body starts (to map compiler diagnostics back)."""


def type_string(dtype_name: str) -> str:
    """The type string MLX writes for a dtype named as MLX or NumPy name it ("float32" -> "float")."""
    try:
        return TYPE_STRINGS[dtype_name]
    except KeyError:
        known = ", ".join(TYPE_STRINGS)
        raise LaunchError(f"no Metal type for dtype '{dtype_name}' (known: {known})") from None


def build_kernel_source(
    name: str,
    inputs: Sequence[InputSpec],
    outputs: Sequence[OutputSpec],
    source: str,
    header: str = "",
    template: Sequence[tuple[str, bool | int | str]] = (),
    atomic_outputs: bool = False,
) -> KernelSource:
    """Write the source MLX would generate for this `metal_kernel` call, or refuse (module doc)."""
    _check_specs(name, inputs, outputs, atomic_outputs)
    instantiation = _template_instantiation(template)
    kernel_name = _kernel_name(name, inputs, outputs, instantiation)
    params = _params(inputs, outputs, source, atomic_outputs)
    _check_unique_names(params)
    _check_comma_bug(inputs, outputs, params)

    pieces: list[str] = [header]
    if template:
        pieces.append(_template_declaration(template))
    pieces.append(f"[[kernel]] void {kernel_name}(\n")
    pieces.append(",\n".join(_declare(p) for p in params))
    pieces.append(") {\n")
    body_line = "".join(pieces).count("\n") + 1
    pieces.append(source)
    pieces.append("\n}\n")
    instance = kernel_name
    if template:
        instance = kernel_name + instantiation
        pieces.append(
            f'\ntemplate [[host_name("{kernel_name}")]] [[kernel]] '
            f"decltype({instance}) {instance};\n"
        )
    return KernelSource(kernel_name, "".join(pieces), params, instance, body_line)


def _declare(param: Param) -> str:
    if param.kind is ParamKind.ATTRIBUTE:
        return f"  {param.ctype} {param.name} [[{param.attribute}]]"
    return f"  {param.ctype} {param.name} [[buffer({param.buffer})]]"


def _params(
    inputs: Sequence[InputSpec], outputs: Sequence[OutputSpec], source: str, atomic_outputs: bool
) -> tuple[Param, ...]:
    params: list[Param] = []
    buffer = 0
    for i, spec in enumerate(inputs):
        space = "constant" if spec.size < MAX_CONSTANT_ARRAY_SIZE else "device"
        ref = "&" if spec.ndim == 0 else "*"
        ctype = f"const {space} {spec.dtype}{ref}"
        params.append(Param(ParamKind.INPUT, ctype, spec.name, buffer, None, spec.dtype, i, ref == "&"))
        buffer += 1
        if spec.ndim == 0:
            # MLX adds no shape parameters for 0-d inputs, even when the body names them.
            continue
        extras = (
            (ParamKind.SHAPE, "_shape", "const constant int*", "int", False),
            (ParamKind.STRIDES, "_strides", "const constant int64_t*", "int64_t", False),
            (ParamKind.NDIM, "_ndim", "const constant int&", "int", True),
        )
        for kind, suffix, extra_ctype, element, by_ref in extras:
            if spec.name + suffix in source:
                params.append(Param(kind, extra_ctype, spec.name + suffix, buffer, None, element, i, by_ref))
                buffer += 1
    for i, out in enumerate(outputs):
        element = f"atomic<{out.dtype}>" if atomic_outputs else out.dtype
        params.append(Param(ParamKind.OUTPUT, f"device {element}*", out.name, buffer, None, out.dtype, i))
        buffer += 1
    for attr, attr_type in METAL_ATTRIBUTES:
        if attr in source:
            params.append(Param(ParamKind.ATTRIBUTE, attr_type, attr, None, attr, attr_type, None))
    return tuple(params)


def _kernel_name(
    name: str, inputs: Sequence[InputSpec], outputs: Sequence[OutputSpec], instantiation: str
) -> str:
    kernel_name = "custom_kernel_" + name
    if instantiation:
        # MLX replaces `<`, `>`, `", "` (and, since 0.32.4, `-`) by `_` and drops the last `_`.
        template_hash = re.sub(r"<|>|, |-", "_", instantiation)[:-1]
        kernel_name += "_" + template_hash
    for spec in inputs:
        suffix = "s" if spec.ndim == 0 else "c" if spec.size < MAX_CONSTANT_ARRAY_SIZE else ""
        kernel_name += f"_{spec.dtype}{suffix}"
    for out in outputs:
        kernel_name += f"_{out.dtype}"
    return kernel_name


def _template_declaration(template: Sequence[tuple[str, bool | int | str]]) -> str:
    kinds = []
    for arg_name, value in template:
        # bool before int: `True` is an int in Python, but MLX's binding tests bool first.
        kind = "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else "typename"
        kinds.append(f"{kind} {arg_name}")
    return "template <" + ", ".join(kinds) + ">\n"


def _template_instantiation(template: Sequence[tuple[str, bool | int | str]]) -> str:
    """`<float, 4, 1>` for the template arguments (bools print as 1/0), or "" without any."""
    if not template:
        return ""
    seen: set[str] = set()
    rendered: list[str] = []
    for arg_name, value in template:
        if not _IDENTIFIER.fullmatch(arg_name) or arg_name in seen:
            raise LaunchError(f"template argument name {arg_name!r} is not a new C++ identifier")
        seen.add(arg_name)
        if isinstance(value, bool):
            rendered.append("1" if value else "0")
        elif isinstance(value, int):
            if not _INT32_MIN <= value <= _INT32_MAX:
                raise LaunchError(f"template argument {arg_name}={value} does not fit in a 32-bit int")
            rendered.append(str(value))
        elif isinstance(value, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            _check_type(value, f"template argument {arg_name}")
            rendered.append(value)
        else:
            raise LaunchError(
                f"template argument {arg_name}={value!r}: expected a bool, an int or a type string"
            )
    return "<" + ", ".join(rendered) + ">"


def _check_type(dtype: str, what: str) -> None:
    if dtype == "double":
        raise LaunchError(f"{what} has type double (float64), which Metal does not support")
    if dtype not in _METAL_TYPES:
        known = ", ".join(sorted(_METAL_TYPES))
        raise LaunchError(f"{what} has type {dtype!r}, which is not an MLX type string ({known})")


def _check_specs(
    name: str, inputs: Sequence[InputSpec], outputs: Sequence[OutputSpec], atomic_outputs: bool
) -> None:
    if not _NAME_FRAGMENT.fullmatch(name):
        raise LaunchError(
            f"kernel name {name!r} cannot be part of a C++ identifier: use letters, digits and '_'"
        )
    if not outputs:
        raise LaunchError("a Metal kernel needs at least one output")
    for spec in inputs:
        if not _IDENTIFIER.fullmatch(spec.name):
            raise LaunchError(f"input name {spec.name!r} is not a C++ identifier")
        _check_type(spec.dtype, f"input '{spec.name}'")
        if spec.ndim < 0 or spec.size < 0 or (spec.ndim == 0 and spec.size != 1):
            raise LaunchError(f"input '{spec.name}': impossible shape (ndim={spec.ndim}, size={spec.size})")
    for out in outputs:
        if not _IDENTIFIER.fullmatch(out.name):
            raise LaunchError(f"output name {out.name!r} is not a C++ identifier")
        _check_type(out.dtype, f"output '{out.name}'")
        if atomic_outputs and out.dtype not in _ATOMIC_TYPES:
            allowed = ", ".join(sorted(_ATOMIC_TYPES))
            raise LaunchError(
                f"output '{out.name}' is atomic<{out.dtype}>, which Metal does not have "
                f"(atomic outputs may be {allowed})"
            )


def _check_unique_names(params: Sequence[Param]) -> None:
    seen: dict[str, Param] = {}
    for param in params:
        if param.name in seen:
            first = seen[param.name]
            raise LaunchError(
                f"the kernel would declare two parameters named '{param.name}' "
                f"(a {first.kind.value} and a {param.kind.value}); rename the array"
                + (
                    ": the body mentions the Metal attribute of the same name"
                    if ParamKind.ATTRIBUTE in (first.kind, param.kind)
                    else ""
                )
            )
        seen[param.name] = param


def _check_comma_bug(
    inputs: Sequence[InputSpec], outputs: Sequence[OutputSpec], params: Sequence[Param]
) -> None:
    """Refuse what MLX's separator logic writes wrong.

    After each output MLX writes `",\\n"` if `index < len(inputs) + len(outputs) - 1` or the body
    uses an attribute, and `") {\\n"` otherwise; `index` is the buffer index, which also counts
    shape/strides/ndim parameters. With no attribute, such a parameter and two or more outputs,
    the list closes after an output that is not the last one, and Metal rejects the text.
    """
    if any(p.kind is ParamKind.ATTRIBUTE for p in params):
        return
    for param in params:
        if param.kind is not ParamKind.OUTPUT or param.arg == len(outputs) - 1:
            continue
        assert param.buffer is not None
        if param.buffer >= len(inputs) + len(outputs) - 1:
            raise LaunchError(
                f"MLX would write a broken signature: output '{param.name}' closes the parameter "
                "list because the body uses shape/strides/ndim parameters, several outputs and "
                "no Metal attribute; mention an attribute in the body (for example "
                "`(void)thread_position_in_grid;`)"
            )
