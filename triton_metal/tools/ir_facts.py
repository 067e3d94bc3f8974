"""Facts about a laid-out kernel's IR that the diagnostic tools need beyond axis info.

Contract (pure functions over the IR; nothing is mutated):

* `ScalarEnv(args, program_id, num_programs)` and `eval_scalar(value, env) -> int`: the value of
  an integer scalar computed from constants, the kernel's scalar arguments (by parameter name),
  `tl.program_id` and `tl.num_programs`, through integer arithmetic. Anything else (a loaded
  value, a loop-carried scalar) raises `Unknown`.
* `element_strides(ptr, scalars) -> tuple[int, ...] | None`: the step, in elements, of a tensor
  of pointers per index along each dimension, when its offsets are affine in `tl.arange`
  (ranges, splats, broadcasts, expand_dims, transposes, additions, products with a known
  scalar); None when they are not (a gather: offsets loaded from memory, divided, ...).
* `base_argument(ptr) -> str | None`: the kernel parameter a pointer is derived from.
* `trip_count(for_op, env) -> int`: iterations of an `scf.for` whose bounds `eval_scalar` knows.

Axis info answers "how long are the contiguous runs and how aligned"; the stride along a
non-contiguous dimension and the loop trip counts are what it does not carry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..ir import BlockArgument, Op, OpResult, Value
from ..ir.ops.func import FuncOp
from ..ir.types import TensorType


class Unknown(Exception):
    """A value the evaluator cannot compute from the launch's scalars."""


@dataclass
class ScalarEnv:
    args: Mapping[str, object]
    """Kernel parameter name -> the launch's value (ints and bools are used)."""
    program_id: tuple[int, int, int] | None = None
    """None: the program is not fixed (evaluating a value that depends on it raises)."""
    num_programs: tuple[int, int, int] | None = None
    bound: dict[Value, int] = field(default_factory=dict)
    """Values fixed by the caller (loop induction variables while iterating)."""


def _c_div(a: int, b: int) -> int:
    if b == 0:
        raise Unknown("division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_BINARY = {
    "arith.addi": lambda a, b: a + b,
    "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b,
    "arith.divsi": _c_div,
    "arith.divui": _c_div,
    "arith.remsi": lambda a, b: a - _c_div(a, b) * b,
    "arith.remui": lambda a, b: a - _c_div(a, b) * b,
    "arith.minsi": min, "arith.minui": min, "arith.maxsi": max, "arith.maxui": max,
    "arith.andi": lambda a, b: a & b, "arith.ori": lambda a, b: a | b, "arith.xori": lambda a, b: a ^ b,
    "arith.shli": lambda a, b: a << b, "arith.shrsi": lambda a, b: a >> b, "arith.shrui": lambda a, b: a >> b,
}
_CAST = ("arith.extsi", "arith.extui", "arith.trunci")
_CMP = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    "slt": lambda a, b: a < b, "sle": lambda a, b: a <= b, "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b,
    "ult": lambda a, b: a < b, "ule": lambda a, b: a <= b, "ugt": lambda a, b: a > b, "uge": lambda a, b: a >= b,
}


def _function_arg_name(v: BlockArgument) -> str | None:
    block = v.block
    region = block.parent
    owner = region.parent if region is not None else None
    if isinstance(owner, FuncOp):
        return v.name_hint
    return None


def eval_scalar(v: Value, env: ScalarEnv) -> int:
    """The integer value of scalar `v` under `env` (see the module docstring)."""
    if v in env.bound:
        return env.bound[v]
    if isinstance(v, BlockArgument):
        name = _function_arg_name(v)
        value = env.args.get(name) if name is not None else None
        if isinstance(value, (bool, int)) or (hasattr(value, "item") and hasattr(value, "dtype")):
            try:
                return int(value)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                pass
        raise Unknown(f"block argument {v.name_hint or '?'}")
    assert isinstance(v, OpResult)
    op = v.op
    if isinstance(v.type, TensorType):
        raise Unknown("a tensor")
    name = op.name
    if name == "arith.constant":
        value = getattr(op, "value")
        if isinstance(value, float):
            raise Unknown("a float constant")
        return int(value)
    if name in ("tt.get_program_id", "tt.get_num_programs"):
        source = env.program_id if name == "tt.get_program_id" else env.num_programs
        if source is None:
            raise Unknown(name)
        return source[getattr(op, "axis")]
    if name in _BINARY:
        a, b = (eval_scalar(x, env) for x in op.operands)
        return int(_BINARY[name](a, b))
    if name in _CAST:
        return eval_scalar(op.operands[0], env)
    if name == "arith.cmpi":
        a, b = (eval_scalar(x, env) for x in op.operands)
        pred = getattr(op, "predicate")
        return int(_CMP[str(getattr(pred, "value", pred))](a, b))
    if name == "arith.select":
        c, a, b = op.operands
        return eval_scalar(a, env) if eval_scalar(c, env) else eval_scalar(b, env)
    raise Unknown(name)


