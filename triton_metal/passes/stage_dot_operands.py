"""Both operands of a dot in a loop staged with one barrier, double-buffered (`stage-dot-operands`).

Contract: for each `tt.dot` in the body of an `scf.for` or `scf.while` whose operands A and B are
both made, in the dot's block, by `ttg.convert_layout`s that move elements through threadgroup
memory, and whose two tensors twice over fit `DOUBLE_BUFFER_LIMIT` bytes, the earlier conversion
moves down to just before the later one (no op between them uses it; a conversion is pure) and
both get `double_buffer = 1`, the earlier also `joined = 1` (`ttg.convert_layout` documents
them). Run after the layout passes place conversions and before `allocate-threadgroup-memory`,
which gives each such conversion two buffers of bytes no other op uses (or, when that would
not fit in threadgroup memory, takes the marks off again).

Why: converted one after the other, each operand costs a barrier per K step (write, barrier,
read), two in all, as in a hand-written GEMM that stages A and B together and waits before and
after. Written together, the two wait once; alternating buffers from one iteration to the next
mean the next iteration's writes go where no thread still reads (every thread has passed this
iteration's barrier only after its reads of the iteration before, which used the other
buffers), so no barrier is needed before them either: one barrier per K step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import Module, Op
from ..ir.core import OpResult
from .allocate_threadgroup_memory import scratch_bytes
from .pass_base import ModulePass, PassContext, register_pass

DOUBLE_BUFFER_LIMIT = 16384
"""Bytes two sets of a dot's operand buffers may take (more threadgroup memory per program
costs occupancy, as in `allocate-threadgroup-memory`)."""

_LOOPS = ("scf.for", "scf.while")


def _staged_conversion(value: object, block: object, num_warps: int) -> tuple[Op, int] | None:
    """The conversion in `block` that makes `value` through threadgroup memory, and its bytes."""
    if not isinstance(value, OpResult) or value.op.name != "ttg.convert_layout" or value.op.parent is not block:
        return None
    nbytes = scratch_bytes(value.op, num_warps, stage=False)
    return (value.op, nbytes) if nbytes else None


def _used_between(first: Op, second: Op) -> bool:
    """Whether an op after `first` and before `second` in their block (or nested in one) uses
    `first`'s result."""
    block = first.parent
    assert block is not None
    ops = block.ops[block.index_of(first) + 1: block.index_of(second)]
    result = first.results[0]
    return any(result in inner.operands for op in ops for inner in op.walk())


def stage_pair(dot: Op, num_warps: int) -> bool:
    """Join and double-buffer the operand conversions of `dot` when the contract allows."""
    block = dot.parent
    if block is None or block.parent_op is None or block.parent_op.name not in _LOOPS:
        return False
    found = [_staged_conversion(v, block, num_warps) for v in dot.operands[:2]]
    if any(f is None for f in found):
        return False
    (a, a_bytes), (b, b_bytes) = found  # type: ignore[misc]
    if 2 * (a_bytes + b_bytes) > DOUBLE_BUFFER_LIMIT:
        return False
    if a.double_buffer or b.double_buffer:  # type: ignore[attr-defined]
        return False  # an operand already paired for another dot
    first, second = (a, b) if block.index_of(a) < block.index_of(b) else (b, a)
    if _used_between(first, second):
        return False
    block.remove(first)
    block.insert_before(second, first)
    first.double_buffer = second.double_buffer = 1  # type: ignore[attr-defined]
    first.joined = 1  # type: ignore[attr-defined]
    return True


@register_pass
@dataclass(frozen=True)
class StageDotOperands(ModulePass):
    """Stage the two operands of a dot in a loop together, double-buffered (module docstring)."""

    name: ClassVar[str] = "stage-dot-operands"

    def apply(self, ctx: PassContext | None, module: Module) -> None:
        if "direct_fragment_io" in module.attributes:
            return  # operands load straight into fragments; nothing to stage
        num_warps = int(module.attributes.get("num_warps", 4))
        for func in module.funcs:
            for op in list(func.walk()):
                if op.name == "tt.dot":
                    stage_pair(op, num_warps)
