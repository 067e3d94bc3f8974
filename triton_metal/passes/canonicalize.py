"""`canonicalize`: constant folding, algebraic identities and control flow on constants.

Rewrites (applied greedily until none applies):
* an elementwise op whose operands are all constants becomes a constant, when
  `fold_constants.evaluate` says the device computes exactly that value;
* integer identities: `x + 0`, `x - 0`, `x * 1`, `x * 0 -> 0`, `x / 1`, `x | 0`, `x ^ 0`,
  `x & 0 -> 0`, `x & -1`, shifts by 0, `x - x -> 0`, `x ^ x -> 0`, `x & x`, `x | x`, min/max of
  equal operands, `cmpi x, x` (true for eq/le/ge, false otherwise); floats: `x * 1.0`,
  `x + (-0.0)`, `x - 0.0` (exact in IEEE arithmetic; `x + 0.0` is not, for x = -0.0);
* `select` on a constant condition, or of two equal values; `addptr p, 0 -> p`;
* an ordered integer comparison that its operands' intervals (ranges, constants, sums of them
  that cannot wrap, shape ops of them) decide for every element becomes a constant, and a load
  or store whose mask is then true everywhere loses it;
* splat, broadcast, expand_dims, reshape and trans of a constant become a constant;
  broadcast of a splat becomes a splat; expand_dims of a splat becomes a splat; a broadcast or
  reshape to the operand's own type disappears;
* `scf.if` on a constant condition is replaced by the ops of the region taken;
* `scf.for` whose constant bounds give no trip is replaced by its initial values, one whose
  bounds give exactly one trip by its body (iv = lower bound); a carried
  value the body yields unchanged is its initial value (inside the body and after the loop);
* an `scf.if` result that both branches yield as the same value from outside is that value;
* `tt.assume true` disappears.

Option `fold_floats` (default true): with `canonicalize{fold_floats=false}` only integer and
boolean values fold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from ..ir import BlockArgument, Module, Op, Value
from ..ir.ops import arith as A
from ..ir.ops import scf, tt
from ..ir.ops import tt_memory as M
from ..ir.ops.tt_debug import AssumeOp
from ..ir.types import ScalarType, element_type
from .fold_constants import evaluate, signed, unsigned
from .pass_base import ModulePass, PassContext, register_pass
from .rewrite import PatternSet, Rewriter, apply_patterns_greedily

PATTERNS = PatternSet()
pattern = PATTERNS.pattern


def constant_value(v: Value) -> bool | int | float | None:
    """The value of every element of `v` when it comes from `arith.constant`."""
    owner = getattr(v, "op", None)
    if isinstance(owner, A.ConstantOp):
        return owner.value
    return None


def _is_int(v: Value, x: int) -> bool:
    c = constant_value(v)
    el = element_type(v.type)
    if c is None or isinstance(c, float) or not isinstance(el, ScalarType):
        return False
    return unsigned(c, el.bitwidth) == unsigned(x, el.bitwidth)


def _is_float(v: Value, x: float) -> bool:
    c = constant_value(v)
    return isinstance(c, float) and c == x and math.copysign(1.0, c) == math.copysign(1.0, x)


def _constant_like(rw: Rewriter, anchor: Op, value: bool | int | float, ty: object) -> Value:
    """A constant of type `ty` before `anchor`, named like `anchor`'s result."""
    el = element_type(ty)  # type: ignore[arg-type]
    if isinstance(el, ScalarType) and el.is_bool():
        value = bool(value)
    elif isinstance(el, ScalarType) and el.is_int():
        value = signed(value, el.bitwidth) if el.is_signed() else unsigned(value, el.bitwidth)
    new = rw.constant(anchor, value, ty)  # type: ignore[arg-type]
    if anchor.results:
        new.name_hint = anchor.results[0].name_hint
    return new


# -- folding ------------------------------------------------------------------------------------


@pattern(A.BinaryOp, A.UnaryOp, A.CmpIOp, A.CmpFOp, A.CastOp)
def fold_constant_operands(rw: Rewriter, op: Op) -> bool:
    values = [constant_value(v) for v in op.operands]
    if not values or any(v is None for v in values):
        return False
    result = evaluate(op, values)  # type: ignore[arg-type]
    if result is None:
        return False
    if not rw.options.get("fold_floats", True) and any(isinstance(x, float) for x in [*values, result]):
        return False
    rw.replace_op(op, [_constant_like(rw, op, result, op.result.type)])
    return True


# -- identities ---------------------------------------------------------------------------------


def _replace(rw: Rewriter, op: Op, v: Value) -> bool:
    rw.replace_op(op, [v])
    return True


