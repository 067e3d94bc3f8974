"""Removal of redundant layout conversions (`remove-layout-conversions`), a simple, safe version.

Rewrites, repeated until none applies:
* a conversion to the layout its operand already has is its operand;
* a conversion of a conversion converts the original value (or is the original value when that
  already has the target layout);
* a conversion of a `make_range`, `splat` or tensor constant is that op recomputed in the
  target layout (no data moves);
* an elementwise op whose tensor operands are all conversions from one layout `L` (or values
  recomputable in any layout), and whose every use is a conversion back to `L`, is computed in
  `L` instead: both sets of conversions go.
Conversions left without uses are erased. Values of other ops keep their layouts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import Module, Op, OpResult, Value
from ..ir.layouts import Layout
from ..ir.ops.ttg import ConvertLayoutOp
from ..ir.types import TensorType
from .layout_assignment import is_elementwise
from .pass_base import ModulePass, PassContext, register_pass

_REMAT = ("tt.make_range", "tt.splat", "arith.constant")


def _layout(v: Value) -> Layout | None:
    return v.type.layout if isinstance(v.type, TensorType) else None


def _replace(func: Op, old: Value, new: Value) -> None:
    for op in func.walk():
        op.replace_operand(old, new)


def _erase(op: Op) -> None:
    if op.parent is not None:
        op.parent.remove(op)


def _remat(op: Op, lay: Layout) -> Value:
    """`op` (make_range, splat, constant) recomputed in `lay`, right after `op`."""
    new = op.clone({})
    new.results[0].type = op.results[0].type.with_layout(lay)  # type: ignore[union-attr]
    assert op.parent is not None
    op.parent.insert_after(op, new)
    return new.results[0]


def _is_remat(v: Value) -> bool:
    return isinstance(v, OpResult) and v.op.name in _REMAT and isinstance(v.type, TensorType)


def _step(func: Op) -> bool:
    """One rewrite (True), or none left (False). The use lists are valid until the first rewrite."""
    uses: dict[Value, list[Op]] = {}
    for op in func.walk():
        for v in op.operands:
            uses.setdefault(v, []).append(op)
    for op in list(func.walk()):
        if op.parent is None:
            continue
        if isinstance(op, ConvertLayoutOp):
            src, res = op.src, op.results[0]
            target = _layout(res)
            assert target is not None
            if _layout(src) == target:
                _replace(func, res, src)
                _erase(op)
                return True
            if isinstance(src, OpResult) and isinstance(src.op, ConvertLayoutOp):
                inner = src.op.src
                if _layout(inner) == target:
                    _replace(func, res, inner)
                    _erase(op)
                else:
                    op.replace_operand(src, inner)
                return True
            if _is_remat(src):
                assert isinstance(src, OpResult)
                _replace(func, res, _remat(src.op, target))
                _erase(op)
                return True
        elif is_elementwise(op) and len(op.results) == 1 and isinstance(op.results[0].type, TensorType):
            if _sink(func, op, uses.get(op.results[0], [])):
                return True
    return False


def _sink(func: Op, op: Op, users: list[Op]) -> bool:
    """Compute `op` in layout L when its inputs come converted from L and its uses convert to L."""
    res = op.results[0]
    if not users or not all(isinstance(u, ConvertLayoutOp) for u in users):
        return False
    target = _layout(users[0].results[0])
    if any(_layout(u.results[0]) != target for u in users):
        return False
    sources: dict[Value, Value] = {}
    for v in op.operands:
        if not isinstance(v.type, TensorType):
            continue
        if isinstance(v, OpResult) and isinstance(v.op, ConvertLayoutOp) and _layout(v.op.src) == target:
            sources[v] = v.op.src
        elif _is_remat(v):
            continue
        else:
            return False
    if not sources:
        return False
    for v in list(op.operands):
        if v in sources:
            op.replace_operand(v, sources[v])
        elif isinstance(v.type, TensorType):
            assert isinstance(v, OpResult)
            op.replace_operand(v, _remat(v.op, target))
    res.type = res.type.with_layout(target)  # type: ignore[union-attr]
    for u in users:
        _replace(func, u.results[0], res)
        _erase(u)
    return True


def _erase_dead(func: Op) -> None:
    used: set[Value] = set()
    for op in func.walk():
        used.update(op.operands)
    for op in reversed(list(func.walk())):
        if isinstance(op, ConvertLayoutOp) and op.results[0] not in used:
            _erase(op)


@register_pass
@dataclass(frozen=True)
class RemoveLayoutConversions(ModulePass):
    """Drop conversions that move nothing or can be recomputed (see the module docstring)."""

    name: ClassVar[str] = "remove-layout-conversions"

    def apply(self, ctx: PassContext | None, module: Module) -> None:
        for func in module.funcs:
            while _step(func):
                pass
            _erase_dead(func)
