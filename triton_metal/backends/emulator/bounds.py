"""Bounds checks compiled into a kernel's device and constant buffer accesses (emulator only).

Contract: `checks_enabled()` says whether kernels are built with checks (the default;
`TRITON_METAL_EMULATOR_CHECKS=0` turns them off, and ASan builds have their own).
`checked_params(source)` lists the parameters that get checked: inputs and outputs passed as
pointers. `checked_text(source, text)` rewrites the kernel text (line numbers kept): each checked
parameter is declared `metal::tm_buf<T>` (pointer, element count, name) instead of `T*`, and each
mention of it in the body becomes `tm_at(name, file, line)` (the position the last `#line`
directive named), a view whose element accesses are checked against the count and report that
line (runtime/tm_kernel.h). The MSL
the code generator prints, and what Metal receives, is unchanged: only the emulator's copy of the
text is rewritten.

The element count of a buffer is the size of the array bound to it (`kernel.py` passes it next to
the pointer), so an access outside the array, even one inside a larger base array, raises
`OutOfBoundsAccess` naming the buffer, the index and the line.
"""

from __future__ import annotations

import os
import re

from triton_metal.backends.emulator.signature import KernelSource, Param, ParamKind


_LINE_DIRECTIVE = re.compile(r'^\s*#\s*line\s+(\d+)\s+("(?:[^"\\]|\\.)*")\s*$')


def checks_enabled() -> bool:
    return os.environ.get("TRITON_METAL_EMULATOR_CHECKS", "1").strip().lower() not in ("0", "false", "no", "off")


def checked_params(source: KernelSource) -> tuple[Param, ...]:
    return tuple(
        p for p in source.params
        if p.kind in (ParamKind.INPUT, ParamKind.OUTPUT) and not p.by_reference and p.ctype.endswith("*")
    )


def element_type(param: Param) -> str:
    """`const device float*` -> `const float`; `device atomic<int32_t>*` -> `atomic<int32_t>`."""
    words = param.ctype.rstrip("*").replace("device", " ").replace("constant", " ").split()
    return " ".join(words)


def checked_text(source: KernelSource, text: str) -> str:
    params = checked_params(source)
    if not params:
        return text
    lines = text.split("\n")
    body_start = source.body_line - 1
    for p in params:
        declaration = f"  {p.ctype} {p.name} [[buffer({p.buffer})]]"
        for i in range(body_start):
            if lines[i].startswith(declaration):
                lines[i] = lines[i].replace(f"{p.ctype} {p.name}", f"metal::tm_buf<{element_type(p)}> {p.name}", 1)
                break
    names = "|".join(re.escape(p.name) for p in params)
    # a mention: not a member (`.x`, `->x`), not part of a longer identifier
    mention = re.compile(r"(?<![\w.])(?<!->)\b(" + names + r")\b")
    hint = re.compile(names)  # a plain scan first: most lines mention no buffer
    # the position an access reports: the line the last `#line` directive named (one kernel line
    # may print as several MSL lines, which __LINE__ would count on from)
    where = "__FILE__, __LINE__"
    for i in range(body_start, _body_end(lines, body_start)):
        line = lines[i]
        if line.lstrip().startswith("#"):
            directive = _LINE_DIRECTIVE.match(line)
            if directive is not None:
                where = f"{directive.group(2)}, {directive.group(1)}"
            continue
        if hint.search(line) is not None:
            lines[i] = mention.sub(lambda m: f"tm_at({m.group(1)}, {where})", line)
    return "\n".join(lines)


def _body_end(lines: list[str], body_start: int) -> int:
    """The line after the body: the body ends with the `}` line MLX appends (before an explicit
    template instantiation, if any)."""
    for i in range(len(lines) - 1, body_start - 1, -1):
        if lines[i] == "}":
            return i
    return len(lines)
