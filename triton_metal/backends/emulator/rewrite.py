"""Source checks and rewrites applied to MSL text before the C++ compiler sees it.

- `rewrite_threadgroup_declarations`: each `threadgroup T name[N]...;` declaration becomes, on the
  same line (line numbers are kept), a reference to storage the runtime hands each running
  threadgroup: `auto& name = metal::tm_tg_var<T[N]...>(id, "name", __FILE__, __LINE__);`.
  Pointers and parameters (`threadgroup T* p`) are left alone: the shim defines `threadgroup` as
  nothing.
- `needs_fibers`: whether the kernel synchronises (barriers, SIMD-group functions, simdgroup
  matrices); kernels that do not run each thread straight through, without fibers.
- `check_msl_restrictions`: constructs MSL forbids that g++ would accept (`goto`, inline
  assembly, compiler builtins, `thread_local`), refused with the line.
- `pin_line_directives`: after a `#line N "file"` directive, each following line gets its own
  copy, so everything a code generator prints for one kernel line reports that line (barriers,
  SIMD-group functions and bounds checks record `__LINE__`, which would count on).
"""

from __future__ import annotations

import functools
import re

from triton_metal.backends.emulator.errors import MSLCompileError
from triton_metal.errors import Loc

_TG_TYPE = r"(?:const\s+|volatile\s+)*[A-Za-z_][\w:]*(?:\s*<[^;<>]*(?:<[^;<>]*>[^;<>]*)*>)?"
_TG_HEAD = r"\bthreadgroup\s+" + _TG_TYPE + r"\s+[A-Za-z_]\w*\s*(?:\[[^\[\];]+\]\s*)*"
# A declaration statement starts a line or follows `;`, `{` or `}` (parameters follow `(` or `,`).
_STATEMENT = r"(?:^|(?<=[;{}]))\s*"
_DECL = re.compile(
    r"\bthreadgroup\s+(?P<type>" + _TG_TYPE + r")"
    r"\s+(?P<name>[A-Za-z_]\w*)\s*(?P<dims>(?:\[[^\[\];]+\]\s*)*);"
)

SYNC_FUNCTIONS = (
    "threadgroup_barrier simdgroup_barrier "
    "simd_sum simd_product simd_min simd_max simd_and simd_or simd_xor "
    "simd_prefix_exclusive_sum simd_prefix_inclusive_sum simd_prefix_exclusive_product "
    "simd_prefix_inclusive_product simd_shuffle simd_shuffle_xor simd_shuffle_up simd_shuffle_down "
    "simd_shuffle_rotate_up simd_shuffle_rotate_down simd_broadcast simd_broadcast_first "
    "simd_ballot simd_all simd_any simd_is_first "
    "quad_sum quad_product quad_min quad_max quad_and quad_or quad_xor quad_shuffle "
    "quad_shuffle_xor quad_shuffle_up quad_shuffle_down quad_broadcast "
    "simdgroup_load simdgroup_store simdgroup_multiply simdgroup_multiply_accumulate "
    "simdgroup_matrix simdgroup_float8x8 simdgroup_half8x8 simdgroup_bfloat8x8 "
    "make_filled_simdgroup_matrix matmul2d"
).split()
_SYNC = re.compile(r"\b(?:" + "|".join(SYNC_FUNCTIONS) + r")\b")

# (pattern, reason, hint): the pattern can only match where its hint does, and the hint (a
# literal, or "threadgroup" and a space) is found by a fast literal scan, so most kernels skip
# the much slower search (a pattern that starts with \b or a lookbehind is tried everywhere).
_TG_HINT = re.compile(r"threadgroup\s")
_FORBIDDEN = (
    (re.compile(r"\bgoto\b"), "MSL has no `goto`", re.compile("goto")),
    (re.compile(r"\b(?:asm|__asm__|__asm)\b"), "MSL has no inline assembly", re.compile("asm")),
    (re.compile(r"\b__builtin_\w*"), "compiler builtins are not MSL; use the metal:: functions", re.compile("__builtin_")),
    (re.compile(r"\bthread_local\b"), "MSL has no `thread_local`", re.compile("thread_local")),
    (re.compile(r"\b(?:new|delete)\b"), "MSL has no dynamic allocation (`new`/`delete`)", re.compile("new|delete")),
    (re.compile(r"\b(?:try|catch|throw)\b"), "MSL has no exceptions", re.compile("try|catch|throw")),
    (
        re.compile(_STATEMENT + _TG_HEAD + r"\s*=", re.M),
        "a threadgroup variable cannot have an initializer in MSL; assign it in the body",
        _TG_HINT,
    ),
    (
        re.compile(_STATEMENT + _TG_HEAD + r"\s*,", re.M),
        "declare one threadgroup variable per statement (the emulator rewrites each declaration)",
        _TG_HINT,
    ),
)


