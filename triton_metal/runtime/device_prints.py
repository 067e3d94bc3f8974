"""What a compiled kernel's `tl.device_print`s printed on the emulator, as Triton's lines.

The generated MSL hands every printed element to the emulator runtime (`codegen/lower_control.py`:
inside `#ifdef TM_DEVICE_PRINT`, which only the emulator defines): one record per element with
the program id, the printing thread's count of prints passed so far (every thread of a program
passes the same prints in the same order, since control flow depends on program-uniform values
only), the site, the operand and the element's row-major index. The owner of each element
(replicas excluded) records it, so each element of each executed print appears once.

After the launch (also one that raised), `emit` sorts the records into the interpreter's order
(programs with x fastest, then y, then z; within a program the prints in execution order, each
operand's elements in row-major order) and writes the lines of `language.print_format` to
`sys.stdout` in one write: `redirect_stdout`, pytest's `capsys` and `capfd` all see them. So a
launch prints the same lines in the same order on the emulator as in the interpreter, and the
lines of one program are never interleaved with another's (or with another launch's: the write
happens under one lock).

At most `TRITON_METAL_EMULATOR_PRINT_LIMIT` records (default 1,048,576) are kept per launch;
past that the records that arrive later are dropped, the launch prints those prints whose
elements were all kept and warns how many elements went unprinted.
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..backends.emulator.kernel import PrintRecords
from ..language.print_format import Operand, print_lines

_LOCK = threading.Lock()

_UNSIGNED = {1: np.uint8, 8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_SIGNED = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


def sites(msl: Any) -> tuple[dict[str, Any], ...]:
    """The kernel's print sites (prefix, hex, operands: type and shape), () when it prints nothing."""
    found = msl.metadata.get("device_prints") or ()
    return tuple(found) if isinstance(found, (list, tuple)) else ()


def decode(type_name: str, bits: np.ndarray) -> np.ndarray:
    """Raw record bytes -> values in the interpreter's storage (`print_format`)."""
    if type_name == "ptr":
        return bits
    if type_name == "i1":
        return (bits & 1).astype(np.bool_)
    if type_name == "bf16":
        return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
    width = int(type_name.lstrip("biuf"))
    raw = bits.astype(_UNSIGNED[width])
    if type_name.startswith("f"):
        return raw.view({16: np.float16, 32: np.float32, 64: np.float64}[width])
    return raw.view(_SIGNED[width]) if type_name.startswith("i") else raw


def lines(site_table: Sequence[dict[str, Any]], records: np.ndarray) -> tuple[list[str], int]:
    """The printed lines in the interpreter's order, and how many elements belonged to prints
    left incomplete (records dropped past the limit)."""
    if records.size == 0:
        return [], 0
    pid = records["pid"]
    order = np.lexsort((records["index"], records["operand"], records["seq"], pid[:, 0], pid[:, 1], pid[:, 2]))
    recs = records[order]
    keys = np.stack([recs["pid"][:, 2], recs["pid"][:, 1], recs["pid"][:, 0], recs["seq"].astype(np.int64)], axis=1)
    starts = np.flatnonzero(np.any(keys[1:] != keys[:-1], axis=1)) + 1
    out: list[str] = []
    incomplete = 0
    for group in np.split(recs, starts):
        site = site_table[int(group["site"][0])]
        operands: list[Operand] = []
        for k, desc in enumerate(site["operands"]):
            shape = tuple(int(d) for d in desc["shape"])
            part = group[group["operand"] == k]
            if part.size != int(np.prod(shape)):
                break
            operands.append(Operand(desc["type"], shape, decode(desc["type"], part["bits"])))
        if len(operands) != len(site["operands"]):
            incomplete += group.size
            continue
        p = group["pid"][0]
        out.extend(print_lines((int(p[0]), int(p[1]), int(p[2])), site["prefix"], bool(site["hex"]), operands))
    return out, incomplete


def printer(site_table: Sequence[dict[str, Any]], kernel_name: str) -> Callable[[PrintRecords], None]:
    """`emit` for one kernel: what the emulator's `metal_kernel` calls after each launch."""
    return lambda records: emit(site_table, records, kernel_name)


def emit(site_table: Sequence[dict[str, Any]], records: PrintRecords, kernel_name: str) -> None:
    """Write what one launch of a kernel with these print sites (`sites`) printed to
    `sys.stdout` (module docstring); `records` is given back."""
    text, incomplete = lines(site_table, records.records)
    count, capacity, past = records.count, records.capacity, records.dropped
    records.release()
    if text:
        with _LOCK:
            sys.stdout.write("\n".join(text) + "\n")
    dropped = past + incomplete
    if dropped:
        warnings.warn(
            f"kernel '{kernel_name}': tl.device_print printed more than {capacity} elements in "
            f"one launch; {dropped} of {count} were not printed (only prints kept whole are). "
            "Raise TRITON_METAL_EMULATOR_PRINT_LIMIT to see them all.",
            RuntimeWarning,
            stacklevel=4,
        )