def _zero(rw: Rewriter, op: Op) -> bool:
    rw.replace_op(op, [_constant_like(rw, op, 0, op.result.type)])
    return True


@pattern(A.AddIOp, A.OrIOp, A.XOrIOp)
def _add_zero(rw: Rewriter, op: A.BinaryOp) -> bool:
    if _is_int(op.rhs, 0):
        return _replace(rw, op, op.lhs)
    if _is_int(op.lhs, 0):
        return _replace(rw, op, op.rhs)
    if isinstance(op, A.XOrIOp) and op.lhs is op.rhs:
        return _zero(rw, op)
    if isinstance(op, A.OrIOp) and op.lhs is op.rhs:
        return _replace(rw, op, op.lhs)
    return False


@pattern(A.SubIOp)
def _sub(rw: Rewriter, op: A.SubIOp) -> bool:
    if _is_int(op.rhs, 0):
        return _replace(rw, op, op.lhs)
    if op.lhs is op.rhs:
        return _zero(rw, op)
    return False


@pattern(A.MulIOp)
def _mul(rw: Rewriter, op: A.MulIOp) -> bool:
    for x, y in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        if _is_int(y, 1):
            return _replace(rw, op, x)
        if _is_int(y, 0):
            return _zero(rw, op)
    return False


@pattern(A.DivSIOp, A.DivUIOp, A.ShLIOp, A.ShRUIOp, A.ShRSIOp)
def _right_identity(rw: Rewriter, op: A.BinaryOp) -> bool:
    neutral = 1 if isinstance(op, (A.DivSIOp, A.DivUIOp)) else 0
    if _is_int(op.rhs, neutral):
        return _replace(rw, op, op.lhs)
    return False


@pattern(A.AndIOp)
def _and(rw: Rewriter, op: A.AndIOp) -> bool:
    for x, y in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        if _is_int(y, -1):
            return _replace(rw, op, x)
        if _is_int(y, 0):
            return _zero(rw, op)
    if op.lhs is op.rhs:
        return _replace(rw, op, op.lhs)
    return False


@pattern(A.MinSIOp, A.MinUIOp, A.MaxSIOp, A.MaxUIOp)
def _min_max_same(rw: Rewriter, op: A.BinaryOp) -> bool:
    return _replace(rw, op, op.lhs) if op.lhs is op.rhs else False


@pattern(A.CmpIOp)
def _cmp_same(rw: Rewriter, op: A.CmpIOp) -> bool:
    if op.lhs is not op.rhs:
        return False
    truth = op.predicate.value in ("eq", "sle", "sge", "ule", "uge")
    rw.replace_op(op, [_constant_like(rw, op, truth, op.result.type)])
    return True


# the integer interval every element of a value lies in, where the IR says it exactly: a
# range's [start, end - 1], a constant, an add of two such (no wrap), and shape ops of them
_INTERVAL_DEPTH = 8


def _interval(v: Value, depth: int = _INTERVAL_DEPTH) -> tuple[int, int] | None:
    el = element_type(v.type)
    if not (isinstance(el, ScalarType) and el.is_int()) or el.is_bool() or depth == 0:
        return None
    c = constant_value(v)
    if c is not None and not isinstance(c, float):
        x = signed(c, el.bitwidth) if el.is_signed() else unsigned(c, el.bitwidth)
        return x, x
    owner = getattr(v, "op", None)
    if isinstance(owner, tt.MakeRangeOp):
        return owner.start, owner.end - 1
    if isinstance(owner, (tt.SplatOp, tt.BroadcastOp, tt.ExpandDimsOp, tt.ReshapeOp, tt.TransOp)):
        return _interval(owner.operands[0], depth - 1)
    if isinstance(owner, A.AddIOp):
        a, b = _interval(owner.lhs, depth - 1), _interval(owner.rhs, depth - 1)
        if a is None or b is None:
            return None
        lo, hi = a[0] + b[0], a[1] + b[1]
        bits = el.bitwidth - (1 if el.is_signed() else 0)
        floor = -(1 << bits) if el.is_signed() else 0
        return (lo, hi) if floor <= lo and hi < (1 << bits) else None  # no wrap on the device
    return None


_ORDERS = {"slt": (True, lambda a, b: a < b), "sle": (True, lambda a, b: a <= b),
           "sgt": (True, lambda a, b: a > b), "sge": (True, lambda a, b: a >= b),
           "ult": (False, lambda a, b: a < b), "ule": (False, lambda a, b: a <= b),
           "ugt": (False, lambda a, b: a > b), "uge": (False, lambda a, b: a >= b)}


