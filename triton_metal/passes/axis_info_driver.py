"""The driver of the axis info analysis: walks a function in order, applies the transfer rule
registered for each op's class (or a base class), recurses into regions and iterates
loop-carried values to a fixed point. The rules live in `axis_info_rules.py`; `axis_info.py`
says what the facts mean.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..ir import Op, Value
from ..ir.ops import scf
from ..ir.ops.func import FuncOp
from .axis_info import AxisInfo, dims_of, is_integral, is_tracked, is_unsigned, meet, pow2_divisor, rank_of
from .fold_constants import evaluate

Rule = Callable[["AxisInfoAnalysis", Any], list[AxisInfo]]
RULES: dict[type[Op], Rule] = {}

MAX_LOOP_ITERATIONS = 16
"""Fixed-point rounds for loop-carried values before falling back to pessimistic facts."""


def rule(*classes: type[Op]) -> Callable[[Rule], Rule]:
    def deco(fn: Rule) -> Rule:
        for c in classes:
            RULES[c] = fn
        return fn

    return deco


def _rule_for(op: Op) -> Rule | None:
    for cls in type(op).__mro__:
        fn = RULES.get(cls)  # type: ignore[arg-type]
        if fn is not None:
            return fn
    return None


class AxisInfoAnalysis:
    """Holds the facts found so far; `run_func` fills them for one function."""

    def __init__(self) -> None:
        self.facts: dict[Value, AxisInfo] = {}

    def get(self, v: Value) -> AxisInfo:
        found = self.facts.get(v)
        if found is not None:
            return found
        return AxisInfo.pessimistic(rank_of(v.type), is_unsigned(v.type))

    def set(self, v: Value, info: AxisInfo) -> None:
        if is_tracked(v.type):
            if not is_integral(v.type):  # floats: constancy only
                ones = (1,) * info.rank
                info = AxisInfo(ones, ones, info.constancy)
            self.facts[v] = _clip(info, v)

    # -- driver --------------------------------------------------------------------------------
    def run_func(self, f: Op) -> None:
        assert isinstance(f, FuncOp)
        block = f.body.block
        for i, arg in enumerate(block.args):
            attrs = f.arg_attrs[i] if i < len(f.arg_attrs) else {}
            div = int(attrs.get("tt.divisibility", 1))
            info = AxisInfo.pessimistic(rank_of(arg.type), is_unsigned(arg.type))
            self.set(arg, AxisInfo(info.contiguity, (pow2_divisor(div),) * info.rank, info.constancy, None,
                                   info.non_negative))
        self.run_block(block.ops)

    def run_block(self, ops: list[Op]) -> None:
        for op in ops:
            self.run_op(op)

    def run_op(self, op: Op) -> None:
        if isinstance(op, scf.ForOp):
            self._for(op)
            return
        if isinstance(op, scf.IfOp):
            self._if(op)
            return
        if isinstance(op, scf.WhileOp):
            self._while(op)
            return
        folded = self._fold(op)
        fn = _rule_for(op)
        if folded is not None:
            infos = [folded]
        elif fn is not None:
            infos = fn(self, op)
        else:
            for r in op.regions:  # unknown ops with regions (reduce, scan): analyse inside anyway
                for b in r.blocks:
                    self.run_block(b.ops)
            infos = [AxisInfo.pessimistic(rank_of(r.type), is_unsigned(r.type)) for r in op.results]
        for r, info in zip(op.results, infos):
            self.set(r, info)

    def _fold(self, op: Op) -> AxisInfo | None:
        """An elementwise op on operands of known constant value has a known constant value
        (computed with the device's integer semantics)."""
        if len(op.results) != 1 or not op.operands or not is_tracked(op.result.type):
            return None
        values = [self.facts[v].constant if v in self.facts else None for v in op.operands]
        if any(v is None for v in values):
            return None
        value = evaluate(op, values)  # type: ignore[arg-type]
        if value is None or isinstance(value, float):
            return None
        return AxisInfo.of_constant(int(value), dims_of(op.result.type))

    def _for(self, op: scf.ForOp) -> None:
        block = op.body.block
        lb, step = self.get(op.lower), self.get(op.step)
        iv_div = min(lb.element_divisibility, step.element_divisibility)
        # iv = lb + k * step: iv >= lb for a non-negative step; for a negative one ub < iv <= lb
        hi = self.get(op.upper)
        non_negative = lb.non_negative and (step.non_negative or hi.non_negative)
        self.set(block.args[0], AxisInfo((1,), (iv_div,), (1,), None, non_negative))
        carried = [self.get(v) for v in op.iter_args]
        for _ in range(MAX_LOOP_ITERATIONS):
            for arg, info in zip(block.args[1:], carried):
                self.set(arg, info)
            self.run_block(block.ops)
            yielded = [self.get(v) for v in block.ops[-1].operands]
            new = [meet(c, y) for c, y in zip(carried, yielded)]
            if new == carried:
                break
            carried = new
        else:
            carried = [AxisInfo.pessimistic(c.rank) for c in carried]
            for arg, info in zip(block.args[1:], carried):
                self.set(arg, info)
            self.run_block(block.ops)
        for r, info in zip(op.results, carried):
            self.set(r, info)

    def _if(self, op: scf.IfOp) -> None:
        outs: list[list[AxisInfo]] = []
        for r in (op.then_region, op.else_region):
            block = r.block
            self.run_block(block.ops)
            term = block.ops[-1] if block.ops else None
            outs.append([self.get(v) for v in term.operands] if term is not None and term.name == "scf.yield" else [])
        for i, res in enumerate(op.results):
            self.set(res, meet(outs[0][i], outs[1][i]))

    def _while(self, op: scf.WhileOp) -> None:
        before, after = op.before.block, op.after.block
        carried = [self.get(v) for v in op.inits]
        forwarded: list[AxisInfo] = []
        for _ in range(MAX_LOOP_ITERATIONS + 1):
            for arg, info in zip(before.args, carried):
                self.set(arg, info)
            self.run_block(before.ops)
            forwarded = [self.get(v) for v in before.ops[-1].operands[1:]]
            for arg, info in zip(after.args, forwarded):
                self.set(arg, info)
            self.run_block(after.ops)
            new = [meet(c, self.get(y)) for c, y in zip(carried, after.ops[-1].operands)]
            if new == carried:
                break
            carried = new
        else:
            carried = [AxisInfo.pessimistic(c.rank) for c in carried]
            for arg, info in zip(before.args, carried):
                self.set(arg, info)
            self.run_block(before.ops)
            forwarded = [AxisInfo.pessimistic(rank_of(v.type)) for v in before.ops[-1].operands[1:]]
            for arg, info in zip(after.args, forwarded):
                self.set(arg, info)
            self.run_block(after.ops)
        for r, info in zip(op.results, forwarded):
            self.set(r, info)


def _clip(info: AxisInfo, v: Value) -> AxisInfo:
    """Keep contiguity and constancy within the shape (and at least 1); zero is the only
    integer both contiguous and constant over more than one element, which cannot happen."""
    dims = dims_of(v.type)
    if len(dims) != info.rank:
        return AxisInfo.pessimistic(len(dims), is_unsigned(v.type))
    contiguity = tuple(max(1, min(c, n)) for c, n in zip(info.contiguity, dims))
    constancy = tuple(max(1, min(k, n)) for k, n in zip(info.constancy, dims))
    non_negative = info.non_negative or is_unsigned(v.type)
    if contiguity == info.contiguity and constancy == info.constancy and non_negative == info.non_negative:
        return info
    return AxisInfo(contiguity, info.divisibility, constancy, info.constant, non_negative)
