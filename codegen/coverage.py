"""What the compiler can prove about which output elements a launch writes.

Recognised pattern (the 1-D blocked store of most elementwise kernels), for a store outside any
loop or branch:

    offs = tl.program_id(a) * BLOCK + tl.arange(0, BLOCK)
    tl.store(p + offs, v, mask=offs < n)        # or no mask

With a mask, every flat index `i < n` is written when `grid[a] * BLOCK >= n`; without one, every
`i < grid[a] * BLOCK`. The runtime checks the condition against the real launch and the array's
size (`OutputCoverage`); anything else is merged with the old contents on the host.
"""

from __future__ import annotations

from triton_metal.ir import BlockArgument, Op, Value
from triton_metal.ir.ops import arith, tt
from triton_metal.ir.ops import tt_memory as mem

from .kernel import OutputCoverage
from .params import ParamUse
from .values import Buffer


def _def(v: Value) -> Op | None:
    return getattr(v, "op", None)


def _through_shape_ops(v: Value) -> Value:
    op = _def(v)
    while isinstance(op, (tt.SplatOp, tt.BroadcastOp, tt.ExpandDimsOp)) or (
        op is not None and op.name == "ttg.convert_layout"
    ):
        v = op.operands[0]
        op = _def(v)
    return v


def _const(v: Value) -> int | None:
    op = _def(_through_shape_ops(v))
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, int) and not isinstance(op.value, bool):
        return op.value
    return None


def _block_offsets(v: Value) -> tuple[int, int] | None:
    """`pid(axis) * BLOCK + arange(0, BLOCK)` -> (axis, BLOCK)."""
    op = _def(v)
    if isinstance(op, tt.MakeRangeOp) and op.start == 0:
        return (-1, op.end)  # a single block: program 0 covers it (checked as grid >= 1)
    if not isinstance(op, arith.AddIOp):
        return None
    for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        rng = _def(a)
        if not (isinstance(rng, tt.MakeRangeOp) and rng.start == 0):
            continue
        block = rng.end
        base = _def(_through_shape_ops(b))
        if isinstance(base, arith.MulIOp):
            for x, y in ((base.lhs, base.rhs), (base.rhs, base.lhs)):
                pid = _def(x)
                if isinstance(pid, tt.GetProgramIdOp) and _const(y) == block:
                    return (pid.axis, block)
    return None


def _covering(store: mem.StoreOp, root: BlockArgument, args: dict[Value, str]) -> tuple[int, int, str | None, int | None] | None:
    ptr = _def(store.ptr)
    if not isinstance(ptr, tt.AddPtrOp) or _through_shape_ops(ptr.ptr) is not root:
        return None
    blk = _block_offsets(ptr.offset)
    if blk is None:
        return None
    axis, block = blk
    if store.mask is None:
        return (axis, block, None, None)
    cmp = _def(store.mask)
    if not isinstance(cmp, arith.CmpIOp) or cmp.predicate.value not in ("slt", "ult") or cmp.lhs is not ptr.offset:
        return None
    bound = _through_shape_ops(cmp.rhs)
    if bound in args:
        return (axis, block, args[bound], None)
    c = _const(cmp.rhs)
    if c is not None:
        return (axis, block, None, c)
    return None


def store_coverage(func: Op, buffers: dict[BlockArgument, Buffer], uses: dict[BlockArgument, ParamUse]) -> tuple[OutputCoverage, ...]:
    args = {a: (a.name_hint or "") for a in func.body.block.args}  # type: ignore[attr-defined]
    top = [op for op in func.body.block.ops if isinstance(op, mem.StoreOp)]  # type: ignore[attr-defined]
    out = []
    for arg, buf in buffers.items():
        if buf.output_name is None:
            continue
        u = uses[arg]
        if u.atomic:
            out.append(OutputCoverage(buf.output_name, False, reason="updated by atomics"))
            continue
        found = None
        for st in top:
            found = _covering(st, arg, args)
            if found is not None:
                break
        if found is None:
            out.append(OutputCoverage(buf.output_name, False, reason="no store of the recognised blocked pattern"))
            continue
        axis, block, bound_param, bound_value = found
        out.append(OutputCoverage(buf.output_name, True, max(axis, 0), block, bound_param, bound_value))
    return tuple(out)