def trip_count(op: Op, env: ScalarEnv) -> int:
    """Iterations of `scf.for` `op` (Python's `range` semantics; a zero step is refused)."""
    lower, upper, step = (eval_scalar(x, env) for x in (getattr(op, "lower"), getattr(op, "upper"), getattr(op, "step")))
    if step == 0:
        raise Unknown("zero step")
    return len(range(lower, upper, step))


def base_argument(ptr: Value) -> str | None:
    """The kernel parameter `ptr` is computed from (through addptr, splat, broadcast, ...)."""
    seen = 0
    v: Value | None = ptr
    while v is not None and seen < 256:
        seen += 1
        if isinstance(v, BlockArgument):
            name = _function_arg_name(v)
            if name is not None:
                return name
            v = _loop_init(v)
            continue
        assert isinstance(v, OpResult)
        ops = v.op.operands
        v = ops[0] if ops else None
    return None


def _loop_init(v: BlockArgument) -> Value | None:
    """The initial value of a loop-carried block argument (an `scf.for` iter arg)."""
    region = v.block.parent
    owner = region.parent if region is not None else None
    if owner is not None and owner.name == "scf.for" and v.index >= 1:
        inits = getattr(owner, "iter_args")
        if v.index - 1 < len(inits):
            return inits[v.index - 1]
    return None


def element_strides(ptr: Value, scalars: Mapping[str, object]) -> tuple[int, ...] | None:
    """Per dimension, the element step of the offsets of tensor `ptr` (module docstring)."""
    return _Strides(ScalarEnv(scalars)).of(ptr)


class _Strides:
    def __init__(self, env: ScalarEnv) -> None:
        self.env = env
        self.memo: dict[Value, tuple[int, ...] | None] = {}
        self.active: set[Value] = set()

    def of(self, v: Value) -> tuple[int, ...] | None:
        if v in self.memo:
            return self.memo[v]
        if v in self.active:  # a loop-carried cycle: the caller checks the yield separately
            return None
        self.active.add(v)
        try:
            result = self._compute(v)
        finally:
            self.active.discard(v)
        self.memo[v] = result
        return result

    def _scalar_factor(self, v: Value) -> int | None:
        """The known scalar a tensor operand splats (or a scalar itself)."""
        if not isinstance(v.type, TensorType):
            src = v
        elif isinstance(v, OpResult) and v.op.name in ("tt.splat", "tt.broadcast", "ttg.convert_layout"):
            return self._scalar_factor(v.op.operands[0])
        elif isinstance(v, OpResult) and v.op.name == "arith.constant":
            value = getattr(v.op, "value")
            return None if isinstance(value, float) else int(value)
        else:
            return None
        try:
            return eval_scalar(src, self.env)
        except Unknown:
            return None

    def _compute(self, v: Value) -> tuple[int, ...] | None:
        ty = v.type
        if not isinstance(ty, TensorType):
            return ()
        rank = len(ty.shape)
        if isinstance(v, BlockArgument):
            init = _loop_init(v)
            return None if init is None else self.of(init)
        assert isinstance(v, OpResult)
        op = v.op
        name = op.name
        if name == "tt.make_range":
            return (1,)
        if name in ("tt.splat", "arith.constant"):
            return (0,) * rank
        if name in ("tt.broadcast", "ttg.convert_layout", *_CAST):
            src = self.of(op.operands[0])
            if src is None:
                return None
            if len(src) == rank:
                return src
            return (0,) * (rank - len(src)) + src  # a scalar or lower-rank source
        if name == "tt.expand_dims":
            src = self.of(op.operands[0])
            if src is None:
                return None
            axis = getattr(op, "axis") % rank
            return src[:axis] + (0,) + src[axis:]
        if name == "tt.trans":
            src = self.of(op.operands[0])
            if src is None:
                return None
            return tuple(src[d] for d in getattr(op, "order"))
        if name in ("arith.addi", "arith.subi", "tt.addptr"):
            a, b = (self.of(x) for x in op.operands[:2])
            if a is None or b is None:
                return None
            a = a or (0,) * rank
            b = b or (0,) * rank
            sign = -1 if name == "arith.subi" else 1
            return tuple(x + sign * y for x, y in zip(a, b))
        if name == "arith.muli":
            x, y = op.operands
            for tensor, factor in ((x, y), (y, x)):
                k = self._scalar_factor(factor)
                if k is not None:
                    s = self.of(tensor)
                    return None if s is None else tuple(e * k for e in (s or (0,) * rank))
            return None
        if name == "arith.shli":
            k = self._scalar_factor(op.operands[1])
            s = self.of(op.operands[0])
            return None if k is None or s is None else tuple(e << k for e in s)
        return None
