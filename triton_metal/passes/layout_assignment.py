"""Layout assignment (`assign-layouts`): every tensor value gets a layout; conversions are explicit.

Contract: after the pass every tensor-typed result and block argument of each function carries a
layout, every op's operands are in the layouts its lowering expects (below), and where a value
is needed in another layout a `ttg.convert_layout` right after its definition provides it.
Functions that already carry layouts are left alone.

How layouts are chosen:
1. *Free* values (`make_range`, `splat`, tensor constants, and elementwise / broadcast /
   expand_dims ops of free values: index and pointer arithmetic) are not laid out where they are
   defined; each use gets a copy computed directly in the layout it needs (no conversion).
2. The other tensor values fall into classes that must share one layout: the operands and result
   of elementwise ops, broadcasts, loads and atomics, scans, hints, and the values a loop or an
   `scf.if` carries. Related classes: a reduction's result is `#slice<axis, src>`, an
   expand_dims source `#slice<axis, result>`.
3. A class holding a dot result is a `#block` (`accelerate_dot`; with several dots in the kernel
   all warps go along M, so chained dots share their row split); a class touched by memory ops is
   `#coalesced` by the vector-width rule (`coalesce`); then slices propagate; the rest get the
   default coalesced layout, or the layout a shape op (trans, reshape, join, split, cat) keeps
   its data in.
4. Stores use their value's layout when it is coalesced along the pointer's contiguous dim,
   otherwise their own coalesced layout (a transpose, a dot result, a reduction result: one
   conversion before the store). Likewise a load contiguous along another dim than its class's
   layout reads in its own layout and converts (when its address arithmetic is free). Dot
   operands are converted to `#dot_op`.

The `layout` attribute of a load or store (`"COALESCED"` | `"BLOCK"`, from the `layout=` hint)
overrides the choice: COALESCED makes the op use its own coalesced layout, BLOCK the
simdgroup-fragment layout (`#dot_op` when the value feeds a dot, else `#block`).

With the module attribute `direct_fragment_io` (set by the compiler when the operand and result
conversions of dots do not fit in threadgroup memory), the class of each dot operand (the loads,
casts and scalings that make it and their pointers, loop-carried ones included) takes its
`#dot_op` layout when all its values are used only by elementwise ops, memory ops, loops and that
dot: the tiles load straight into fragments. Every store of a `#block` value (a dot result)
writes from the fragments. No conversion, no threadgroup memory, at the cost of less coalesced
device accesses.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from ..errors import CompilationError
from ..ir import BlockArgument, Module, Op, OpResult, Value
from ..ir.layouts import BlockLayout, DotOperandLayout, Layout, SliceLayout
from ..ir.ops import ConvertLayoutOp
from ..ir.types import TensorType
from .accelerate_dot import block_layout_for
from .axis_info import AxisInfoResult, analyze_axis_info
from .coalesce import MemoryAccess, coalesced_for, default_coalesced, memory_access
from .layout_rewrite_rules import is_elementwise, layout_hint, rewrite_op
from .layout_shapes import natural_layout
from .pass_base import ModulePass, PassContext, register_pass

_FREE_SOURCES = {"tt.make_range", "tt.splat", "arith.constant"}
_SHAPE_OPS = {"tt.trans", "tt.reshape", "tt.join", "tt.split", "tt.cat", "tt.gather", "tt.histogram"}
_MEMORY = {"tt.load", "tt.atomic_rmw", "tt.atomic_cas"}
SCALAR_REGION_OPS = ("tt.reduce", "tt.scan", "tt.map_elementwise")
"""Ops whose regions compute on scalars (combine functions, a mapped function): no layouts."""


def _is_tensor(v: Value) -> bool:
    return isinstance(v.type, TensorType)


def _walk(op: Op) -> Iterator[Op]:
    """Pre-order over nested ops, skipping the scalar regions of reduce, scan and map."""
    for r in op.regions:
        for child in list(r.block.ops):
            yield child
            if child.name not in SCALAR_REGION_OPS:
                yield from _walk(child)


class _Classes:
    """Union-find over values."""

    def __init__(self) -> None:
        self.parent: dict[Value, Value] = {}

    def find(self, v: Value) -> Value:
        self.parent.setdefault(v, v)
        while self.parent[v] is not v:
            self.parent[v] = self.parent[self.parent[v]]
            v = self.parent[v]
        return v

    def union(self, *vs: Value) -> None:
        roots = [self.find(v) for v in vs]
        for r in roots[1:]:
            if r is not roots[0]:
                self.parent[r] = roots[0]


@dataclass
class _Slice:
    """class(part) = #slice<axis, class(whole)>."""

    part: Value
    axis: int
    whole: Value


