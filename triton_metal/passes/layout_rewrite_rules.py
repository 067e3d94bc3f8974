"""The per-op rules of `assign-layouts`: which layout each operand must be in, given the layouts
chosen for the op's results (see `layout_assignment` for how those are chosen).

Each rule sets the layouts of the op's tensor results (and of the block arguments of its
regions) and calls `a.ensure(op, operand, layout)`, which converts or recomputes the operand.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import CompilationError
from ..ir import Op, Value
from ..ir.layouts import BlockLayout, CoalescedLayout, DotOperandLayout, Layout, SliceLayout
from ..ir.types import TensorType, shape_of
from .accelerate_dot import block_layout_for
from .coalesce import coalesced_for, default_coalesced, memory_access
from .layout_shapes import natural_layout

if TYPE_CHECKING:
    from .layout_assignment import _Assigner

_ELEMENTWISE_PREFIXES = ("arith.", "math.")
_ELEMENTWISE_TT = {"tt.mulhi", "tt.precise_sqrt", "tt.precise_divf", "tt.ptr_to_int", "tt.int_to_ptr", "tt.bitcast", "tt.addptr"}


def is_elementwise(op: Op) -> bool:
    """One result element per operand element at the same coordinates (operands share a layout)."""
    return (op.name.startswith(_ELEMENTWISE_PREFIXES) and op.name != "arith.constant") or op.name in _ELEMENTWISE_TT


def layout_hint(op: Op) -> str | None:
    """The `layout=` hint of a load or store ("COALESCED" | "BLOCK"), if any."""
    return getattr(op, "layout", None)


def _tensor(v: Value) -> bool:
    return isinstance(v.type, TensorType)


def _hinted(a: _Assigner, op: Op, shape: tuple[int, ...]) -> Layout | None:
    """The layout the op's `layout` hint asks for (None without a hint)."""
    hint = layout_hint(op)
    if hint is None:
        return None
    if hint == "COALESCED":
        acc = memory_access(op, a.info)
        return coalesced_for(shape, [acc] if acc is not None else [], a.nw)
    if len(shape) != 2:
        raise CompilationError(f"layout=\"BLOCK\" needs a 2-D block, got shape {list(shape)}", op.loc,
                               "drop the layout hint or use layout=\"COALESCED\"")
    if op.name == "tt.load":
        for user in _dot_users(a, op.results[0]):
            idx = 0 if user.operands[0] is op.results[0] else 1
            return DotOperandLayout(idx, a.layout_of(user.results[0]))  # type: ignore[arg-type]
    else:
        value = op.operands[1]
        if _tensor(value) and value not in a.free and isinstance(a.layout_of(value), BlockLayout):
            return a.layout_of(value)  # a dot result: stored from its own fragments
    return block_layout_for(shape, a.nw, op.loc, rows_first=a.chained_dots, what='a layout="BLOCK" block')


def _dot_users(a: _Assigner, v: Value) -> list[Op]:
    return [u for u in a.func.walk() if u.name == "tt.dot" and any(x is v for x in u.operands[:2])]


def _store_layout(a: _Assigner, op: Op) -> Layout:
    ptr, value = op.operands[0], op.operands[1]
    shape = shape_of(ptr.type)
    hinted = _hinted(a, op, shape)
    if hinted is not None:
        return hinted
    acc = memory_access(op, a.info)
    own = coalesced_for(shape, [acc] if acc is not None else [], a.nw)
    if value not in a.free and _tensor(value):
        lay = a.layout_of(value)
        if a.direct and isinstance(lay, BlockLayout):
            return lay  # a dot result stored from its fragments
        if isinstance(lay, CoalescedLayout) and (acc is None or lay.order[0] == acc.order[0]):
            return lay
        return own
    if ptr not in a.free:
        return a.layout_of(ptr)
    return own


def _own_load_layout(a: _Assigner, op: Op) -> Layout | None:
    """A load whose class is coalesced along another dim (two loads of transposed tiles in one
    expression) reads in its own coalesced layout and converts, when its address arithmetic is
    free (recomputed in any layout); None: the class layout suits it."""
    lay = a.layout_of(op.results[0])
    acc = memory_access(op, a.info)
    if acc is None or op.operands[0] not in a.free or not isinstance(lay, CoalescedLayout):
        return None
    if lay.order[0] == acc.order[0] or a.info is None:
        return None
    if a.info.get(op.operands[0]).contiguity[acc.order[0]] == 1:
        return None  # nothing contiguous to coalesce along
    return coalesced_for(acc.shape, [acc], a.nw)


