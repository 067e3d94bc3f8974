"""Lowering of structured control flow and of hints, assumptions, barriers, prints and asserts.

`scf.for`, `scf.if` and `scf.while` become C loops and branches on scalar (program-uniform)
conditions. Loop-carried values and branch results live in register arrays declared before the
construct; each iteration (or branch) assigns the yielded values to them, through temporaries so
that a yield of swapped values reads the old ones.

`tl.device_print` exists only on the emulator: each owner thread of an element calls
`tm_device_print` (site, the thread's print count, operand, row-major index, program id, value)
inside `#ifdef TM_DEVICE_PRINT`, a macro only the emulator's kernel header defines, so Metal
compiles none of it (MLX and torch MPS kernels have no host console: the runtime says so once per
kernel). The metadata's `device_prints` describes each site (prefix, hex, operand types and
shapes) for the runtime, which formats the records (`runtime/device_prints.py`). `tl.device_assert` (present only in debug builds: the front end drops it
otherwise) becomes a check per register whose failure records the assert's code and the program
id in the extra status output `km_assert` (`helpers/device_assert.metal`); the runtime reads it
after the launch and raises `DeviceAssertionError` (docs/codegen.md). Hints and assumptions
produce no code.
"""

from __future__ import annotations

from triton_metal.ir import OpResult, Value
from triton_metal.ir.ops import arith, scf, tt_debug
from triton_metal.ir.types import PointerType, ScalarType, element_type

from .context import LoweringContext, ctype_of
from .msl_types import msl_type
from .lower_layout import flat_index
from .lower_memory import owner_condition
from .lower_pointer_view import buffer_ref
from .lower_tensor_dot_loop import begin_carried, busy_across_iterations, carried_dots, end_carried
from .program import (
    Apply, Assign, Barrier, Break, Call, Comment, Convert, Declare, Expr, ExprStmt, ForRange, Guarded, If, Lit, Loop,
    Stmt, Var,
)
from .registry import lowers
from .values import PtrValue, RegValue, Val


def _storage(ctx: LoweringContext, val: Val) -> Val:
    """Fresh registers shaped like `val` (declared, not initialised)."""
    if isinstance(val, PtrValue):
        n = len(val.offsets)
        regs = ctx.declare_array(val.offset_ctype, n) if val.dist is not None else (_scalar(ctx, val.offset_ctype),)
        return PtrValue(val.type, val.buffer, regs, val.offset_ctype, val.dist)
    ctype = ctype_of(val.type)
    regs = ctx.declare_array(ctype, len(val.regs)) if val.dist is not None else (_scalar(ctx, ctype),)
    return RegValue(val.type, regs, val.dist)


def _scalar(ctx: LoweringContext, ctype: str) -> Expr:
    name = ctx.fresh()
    ctx.emit(Declare(name, ctype))
    return Var(name)


def _regs(v: Val) -> tuple[Expr, ...]:
    return v.offsets if isinstance(v, PtrValue) else v.regs


def _assign_all(ctx: LoweringContext, targets: list[Val], values: list[Val]) -> None:
    """targets := values, all at once (values are read before any target is written)."""
    staged: list[tuple[Expr, Expr]] = []
    for t, v in zip(targets, values):
        if isinstance(t, PtrValue) != isinstance(v, PtrValue):
            raise ctx.error("internal: a carried value changes between pointer and number")
        if isinstance(t, PtrValue) and isinstance(v, PtrValue) and t.buffer != v.buffer:
            raise ctx.error(
                "a loop-carried or branch-merged pointer must point into one array",
                hint="carry an integer offset and add it to the pointer inside the loop",
            )
        if (t.dist is None) != (v.dist is None) or (t.dist is not None and t.dist != v.dist):
            raise ctx.error("internal: a carried value changes its layout (the layout passes must convert it)")
        ctype = t.offset_ctype if isinstance(t, PtrValue) else ctype_of(t.type)
        vals = _regs(v)
        if isinstance(t, PtrValue) and isinstance(v, PtrValue) and v.offset_ctype != t.offset_ctype:
            vals = tuple(Convert(ctype, x) for x in vals)
        # stage through fresh registers: a yielded register may read another register of the same
        # storage (a swap of carried values, a permutation like trans of a carried tile)
        vals = ctx.materialize(vals, ctype, force=not all(isinstance(x, Lit) for x in vals))
        staged.extend(zip(_regs(t), vals))
    for target, value in staged:
        if target != value:
            ctx.emit(Assign(target, value))


def _yielded(ctx: LoweringContext, block) -> list[Val]:  # noqa: ANN001
    term = block.ops[-1]
    return [ctx.lookup(v) for v in term.operands]


