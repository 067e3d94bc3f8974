"""Layout ops: conversions between tensor layouts and threadgroup barriers.

* `ttg.convert_layout %x : tensor<..., #new>`: the same elements in another layout (same shape
  and element type). When the two layouts distribute the elements differently, the data moves
  through threadgroup memory: the layout passes give the op `smem_offset`/`smem_bytes` (bytes,
  16-aligned) within the program's threadgroup memory, and the lowering writes, waits for the
  threadgroup, and reads back. Two conversions feeding one dot in a loop may be staged together
  (`stage-dot-operands`): both carry `double_buffer = 1` and the first `joined = 1`. The first
  then only writes; the second writes, waits once for both, and both read. Each alternates
  between `smem_offset` and `smem_alt_offset` (the allocation's second buffer) from one
  execution to the next, so the next iteration's writes never meet this one's reads: one
  barrier per loop iteration for both operands.
* `ttg.barrier`: every thread of the program waits here and threadgroup memory writes before it
  are visible after it. The layout passes insert it where a scratch buffer is reused; it never
  sits in control flow that threads could take differently (all scalars are uniform).
"""

from __future__ import annotations

from typing import ClassVar

from ..core import Op, Value, attr, operand
from ..types import TensorType
from .common import num_results, tensor_type


class ConvertLayoutOp(Op):
    name: ClassVar[str] = "ttg.convert_layout"
    src: Value = operand()
    smem_offset: int | None = attr(int, default=None)
    smem_bytes: int | None = attr(int, default=None)
    smem_alt_offset: int | None = attr(int, default=None)
    """The second buffer of a double-buffered conversion (odd executions use it)."""
    double_buffer: int | None = attr(int, default=None)
    """1: the conversion alternates between two buffers (`stage-dot-operands`)."""
    joined: int | None = attr(int, default=None)
    """1: the conversion only writes; its reads follow the next conversion's barrier."""
    barrier_if_bypassed: int | None = attr(int, default=None)
    """1: a later write relies on this conversion's barrier (`insert-barriers`), so where a
    tensor-op dot bypasses it the code generator emits a barrier in its place."""

    def verify_(self) -> None:
        num_results(self, 1)
        st = tensor_type(self, self.src, "operand")
        rt = self.result.type
        if not isinstance(rt, TensorType) or rt.shape != st.shape or rt.element != st.element:
            raise self.error(f"result must have the operand's shape and element type ({st}), got {rt}")
        if rt.layout is None:
            raise self.error(f"result {rt} has no layout")
        if self.joined:
            # its reads wait for the next op's barrier: that op must be its double-buffered partner
            block = self.parent
            ops = block.ops if block is not None else []
            at = next((i for i, o in enumerate(ops) if o is self), len(ops))
            partner = ops[at + 1] if at + 1 < len(ops) else None
            if not self.double_buffer or partner is None or partner.name != self.name or not getattr(
                    partner, "double_buffer", None) or getattr(partner, "joined", None):
                raise self.error("a joined conversion must be double-buffered and followed at once by the "
                                 "double-buffered conversion whose barrier it shares")
        for name in ("smem_offset", "smem_bytes", "smem_alt_offset"):
            v = getattr(self, name)
            if v is not None and (v < 0 or v % 16 and name != "smem_bytes"):
                raise self.error(f"{name} must be a non-negative multiple of 16, got {v}")


class BarrierOp(Op):
    name: ClassVar[str] = "ttg.barrier"
    is_pure: ClassVar[bool] = False

    def verify_(self) -> None:
        num_results(self, 0)
