"""A small NumPy evaluator for the integer and float subset of the IR (test oracle).

It runs one `tt.func` on concrete arguments (ints, floats, pointers as byte addresses) and
returns what `tt.return` returns; `stores` records every unmasked scalar `tt.store` in order
(address, value). Loads and other memory ops are not supported. Integer
arithmetic wraps in the value's own NumPy dtype; division truncates toward zero (C).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from triton_metal import ir
from triton_metal.ir.ops import arith as A
from triton_metal.ir.ops import scf, tt
from triton_metal.ir.ops.tt_debug import HintOp
from triton_metal.ir.ops.tt_memory import StoreOp
from triton_metal.ir.types import PointerType, ScalarType, element_type, shape_of

NP = {
    "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64,
}


def np_dtype(ty: Any) -> Any:
    el = element_type(ty)
    if isinstance(el, PointerType):
        return np.int64  # a byte address
    assert isinstance(el, ScalarType)
    return NP[el.name]


def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
    return np.where((a < 0) != (b < 0), -q, q)


def _trunc_rem(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a.astype(np.int64) - _trunc_div(a, b) * b.astype(np.int64)


def _unsigned(a: np.ndarray) -> np.ndarray:
    """The bits of a signed integer array read as unsigned (as `divui`/`remui` read them)."""
    return a.view(np.dtype(a.dtype.str.replace("i", "u"))) if a.dtype.kind == "i" else a


BINARY = {
    A.AddIOp: lambda a, b: a + b, A.SubIOp: lambda a, b: a - b, A.MulIOp: lambda a, b: a * b,
    A.AndIOp: lambda a, b: a & b, A.OrIOp: lambda a, b: a | b, A.XOrIOp: lambda a, b: a ^ b,
    A.DivSIOp: _trunc_div, A.RemSIOp: _trunc_rem,
    A.DivUIOp: lambda a, b: _unsigned(a) // _unsigned(b), A.RemUIOp: lambda a, b: _unsigned(a) % _unsigned(b),
    A.ShLIOp: lambda a, b: a << b, A.ShRSIOp: lambda a, b: a >> b,
    A.MinSIOp: np.minimum, A.MaxSIOp: np.maximum,
    A.AddFOp: lambda a, b: a + b, A.SubFOp: lambda a, b: a - b, A.MulFOp: lambda a, b: a * b,
}

COMPARE = {
    "eq": np.equal, "ne": np.not_equal, "slt": np.less, "sle": np.less_equal, "sgt": np.greater,
    "sge": np.greater_equal, "olt": np.less, "ole": np.less_equal, "ogt": np.greater,
    "oge": np.greater_equal, "oeq": np.equal, "une": np.not_equal,
}


class Evaluator:
    def __init__(self, program_ids: tuple[int, int, int] = (0, 0, 0)) -> None:
        self.env: dict[ir.Value, np.ndarray] = {}
        self.program_ids = program_ids
        self.stores: list[tuple[int, Any]] = []
        self.on_put: Callable[[ir.Value, np.ndarray], None] | None = None
        """Called with every value computed (each loop iteration's values included)."""

    def val(self, v: ir.Value) -> np.ndarray:
        return self.env[v]

    def put(self, v: ir.Value, x: Any) -> None:
        arr = np.asarray(x).astype(np_dtype(v.type))
        shape = shape_of(v.type)
        self.env[v] = np.broadcast_to(arr, shape).copy() if shape else arr.reshape(())
        if self.on_put is not None:
            self.on_put(v, self.env[v])

    def run(self, func: ir.Op, args: list[Any]) -> list[np.ndarray]:
        block = func.body.block  # type: ignore[attr-defined]
        for a, x in zip(block.args, args):
            self.put(a, x)
        return self.block(block)

    def block(self, block: ir.Block) -> list[np.ndarray]:
        for op in block.ops:
            if op.is_terminator:
                return [self.val(v) for v in op.operands]
            self.op(op)
        return []

    def op(self, op: ir.Op) -> None:
        with np.errstate(over="ignore", invalid="ignore"):
            self._op(op)

    def _op(self, op: ir.Op) -> None:
        t = type(op)
        if t is A.ConstantOp:
            self.put(op.result, op.value)
        elif t is tt.MakeRangeOp:
            self.put(op.result, np.arange(op.start, op.end))
        elif t in (tt.GetProgramIdOp,):
            self.put(op.result, self.program_ids[op.axis])
        elif t in (tt.SplatOp, tt.BroadcastOp):
            self.put(op.result, np.broadcast_to(self.val(op.operands[0]), shape_of(op.result.type)))
        elif t is tt.ExpandDimsOp:
            self.put(op.result, np.expand_dims(self.val(op.src), op.axis))
        elif t is tt.TransOp:
            self.put(op.result, np.transpose(self.val(op.src), op.order))
        elif t is tt.AddPtrOp:
            el = element_type(op.ptr.type)
            size = 8 if isinstance(el.pointee, PointerType) else max(el.pointee.bitwidth // 8, 1)
            self.put(op.result, self.val(op.ptr) + self.val(op.offset).astype(np.int64) * size)
        elif t in BINARY:
            a, b = self.val(op.lhs), self.val(op.rhs)
            self.put(op.result, BINARY[t](a, b))
        elif t in (A.CmpIOp, A.CmpFOp):
            pred = op.predicate.value
            a, b = self.val(op.lhs), self.val(op.rhs)
            if pred.startswith("u") and pred != "une":
                a, b, pred = _unsigned(a), _unsigned(b), "s" + pred[1:]
            self.put(op.result, COMPARE[pred](a, b))
        elif t is A.SelectOp:
            self.put(op.result, np.where(self.val(op.condition), self.val(op.true_value), self.val(op.false_value)))
        elif t in (A.ExtSIOp, A.TruncIOp, A.SIToFPOp, A.ExtFOp, A.TruncFOp, A.FPToSIOp):
            self.put(op.result, self.val(op.operand))
        elif t is StoreOp and op.mask is None and not shape_of(op.ptr.type):
            self.stores.append((int(self.val(op.ptr)), self.val(op.value).item()))
        elif t is A.NegFOp:
            self.put(op.result, -self.val(op.operand))
        elif t is HintOp:
            self.put(op.result, self.val(op.src))
        elif t is scf.IfOp:
            taken = op.then_region if bool(self.val(op.condition)) else op.else_region
            for r, v in zip(op.results, self.block(taken.block)):
                self.put(r, v)
        elif t is scf.ForOp:
            lo, hi, step = (int(self.val(v)) for v in (op.lower, op.upper, op.step))
            carried = [self.val(v) for v in op.iter_args]
            body = op.body.block
            for i in range(lo, hi, step):
                self.put(body.args[0], i)
                for a, v in zip(body.args[1:], carried):
                    self.put(a, v)
                carried = self.block(body)
            for r, v in zip(op.results, carried):
                self.put(r, v)
        else:
            raise NotImplementedError(op.name)