@lowers(scf.ForOp)
def lower_for(ctx: LoweringContext, op: scf.ForOp) -> None:
    lo, hi, step = ctx.reg(op.lower), ctx.reg(op.upper), ctx.reg(op.step)
    inits = [ctx.lookup(v) for v in op.iter_args]
    # tensor-op accumulators that stay cooperative tensors through the loop (MSL 4.0 targets)
    dots = {c.index: c for c in carried_dots(ctx, op)}
    coop = {i: begin_carried(ctx, c, ctx.reg(op.iter_args[i])) for i, c in dots.items()}
    plain = [i for i in range(len(inits)) if i not in dots]
    carried: dict[int, Val] = {i: _storage(ctx, inits[i]) for i in plain}
    _assign_all(ctx, [carried[i] for i in plain], [inits[i] for i in plain])
    block = op.body.block
    iv = ctx.fresh()
    ivty = element_type(op.lower.type)
    assert isinstance(ivty, ScalarType)
    ctx.push()
    ctx.bind(block.args[0], RegValue(block.args[0].type, (Var(iv),), None))
    for i, arg in enumerate(block.args[1:]):
        ctx.bind(arg, coop.get(i) or carried[i])
    # a carried dot that leaves the code generator's scratch busy at the end of an iteration
    # leaves it busy at the start of the next (else the state stays what it was)
    busy = busy_across_iterations(ctx, block, dots.values())
    if busy is not None:
        ctx.busy_own_scratch(busy)
    for i, c in dots.items():
        ctx.tensor_accumulators[c.dot] = coop[i], c.rescale
        if c.add is not None:
            ctx.folded[c.add] = c.dot.result
        if c.rescale is not None:  # applied to the cooperative accumulator where the dot runs
            ctx.folded[c.rescale.op] = block.args[1 + i]
    assert ctx.lower_ops is not None
    ctx.lower_ops(ctx, block.ops)
    yielded = _yielded(ctx, block)
    _assign_all(ctx, [carried[i] for i in plain], [yielded[i] for i in plain])
    body = ctx.pop()
    ctx.emit(ForRange(iv, msl_type(ivty), lo.regs[0], hi.regs[0], step.regs[0], body, _sign(op.step)))
    if busy is not None and ctx.own_scratch_busy is not None:
        # every thread is done with the last iteration's staging, where the accumulators go
        ctx.emit(Barrier())
        ctx.busy_own_scratch(None)
    for i, c in dots.items():
        carried[i] = end_carried(ctx, op, c, coop[i])
    for i, res in enumerate(op.results):
        ctx.bind(res, carried[i])


def _sign(step: Value) -> int:
    """The sign of a constant loop step, or 0 when the step is known only at run time."""
    if isinstance(step, OpResult) and isinstance(step.op, arith.ConstantOp):
        value = step.op.value
        return (value > 0) - (value < 0)
    return 0


@lowers(scf.IfOp)
def lower_if(ctx: LoweringContext, op: scf.IfOp) -> None:
    cond = ctx.reg(op.condition).regs[0]
    assert ctx.lower_ops is not None
    results: list[Val] = []
    branches = []
    for region in (op.then_region, op.else_region):
        ctx.push()
        block = region.block
        ctx.lower_ops(ctx, block.ops)
        if op.results:
            yielded = _yielded(ctx, block)
            if not results:
                # storage for the results goes before the `if`, shaped like the first yield
                with ctx.outer():
                    results = [_storage(ctx, v) for v in yielded]
            _assign_all(ctx, results, yielded)
        branches.append(ctx.pop())
    ctx.emit(If(cond, branches[0], branches[1]))
    for res, r in zip(op.results, results):
        ctx.bind(res, r)


@lowers(scf.WhileOp)
def lower_while(ctx: LoweringContext, op: scf.WhileOp) -> None:
    inits = [ctx.lookup(v) for v in op.inits]
    carried = [_storage(ctx, v) for v in inits]
    _assign_all(ctx, carried, inits)
    before, after = op.before.block, op.after.block
    assert ctx.lower_ops is not None
    ctx.push()
    for arg, c in zip(before.args, carried):
        ctx.bind(arg, c)
    ctx.lower_ops(ctx, before.ops)
    cond_op = before.ops[-1]
    cond = ctx.reg(cond_op.operands[0]).regs[0]
    forwarded = [ctx.lookup(v) for v in cond_op.operands[1:]]
    with ctx.outer():
        results = [_storage(ctx, v) for v in forwarded]
    _assign_all(ctx, results, forwarded)
    ctx.emit(If(Apply("lnot", (cond,)), (Break(),)))
    for arg, r in zip(after.args, results):
        ctx.bind(arg, r)
    ctx.lower_ops(ctx, after.ops)
    _assign_all(ctx, carried, _yielded(ctx, after))
    ctx.emit(Loop(ctx.pop()))
    for res, r in zip(op.results, results):
        ctx.bind(res, r)


# -- hints, assumptions, barriers, debugging -----------------------------------------------------


@lowers(tt_debug.HintOp)
def lower_hint(ctx: LoweringContext, op: tt_debug.HintOp) -> None:
    ctx.bind(op.result, ctx.lookup(op.src))


