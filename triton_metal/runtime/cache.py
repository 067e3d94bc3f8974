"""The in-memory cache of compiled kernel variants, one per `JITFunction`.

A variant is compiled once per `SpecializationKey` and kept for the life of the process; a
later launch with the same key finds it without compiling. The key already names the backend,
the compiler version, `num_warps` and the debug flag, so nothing else can make two launches with
equal keys need different code. (The on-disk cache of generated MSL, keyed by a hash of the key
and of the kernel's and its callees' sources, belongs with the code generator.)
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
    """The `ir.Module` the front end produced."""
    compile_seconds: float
    launches: int = 0

    @property
    def ir(self) -> str:
        """The IR as text."""
        return str(self.module)


@dataclass
class KernelCache:
    """Compiled variants by key, with hit/miss counts (tests and the debug log read them)."""

    entries: dict[SpecializationKey, CompiledKernel] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0

    def get(self, key: SpecializationKey) -> CompiledKernel | None:
        entry = self.entries.get(key)
        if entry is None:
            self.misses += 1
        else:
            self.hits += 1
        return entry

    def put(self, entry: CompiledKernel) -> None:
        self.entries[entry.key] = entry

    def clear(self) -> None:
        self.entries.clear()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, key: object) -> bool:
        return key in self.entries
