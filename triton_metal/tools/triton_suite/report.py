"""Counting a pytest JUnit XML report: outcomes per test, and failures and skips grouped by
reason (pure functions over the XML text)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass

PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_SPACES = re.compile(r"\s+")
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Construct|Failure|Warning)\b")
REASON_WIDTH = 160


CATEGORIES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern))
    for name, pattern in (
        ("fp64: Apple GPUs have none", r"float64|fp64"),
        ("64-bit atomics: Metal has none", r"atomic\S* (add|max|min|and|or|xor|xchg|cas|atomic_cas)? ?on [iu]64|atomic_cas on [iu]64"),
        ("integer-to-pointer casts", r"between pointers and integers"),
        ("Apple GPU limits (32 KiB of threadgroup memory)",
         r"insufficient shared memory|threadgroup memory of kernel .* hardware limit"),
        ("Triton's interpreter skips it", r"not supported in the interpreter|Only test atomic bfloat16"),
        ("needs an NVIDIA or AMD GPU (the test says so)",
         r"(?i)cuda|hip\b|\bnv\b|hopper|blackwell|sm ?\d|cdna|rdna|ampere|compute capability|maxnreg|inline_asm"),
        ("Triton's configuration (triton.knobs)", r"triton\.knobs"),
        ("a parameter combination the test itself rules out", r"uint cannot be negative"),
        ("inspects Triton's compiler output (asm, IR)", r"'(ttir|ttgir|llir|ptx|amdgcn)'|attribute 'asm'|no TTIR here"),
    )
)
"""(category, pattern) in the order tried: the first pattern found in a reason names its category."""
OTHER = "other"


def category(reason: str) -> str:
    """The category of a failure or skip reason (`CATEGORIES`), `OTHER` when none matches."""
    return next((name for name, pattern in CATEGORIES if pattern.search(reason)), OTHER)


@dataclass(frozen=True)
class Outcome:
    test_id: str
    status: str
    reason: str
    """The first line of the failure, error or skip message ("" for a pass)."""


@dataclass(frozen=True)
class Counts:
    collected: int
    passed: int
    failed: int
    skipped: int
    errors: int


def short_reason(message: str | None, detail: str | None) -> str:
    """One line saying why: the message's first non-empty line (else the detail's last
    `E   ...` line or last line), addresses elided, at most `REASON_WIDTH` characters."""
    text = (message or "").strip()
    if not text and detail:
        lines = [line for line in detail.splitlines() if line.strip()]
        errors = [line[1:].strip() for line in lines if line.startswith("E ")]
        text = errors[-1] if errors else (lines[-1] if lines else "")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = lines[0] if lines else ""
    said = next((line for line in lines if line.startswith("error: ")), None)
    if said is not None:  # our CompilationError: the location first, the reason on its own line
        kind = first.split(":", 1)[0] if _EXCEPTION.match(first) else ""
        first = f"{kind}: {said[len('error: '):]}" if kind else said
    first = _SPACES.sub(" ", _ADDRESS.sub("0x…", first)).strip()
    return first if len(first) <= REASON_WIDTH else first[: REASON_WIDTH - 1] + "…"


def _test_id(case: ET.Element) -> str:
    classname = case.get("classname", "")
    parts = classname.split(".")
    # pytest writes "module.Class" or "module"; the id is "module.py::Class::name"
    module, classes = parts[0], parts[1:]
    return "::".join([module + ".py", *classes, case.get("name", "")])


def outcomes(junit_xml: str) -> list[Outcome]:
    """Every test case of the report, in report order."""
    root = ET.fromstring(junit_xml)
    found: list[Outcome] = []
    for case in root.iter("testcase"):
        status, reason = PASSED, ""
        for tag, name in ((FAILED, "failure"), (ERROR, "error"), (SKIPPED, "skipped")):
            child = case.find(name)
            if child is not None:
                status, reason = tag, short_reason(child.get("message"), child.text)
                break
        found.append(Outcome(_test_id(case), status, reason))
    return found


def counts(found: list[Outcome]) -> Counts:
    by = Counter(o.status for o in found)
    return Counts(len(found), by[PASSED], by[FAILED], by[SKIPPED], by[ERROR])


def grouped(found: list[Outcome], statuses: tuple[str, ...]) -> list[tuple[str, int]]:
    """(reason, how many) for the outcomes of `statuses`, commonest first."""
    tally = Counter(o.reason for o in found if o.status in statuses)
    return sorted(tally.items(), key=lambda item: (-item[1], item[0]))


def by_category(found: list[Outcome], statuses: tuple[str, ...]) -> list[tuple[str, int]]:
    """(category, how many) for the outcomes of `statuses`, commonest first."""
    tally = Counter(category(o.reason) for o in found if o.status in statuses)
    return sorted(tally.items(), key=lambda item: (-item[1], item[0]))


def summary(found: list[Outcome], title: str) -> str:
    """The text the runner prints: the counts, failures and skips by category, then by reason."""
    c = counts(found)
    lines = [
        f"{title}: collected {c.collected}, passed {c.passed}, failed {c.failed}, "
        f"errors {c.errors}, skipped {c.skipped}"
    ]
    for heading, statuses in (("failures and errors", (FAILED, ERROR)), ("skips", (SKIPPED,))):
        kinds = by_category(found, statuses)
        if kinds:
            lines.append(f"{heading} by category:")
            lines.extend(f"  {n:6d}  {name}" for name, n in kinds)
    for heading, statuses in (("failures and errors", (FAILED, ERROR)), ("skips", (SKIPPED,))):
        groups = grouped(found, statuses)
        if groups:
            lines.append(f"{heading} by reason:")
            lines.extend(f"  {n:6d}  {reason}" for reason, n in groups)
    return "\n".join(lines)


def failure_list(found: list[Outcome]) -> str:
    """One line per failed or erroring test: its id, a tab, its reason."""
    return "".join(f"{o.test_id}\t{o.reason}\n" for o in found if o.status in (FAILED, ERROR))