def rewrite_op(a: _Assigner, op: Op) -> None:
    """Lay out `op`'s results and put its operands in the layouts they must have."""
    name = op.name
    if name == "tt.store":
        if not _tensor(op.operands[0]):
            return  # a scalar store: nothing to lay out
        lay = _store_layout(a, op)
        for v in list(op.operands):
            a.ensure(op, v, lay)
        return
    if name in ("tt.load", "tt.atomic_rmw", "tt.atomic_cas"):
        if not op.results or not _tensor(op.results[0]):
            return
        res = op.results[0]
        hinted = _hinted(a, op, shape_of(res.type)) if name == "tt.load" else None
        if hinted is None and name == "tt.load":
            hinted = _own_load_layout(a, op)
        if hinted is not None:
            a.set_result(op, 0, hinted)
            lay = hinted
        else:
            lay = a.layout_of(res)
            a.set_layout(res, lay)
        for v in list(op.operands):
            a.ensure(op, v, lay)
        return
    if is_elementwise(op) or name in ("tt.broadcast", "tt.hint", "tt.expand_dims", "tt.splat",
                                      "tt.make_range", "arith.constant"):
        if not op.results or not _tensor(op.results[0]):
            return
        lay = a.layout_of(op.results[0])
        a.set_layout(op.results[0], lay)
        need = SliceLayout(op.axis, lay) if name == "tt.expand_dims" else lay  # type: ignore[attr-defined]
        for v in list(op.operands):
            a.ensure(op, v, need)
        return
    if name in ("tt.scan", "tt.map_elementwise"):  # every operand and result in one layout
        lay = a.layout_of(op.results[0])
        for r in op.results:
            a.set_layout(r, lay)
        for v in list(op.operands):
            a.ensure(op, v, lay)
        return
    if name == "tt.reduce":
        src0 = op.operands[0]
        lay = a.layout_of(src0) if src0 not in a.free else default_coalesced(shape_of(src0.type), a.nw)
        for v in list(op.operands):
            a.ensure(op, v, lay)
        for i, r in enumerate(op.results):
            if _tensor(r):
                a.set_result(op, i, SliceLayout(op.axis, lay))  # type: ignore[attr-defined]
        return
    if name == "tt.dot":
        blk = a.layout_of(op.results[0])
        if not isinstance(blk, BlockLayout):
            blk = block_layout_for(shape_of(op.results[0].type), a.nw, op.loc)
        a.set_result(op, 0, blk)
        a.ensure(op, op.operands[0], DotOperandLayout(0, blk))
        a.ensure(op, op.operands[1], DotOperandLayout(1, blk))
        a.ensure(op, op.operands[2], blk)
        return
    if name == "tt.dot_scaled":
        blk = a.layout_of(op.results[0])
        if not isinstance(blk, BlockLayout):
            blk = block_layout_for(shape_of(op.results[0].type), a.nw, op.loc)
        a.set_result(op, 0, blk)
        a.ensure(op, op.c, blk)  # type: ignore[attr-defined]
        for v in list(op.operands):
            if v is not op.c:  # type: ignore[attr-defined]
                # the packed operands and the scales in whatever layout they have: the lowering
                # writes them to threadgroup memory as bytes
                a.ensure(op, v, a.layout_of(v) if v not in a.free else default_coalesced(shape_of(v.type), a.nw))
        return
    if name in ("tt.trans", "tt.reshape", "tt.join", "tt.split", "tt.cat", "tt.gather", "tt.histogram"):
        srcs = [a._current(v) for v in op.operands]
        nat = natural_layout(op, srcs, a.nw)
        for v, need in zip(list(op.operands), nat.operands):
            if need is not None:
                a.ensure(op, v, need)
        for i, lay in enumerate(nat.results):
            a.set_result(op, i, lay)
        return
    if name == "scf.for":
        body = op.regions[0].block
        for i, res in enumerate(op.results):
            if _tensor(res):
                lay = a.layout_of(body.args[i + 1])
                a.set_layout(res, lay)
                a.set_layout(body.args[i + 1], lay)
        op.iter_args = _carried_in_layouts(a, op, op.iter_args, body.args[1:])  # type: ignore[attr-defined]
        return
    if name == "scf.if":
        for res in op.results:
            if _tensor(res):
                a.set_layout(res, a.layout_of(res))
        return
    if name == "scf.while":
        before, after = op.regions[0].block, op.regions[1].block
        for arg in before.args:
            if _tensor(arg):
                a.set_layout(arg, a.layout_of(arg))
        op.inits = _carried_in_layouts(a, op, op.inits, before.args)  # type: ignore[attr-defined]
        for i, res in enumerate(op.results):
            if _tensor(res):
                lay = a.layout_of(res)
                a.set_layout(res, lay)
                a.set_layout(after.args[i], lay)
        return
    if name == "scf.yield":
        parent = op.parent.parent_op if op.parent is not None else None
        assert parent is not None
        if parent.name == "scf.while":
            targets = list(parent.regions[0].block.args)
        else:
            targets = list(parent.results)
        op.values = _carried_in_layouts(a, op, op.values, targets)  # type: ignore[attr-defined]
        return
    if name == "scf.condition":
        parent = op.parent.parent_op if op.parent is not None else None
        assert parent is not None
        op.args = _carried_in_layouts(a, op, op.args, parent.results)  # type: ignore[attr-defined]
        return
    if any(_tensor(r) for r in op.results):
        raise CompilationError(f"internal error: layout assignment has no rule for '{name}'", op.loc)
    # ops without tensor results (print, assert, ...) take their operands in any layout
    for v in list(op.operands):
        if _tensor(v) and v in a.free:
            a.ensure(op, v, default_coalesced(shape_of(v.type), a.nw))


def _carried_in_layouts(a: _Assigner, op: Op, values: Sequence[Value], targets: Sequence[Value]) -> tuple[Value, ...]:
    """The values a terminator (or a loop's initial values) passes on, each in the layout of the
    result or argument it becomes. Position by position: one value may feed several of different
    layouts (the zeros an early return leaves in every variable it skips; one `tl.arange` two
    loop-carried offsets start from)."""
    return tuple(a.in_layout(v, t.type.layout, op) if _tensor(t) and _tensor(v) else v  # type: ignore[union-attr]
                 for v, t in zip(values, targets))