class _Assigner:
    def __init__(self, func: Op, num_warps: int, info: AxisInfoResult) -> None:
        self.func = func
        self.nw = num_warps
        self.info = info
        self.free: set[Value] = set()
        self.chained_dots = False
        self.classes = _Classes()
        self.members: list[Value] = []  # non-free tensor values, in definition order
        self.accesses: dict[Value, list[MemoryAccess]] = {}
        self.blocks: dict[Value, BlockLayout] = {}
        self.slices: list[_Slice] = []
        self.assigned: dict[Value, Layout] = {}
        self.converts: dict[tuple[Value, Layout], Value] = {}
        self.copies: dict[tuple[Value, Layout], Value] = {}
        self.direct = False
        """Stores of `#block` values write from the fragments (module docstring)."""
        self.fragment_operands: list[tuple[Value, int, Value]] = []
        """(loaded tile, operand index, dot result) of the loads marked to read fragments."""

    # -- analysis ------------------------------------------------------------------------------
    def _free_op(self, op: Op) -> bool:
        if len(op.results) != 1 or not _is_tensor(op.results[0]) or not op.is_pure:
            return False
        if op.name in _FREE_SOURCES:
            return True
        if is_elementwise(op) or op.name in ("tt.broadcast", "tt.expand_dims"):
            return all(v in self.free for v in op.operands if _is_tensor(v))
        return False

    def _union(self, *vs: Value | None) -> None:
        live = [v for v in vs if v is not None and _is_tensor(v) and v not in self.free]
        if live:
            self.classes.union(*live)

    def _define(self, v: Value) -> None:
        if _is_tensor(v) and v not in self.free:
            self.members.append(v)
            self.classes.find(v)

    def analyze(self) -> None:
        for op in _walk(self.func):
            if self._free_op(op):
                self.free.add(op.results[0])
        self.chained_dots = sum(1 for op in _walk(self.func) if op.name in ("tt.dot", "tt.dot_scaled")) > 1
        for op in _walk(self.func):
            for r in op.regions:
                if op.name not in SCALAR_REGION_OPS:
                    for a in r.block.args:
                        self._define(a)
            for res in op.results:
                self._define(res)
            self._relate(op)

    def _relate(self, op: Op) -> None:
        name = op.name
        if op.results and op.results[0] in self.free:
            return
        if is_elementwise(op) or name in ("tt.broadcast", "tt.hint"):
            self._union(*op.results, *op.operands)
        elif name in _MEMORY:
            self._union(*op.results, *op.operands)
            acc = memory_access(op, self.info)
            if acc is not None and layout_hint(op) is None:
                root = self.classes.find(op.results[0])
                self.accesses.setdefault(root, []).append(acc)
        elif name == "tt.store":
            acc = memory_access(op, self.info)
            value = op.value  # type: ignore[attr-defined]
            if acc is not None and value not in self.free and layout_hint(op) is None:
                self.accesses.setdefault(self.classes.find(value), []).append(acc)
        elif name in ("tt.scan", "tt.map_elementwise"):
            self._union(*op.operands, *op.results)
        elif name == "tt.reduce":
            self._union(*op.operands)
            self._union(*op.results)
            if _is_tensor(op.results[0]):
                self.slices.append(_Slice(op.results[0], op.axis, op.operands[0]))  # type: ignore[attr-defined]
        elif name == "tt.expand_dims":
            self.slices.append(_Slice(op.src, op.axis, op.results[0]))  # type: ignore[attr-defined]
        elif name == "tt.dot":
            self._union(op.c, op.results[0])  # type: ignore[attr-defined]
            if self.direct:
                for idx in (0, 1):
                    if op.operands[idx] not in self.free:
                        self.fragment_operands.append((op.operands[idx], idx, op.results[0]))
            self.blocks[self.classes.find(op.results[0])] = block_layout_for(
                op.results[0].type.shape, self.nw, op.loc, rows_first=self.chained_dots)  # type: ignore[union-attr]
        elif name == "tt.dot_scaled":  # operands stay as loaded: the lowering stages them itself
            self._union(op.c, op.results[0])  # type: ignore[attr-defined]
            self.blocks[self.classes.find(op.results[0])] = block_layout_for(
                op.results[0].type.shape, self.nw, op.loc, rows_first=self.chained_dots)  # type: ignore[union-attr]
        elif name == "scf.for":
            body = op.regions[0].block
            term = body.terminator
            for i, res in enumerate(op.results):
                self._union(op.iter_args[i], body.args[i + 1], res,  # type: ignore[attr-defined]
                            term.operands[i] if term is not None else None)
        elif name == "scf.if":
            for i, res in enumerate(op.results):
                ys = [r.block.terminator for r in op.regions]
                self._union(res, *(y.operands[i] for y in ys if y is not None and len(y.operands) > i))
        elif name == "scf.while":
            before, after = op.regions[0].block, op.regions[1].block
            cond, yld = before.terminator, after.terminator
            for i, a in enumerate(before.args):
                self._union(op.operands[i], a, yld.operands[i] if yld is not None else None)
            for i, res in enumerate(op.results):
                self._union(res, after.args[i], cond.operands[i + 1] if cond is not None else None)

    # -- choice --------------------------------------------------------------------------------
    def layout_of(self, v: Value) -> Layout:
        if v not in self.classes.parent and isinstance(v.type, TensorType) and v.type.layout is not None:
            return v.type.layout  # a conversion this pass made
        root = self.classes.find(v)
        lay = self.assigned.get(root)
        if lay is None:
            raise CompilationError(f"internal error: no layout chosen for {v}", None)
        return lay

    def _propagate(self) -> None:
        changed = True
        while changed:
            changed = False
            for s in self.slices:
                part = self.classes.find(s.part) if s.part not in self.free else None
                whole = self.classes.find(s.whole) if s.whole not in self.free else None
                if part is not None and part not in self.assigned and whole is not None and whole in self.assigned:
                    self.assigned[part] = SliceLayout(s.axis, self.assigned[whole])
                    changed = True
                elif whole is not None and whole not in self.assigned and part is not None and part in self.assigned:
                    lay = self.assigned[part]
                    if isinstance(lay, SliceLayout) and lay.dim == s.axis:
                        self.assigned[whole] = lay.parent
                        changed = True

    def _rekey(self) -> None:
        """Key the anchors by the final class roots (unions after recording move roots)."""
        accesses: dict[Value, list[MemoryAccess]] = {}
        for root, accs in self.accesses.items():
            accesses.setdefault(self.classes.find(root), []).extend(accs)
        self.accesses = accesses
        self.blocks = {self.classes.find(r): b for r, b in self.blocks.items()}

    def choose(self) -> None:
        self._rekey()
        for root, blk in self.blocks.items():
            self.assigned[root] = blk
        if self.fragment_operands:
            self._choose_fragment_operands()
        # classes that load come first; slices propagate before store-only classes are chosen
        # (a reduction result that is stored keeps its slice layout until the store converts it)
        for loads_only in (True, False):
            for root, accs in self.accesses.items():
                if root not in self.assigned and (any(x.is_load for x in accs) or not loads_only):
                    self.assigned[root] = coalesced_for(accs[0].shape, accs, self.nw)
            self._propagate()
        for v in self.members:
            root = self.classes.find(v)
            if root in self.assigned:
                continue
            lay: Layout | None = None
            if isinstance(v, OpResult) and v.op.name in _SHAPE_OPS:
                srcs = [self._current(w) for w in v.op.operands]
                lay = natural_layout(v.op, srcs, self.nw).results[v.index]
            if lay is None:
                lay = default_coalesced(v.type.shape, self.nw)  # type: ignore[union-attr]
            self.assigned[root] = lay
            self._propagate()

    def _choose_fragment_operands(self) -> None:
        """Direct mode: a dot operand's class (the loads, casts and scalings that make it, their
        pointers, loop-carried ones included) takes the `#dot_op` layout, so that the tiles load
        straight into fragments and nothing converts them, when every use of the class's values
        is one the fragment layout serves (elementwise ops, memory ops, loops, that dot)."""
        users: dict[Value, list[tuple[Op, int]]] = {}
        for op in _walk(self.func):
            for i, v in enumerate(op.operands):
                users.setdefault(v, []).append((op, i))
        members: dict[Value, list[Value]] = {}
        for v in self.members:
            members.setdefault(self.classes.find(v), []).append(v)
        for operand, idx, result in self.fragment_operands:
            root = self.classes.find(operand)
            blk = self.assigned.get(self.classes.find(result))
            if root in self.assigned or not isinstance(blk, BlockLayout):
                continue
            if all(_fragment_use(u, i, idx) for v in members.get(root, []) for u, i in users.get(v, [])):
                self.assigned[root] = DotOperandLayout(idx, blk)

    def _current(self, v: Value) -> Layout | None:
        if not _is_tensor(v) or v in self.free:
            return None
        return self.assigned.get(self.classes.find(v))

    # -- rewriting -----------------------------------------------------------------------------
    def ensure(self, op: Op, v: Value, lay: Layout) -> None:
        """Make `op` use `v` in layout `lay` (at every operand that is `v`)."""
        if not _is_tensor(v):
            return
        new = self.in_layout(v, lay, op)
        if new is not v:
            op.replace_operand(v, new)

    def in_layout(self, v: Value, lay: Layout, user: Op) -> Value:
        """`v` in layout `lay` for `user`: a copy of a free value, else a conversion."""
        return self.copy_in(v, lay) if v in self.free else self.convert(v, lay, user)

    def copy_in(self, v: Value, lay: Layout) -> Value:
        """A copy of the free value `v` computed in `lay`, right after `v`'s definition."""
        key = (v, lay)
        found = self.copies.get(key)
        if found is not None:
            return found
        assert isinstance(v, OpResult)
        op = v.op
        mapping: dict[Value, Value] = {}
        for w in op.operands:
            if _is_tensor(w) and w not in mapping:
                need = SliceLayout(op.axis, lay) if op.name == "tt.expand_dims" else lay  # type: ignore[attr-defined]
                mapping[w] = self.copy_in(w, need)
        new = op.clone(mapping)
        new.results[0].type = v.type.with_layout(lay)  # type: ignore[union-attr]
        assert op.parent is not None
        op.parent.insert_after(op, new)
        self.copies[key] = new.results[0]
        return new.results[0]

    def convert(self, v: Value, lay: Layout, user: Op) -> Value:
        ty = v.type
        assert isinstance(ty, TensorType)
        if ty.layout == lay:
            return v
        key = (v, lay)
        found = self.converts.get(key)
        if found is not None:
            return found
        conv = ConvertLayoutOp(src=v, result_types=[ty.with_layout(lay)], loc=user.loc)
        if isinstance(v, BlockArgument):
            v.block.insert(0, conv)
        else:
            assert isinstance(v, OpResult) and v.op.parent is not None
            v.op.parent.insert_after(v.op, conv)
        conv.results[0].name_hint = v.name_hint
        self.converts[key] = conv.results[0]
        return conv.results[0]

    def set_layout(self, v: Value, lay: Layout) -> None:
        v.type = v.type.with_layout(lay)  # type: ignore[union-attr]

    def set_result(self, op: Op, index: int, natural: Layout) -> None:
        """Give result `index` its natural layout; convert to its class's layout if that differs."""
        res = op.results[index]
        self.set_layout(res, natural)
        want = self.layout_of(res)
        if want == natural:
            return
        conv = ConvertLayoutOp(src=res, result_types=[res.type.with_layout(want)], loc=op.loc)  # type: ignore[union-attr]
        assert op.parent is not None
        op.parent.insert_after(op, conv)
        conv.results[0].name_hint = res.name_hint
        for user in list(_users(self.func, res)):
            if user is not conv:
                user.replace_operand(res, conv.results[0])

    def rewrite(self) -> None:
        for op in list(_walk(self.func)):
            if op.results and op.results[0] in self.free:
                continue
            rewrite_op(self, op)
        for op in reversed(list(_walk(self.func))):
            if op.results and op.results[0] in self.free and op.parent is not None:
                op.parent.remove(op)


