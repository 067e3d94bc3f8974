"""The in-memory cache of compiled kernel variants, one per `JITFunction`.

A variant is compiled once per `SpecializationKey` and kept for the life of the process; a
later launch with the same key finds it without compiling. The key already names the backend,
the compiler version, `num_warps` and the debug flag, so nothing else can make two launches with
equal keys need different code. Below it sits the disk cache of generated MSL
(`disk_cache.py`), which a fresh process reads instead of compiling.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from .specialization import SpecializationKey


def _package_version() -> str:
    try:
        return metadata.version("triton-metal-mlx")
    except metadata.PackageNotFoundError:  # running from a source tree that is not installed
        return "0.0.0+unknown"


COMPILER_VERSION: str = _package_version()
"""Part of every specialization key: an upgrade never reuses another version's code."""


@dataclass
class CompiledKernel:
    """One compiled variant of a kernel."""

    key: SpecializationKey
    signature: Any
    """The `frontend.KernelSignature` it was compiled for."""
    module: Any
    """The laid-out `ir.Module` the code generator read (None when loaded from the disk cache)."""
    compile_seconds: float
    launches: int = 0
    msl: Any = None
    """The `codegen.MSLKernel`."""
    ir_text: str = ""
    origin: str = "compiled"
    """"compiled" (front end and code generator ran) or "disk" (read from the disk cache)."""
    launcher: Any = None
    """The backend's launcher for this variant: called with (values, grid)."""

    @property
    def ir(self) -> str:
        """The IR as text."""
        if self.ir_text:
            return self.ir_text
        return str(self.module)

    @property
    def asm(self) -> dict[str, str]:
        """Triton's `compiled.asm`: "ir" (the laid-out IR the code generator read) and "msl" (the
        kernel text `mx.fast.metal_kernel` compiles, array inputs in device memory)."""
        from .dumps import mlx_source

        return {"ir": self.ir, "msl": "" if self.msl is None else mlx_source(self.msl)}

    @property
    def source(self) -> str:
        """The MSL body (`metal_kernel(source=...)`)."""
        return "" if self.msl is None else str(self.msl.source)


@dataclass
class KernelCache:
    """Compiled variants by key, with hit/miss counts (tests and the debug log read them)."""

    entries: dict[SpecializationKey, CompiledKernel] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0
    by_facts: dict[tuple[Any, ...], CompiledKernel] = field(default_factory=dict)
    """The launch path's index: (facts, num_warps, debug, backend, index bits, spreading) ->
    variant, a plain tuple lookup that skips building a `SpecializationKey` on a hit."""

    def get(self, key: SpecializationKey) -> CompiledKernel | None:
        entry = self.entries.get(key)
        if entry is None:
            self.misses += 1
        else:
            self.hits += 1
        return entry

    def put(self, entry: CompiledKernel, fast_key: tuple[Any, ...] | None = None) -> None:
        self.entries[entry.key] = entry
        if fast_key is not None:
            self.by_facts[fast_key] = entry

    def clear(self) -> None:
        self.entries.clear()
        self.by_facts.clear()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, key: object) -> bool:
        return key in self.entries
