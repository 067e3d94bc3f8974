"""Pass infrastructure: module passes, the pass registry, pipelines and pass-option text.

Contract:
* A pass is a frozen dataclass deriving from `ModulePass`, with `name: ClassVar[str]`, its options
  as dataclass fields (with defaults) and `apply(ctx, module) -> None`, which rewrites the module
  in place. `ctx` is a `PassContext` or None (the command-line tool passes None).
* `register_pass` adds a pass class to `PASS_REGISTRY` under its `name`; `triton-metal-opt -p`
  reads the registry. `parse_pass_spec("name{opt=val,other=2}")` builds one pass with options.
* A `PassPipeline` is a tuple of pass instances plus an optional callback run after each pass
  with `(pass, module)`: the place for the debug dump of the IR after every pass.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TextIO, TypeVar

from ..ir import Module


@dataclass
class PassContext:
    """What passes may read besides the module: compile options and a stream for diagnostics
    (remarks of test passes)."""

    options: dict[str, Any] = field(default_factory=dict)
    diagnostics: TextIO | None = None
    """Where remarks go; standard error when None."""

    def remark(self, text: str) -> None:
        stream = self.diagnostics if self.diagnostics is not None else sys.stderr
        stream.write(text + "\n")


def remark(ctx: PassContext | None, text: str) -> None:
    """Write a remark to the context's diagnostics stream (standard error without a context)."""
    (ctx or PassContext()).remark(text)


@dataclass(frozen=True)
class ModulePass:
    """Base of every pass. Subclasses are frozen dataclasses; options are their fields."""

    name: ClassVar[str] = ""

    def apply(self, ctx: PassContext | None, module: Module) -> None:
        raise NotImplementedError(f"pass '{self.name}' does not implement apply")


PASS_REGISTRY: dict[str, type[ModulePass]] = {}
"""Every registered pass class by its `name` (read by `triton-metal-opt -p`)."""

P = TypeVar("P", bound=type[ModulePass])


def register_pass(cls: P) -> P:
    """Class decorator: add a pass to `PASS_REGISTRY` (a name registered twice is a bug)."""
    if not cls.name:
        raise AssertionError(f"pass class {cls.__name__} has no name")
    if PASS_REGISTRY.get(cls.name, cls) is not cls:
        raise AssertionError(f"pass '{cls.name}' registered twice")
    PASS_REGISTRY[cls.name] = cls
    return cls


_SPEC = re.compile(r"^\s*([A-Za-z0-9_.-]+)\s*(?:\{(.*)\})?\s*$")


def _option_value(cls: type[ModulePass], key: str, text: str) -> Any:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    if key not in fields:
        known = ", ".join(sorted(fields)) or "none"
        raise ValueError(f"pass '{cls.name}' has no option '{key}' (options: {known})")
    default = fields[key].default
    if isinstance(default, bool):
        if text not in ("true", "false"):
            raise ValueError(f"option '{key}' of pass '{cls.name}' takes true or false, got '{text}'")
        return text == "true"
    if isinstance(default, int):
        return int(text, 0)
    return text


def parse_pass_spec(spec: str) -> ModulePass:
    """One pass from `name` or `name{opt=val,opt2=val2}`; raises ValueError on unknown names or
    options."""
    m = _SPEC.match(spec)
    if m is None:
        raise ValueError(f"malformed pass specification '{spec}'")
    name, opts = m.group(1), m.group(2)
    cls = PASS_REGISTRY.get(name)
    if cls is None:
        raise ValueError(f"unknown pass '{name}' (known: {', '.join(sorted(PASS_REGISTRY))})")
    kwargs: dict[str, Any] = {}
    for item in (opts or "").split(","):
        if not item.strip():
            continue
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"pass option '{item.strip()}' needs the form key=value")
        kwargs[key.strip()] = _option_value(cls, key.strip(), value.strip())
    return cls(**kwargs)


def split_pass_specs(text: str) -> list[str]:
    """Split `a,b{x=1,y=2},c` at the commas outside braces."""
    out: list[str] = []
    depth, current = 0, ""
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(current)
            current = ""
        else:
            current += ch
    out.append(current)
    return [s.strip() for s in out if s.strip()]


AfterPass = Callable[[ModulePass, Module], None]


@dataclass(frozen=True)
class PassPipeline:
    """Passes run in order over one module."""

    passes: tuple[ModulePass, ...]
    """The passes, in the order they run."""
    callback: AfterPass | None = None
    """Called after each pass with the pass and the module (IR dumps, verification)."""

    def apply(self, ctx: PassContext | None, module: Module) -> None:
        for p in self.passes:
            p.apply(ctx, module)
            if self.callback is not None:
                self.callback(p, module)

    def with_callback(self, callback: AfterPass | None) -> PassPipeline:
        return PassPipeline(self.passes, callback)

    def __add__(self, other: PassPipeline | tuple[ModulePass, ...]) -> PassPipeline:
        more = other.passes if isinstance(other, PassPipeline) else tuple(other)
        return PassPipeline(self.passes + more, self.callback)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.passes)

    @staticmethod
    def parse(text: str, callback: AfterPass | None = None) -> PassPipeline:
        """`"canonicalize,cse,dce"` (options in braces) as a pipeline."""
        return PassPipeline(tuple(parse_pass_spec(s) for s in split_pass_specs(text)), callback)
