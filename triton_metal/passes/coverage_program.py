"""The symbolic half of the store-coverage proof: a kernel's stores as a program the host runs.

`coverage_program(func, outputs) -> (statements, left_out)` slices the kernel backwards from
every `tt.store` to an output parameter and keeps only what decides WHERE it writes: program ids
and counts, scalar parameters, constants, integer arithmetic, loop bounds, `if` conditions, and
the tile algebra of its pointer and mask (`make_range`, splat, broadcast, expand_dims, and a
pointer cast to a type of the same element size, which addresses the same elements). The result
is a tree of plain tuples (JSON-friendly: it rides in the disk cache) that
`runtime.coverage.check_coverage` evaluates for every program of a launch with NumPy.

Statements (`id`s number values; every value is defined before use, in its scope or an
enclosing one):

    ("arg", id, name)  ("const", id, value)  ("pid", id, axis)  ("nprog", id, axis)
    ("range", id, start, end)  ("splat", id, a, shape)  ("bcast", id, a, shape)
    ("expand", id, a, axis)  ("bin", id, op, a, b, bits, signed)  ("cmp", id, pred, a, b, bits,
    signed)  ("select", id, c, a, b)  ("cast", id, op, a, from_bits, to_bits, signed)
    ("ptr", id, param)  ("addptr", id, p, offset, bits, unsigned)
    ("for", iv, lb, ub, step, bits, body)  ("if", cond, then, else)
    ("store", output, ptr, mask | None, where)

A value carried by a `for` loop that grows by a loop-invariant increment (`ptrs += BLOCK`)
becomes `init + ((iv - lb) // step) * inc`. A store whose address or mask depends on anything
else (loaded data, reductions, other carried values, a `while` loop) is left out with the
reason, keyed by its source line: the stores left in are enough for a proof, and the reasons
explain a launch the proof does not cover.
"""

from __future__ import annotations

import linecache
from typing import Any

from triton_metal.ir import BlockArgument, Op, Value
from triton_metal.ir.ops import arith, scf, tt
from triton_metal.ir.ops import tt_memory as mem
from triton_metal.ir.types import ScalarType, element_type, shape_of


class _Refused(Exception):
    pass


_BINARY = {
    arith.AddIOp: "add", arith.SubIOp: "sub", arith.MulIOp: "mul", arith.DivSIOp: "divs",
    arith.DivUIOp: "divu", arith.RemSIOp: "rems", arith.RemUIOp: "remu", arith.MinSIOp: "mins",
    arith.MaxSIOp: "maxs", arith.MinUIOp: "minu", arith.MaxUIOp: "maxu", arith.AndIOp: "and",
    arith.OrIOp: "or", arith.XOrIOp: "xor", arith.ShLIOp: "shl", arith.ShRSIOp: "shrs",
    arith.ShRUIOp: "shru",
}
_POINTER_PATH = (tt.AddPtrOp, tt.SplatOp, tt.BroadcastOp, tt.ExpandDimsOp)
_CASTS = {arith.ExtSIOp: "extsi", arith.ExtUIOp: "extui", arith.TruncIOp: "trunci"}


