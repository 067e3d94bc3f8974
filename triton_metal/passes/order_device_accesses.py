"""Device-memory ordering inside a program (`order-device-accesses`).

Contract: a program's loads see none of its own later stores, as in Triton's (and the
interpreter's) program order, although the program's threads run unsynchronised. A load whose
elements some thread reads without being the thread that later writes them (a scalar, which
every thread loads and one thread stores; a tensor in a replicated layout; a tensor read through
other pointers than the store's) races with that store: the writing thread may run ahead and
another thread then loads the new value, or an address computed from it (Triton's
`test_if_call[attribute_jit]` reads `Out + f(load(Out)) - 1`, out of bounds after the store).

The same holds for a program's atomics after its own stores to one array: a histogram zeroes its
bins with a store, then counts into them with `atomic_add` from every thread (Liger-Kernel's MoE
router); without an order, a thread may add before the zeroing thread has stored, and the count
is lost (the interpreter, in program order, keeps it). Stores after stores and loads after stores
are not ordered here: as in Triton, a program that reads or rewrites what other threads of it
stored calls `tl.debug_barrier()` in between.

This pass inserts a `tt.barrier` (execution plus device-memory barrier) right before a store or
atomic to a pointer parameter when a load of the same parameter is still pending on some path,
and before an atomic when a store to its parameter is:
in straight-line code, across both branches of an `scf.if`, and around loop back edges (the next
iteration's write against this iteration's read). A `tt.barrier` already there (`tl.debug_barrier`)
completes the loads before it. The pass runs before `insert-barriers`, which counts the barriers
it adds. A load and a store through the same pointer value
in one non-replicated layout need no barrier: each thread writes only what it read itself (the
in-place elementwise kernel keeps its fast path).

Barriers sit only in uniform control flow: conditions and loop bounds are scalars, which every
thread of a program computes alike (`insert-barriers` refuses a tensor condition).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import Block, Module, Op, Value
from ..ir.layouts import linear_layout
from ..ir.ops import tt_memory as mem
from ..ir.ops.tt_debug import BarrierOp
from ..ir.pointers import pointer_roots
from ..ir.types import TensorType
from .pass_base import ModulePass, PassContext, register_pass
from .region_flow import pending_after

Pending = frozenset[mem.LoadOp | mem.StoreOp]
_ATOMICS = (mem.AtomicRMWOp, mem.AtomicCASOp)
_WRITERS = (mem.StoreOp, mem.AtomicRMWOp, mem.AtomicCASOp)


@dataclass(frozen=True)
class _Program:
    """What the walk needs to know of the function: pointer roots and the warps of a program."""

    roots: dict[Value, Value]
    num_warps: int

    def thread_private(self, load: mem.LoadOp, write: Op) -> bool:
        """Every element of `load` is read only by the thread that `write` stores it from."""
        ty = load.ptr.type
        if write.operands[0] is not load.ptr or not isinstance(ty, TensorType) or ty.layout is None:
            return False
        return not linear_layout(ty.layout, ty.shape, self.num_warps).is_replicated()

    def hazard(self, pending: Pending, write: Op) -> bool:
        ordered = [a for a in pending if isinstance(a, mem.LoadOp) or isinstance(write, _ATOMICS)]
        if not ordered:
            return False
        root = self.roots.get(write.operands[0])
        if root is None:
            return True  # a pointer of unknown origin may be any array
        return any(self.roots.get(a.ptr) is root and not self._private(a, write) for a in ordered)

    def _private(self, access: mem.LoadOp | mem.StoreOp, write: Op) -> bool:
        if isinstance(access, mem.LoadOp):
            return self.thread_private(access, write)
        # a store and an atomic through one pointer value run in the same owner threads, and a
        # scalar one runs in thread 0 (codegen/lower_memory.py)
        ptr = write.operands[0]
        return ptr is access.ptr or not (isinstance(ptr.type, TensorType) or isinstance(access.ptr.type, TensorType))


def _block(block: Block, pending: Pending, prog: _Program) -> Pending:
    """Insert barriers in `block` given the loads pending on entry; returns those on exit."""
    for op in list(block.ops):
        if op.name == "tt.barrier":  # `ttg.barrier` orders threadgroup memory only
            pending = frozenset()
        elif isinstance(op, mem.LoadOp):
            pending = pending | {op}
        elif isinstance(op, _WRITERS):
            if pending and prog.hazard(pending, op):
                block.insert_before(op, BarrierOp(loc=op.loc))
                pending = frozenset()
            if isinstance(op, mem.StoreOp):
                pending = pending | {op}
        elif op.name in ("scf.if", "scf.for", "scf.while"):
            pending = pending_after(op, pending, lambda b, p: _block(b, p, prog))
        else:
            for reg in op.regions:  # combine regions of reductions and scans hold no memory ops
                pending = _block(reg.block, pending, prog)
    return pending


@register_pass
@dataclass(frozen=True)
class OrderDeviceAccesses(ModulePass):
    """Insert `tt.barrier` between a program's replicated loads and its later stores to the same
    array, and between its stores and its later atomics on one array (see the module docstring)."""

    name: ClassVar[str] = "order-device-accesses"

    def apply(self, ctx: PassContext | None, module: Module) -> None:
        num_warps = int(module.attributes.get("num_warps", 4))
        for func in module.funcs:
            prog = _Program(dict(pointer_roots(func)), num_warps)
            _block(func.regions[0].block, frozenset(), prog)