@pattern(A.CmpIOp)
def _cmp_intervals(rw: Rewriter, op: A.CmpIOp) -> bool:
    """An ordered comparison that every pair of elements answers alike, from their intervals
    (`tl.arange(0, B) < B` is true everywhere: the masks of a block that fits its data)."""
    order = _ORDERS.get(op.predicate.value)
    a, b = _interval(op.lhs), _interval(op.rhs)
    if order is None or a is None or b is None:
        return False
    is_signed, holds = order
    el = element_type(op.lhs.type)
    assert isinstance(el, ScalarType)  # `_interval` answers for integers only
    if not is_signed and min(a[0], b[0]) < 0:
        return False  # the unsigned view of a negative value is not in its interval
    if is_signed and not el.is_signed() and max(a[1], b[1]) >= 1 << (el.bitwidth - 1):
        return False  # nor is the signed view of a large unsigned one
    # the extremes decide: a < b everywhere when a's largest is below b's smallest, nowhere
    # when a's smallest is not below b's largest (and likewise for the other orders)
    less = op.predicate.value[1:] in ("lt", "le")
    (x_all, y_all), (x_any, y_any) = ((a[1], b[0]), (a[0], b[1])) if less else ((a[0], b[1]), (a[1], b[0]))
    if holds(x_all, y_all):
        truth = True
    elif not holds(x_any, y_any):
        truth = False
    else:
        return False
    rw.replace_op(op, [_constant_like(rw, op, truth, op.result.type)])
    return True


@pattern(M.LoadOp, M.StoreOp)
def _mask_all_true(rw: Rewriter, op: Op) -> bool:
    """A mask true everywhere masks nothing: the access without it (and a load's `other`,
    which no element then takes)."""
    if op.mask is None or constant_value(op.mask) not in (True, 1):
        return False
    dropped = [op.mask] + ([op.other] if isinstance(op, M.LoadOp) and op.other is not None else [])
    op.mask = None
    if isinstance(op, M.LoadOp):
        op.other = None
    for v in dropped:
        rw.uses[v].remove(op)
    return True


@pattern(A.MulFOp)
def _mulf_one(rw: Rewriter, op: A.MulFOp) -> bool:
    if _is_float(op.rhs, 1.0):
        return _replace(rw, op, op.lhs)
    if _is_float(op.lhs, 1.0):
        return _replace(rw, op, op.rhs)
    return False


@pattern(A.AddFOp, A.SubFOp)
def _addf_zero(rw: Rewriter, op: A.BinaryOp) -> bool:
    # x + (-0.0) == x and x - 0.0 == x for every x, -0.0 included; x + 0.0 is not (-0.0 + 0.0 = 0.0)
    neutral = -0.0 if isinstance(op, A.AddFOp) else 0.0
    if _is_float(op.rhs, neutral):
        return _replace(rw, op, op.lhs)
    if isinstance(op, A.AddFOp) and _is_float(op.lhs, -0.0):
        return _replace(rw, op, op.rhs)
    return False


@pattern(A.SelectOp)
def _select(rw: Rewriter, op: A.SelectOp) -> bool:
    cond = constant_value(op.condition)
    if cond is not None:
        return _replace(rw, op, op.true_value if cond else op.false_value)
    if op.true_value is op.false_value:
        return _replace(rw, op, op.true_value)
    return False


@pattern(tt.AddPtrOp)
def _addptr_zero(rw: Rewriter, op: tt.AddPtrOp) -> bool:
    return _replace(rw, op, op.ptr) if _is_int(op.offset, 0) else False


# -- shape ops ----------------------------------------------------------------------------------


@pattern(tt.SplatOp, tt.BroadcastOp, tt.ExpandDimsOp, tt.ReshapeOp, tt.TransOp)
def _shape_of_constant(rw: Rewriter, op: Op) -> bool:
    src = op.operands[0]
    c = constant_value(src)
    if c is not None:
        rw.replace_op(op, [_constant_like(rw, op, c, op.result.type)])
        return True
    if isinstance(op, (tt.BroadcastOp, tt.ReshapeOp)) and src.type == op.result.type:
        return _replace(rw, op, src)
    owner = getattr(src, "op", None)
    if isinstance(owner, tt.SplatOp):  # every element is the splatted scalar, wherever it goes
        splat = tt.SplatOp(src=owner.src, result_types=[op.result.type], loc=op.loc)
        rw.insert_before(op, splat)
        splat.result.name_hint = op.result.name_hint
        rw.replace_op(op, [splat.result])
        return True
    return False


def _keep_name(old: Value, new: Value) -> None:
    if new.name_hint is None and old.name_hint is not None:
        new.name_hint = old.name_hint


@pattern(AssumeOp)
def _assume_true(rw: Rewriter, op: AssumeOp) -> bool:
    if constant_value(op.condition) is True:
        rw.erase(op)
        return True
    return False


