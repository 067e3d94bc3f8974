"""Removal of redundant layout conversions (`remove-layout-conversions`), a simple, safe version.

Rewrites, repeated until none applies:
* a conversion to the layout its operand already has is its operand;
* a conversion of a conversion converts the original value (or is the original value when that
  already has the target layout);
* a conversion of a `make_range`, `splat` or tensor constant is that op recomputed in the
  target layout (no data moves);
* an elementwise op whose tensor operands are all conversions from one layout `L` (or values
  recomputable in any layout), and whose every use is a conversion back to `L`, is computed in
  `L` instead: both sets of conversions go;
* a chain of single-use elementwise ops from a conversion out of `L` to a conversion back to `L`
  (each op's other operands recomputable) runs in `L`: both conversions go;
* a conversion of a chain of single-use casts whose source has narrower elements converts the
  source and runs the casts in the target layout: fewer bytes move (an fp8 or int8 dot operand
  moves as bytes and is widened in the dot's operand layout, straight into its fragments).
Conversions (and ranges, splats, constants) left without uses are erased. Values of other ops keep their layouts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir import Module, Op, OpResult, Value
from ..ir.layouts import Layout
from ..ir.ops.ttg import ConvertLayoutOp
from ..ir.types import ScalarType, TensorType
from .layout_rewrite_rules import is_elementwise
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
            if _hoist(func, op, uses) or _below_casts(func, op, uses):
                return True
        elif is_elementwise(op) and len(op.results) == 1 and isinstance(op.results[0].type, TensorType):
            if _sink(func, op, uses.get(op.results[0], [])):
                return True
    return False


def _hoist(func: Op, conv: ConvertLayoutOp, uses: dict[Value, list[Op]]) -> bool:
    """`convert(e_k(...e_1(convert(x, B))...), A)` with `x` in A, every `e_i` elementwise with one
    use and no other operand than the chain's and recomputable values: the chain runs in A."""
    target = _layout(conv.results[0])
    chain: list[Op] = []
    v: Value = conv.src
    while True:
        if not isinstance(v, OpResult) or len(uses.get(v, [])) != 1:
            return False
        op = v.op
        if isinstance(op, ConvertLayoutOp):
            if not chain or _layout(op.src) != target:
                return False
            top_src: Value | None = op.src
            break
        if not is_elementwise(op) or len(op.results) != 1:
            return False
        rest = [w for w in op.operands if isinstance(w.type, TensorType) and not _is_remat(w)]
        chain.append(op)
        if not rest:
            top_src = None
            break
        if len(rest) != 1:
            return False
        v = rest[0]
    assert target is not None
    below: Value | None = top_src
    for op in reversed(chain):  # from the top of the chain down to `conv`
        for w in list(op.operands):
            if not isinstance(w.type, TensorType):
                continue
            if _is_remat(w):
                assert isinstance(w, OpResult)
                op.replace_operand(w, _remat(w.op, target))
            elif below is not None:
                op.replace_operand(w, below)
        op.results[0].type = op.results[0].type.with_layout(target)  # type: ignore[union-attr]
        below = op.results[0]
    _replace(func, conv.results[0], chain[0].results[0])
    _erase(conv)
    return True


_CASTS = ("arith.bitcast", "arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.extsi",
          "arith.extui")


def _element_bits(v: Value) -> int:
    ty = v.type
    assert isinstance(ty, TensorType) and isinstance(ty.element, ScalarType)
    return ty.element.bitwidth


def _below_casts(func: Op, conv: ConvertLayoutOp, uses: dict[Value, list[Op]]) -> bool:
    """`convert(c_k(...c_1(x)...), D)`, each `c_i` a cast with one use and `x` of narrower
    elements than the conversion's: `c_k(...c_1(convert(x, D))...)`."""
    chain: list[Op] = []
    v: Value = conv.src
    while isinstance(v, OpResult) and v.op.name in _CASTS and len(uses.get(v, [])) == 1:
        chain.append(v.op)
        v = v.op.operands[0]
    element = v.type.element if isinstance(v.type, TensorType) else None
    if not chain or not isinstance(element, ScalarType) or _element_bits(v) >= _element_bits(conv.src):
        return False
    target = _layout(conv.results[0])
    assert target is not None and isinstance(v.type, TensorType)
    first = chain[-1]  # the cast reading `x`
    moved = ConvertLayoutOp(src=v, result_types=[v.type.with_layout(target)], loc=conv.loc)
    assert first.parent is not None
    first.parent.insert_before(first, moved)
    first.replace_operand(v, moved.results[0])
    for op in chain:
        op.results[0].type = op.results[0].type.with_layout(target)  # type: ignore[union-attr]
    _replace(func, conv.results[0], chain[0].results[0])
    _erase(conv)
    return True


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
        dead = op.results and op.results[0] not in used
        if dead and (isinstance(op, ConvertLayoutOp) or _is_remat(op.results[0])):
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
