"""What Triton's `CompiledKernel` reports about a compiled variant, from what Metal lets us know.

Triton's host code reads `kernel.n_regs`, `kernel.n_spills` and `kernel.metadata.shared` after
`kernel.warmup(...)` to size persistent grids (tutorial 02: programs per multiprocessor =
`min(max_num_regs // (n_regs * warpSize * num_warps), max_shared_mem // shared)`). Metal and MLX
report none of the first two for a compiled pipeline, so:

* `metadata.shared`: the threadgroup memory the kernel declares, in bytes: exact (the code
  generator allocates it; `MSLKernel.metadata["threadgroup_memory_bytes"]`).
* `n_regs`: an **estimate**, a lower bound of the 32-bit registers a thread needs: the
  largest, over the kernel's operations, of the registers its tensor operands and result hold
  per thread under their layouts (64-bit elements count two, narrower ones one), at least 1.
  The Metal compiler's own allocation is not observable.
* `n_spills`: 0. Metal reports no spill count; nothing here claims there are none on a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .driver_stub import GPUTarget, target


@dataclass(frozen=True)
class KernelMetadata:
    """`CompiledKernel.metadata`: Triton's fields that have a meaning here."""

    name: str
    """The compiled kernel's name (sanitized kernel name and a hash of its MSL)."""
    shared: int
    """Threadgroup memory in bytes (exact)."""
    num_warps: int
    num_ctas: int
    debug: bool
    target: GPUTarget
    backend: str
    """Which of the package's backends runs it: metal, emulator, torch_mps or interpreter."""


def kernel_metadata(compiled: Any) -> KernelMetadata:
    msl = compiled.msl
    return KernelMetadata(
        name=str(msl.name),
        shared=int(msl.metadata.get("threadgroup_memory_bytes", 0) or 0),
        num_warps=compiled.key.num_warps,
        num_ctas=1,
        debug=compiled.key.debug,
        target=target(),
        backend=compiled.key.backend,
    )


def estimated_registers(compiled: Any) -> int:
    """`n_regs` (module docstring): from the laid-out IR, kept or read back from its text."""
    from ..ir import parse_module
    from ..ir.layouts import registers_per_thread
    from ..ir.types import ScalarType, TensorType

    module = compiled.module if compiled.module is not None else parse_module(compiled.ir_text)
    warps = compiled.key.num_warps
    memo: dict[Any, int] = {}

    def words(ty: object) -> int:
        if not isinstance(ty, TensorType) or ty.layout is None:
            return 1 if isinstance(ty, ScalarType) else 0
        if ty not in memo:
            wide = isinstance(ty.element, ScalarType) and ty.element.bitwidth > 32
            per_thread = registers_per_thread(ty.layout, ty.shape, warps)
            memo[ty] = per_thread * (2 if wide else 1)
        return memo[ty]

    most = 1
    for op in module.walk():
        values = [*op.operands, *op.results]
        most = max(most, sum(words(v.type) for v in values))
    return most