@functools.lru_cache(maxsize=64)  # a build scans the same body and header several times
def strip_comments(text: str) -> str:
    """`text` with comments and string/char literals blanked, newlines kept (for scanning)."""

    def blank(match: re.Match[str]) -> str:
        s = match.group(0)
        if s.startswith(("/", )):
            return re.sub(r"[^\n]", " ", s)
        return s[0] + re.sub(r"[^\n]", " ", s[1:-1]) + s[-1]

    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', blank, text, flags=re.S)


def rewrite_threadgroup_declarations(text: str) -> tuple[str, int]:
    """Rewrite every threadgroup declaration; returns the new text and the number rewritten."""
    scan = strip_comments(text)
    pieces: list[str] = []
    last = 0
    count = 0
    for match in _DECL.finditer(scan):
        type_text = match.group("type").strip()
        dims = re.sub(r"\s+", "", match.group("dims"))
        name = match.group("name")
        pieces.append(text[last : match.start()])
        pieces.append(
            f'auto& {name} = ::metal::tm_tg_var<{type_text}{dims}>({count}, "{name}", '
            f"__FILE__, __LINE__);"
        )
        last = match.end()
        count += 1
    pieces.append(text[last:])
    return "".join(pieces), count


def needs_fibers(*texts: str) -> bool:
    return any(_SYNC.search(strip_comments(t)) for t in texts)


_TENSOR_OPS = re.compile(r"#\s*include\s*<MetalPerformancePrimitives/")


def uses_tensor_ops(*texts: str) -> bool:
    """Whether the kernel includes Apple's tensor ops (compiled as C++20: their descriptors are
    class-type template arguments)."""
    return any(_TENSOR_OPS.search(t) for t in texts)


def check_msl_restrictions(text: str, file: str, kernel: str, first_line: int = 1) -> None:
    """Refuse C++ that MSL does not have; `first_line` is the line number of `text`'s first line."""
    scan = strip_comments(text)
    for pattern, reason, hint in _FORBIDDEN:
        if hint.search(scan) is None:
            continue
        match = pattern.search(scan)
        if match is None:
            continue
        start = match.start() + len(match.group(0)) - len(match.group(0).lstrip())
        line_index = scan.count("\n", 0, start)
        col = start - (scan.rfind("\n", 0, start) + 1)
        source_line = text.splitlines()[line_index]
        raise MSLCompileError(
            reason, Loc(file, first_line + line_index, col), kernel=kernel, source_line=source_line
        )


_LINE_DIRECTIVE = re.compile(r'^\s*#\s*line\s+\d+(?:\s+"(?:[^"\\]|\\.)*")?\s*$')


def pin_line_directives(text: str) -> str:
    """Repeat each `#line` directive before every line it governs (module doc); lines before the
    first directive, and the continuation lines of a directive or a block comment, are left as
    they are."""
    if "#line" not in text:
        return text
    out: list[str] = []
    current: str | None = None
    in_comment = False
    continued = False
    fresh = False  # the line right after a directive needs no copy
    for line in text.split("\n"):
        if _LINE_DIRECTIVE.match(line):
            current = line.strip()
            out.append(line)
            continued = in_comment = False
            fresh = True
            continue
        if current is not None and not fresh and not continued and not in_comment and line.strip():
            out.append(current)
        fresh = False
        out.append(line)
        continued = line.endswith("\\")
        if in_comment:
            in_comment = "*/" not in line
        elif "/*" in line:
            scan = strip_comments(line)
            in_comment = "/*" in scan and "*/" not in scan[scan.rfind("/*"):]
    return "\n".join(out)
