"""The complete MSL source of one compiled variant, written for `torch.mps.compile_shader`.

The code generator writes a kernel body for `mx.fast.metal_kernel` (`codegen/kernel.py`): a
pointer parameter is read through `<param>_in` and written through `<param>_out`, a runtime
scalar is read from `<param>_in`, the spread grid from `km_grid`. PyTorch compiles whole
sources instead, and binds a call's arguments by position (PyTorch's
`torch/csrc/mps/Module.cpp`, `_mps_MetalKernel.__call__`, and `MetalKernelFunction::setArg` in
`aten/src/ATen/native/mps/OperationUtils.mm`):

* argument `i` is bound to `[[buffer(i)]]`;
* a tensor is bound with `setBuffer(storage, offset = storage_offset * element_size)`: the
  kernel's pointer is the tensor's first element, so Triton's pointer meaning holds and writes
  land in the tensor;
* a Python `float` is written with `setBytes` as a 32-bit `float`, a Python `int` (and a
  `bool`, which is an int to pybind) as a 64-bit `long`; a list of ints as an array of `long`.

So this module declares one `[[buffer(i)]]` per non-constexpr kernel parameter the kernel uses
(an array it never reads nor writes takes none, as with `metal_kernel`, so no variant binds more
buffers here than Metal's limit checked on the MLX binding), in parameter order (the grid list
last, for a spread launch), typed as PyTorch writes it (`device T*` for
tensors, `constant long&` / `constant float&` for scalars, `constant long*` for the grid),
then binds the body's names to them at the top of the kernel: both `<param>_in` and
`<param>_out` are the one tensor (in place: no output rebinding), and scalars are converted to
the type the specialization gave them (`int32_t`, `int64_t`, `uint64_t` from the same 64 bits,
`bool`). The Metal attributes the body names are declared as MLX would declare them.

The prelude gives the body what MLX's preamble would: `metal_stdlib`, `using namespace metal`
and the `float16_t`/`bfloat16_t` names (`bfloat` needs MSL 3.1; PyTorch compiles with 3.1 on
macOS 14, 3.2 on macOS 15 and 4.0 on macOS 26, `MetalShaderLibrary::compileLibrary`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import LaunchError
from ..emulator.signature import METAL_ATTRIBUTES

PRELUDE = (
    "#include <metal_stdlib>\n"
    "using namespace metal;\n"
    "typedef half float16_t;\n"
    "typedef bfloat bfloat16_t;\n"
)

TENSOR, SCALAR, GRID = "tensor", "scalar", "grid"

INT_WIRE = "long"
"""The MSL type of a Python int (and bool) as PyTorch binds it: an int64_t."""
FLOAT_WIRE = "float"
"""The MSL type of a Python float as PyTorch binds it: a 32-bit float."""

_SCALAR_WIRES = {
    "bool": INT_WIRE, "int32_t": INT_WIRE, "int64_t": INT_WIRE, "uint64_t": INT_WIRE,
    "float": FLOAT_WIRE,
}


@dataclass(frozen=True)
class BufferArg:
    """One positional argument of the compiled kernel's call, bound to `[[buffer(index)]]`."""

    index: int
    role: str
    """"tensor", "scalar" or "grid"."""
    arg: int
    """The kernel argument that feeds it (-1 for the grid list)."""
    param: str
    wire: str
    """The MSL type PyTorch's binding writes: the element type for tensors, `long`/`float`."""
    dtype: str
    """The type the body expects (the element type, or the scalar's specialized type)."""
    written: bool = False
    """A tensor the kernel stores to or updates atomically."""


@dataclass(frozen=True)
class TorchKernelSource:
    """A variant as `compile_shader` takes it, and how a launch calls it."""

    function: str
    """The kernel function's name: `library.<function>(*args, threads=..., group_size=...)`."""
    text: str
    buffers: tuple[BufferArg, ...]
    threads_per_program: int
    spread: bool


def scalar_wire(dtype: str, param: str) -> str:
    wire = _SCALAR_WIRES.get(dtype)
    if wire is None:
        raise LaunchError(
            f"argument '{param}': a runtime scalar of type {dtype} has no PyTorch binding "
            "(compile_shader passes Python ints as long and floats as float)"
        )
    return wire


def build_source(msl: object, arg_names: Sequence[str]) -> TorchKernelSource:
    """The complete kernel source for a compiled `MSLKernel` (module docstring)."""
    index = {name: i for i, name in enumerate(arg_names)}
    metadata = getattr(msl, "metadata", {})
    grid_input = metadata.get("grid_input")
    buffers: list[BufferArg] = []
    aliases: list[str] = []
    for p in msl.params:  # type: ignore[attr-defined]
        if p.kind == "constexpr":
            continue
        if p.name not in index:
            raise LaunchError(f"compiled kernel parameter '{p.name}' is not a parameter of the kernel")
        slot = len(buffers)
        raw = f"tm_buf_{slot}"
        if p.kind == "scalar":
            wire = scalar_wire(p.dtype, p.name)
            buffers.append(BufferArg(slot, SCALAR, index[p.name], p.name, wire, p.dtype))
            for n in p.msl_inputs:
                aliases.append(f"  const {p.dtype} {n} = static_cast<{p.dtype}>({raw});")
            continue
        if not p.msl_inputs and not p.msl_outputs:
            continue  # an array the kernel never touches takes no buffer (as with metal_kernel)
        written = p.kind != "pointer_in"
        buffers.append(BufferArg(slot, TENSOR, index[p.name], p.name, p.dtype, p.dtype, written))
        for n in p.msl_inputs:
            aliases.append(f"  const device {p.dtype}* {n} = {raw};")
        for n in p.msl_outputs:
            aliases.append(f"  device {p.dtype}* {n} = {raw};")
    if grid_input:
        slot = len(buffers)
        buffers.append(BufferArg(slot, GRID, -1, grid_input, INT_WIRE, "int32_t"))
        aliases.append(
            f"  const int {grid_input}[3] = {{int(tm_buf_{slot}[0]), int(tm_buf_{slot}[1]), "
            f"int(tm_buf_{slot}[2])}};"
        )
    body = msl.source  # type: ignore[attr-defined]
    params = [_declare(b) for b in buffers]
    params += [f"  {ty} {attr} [[{attr}]]" for attr, ty in METAL_ATTRIBUTES if attr in body]
    function = msl.name  # type: ignore[attr-defined]
    text = (
        PRELUDE
        + msl.header  # type: ignore[attr-defined]
        + f"\nkernel void {function}(\n"
        + ",\n".join(params)
        + ") {\n"
        + "".join(a + "\n" for a in aliases)
        + body
        + "\n}\n"
    )
    return TorchKernelSource(
        function, text, tuple(buffers), int(msl.threads_per_program), bool(grid_input)  # type: ignore[attr-defined]
    )


def _declare(b: BufferArg) -> str:
    if b.role == TENSOR:
        return f"  device {b.wire}* tm_buf_{b.index} [[buffer({b.index})]]"
    if b.role == GRID:
        return f"  constant {b.wire}* tm_buf_{b.index} [[buffer({b.index})]]"
    return f"  constant {b.wire}& tm_buf_{b.index} [[buffer({b.index})]]"