@lowers(tt_debug.AssumeOp)
def lower_assume(ctx: LoweringContext, op: tt_debug.AssumeOp) -> None:
    return None  # a fact for the analyses; no code


@lowers(tt_debug.BarrierOp)
def lower_barrier(ctx: LoweringContext, op: tt_debug.BarrierOp) -> None:
    ctx.emit(Barrier(device=True))


PRINT_GUARD = "TM_DEVICE_PRINT"
"""Defined only by the emulator's kernel header (`tm_kernel.h`): device printing exists there."""
PRINT_SEQ = "km_print_seq"
"""Per thread: how many prints it has passed (orders the records of one program)."""


@lowers(tt_debug.PrintOp)
def lower_print(ctx: LoweringContext, op: tt_debug.PrintOp) -> None:
    site = len(ctx.prints)
    operands: list[dict[str, object]] = []
    calls: list[Stmt] = []
    pid = (Var("km_pid_x"), Var("km_pid_y"), Var("km_pid_z"))
    ctx.program_ids.update((0, 1, 2))
    for k, arg in enumerate(op.args):
        val = ctx.lookup(arg)
        el = element_type(arg.type)
        shape = list(getattr(arg.type, "shape", ()))
        operands.append({"type": "ptr" if isinstance(el, PointerType) else str(el), "shape": shape})
        dist = val.dist
        regs = val.offsets if isinstance(val, PtrValue) else val.regs
        firsts = dist.first_registers() if dist is not None else (True,)
        own = owner_condition(ctx, dist)  # one thread prints each element
        stmts: list[Stmt] = []
        for r, first in enumerate(firsts):
            if not first:
                continue
            index = flat_index(ctx, dist, r) if dist is not None else Lit("0")
            value = (Call("tm_print_address", (buffer_ref(ctx, val.buffer, _buffer_name(ctx, val)), regs[r]))
                     if isinstance(val, PtrValue) else regs[r])
            stmts.append(ExprStmt(Call("tm_device_print", (Lit(f"{site}u"), Var(PRINT_SEQ), Lit(f"{k}u"), index,
                                                           *pid, value))))
        calls.extend((If(own, tuple(stmts)),) if own is not None else stmts)
    if not op.args:  # a print of the prefix alone: one record from the program's first thread
        own = owner_condition(ctx, None)
        assert own is not None
        calls.append(If(own, (ExprStmt(Call("tm_device_print", (Lit(f"{site}u"), Var(PRINT_SEQ), Lit("0u"), Lit("0"),
                                                                 *pid, Lit("0u")))),)))
    ctx.prints.append({"prefix": op.prefix, "hex": op.hex, "operands": operands})
    if site == 0:
        ctx.prologue.add(Guarded(PRINT_GUARD, (Declare(PRINT_SEQ, "uint", None, Lit("0u")),)))
    calls.append(Assign(Var(PRINT_SEQ), Apply("add", (Var(PRINT_SEQ), Lit("1u")))))
    ctx.emit(Comment(f"tl.device_print #{site + 1}: printed by the emulator only (Metal kernels have no console)"))
    ctx.emit(Guarded(PRINT_GUARD, tuple(calls)))


def _buffer_name(ctx: LoweringContext, val: PtrValue) -> str:
    name = val.buffer.input_name or val.buffer.output_name
    if name is None:
        raise ctx.error("internal: tl.device_print of a pointer into an array the kernel never reaches")
    return name


ASSERT_OUTPUT = "km_assert"
"""The status output of a kernel with device asserts: uint[4] = code, program id x, y, z."""
ASSERT_MAGIC = 0x7A5E0000
"""High half of every assert code (the status's starting value never has it)."""


@lowers(tt_debug.AssertOp)
def lower_assert(ctx: LoweringContext, op: tt_debug.AssertOp) -> None:
    import linecache

    loc = op.loc
    source = linecache.getline(loc.file, loc.line).strip() if loc is not None else ""
    code = ASSERT_MAGIC | (len(ctx.asserts) + 1)
    ctx.asserts.append({
        "code": code, "message": op.message, "file": loc.file if loc else "", "line": loc.line if loc else 0,
        "col": loc.col if loc else 0, "source": source,
    })
    ctx.helpers.add("device_assert")
    ctx.program_ids.update((0, 1, 2))
    cond = ctx.reg(op.condition)
    report = ExprStmt(Call("km_assert_fail", (
        Var(ASSERT_OUTPUT), Lit(f"{code}u"), Var("km_pid_x"), Var("km_pid_y"), Var("km_pid_z"),
    )))
    ctx.emit(Comment(f"tl.device_assert #{len(ctx.asserts)} (line {loc.line if loc else '?'})"))
    for reg in dict.fromkeys(cond.regs):  # a replicated register is checked once
        ctx.emit(If(Apply("lnot", (reg,)), (report,)))
