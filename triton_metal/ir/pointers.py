"""Which pointer parameter each pointer value of a function derives from.

`pointer_roots(func)` follows pointer arithmetic, broadcasts and the values loops, `scf.if` and
`scf.while` carry. Shared by the code generator (how each parameter is used) and the passes that
order a program's own accesses to one array (`order-device-accesses`). `pointer_root(value)`
answers the same question for one value while a function is still being built (the front end).
"""

from __future__ import annotations

from .core import BlockArgument, Op, OpResult, Value
from .ops import scf
from .types import PointerType, element_type


def pointer_roots(func: Op) -> dict[Value, BlockArgument]:
    """Every pointer-typed value that derives from a pointer parameter, mapped to it."""
    args = func.body.block.args  # type: ignore[attr-defined]
    root: dict[Value, BlockArgument] = {a: a for a in args if isinstance(element_type(a.type), PointerType)}
    changed = True
    while changed:
        changed = False

        def set_root(v: Value, r: BlockArgument) -> None:
            nonlocal changed
            if v not in root:
                root[v] = r
                changed = True

        for op in func.walk():
            if isinstance(op, scf.ForOp):
                for init, barg, res in zip(op.iter_args, op.body.block.args[1:], op.results):
                    if init in root:
                        set_root(barg, root[init])
                        set_root(res, root[init])
            elif isinstance(op, scf.WhileOp):
                for init, barg in zip(op.inits, op.before.block.args):
                    if init in root:
                        set_root(barg, root[init])
                cond = op.before.block.ops[-1]
                for fwd, aarg, res in zip(cond.operands[1:], op.after.block.args, op.results):
                    if fwd in root:
                        set_root(aarg, root[fwd])
                        set_root(res, root[fwd])
            elif isinstance(op, scf.IfOp):
                for r in (op.then_region, op.else_region):
                    term = r.block.ops[-1] if r.block.ops else None
                    if term is not None and term.name == "scf.yield":
                        for y, res in zip(term.operands, op.results):
                            if y in root:
                                set_root(res, root[y])
            else:
                for res in op.results:
                    if isinstance(element_type(res.type), PointerType):
                        for v in op.operands:
                            if v in root:
                                set_root(res, root[v])
                                break
    return root


def pointer_root(value: Value) -> BlockArgument | None:
    """The block argument a pointer value derives from (a pointer parameter, or a pointer that an
    enclosing loop carries): follows pointer arithmetic, broadcasts, the `then` value of an
    `scf.if` and the initial value of an `scf.for`'s result. None where the chain leaves that
    (the result of an `scf.while`, a pointer loaded from memory)."""
    while isinstance(value, OpResult):
        op = value.op
        if isinstance(op, scf.IfOp):
            value = op.then_region.block.ops[-1].operands[value.index]
        elif isinstance(op, scf.ForOp):
            value = op.iter_args[value.index]
        elif isinstance(op, scf.WhileOp):
            return None
        else:
            pointers = [v for v in op.operands if isinstance(element_type(v.type), PointerType)]
            if not pointers:
                return None
            value = pointers[0]
    return value if isinstance(value, BlockArgument) else None
