"""Removal of loop-carried values of `scf.for` that nothing observes (a part of `dce`).

A carried value is dead when the loop's result for it is unused and, inside the body, it only
feeds computations whose sole purpose is the next value of dead carried values. Found by a
liveness fixed point over the body: roots are the operands of ops with effects and the yielded
values of carried values still needed; a carried value whose block argument turns out live is
needed after all, which makes its yielded value a root too. The loop is rebuilt without the dead
ones; the computations they fed are then dead code.
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir import Block, Op, Region, Value
from ..ir.ops import scf


def _live_values(body: Block, roots: set[Value], has_effects: Callable[[Op], bool]) -> set[Value]:
    live = set(roots)
    ops = [op for op in body.walk()]
    for op in ops:
        if has_effects(op):
            # an op with effects needs everything inside it too (a loop that stores needs the
            # values its body yields: they feed the stores of later trips)
            for nested in op.walk():
                live.update(nested.operands)
    changed = True
    while changed:
        changed = False
        for op in ops:
            if op.is_terminator and op.parent is body:
                continue  # the loop's own yield: only the roots count
            needed = any(r in live for r in op.results) or (op.is_terminator and op.operands and _owner_live(op, live))
            if not needed:
                continue
            for nested in op.walk():  # an op that is needed needs everything inside it
                for v in nested.operands:
                    if v not in live:
                        live.add(v)
                        changed = True
    return live


def _owner_live(term: Op, live: set[Value]) -> bool:
    owner = term.parent.parent_op if term.parent is not None else None
    return owner is not None and any(r in live for r in owner.results)


def remove_dead_carried_values(op: scf.ForOp, result_used: Callable[[Value], bool],
                               has_effects: Callable[[Op], bool]) -> tuple[scf.ForOp, list[int]] | None:
    """A copy of `op` without its dead carried values (taking over its body) and the indices of
    the carried values it keeps, or None when all are needed. The caller puts the copy in place
    of `op` (result k of the copy stands for result keep[k]) and removes the body's ops that fed
    only dead values (they still refer to `op`'s old block arguments)."""
    body = op.body.block
    yield_op = body.ops[-1]
    n = len(op.iter_args)
    dead = {i for i in range(n) if not result_used(op.results[i])}
    if not dead:
        return None
    while True:
        roots = {yield_op.operands[i] for i in range(n) if i not in dead}
        live = _live_values(body, roots, has_effects)
        needed = {i for i in dead if body.args[i + 1] in live}
        if not needed:
            break
        dead -= needed
    if not dead:
        return None
    keep = [i for i in range(n) if i not in dead]
    new_block = Block([body.args[0].type] + [body.args[i + 1].type for i in keep],
                      [body.args[0].name_hint] + [body.args[i + 1].name_hint for i in keep])
    mapping: dict[Value, Value] = {body.args[0]: new_block.args[0]}
    mapping.update({body.args[i + 1]: new_block.args[k + 1] for k, i in enumerate(keep)})
    for inner in list(body.ops):
        body.remove(inner)
        new_block.append(inner)
        for nested in inner.walk():
            for old in [v for v in nested.operands if v in mapping]:
                nested.replace_operand(old, mapping[old])
    assert isinstance(yield_op, scf.YieldOp)
    yield_op.values = tuple(yield_op.values[i] for i in keep)
    new = scf.ForOp(
        lower=op.lower, upper=op.upper, step=op.step, iter_args=tuple(op.iter_args[i] for i in keep),
        body=Region([new_block]), result_types=[op.results[i].type for i in keep], loc=op.loc,
    )
    for k, i in enumerate(keep):
        new.results[k].name_hint = op.results[i].name_hint
    return new, keep
