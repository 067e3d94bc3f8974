"""The in-memory cache of compiled kernel variants, one per `JITFunction`.

A variant is compiled once per `SpecializationKey` and kept for the life of the process; a
later launch with the same key finds it without compiling. The key already names the backend,
the compiler version, `num_warps` and the debug flag, so nothing else can make two launches with
equal keys need different code. Below it sits the disk cache of generated MSL
(`disk_cache.py`), which a fresh process reads instead of compiling.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any

from .arrays import arrays_need_64bit_indices
from .picker import picker
from .specialization import DescriptorArg, PointerArg, SpecializationKey, TupleArg

_DISTRIBUTION = "triton-metal-mlx"


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _metadata_version(path: str) -> str | None:
    """The `Version` header of a metadata file (METADATA, PKG-INFO); None when unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("version:"):
                    return line.partition(":")[2].strip()
                if not line.strip():  # the headers end at the first blank line
                    return None
    except OSError:
        return None
    return None


def _version_from_path() -> str | None:
    """What `importlib.metadata.version` answers, found the way it finds it (the first child of
    the first sys.path entry named `<distribution>-*.dist-info` or `.egg-info`; its METADATA,
    else PKG-INFO, else the file itself), without importing importlib.metadata, whose import
    costs tens of milliseconds. None wherever that search could differ (a zip archive or an
    egg on the path, another finder that lists distributions, an unreadable file): the caller
    then asks importlib.metadata."""
    import importlib.machinery

    if any(hasattr(f, "find_distributions") and f is not importlib.machinery.PathFinder for f in sys.meta_path):
        return None
    wanted = _normalized(_DISTRIBUTION)
    for entry in sys.path:
        folder = entry or "."
        if os.path.isfile(folder) or folder.lower().endswith(".egg"):
            return None
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            low = name.lower()
            if not low.endswith((".dist-info", ".egg-info")):
                continue
            if _normalized(low.rpartition(".")[0].partition("-")[0]) != wanted:
                continue
            path = os.path.join(folder, name)
            if not os.path.isdir(path):
                return _metadata_version(path)
            for candidate in ("METADATA", "PKG-INFO"):
                if os.path.isfile(os.path.join(path, candidate)):
                    return _metadata_version(os.path.join(path, candidate))
            return None
    return None


def _package_version() -> str:
    version = _version_from_path()
    if version:
        return version
    from importlib import metadata

    try:
        return metadata.version(_DISTRIBUTION)
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
    kernel: Any = None
    """The `JITFunction` it was compiled from (launches by subscript go through it)."""

    # -- Triton's CompiledKernel (runtime/kernel_facts.py says what each value means here) -----
    @property
    def name(self) -> str:
        """The kernel's name, or what its `@jit(repr=...)` hook makes of the specialization."""
        hook = getattr(self.kernel, "repr", None)
        if hook is None:
            return self.key.kernel
        from .specialization import specialization_of

        return str(hook(specialization_of(self.kernel.arg_names, self.key.args)))

    @property
    def metadata(self) -> Any:
        """Triton's `metadata`: `name`, `shared` (threadgroup memory bytes), `num_warps`, ..."""
        from .kernel_facts import kernel_metadata

        return kernel_metadata(self)

    @property
    def n_regs(self) -> int:
        """An estimate of the 32-bit registers per thread (a lower bound; kernel_facts.py)."""
        from .kernel_facts import estimated_registers

        return estimated_registers(self)

    @property
    def n_spills(self) -> int:
        """0: Metal reports no spill count (kernel_facts.py)."""
        return 0

    def _init_handles(self) -> None:
        """Triton loads the binary onto the device here; the backend's launcher for the variant
        is built when it is compiled (the Metal pipeline on its first launch), so nothing is left
        to do."""

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        """`compiled[grid](*args)`: launch with the kernel's own arguments (constexprs included,
        as Triton's launcher takes them) and this variant's `num_warps`. The launch binds and
        checks the arguments as `kernel[grid]` does and runs this variant when they specialize
        as the warm-up's did (else the variant they select: never this code on arguments it was
        not compiled for)."""
        kernel = self.kernel
        if kernel is None:
            raise TypeError(f"compiled variant of '{self.key.kernel}' has no kernel to launch")
        warps = self.key.num_warps
        return lambda *args, **kwargs: kernel.run(*args, grid=grid, warmup=False, **{"num_warps": warps, **kwargs})

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
    legal: set[tuple[Any, ...]] = field(default_factory=set)
    """Specializations the compiler accepted, checked before an interpreted launch."""
    last: tuple[tuple[Any, ...], CompiledKernel] | None = None
    """The `by_facts` entry the last launch found (`last_hit`)."""
    last_arrays: tuple[tuple[Any, ...], Callable[[tuple[Any, ...]], tuple[Any, ...]]] = ((), picker(()))
    """The last launch's facts and a picker of its array arguments (`index_bits`)."""

    def index_bits(self, facts: tuple[Any, ...], values: tuple[object, ...]) -> int:
        """64 when an array argument spans 2**31 elements or more, else 32. Only the array
        arguments (pointer facts) are looked at; their positions are remembered for the last
        facts, found again by comparing them (one identity test per interned fact)."""
        last_facts, take = self.last_arrays
        if last_facts != facts:
            take = picker([i for i, f in enumerate(facts) if isinstance(f, (PointerArg, DescriptorArg, TupleArg))])
            self.last_arrays = (facts, take)
        return 64 if arrays_need_64bit_indices(take(values)) else 32

    def last_hit(self, fast_key: tuple[Any, ...]) -> CompiledKernel | None:
        """`by_facts[fast_key]`, or None. A launch repeating the last one's facts is answered by
        comparing the keys: facts are interned, so the comparison is one identity test per
        argument, while hashing the key calls each fact's `__hash__` in Python."""
        last = self.last
        if last is not None and last[0] == fast_key:
            return last[1]
        found = self.by_facts.get(fast_key)
        if found is not None:
            self.last = (fast_key, found)
        return found

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
        self.last = None
        self.last_arrays = ((), picker(()))
        self.legal.clear()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, key: object) -> bool:
        return key in self.entries