def _same_size_cast(op: Op) -> bool:
    """A pointer reinterpreted to a type of its own element size (`ptr.to(tl.pointer_type(T))`):
    it addresses the same elements, each store through it all of one element's bytes. Casts to
    other sizes are not modelled (their stores are left out)."""
    if not isinstance(op, arith.PtrBitcastOp):
        return False
    sizes = set()
    for v in (op.operand, op.result):
        el = element_type(v.type)
        pointee = getattr(el, "pointee", None)
        if not isinstance(pointee, ScalarType):
            return False
        sizes.add(max(1, pointee.bitwidth // 8))
    return len(sizes) == 1


def _int_type(v: Value) -> ScalarType:
    el = element_type(v.type)
    if not isinstance(el, ScalarType) or not el.is_int() or el.name == "u64":
        raise _Refused(f"it computes with {el} values (only integers up to 64 bits signed are modelled)")
    return el


def _reads_memory(v: Value, limit: int = 200) -> bool:
    """Whether `v` is computed from a load, an atomic or a poll (a bounded walk up its operands)."""
    seen: set[int] = set()
    todo = [v]
    while todo and len(seen) < limit:
        x = todo.pop()
        if id(x) in seen or isinstance(x, BlockArgument):
            continue
        seen.add(id(x))
        op = x.op  # type: ignore[attr-defined]
        if isinstance(op, (mem.LoadOp, mem.AtomicRMWOp, mem.AtomicCASOp, mem.AtomicPollOp)):
            return True
        todo.extend(op.operands)
    return False


def _through_layouts(v: Value) -> Value:
    op = getattr(v, "op", None)
    while op is not None and op.name == "ttg.convert_layout":
        v = op.operands[0]
        op = getattr(v, "op", None)
    return v


def _inside(v: Value, loop: Op) -> bool:
    """Whether `v` is defined inside `loop`'s body (an op or a block argument there)."""
    block = v.block if isinstance(v, BlockArgument) else v.op.parent  # type: ignore[attr-defined]
    while block is not None:
        owner = block.parent_op
        if owner is loop:
            return True
        block = owner.parent if owner is not None else None
    return False


def _invariant(v: Value, loop: Op, depth: int = 0) -> bool:
    """Whether `v` has one value in every iteration of `loop`: defined outside it, or computed
    inside by pure ops from such values (a splat of a scalar argument)."""
    if not _inside(v, loop):
        return True
    if isinstance(v, BlockArgument) or depth > 32:
        return False
    op = v.op  # type: ignore[attr-defined]
    if op.regions or not getattr(op, "is_pure", False):
        return False
    return all(_invariant(x, loop, depth + 1) for x in op.operands)


def where(op: Op) -> str:
    """`file:line: source` of an op, for reasons."""
    if op.loc is None:
        return "<unknown line>"
    text = linecache.getline(op.loc.file, op.loc.line).strip()
    return f"{op.loc.file}:{op.loc.line}: {text}" if text else f"{op.loc.file}:{op.loc.line}"


class _Slicer:
    def __init__(self, func: Op, outputs: dict[BlockArgument, str]) -> None:
        self.func = func
        self.outputs = outputs
        self.params = {a: (a.name_hint or f"arg{a.index}") for a in func.body.block.args}  # type: ignore[attr-defined]
        self.next_id = 0
        self.left_out: list[tuple[str, str, str]] = []

    def fresh(self) -> int:
        self.next_id += 1
        return self.next_id

    # -- values --------------------------------------------------------------------------------
    def value(self, v: Value, out: list[Any], env: dict[Value, int]) -> int:
        if v in env:
            return env[v]
        got = self._define(v, out, env)
        env[v] = got
        return got

    def _define(self, v: Value, out: list[Any], env: dict[Value, int]) -> int:
        if isinstance(v, BlockArgument):
            if v in self.params:
                el = element_type(v.type)
                i = self.fresh()
                if isinstance(el, ScalarType):
                    _int_type(v)
                    out.append(("arg", i, self.params[v]))
                else:
                    out.append(("ptr", i, self.params[v]))
                return i
            return self._carried(v, out, env)
        op = v.op  # type: ignore[attr-defined]
        if op.name == "ttg.convert_layout" or _same_size_cast(op):
            return self.value(op.operands[0], out, env)
        if isinstance(op, tt.GetProgramIdOp):  # GetNumProgramsOp included
            i = self.fresh()
            out.append(("nprog" if isinstance(op, tt.GetNumProgramsOp) else "pid", i, op.axis))
            return i
        if isinstance(op, arith.ConstantOp):
            el = element_type(v.type)
            if not isinstance(el, ScalarType) or el.is_float() or el.name == "u64":
                raise _Refused(f"it depends on a {el} constant")
            i = self.fresh()
            c = self.fresh() if shape_of(v.type) else i
            out.append(("const", c, op.value if isinstance(op.value, bool) else int(op.value)))
            if c != i:
                out.append(("splat", i, c, tuple(shape_of(v.type))))
            return i
        if isinstance(op, tt.MakeRangeOp):
            i = self.fresh()
            out.append(("range", i, op.start, op.end))
            return i
        if isinstance(op, (tt.SplatOp, tt.BroadcastOp)):
            a = self.value(op.operands[0], out, env)
            i = self.fresh()
            out.append(("splat" if isinstance(op, tt.SplatOp) else "bcast", i, a, tuple(shape_of(v.type))))
            return i
        if isinstance(op, tt.ExpandDimsOp):
            a = self.value(op.src, out, env)
            i = self.fresh()
            out.append(("expand", i, a, op.axis))
            return i
        kind = _BINARY.get(type(op))
        if kind is not None:
            el = _int_type(v)
            a, b = self.value(op.lhs, out, env), self.value(op.rhs, out, env)
            i = self.fresh()
            out.append(("bin", i, kind, a, b, el.bitwidth, el.is_signed()))
            return i
        if isinstance(op, arith.CmpIOp):
            el = _int_type(op.lhs)
            a, b = self.value(op.lhs, out, env), self.value(op.rhs, out, env)
            i = self.fresh()
            out.append(("cmp", i, op.predicate.value, a, b, el.bitwidth, el.is_signed()))
            return i
        if isinstance(op, arith.SelectOp):
            _int_type(v)
            c, a, b = (self.value(x, out, env) for x in op.operands)
            i = self.fresh()
            out.append(("select", i, c, a, b))
            return i
        cast = _CASTS.get(type(op))
        if cast is not None:
            src, dst = _int_type(op.operands[0]), _int_type(v)
            a = self.value(op.operands[0], out, env)
            i = self.fresh()
            out.append(("cast", i, cast, a, src.bitwidth, dst.bitwidth, dst.is_signed()))
            return i
        if isinstance(op, tt.AddPtrOp):
            el = _int_type(op.offset)
            p, o = self.value(op.ptr, out, env), self.value(op.offset, out, env)
            i = self.fresh()
            out.append(("addptr", i, p, o, el.bitwidth, not el.is_signed()))
            return i
        if _reads_memory(v):
            raise _Refused("it depends on loaded data")
        raise _Refused(f"it depends on '{op.name}', which the host does not model")

    def _carried(self, v: BlockArgument, out: list[Any], env: dict[Value, int]) -> int:
        """A value carried by a `for` loop that grows by a loop-invariant step every iteration
        (`ptrs += BLOCK`, `tile += NUM_SMS`): `init + ((iv - lb) // step) * inc`, which wraps
        as the kernel's running sum does."""
        loop = v.block.parent_op
        if not (isinstance(loop, scf.ForOp) and v.index > 0 and loop.induction_var in env):
            raise _Refused("it depends on a value carried from one loop iteration to the next")
        nxt = _through_layouts(loop.body.block.ops[-1].operands[v.index - 1])
        op = getattr(nxt, "op", None)
        inc = None
        if isinstance(op, tt.AddPtrOp) and _through_layouts(op.ptr) is v:
            inc = op.offset
        elif isinstance(op, arith.AddIOp):
            inc = op.rhs if _through_layouts(op.lhs) is v else op.lhs if _through_layouts(op.rhs) is v else None
        if inc is None or not _invariant(inc, loop):
            raise _Refused("it depends on a value carried from one loop iteration to the next, "
                           "other than by a loop-invariant increment")
        el = _int_type(inc)
        init = self.value(loop.iter_args[v.index - 1], out, env)
        lb, step = self.value(loop.lower, out, env), self.value(loop.step, out, env)
        by = self.value(inc, out, env)
        d, k = self.fresh(), self.fresh()
        out.append(("bin", d, "sub", env[loop.induction_var], lb, 64, True))
        out.append(("bin", k, "divs", d, step, 64, True))
        if shape_of(inc.type):
            ks = self.fresh()
            out.append(("splat", ks, k, tuple(shape_of(inc.type))))
            k = ks
        grown, result = self.fresh(), self.fresh()
        out.append(("bin", grown, "mul", k, by, el.bitwidth, el.is_signed()))
        if isinstance(op, tt.AddPtrOp):
            out.append(("addptr", result, init, grown, el.bitwidth, not el.is_signed()))
        else:
            out.append(("bin", result, "add", init, grown, el.bitwidth, el.is_signed()))
        return result

    # -- statements ----------------------------------------------------------------------------
    def block(self, ops: list[Op], out: list[Any], env: dict[Value, int]) -> None:
        for op in ops:
            if isinstance(op, mem.StoreOp):
                self.store(op, out, env)
            elif isinstance(op, scf.ForOp) and self._stores(op):
                self.loop(op, out, env)
            elif isinstance(op, scf.IfOp) and self._stores(op):
                self.branch(op, out, env)
            elif op.regions and self._stores(op):
                for st in self._stores(op):
                    self._leave_out(st, f"it is inside '{op.name}'")

    def _stores(self, op: Op) -> list[mem.StoreOp]:
        return [s for s in op.walk() if isinstance(s, mem.StoreOp) and self._output(s) is not None]

    def _output(self, st: mem.StoreOp) -> str | None:
        v = st.ptr
        while True:
            if isinstance(v, BlockArgument):
                if v in self.outputs:
                    return self.outputs[v]
                loop = v.block.parent_op
                if not (isinstance(loop, scf.ForOp) and v.index > 0):
                    return None
                v = loop.iter_args[v.index - 1]  # a carried pointer starts as its init
                continue
            op = v.op  # type: ignore[attr-defined]
            if isinstance(op, _POINTER_PATH) or op.name == "ttg.convert_layout" or _same_size_cast(op):
                v = op.operands[0]
            else:
                return None

    def _leave_out(self, st: mem.StoreOp, reason: str) -> None:
        name = self._output(st)
        if name is not None:
            self.left_out.append((name, where(st), reason))

    def store(self, st: mem.StoreOp, out: list[Any], env: dict[Value, int]) -> None:
        name = self._output(st)
        if name is None:
            return
        local = dict(env)
        pending: list[Any] = []
        try:
            p = self.value(st.ptr, pending, local)
            m = self.value(st.mask, pending, local) if st.mask is not None else None
        except _Refused as why:
            self._leave_out(st, str(why))
            return
        env.update(local)
        out.extend(pending)
        out.append(("store", name, p, m, where(st)))

    def loop(self, op: scf.ForOp, out: list[Any], env: dict[Value, int]) -> None:
        pending: list[Any] = []
        local = dict(env)
        try:
            el = _int_type(op.lower)
            lb, ub, step = (self.value(x, pending, local) for x in (op.lower, op.upper, op.step))
        except _Refused as why:
            for st in self._stores(op):
                self._leave_out(st, f"the bounds of its loop cannot be computed: {why}")
            return
        iv = self.fresh()
        body: list[Any] = []
        inner = dict(local)
        inner[op.induction_var] = iv
        self.block(op.body.block.ops, body, inner)
        if body:  # the bounds' statements only when the loop stays
            env.update(local)
            out.extend(pending)
            out.append(("for", iv, lb, ub, step, el.bitwidth, tuple(body)))

    def branch(self, op: scf.IfOp, out: list[Any], env: dict[Value, int]) -> None:
        pending: list[Any] = []
        local = dict(env)
        try:
            c = self.value(op.condition, pending, local)
        except _Refused as why:
            for st in self._stores(op):
                self._leave_out(st, f"it is under an 'if' whose condition cannot be computed: {why}")
            return
        then: list[Any] = []
        other: list[Any] = []
        self.block(op.then_region.block.ops, then, dict(local))
        self.block(op.else_region.block.ops, other, dict(local))
        if then or other:
            env.update(local)
            out.extend(pending)
            out.append(("if", c, tuple(then), tuple(other)))


LeftOut = tuple[str, str, str]
"""(output, store location, reason)."""


def coverage_program(func: Op, outputs: dict[BlockArgument, str]) -> tuple[tuple[Any, ...], tuple[LeftOut, ...]]:
    """The stores of `func` to `outputs` (parameter -> metal_kernel output name) as a program
    (module docstring), and (output, store location, reason) of every store it leaves out."""
    slicer = _Slicer(func, outputs)
    statements: list[Any] = []
    slicer.block(func.body.block.ops, statements, {})  # type: ignore[attr-defined]
    return tuple(statements), tuple(slicer.left_out)
