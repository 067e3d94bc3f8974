"""Which path each `tl.dot` takes on a target with tensor ops: the cost rule (docs/dot.md,
"Which path, by cost").

Tensor ops are worth taking only where they cost no more threadgroup traffic than simdgroup
matrices: nothing here can time either path, so the rule compares the structural figures the dot
report reads off the lowered program, the barriers and the threadgroup bytes of the dot's K step
(one iteration of the innermost loop around it; the kernel when there is none).

* A dot whose K loop carries its accumulator (lower_tensor_dot_loop.py) takes tensor ops wherever
  they apply: its K step stages A and B once, where the simdgroup path converts them to their
  fragment layouts, and its accumulator is staged only before and after the loop (the same
  figures on both paths for every tile of docs/dot.md's table).
* A single tensor-op dot (lower_tensor_dot.py: any other dot) stages A, B and its accumulator C
  every time it runs and waits three times: it keeps tensor ops only where its K step's barriers
  and bytes are both no more than with that dot on simdgroup matrices. The kernel is lowered with
  every such dot on tensor ops, then with all of them on simdgroup matrices; the figures of each
  dot's K step decide it (dots sharing a K step share the figures, so they go together), and
  when the dots' choices differ the kernel is lowered once more with them.

Each dot's report says why it took its path (`path_reason`). `CodegenOptions.dot_path =
"tensor_ops"` skips the comparison (every dot tensor ops apply to takes them): the tests of the
single form use it; kernels have no way to name a path, as Triton has none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from triton_metal.errors import OutOfResources
from triton_metal.ir import Op
from triton_metal.ir.ops.tt_compute import DotOp

from .context import LoweringContext
from .dot_report import DotReport, reports_by_op
from .lower_dot import THREADGROUP_MEMORY
from .lower_tensor_dot import tensor_dot_refusal
from .options import CodegenOptions
from .program import Stmt


@dataclass(frozen=True)
class Lowered:
    """One lowering of a kernel body: its context and per-thread program."""

    ctx: LoweringContext
    program: tuple[Stmt, ...]

    def reports(self) -> dict[Op, DotReport]:
        return {op: r for op, r in reports_by_op(self.program, self.ctx.dot_sites) if op is not None}


@dataclass(frozen=True)
class StepCost:
    """The figures the rule compares: a dot's K step's barriers and threadgroup bytes."""

    barriers: int
    nbytes: int

    @staticmethod
    def of(report: DotReport) -> StepCost:
        return StepCost(report.barriers_per_k_step, report.threadgroup_bytes_per_k_step)

    def no_worse_than(self, other: StepCost) -> bool:
        return self.barriers <= other.barriers and self.nbytes <= other.nbytes

    def __str__(self) -> str:
        return f"{self.barriers} barrier{'' if self.barriers == 1 else 's'}, {self.nbytes} bytes"


def choose_dot_paths(lower: Callable[[frozenset[Op]], Lowered],
                     options: CodegenOptions) -> tuple[Lowered, dict[Op, str]]:
    """The kernel lowered with each dot on its path by the rule (module doc), and each dot's
    reason. `lower(kept)` lowers the kernel with the dots `kept` on simdgroup matrices."""
    first = lower(frozenset())
    if not options.target.has_tensor_ops:
        return first, {}
    on_tensor = first.reports()
    singles = [op for op, r in on_tensor.items() if r.path == "tensor_ops" and r.form == "single"]
    if not singles or options.dot_path == "tensor_ops":
        return first, _reasons(first, {op: "a single dot, tensor ops taken without the cost rule" for op in singles})
    second = _lowered_within_limits(lower, frozenset(singles))
    if second is None:  # not seen in any kernel: simdgroup matrices stage less
        why = "a single dot: tensor ops, the kernel does not fit in threadgroup memory on simdgroup matrices"
        return first, _reasons(first, {op: why for op in singles})
    on_simdgroup = second.reports()
    costs = {op: (StepCost.of(on_tensor[op]), StepCost.of(on_simdgroup[op])) for op in singles if op in on_simdgroup}
    kept = frozenset(op for op, (tensor, simdgroup) in costs.items() if not tensor.no_worse_than(simdgroup))
    chosen = first if not kept else second if kept == frozenset(singles) else lower(kept)
    why = {}
    for op, (tensor, simdgroup) in costs.items():
        step = "a K step" if on_tensor[op].in_loop else "in the kernel (no loop)"
        if op in kept:
            why[op] = f"a single dot: simdgroup matrices, {simdgroup} {step}, where tensor ops take {tensor}"
        else:
            why[op] = f"a single dot: tensor ops, {tensor} {step}, no worse than simdgroup matrices' {simdgroup}"
    return chosen, _reasons(chosen, why)


def _lowered_within_limits(lower: Callable[[frozenset[Op]], Lowered], kept: frozenset[Op]) -> Lowered | None:
    """`lower(kept)`, or None where that lowering runs out of threadgroup memory."""
    try:
        lowered = lower(kept)
    except OutOfResources:
        return None
    return lowered if lowered.ctx.scratch_end <= THREADGROUP_MEMORY else None


def _reasons(lowered: Lowered, single: dict[Op, str]) -> dict[Op, str]:
    """Every dot's reason: the single dots' from the rule, a carried accumulator's, or why tensor
    ops do not apply."""
    found = {}
    for op, report in lowered.reports().items():
        if op in single:
            found[op] = single[op]
        elif report.form == "carried":
            found[op] = "the K loop carries its accumulator: tensor ops"
        elif isinstance(op, DotOp):
            found[op] = tensor_dot_refusal(lowered.ctx, op)
        else:
            found[op] = "tl.dot_scaled: dequantized into simdgroup matrices on every target"
    return found
