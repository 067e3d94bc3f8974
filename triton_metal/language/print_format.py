"""The lines `tl.device_print` prints: Triton's format, shared by every backend that prints.

One line per element of each operand, in row-major order, operand after operand:

    pid (<x>, <y>, <z>) idx (<i>, <j>, ...)<prefix><value>
    pid (<x>, <y>, <z>) idx (<i>, ...)<prefix>(operand <k>) <value>     (several operands)
    pid (<x>, <y>, <z>) idx ()<prefix><value>                            (a scalar)
    pid (<x>, <y>, <z>)<prefix>                                          (no operand)

as Triton's GPU lowering of `tt.print` writes them (`PrintOpToLLVM.cpp`): each index padded to
the digits of its dimension, `ceil(log10(dim))`; floats as C's `%f`; integers in decimal as
their type's signedness says (`int1` prints 0 or 1); with `hex=True` an integer as `0x` and
its bit pattern in as many hex digits as the type has nibbles (an int1 as `0x0`/`0x1`), a float
as C's `%a` of its value (`0x1.8p+0`), as Triton's device printf formats it (its `test_print`
reads the values back with `float.fromhex`). Pointers print their byte address as `0x` and 16
hex digits. The prefix arrives already adjusted by the semantic layer (`munge_prefix`, Triton's
rule).

Values are NumPy arrays in the interpreter's storage: integers and floats as themselves, bf16
as float32 holding a bf16 value, pointers as uint64 addresses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_TL_TO_IR = {
    "int1": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "fp16": "f16", "bf16": "bf16", "fp32": "f32", "fp64": "f64",
}


def munge_prefix(prefix: str, has_args: bool) -> str:
    """Triton's adjustment of a print prefix: with arguments it ends in ": "; a prefix longer
    than two characters starts with a space."""
    if has_args and not prefix.endswith(" "):
        prefix += " "
    if has_args and not prefix.endswith(": "):
        prefix = prefix[:-1] + ": "
    if len(prefix) > 2 and not prefix.startswith(" "):
        prefix = " " + prefix
    return prefix


def type_code(tl_name: str) -> str:
    """A `tl` dtype name (`int32`, `fp16`, `pointer<fp32>`) -> the IR name (`i32`, `f16`, `ptr`)."""
    if tl_name.startswith("pointer"):
        return "ptr"
    return _TL_TO_IR[tl_name]


@dataclass(frozen=True)
class Operand:
    """One printed value: its type (IR name or "ptr"), shape (() for a scalar), row-major values."""

    type: str
    shape: tuple[int, ...]
    values: np.ndarray


def _bits(type_name: str) -> int:
    return 64 if type_name == "ptr" else int(type_name.lstrip("biuf"))


def c_hex_float(value: float) -> str:
    """C's `%a` of a float widened to double, as glibc spells it (what Triton's device printf
    gives): `0x1.8p+0`, `0x1.99999ap-4`, `-0x0p+0`, `inf`, `-nan`."""
    if math.isnan(value):
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    if math.isinf(value):
        return "-inf" if value < 0 else "inf"
    mantissa, exponent = value.hex().split("p")  # '0x1.8000000000000', '+0'
    return f"{mantissa.rstrip('0').rstrip('.')}p{exponent}"


_INT_BITS = {1: np.uint8, 8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _texts(op: Operand, hex_: bool) -> list[str]:
    """Each value of `op` as printed (from the arrays' own bits: NaN payloads survive)."""
    flat = np.asarray(op.values).reshape(-1)
    if op.type == "ptr":
        return [f"0x{v:016x}" for v in flat.astype(np.uint64).tolist()]
    is_float = op.type in ("f16", "bf16", "f32", "f64")
    if hex_ and is_float:
        return [c_hex_float(v) for v in flat.astype(np.float64).tolist()]
    if hex_:
        bits = flat.astype(_INT_BITS[_bits(op.type)])  # two's complement bits of its width
        digits = _bits(op.type) // 4
        return [f"0x{v:0{digits}x}" for v in bits.tolist()]
    if is_float:
        return [f"{v:f}" for v in flat.astype(np.float64).tolist()]
    return [str(int(v)) for v in flat.tolist()]


def _index_widths(shape: tuple[int, ...]) -> list[int]:
    return [math.ceil(math.log10(d)) if d > 0 else 0 for d in shape]


def print_lines(pid: Sequence[int], prefix: str, hex_: bool, operands: Sequence[Operand]) -> list[str]:
    """The lines of one `tl.device_print` executed by program `pid` (module docstring)."""
    head = f"pid ({pid[0]}, {pid[1]}, {pid[2]})"
    if not operands:
        return [head + prefix]
    lines: list[str] = []
    for k, op in enumerate(operands):
        tag = f"(operand {k}) " if len(operands) > 1 else ""
        widths = _index_widths(op.shape)
        texts = _texts(op, hex_)
        for n, idx in enumerate(np.ndindex(*op.shape) if op.shape else [()]):
            index = ", ".join(str(i).rjust(w) for i, w in zip(idx, widths))
            lines.append(f"{head} idx ({index}){prefix}{tag}{texts[n]}")
    return lines