# -- control flow -------------------------------------------------------------------------------


@pattern(scf.IfOp)
def _if_constant(rw: Rewriter, op: scf.IfOp) -> bool:
    cond = constant_value(op.condition)
    if cond is None:
        return False
    taken = op.then_region if cond else op.else_region
    values = rw.inline_block_before(taken.block, op)
    if not values and op.results:
        return False  # malformed (the verifier rejects it); leave it for the error
    for r, v in zip(op.results, values):
        _keep_name(r, v)
    rw.replace_op(op, values)
    return True


@pattern(scf.ForOp)
def _for_no_trip(rw: Rewriter, op: scf.ForOp) -> bool:
    lo, hi, step = constant_value(op.lower), constant_value(op.upper), constant_value(op.step)
    el = element_type(op.lower.type)
    if lo is None or hi is None or step is None or not isinstance(el, ScalarType):
        return False
    view = signed if el.is_signed() else unsigned
    lo_v, hi_v, step_v = (view(x, el.bitwidth) for x in (lo, hi, step))
    # as Python's range: a positive step counts up to hi, a negative one down to it, zero never runs
    if (step_v > 0 and lo_v < hi_v) or (step_v < 0 and lo_v > hi_v):
        return False
    for r, v in zip(op.results, op.iter_args):
        _keep_name(r, v)
    rw.replace_op(op, list(op.iter_args))
    return True


@pattern(scf.ForOp)
def _for_one_trip(rw: Rewriter, op: scf.ForOp) -> bool:
    """A loop whose constant bounds give exactly one trip is its body, run once with iv = lb."""
    lo, hi, step = constant_value(op.lower), constant_value(op.upper), constant_value(op.step)
    el = element_type(op.lower.type)
    if lo is None or hi is None or step is None or not isinstance(el, ScalarType):
        return False
    view = signed if el.is_signed() else unsigned
    lo_v, hi_v, step_v = (view(x, el.bitwidth) for x in (lo, hi, step))
    if not (step_v > 0 and lo_v < hi_v <= lo_v + step_v):
        return False
    block = op.body.block
    for arg, value in zip(block.args, [op.lower, *op.iter_args]):
        rw.replace_all_uses(arg, value)
    block.args = []
    values = rw.inline_block_before(block, op)
    for r, v in zip(op.results, values):
        _keep_name(r, v)
    rw.replace_op(op, values)
    return True


@pattern(scf.ForOp)
def _for_invariant_carried(rw: Rewriter, op: scf.ForOp) -> bool:
    """A carried value the body yields unchanged is its initial value throughout."""
    block = op.body.block
    term = block.ops[-1] if block.ops else None
    if term is None:
        return False
    changed = False
    for i, (init, arg) in enumerate(zip(op.iter_args, block.args[1:])):
        if term.operands[i] is arg and (rw.has_uses(arg) and rw.users(arg) != [term] or rw.has_uses(op.results[i])):
            for user in rw.users(arg):
                if user is not term:
                    user.replace_operand(arg, init)
                    rw.uses[arg].remove(user)
                    rw.uses.setdefault(init, []).append(user)
            rw.replace_all_uses(op.results[i], init)
            changed = True
    return changed


@pattern(scf.IfOp)
def _if_same_yield(rw: Rewriter, op: scf.IfOp) -> bool:
    """A result both branches yield as the same outside value is that value."""
    if not op.results:
        return False
    then_term, else_term = op.then_region.block.ops[-1], op.else_region.block.ops[-1]
    changed = False
    for i, r in enumerate(op.results):
        v = then_term.operands[i]
        if v is else_term.operands[i] and rw.has_uses(r) and not _defined_inside(v, op):
            rw.replace_all_uses(r, v)
            changed = True
    return changed


def _defined_inside(v: Value, op: Op) -> bool:
    block = v.block if isinstance(v, BlockArgument) else getattr(v, "op", None) and v.op.parent  # type: ignore[union-attr]
    while block is not None:
        owner = block.parent_op
        if owner is op:
            return True
        block = owner.parent if owner is not None else None
    return False


@register_pass
@dataclass(frozen=True)
class Canonicalize(ModulePass):
    """Fold constants, apply identities, simplify control flow on constants (greedy)."""

    name: ClassVar[str] = "canonicalize"
    fold_floats: bool = True
    """Fold float arithmetic, conversions and comparisons on constants (off: only integers)."""

    def apply(self, ctx: PassContext | None, module: Module) -> None:
        apply_patterns_greedily(module, PATTERNS, {"fold_floats": self.fold_floats})


__all__ = ["Canonicalize", "PATTERNS", "constant_value"]
