"""Whole-module verification: every op's own rules, block structure, terminators, dominance
(a value is used only after its definition, in its block or a block nested inside it) and calls.

Raises `VerifyError` at the first problem, located at the offending op.
"""

from __future__ import annotations

from .core import Block, Module, Op, Value, VerifyError
from .ops.func import CallOp, FuncOp


def verify_module(module: Module) -> None:
    names: set[str] = set()
    for op in module.body.ops:
        if not isinstance(op, FuncOp):
            raise VerifyError(f"only 'tt.func' may appear at module level, found '{op.name}'", op.loc)
        if op.sym_name in names:
            raise op.error(f"redefines function @{op.sym_name}")
        names.add(op.sym_name)
        if op.parent is not module.body:
            raise op.error("is not attached to the module")
        verify_op_tree(op, set(), module)


def verify_op_tree(op: Op, visible: set[Value], module: Module | None = None) -> None:
    """Verify `op` and everything nested in it, given the values visible where it sits."""
    for i, v in enumerate(op.operands):
        if v not in visible:
            raise op.error(f"operand #{i} ({v.type}) is used outside the scope of its definition or before it")
    op.verify()
    if isinstance(op, CallOp) and module is not None:
        _verify_call(op, module)
    for r in op.regions:
        if r.parent is not op:
            raise op.error("has a region whose parent link is broken")
        for b in r.blocks:
            if b.parent is not r:
                raise op.error("has a block whose parent link is broken")
            _verify_block(b, visible, module)


def _verify_block(block: Block, outer: set[Value], module: Module | None) -> None:
    visible = set(outer)
    visible.update(block.args)
    for i, op in enumerate(block.ops):
        if op.parent is not block:
            raise op.error("has a broken parent link")
        if op.is_terminator and i != len(block.ops) - 1:
            raise op.error("is a terminator but is not the last op of its block")
        verify_op_tree(op, visible, module)
        visible.update(op.results)


def _verify_call(op: CallOp, module: Module) -> None:
    callee = module.lookup(op.callee)
    if not isinstance(callee, FuncOp):
        raise op.error(f"calls unknown function @{op.callee}")
    got = [v.type for v in op.args]
    if got != callee.arg_types:
        raise op.error(f"argument types ({', '.join(map(str, got))}) do not match @{op.callee}")
    if [r.type for r in op.results] != list(callee.res_types):
        raise op.error(f"result types do not match @{op.callee}")
