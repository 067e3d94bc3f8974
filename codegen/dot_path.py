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
* A carried accumulator the loop rescales before each dot (attention's `acc * alpha[:, None] +
  tl.dot(p, v)`: its elements are scaled in the cooperative tensor) keeps tensor ops where its K
  step waits no more often than on simdgroup matrices. It stages more bytes: the factors, and an
  operand that simdgroup matrices take from registers (attention's p); that is the price of
  keeping the accumulator in the matrix unit, as MLX's attention does on the M5. Where the staging
  costs a barrier more, it keeps simdgroup matrices.
* A single tensor-op dot (lower_tensor_dot.py: any other dot) stages A, B and its accumulator C
  every time it runs and waits three times: it keeps tensor ops only where its K step's barriers
  and bytes are both no more than with that dot on simdgroup matrices.

The kernel is lowered with every dot of these two forms on tensor ops, then with all of them on
simdgroup matrices; the figures of each dot's K step decide it (dots sharing a K step share the
figures, so they go together), and when the dots' choices differ the kernel is lowered once more
with them.

Each dot's report says why it took its path (`path_reason`). `CodegenOptions.dot_path =
"tensor_ops"` skips the comparison (every dot tensor ops apply to takes them): the tests of the
single form use it; kernels have no way to name a path, as Triton has none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from triton_metal.chip import THREADGROUP_MEMORY_BYTES
from triton_metal.errors import OutOfResources
from triton_metal.ir import Op
from triton_metal.ir.ops.tt_compute import DotOp

from .context import LoweringContext
from .dot_report import DotReport, reports_by_op
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
    reason. `lower(kept)` lowers the kernel with the dots `kept` on simdgroup matrices. The
    single dots are weighed first, then the rescaled accumulators beside the singles' choices
    (a K step's figures hold all its dots, so each form is weighed with the other settled)."""
    current = lower(frozenset())
    if not options.target.has_tensor_ops:
        return current, {}
    weighed = {op: r.form for op, r in current.reports().items() if r.path == "tensor_ops" and r.form in _WEIGHED}
    if not weighed or options.dot_path == "tensor_ops":
        return current, _reasons(current, {op: f"{_WEIGHED[form]}, tensor ops taken without the cost rule"
                                           for op, form in weighed.items()})
    kept: frozenset[Op] = frozenset()
    why: dict[Op, str] = {}
    for form in _WEIGHED:
        on_tensor = current.reports()
        ops = frozenset(op for op, f in weighed.items() if f == form and op in on_tensor
                        and on_tensor[op].path == "tensor_ops")
        if not ops:
            continue
        other = _lowered_within_limits(lower, kept | ops)
        if other is None:  # not seen in any kernel: simdgroup matrices stage less
            why.update({op: f"{_WEIGHED[form]}: tensor ops, the kernel does not fit in threadgroup memory on "
                            "simdgroup matrices" for op in ops})
            continue
        on_simdgroup = other.reports()
        costs = {op: (StepCost.of(on_tensor[op]), StepCost.of(on_simdgroup[op])) for op in ops if op in on_simdgroup}
        newly = frozenset(op for op, (tensor, simdgroup) in costs.items() if not _pays(form, tensor, simdgroup))
        for op, (tensor, simdgroup) in costs.items():
            step = "a K step" if on_tensor[op].in_loop else "in the kernel (no loop)"
            if op in newly:
                why[op] = f"{_WEIGHED[form]}: simdgroup matrices, {simdgroup} {step}, where tensor ops take {tensor}"
            else:
                than = "no more barriers than" if form == "rescaled" else "no worse than"
                why[op] = f"{_WEIGHED[form]}: tensor ops, {tensor} {step}, {than} simdgroup matrices' {simdgroup}"
        if newly:
            kept |= newly
            current = other if newly == ops else lower(kept)
    return current, _reasons(current, why)


_WEIGHED = {"single": "a single dot", "rescaled": "a carried accumulator rescaled each step"}
"""The tensor-op forms the rule weighs, as their reasons name them."""


def _pays(form: str, tensor: StepCost, simdgroup: StepCost) -> bool:
    """Whether tensor ops are taken: a single dot where its K step costs no more barriers and
    bytes than on simdgroup matrices; a rescaled carried accumulator where it costs no more
    barriers. The latter's accumulator never leaves the matrix unit inside the loop; what it
    stages besides (an operand the simdgroup path reads from registers, the factors) is the
    price of feeding it, as for the carried GEMM."""
    if form == "rescaled":
        return tensor.barriers <= simdgroup.barriers
    return tensor.no_worse_than(simdgroup)


def _lowered_within_limits(lower: Callable[[frozenset[Op]], Lowered], kept: frozenset[Op]) -> Lowered | None:
    """`lower(kept)`, or None where that lowering runs out of threadgroup memory."""
    try:
        lowered = lower(kept)
    except OutOfResources:
        return None
    return lowered if lowered.ctx.scratch_end <= THREADGROUP_MEMORY_BYTES else None


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
            why = tensor_dot_refusal(lowered.ctx, op) or "tensor ops take only a K loop's carried accumulator"  # type: ignore[arg-type]
            found[op] = f"tl.dot_scaled on simdgroup matrices: {why}"
    return found
