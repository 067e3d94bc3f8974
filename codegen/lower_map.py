"""Lowering of `tt.map_elementwise`: the scalar body inlined once per register of the result.

Operands and results share one layout (the layout passes made them agree), so register `r` of
every result is the body applied to register `r` of the operands. The body's own control flow
(`scf.if` on an element's value) lowers to MSL `if` statements per register, as it does in a
reduction's combine region, which is inlined the same way (`lower_reduce.combine`).
"""

from __future__ import annotations

from triton_metal.ir.ops.tt_compute import MapElementwiseOp

from .context import LoweringContext, ctype_of
from .lower_reduce import combine
from .registry import lowers
from .values import RegValue


@lowers(MapElementwiseOp)
def lower_map_elementwise(ctx: LoweringContext, op: MapElementwiseOp) -> None:
    dist = ctx.dist_of(op.results[0].type)
    srcs = [ctx.reg(v) for v in op.srcs]
    for v in srcs:
        if v.dist != dist:
            raise ctx.error("internal: tt.map_elementwise's operands are laid out unlike its results")
    n = dist.num_regs if dist is not None else 1
    per_result: list[list] = [[] for _ in op.results]
    for r in range(n):
        values = combine(ctx, op.body, [v.regs[r] for v in srcs], ())
        for out, value in zip(per_result, values):
            out.append(value)
    for res, regs in zip(op.results, per_result):
        ctx.bind(res, RegValue(res.type, ctx.materialize(regs, ctype_of(res.type)), dist))