def _users(func: Op, v: Value) -> Iterator[Op]:
    for op in func.walk():
        if any(x is v for x in op.operands):
            yield op


def _fragment_use(op: Op, index: int, operand: int) -> bool:
    """Whether `op` can take its operand `index` in a dot-operand layout (see direct mode)."""
    if op.name == "tt.dot":
        return index == operand
    if op.name in ("tt.load", "scf.for", "scf.yield") or is_elementwise(op):
        return layout_hint(op) is None
    return False


def _has_layouts(func: Op) -> bool:
    for op in func.walk():
        for v in op.results:
            if isinstance(v.type, TensorType) and v.type.layout is not None:
                return True
    return False


@register_pass
@dataclass(frozen=True)
class LayoutAssignment(ModulePass):
    """Give every tensor a layout (see the module docstring)."""

    name: ClassVar[str] = "assign-layouts"

    def apply(self, ctx: PassContext | None, module: Module) -> None:
        num_warps = int(module.attributes.get("num_warps", 4))
        info = analyze_axis_info(module)
        for func in module.funcs:
            if _has_layouts(func):
                continue
            direct = bool(module.attributes.get("direct_fragment_io", 0))
            a = _Assigner(func, num_warps, info)
            a.direct = direct
            a.analyze()
            a.choose()
            a.rewrite()
