"""Property: any well-formed module built from random ops and random name hints prints, parses
back and prints identically, and the re-parsed module has the same structure."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from triton_metal import ir
from triton_metal.ir import types as T
from triton_metal.ir.ops import arith, func, scf

HINTS = st.one_of(st.none(), st.sampled_from(["x", "x_1", "0", "1x", "a.b", "acc", "acc_2", "é", "_", "v"]))
ELEMENTS = [T.i32, T.f32, T.u8, T.bf16]
BINARY = {T.i32: [arith.AddIOp, arith.MulIOp, arith.XOrIOp, arith.MaxSIOp], T.u8: [arith.AddIOp, arith.MinUIOp],
          T.f32: [arith.AddFOp, arith.MulFOp, arith.MaximumFOp], T.bf16: [arith.SubFOp, arith.DivFOp]}


@st.composite
def modules(draw: st.DrawFn) -> ir.Module:
    module = ir.Module({"num_warps": draw(st.sampled_from([1, 4, 8]))})
    arg_types = draw(st.lists(st.sampled_from(ELEMENTS), min_size=1, max_size=4))
    block = ir.Block(arg_types, [draw(HINTS) for _ in arg_types])
    module.append(func.FuncOp(sym_name="f", body=ir.Region([block])))
    values: list[ir.Value] = list(block.args)

    def emit(target: ir.Block, pool: list[ir.Value], n: int) -> None:
        for _ in range(n):
            kind = draw(st.integers(0, 3))
            if kind == 0:
                ty = draw(st.sampled_from(ELEMENTS))
                value = draw(st.floats(allow_nan=True, width=32)) if ty in (T.f32, T.bf16) else draw(st.integers(0, 255))
                op: ir.Op = arith.ConstantOp(value=value, result_types=[ty])
            else:
                lhs = draw(st.sampled_from(pool))
                same = [v for v in pool if v.type == lhs.type]
                rhs = draw(st.sampled_from(same))
                op = draw(st.sampled_from(BINARY[lhs.type]))(lhs=lhs, rhs=rhs, result_types=[lhs.type])
            target.append(op)
            op.result.name_hint = draw(HINTS)
            pool.append(op.result)

    emit(block, values, draw(st.integers(0, 8)))
    if draw(st.booleans()):
        cond = block.append(arith.ConstantOp(value=draw(st.booleans()), result_types=[T.i1])).result
        carried = draw(st.sampled_from(values))
        then_block, else_block = ir.Block(), ir.Block()
        inner = list(values)
        emit(then_block, inner, draw(st.integers(0, 4)))
        then_block.append(scf.YieldOp(values=(draw(st.sampled_from([v for v in inner if v.type == carried.type])),)))
        else_block.append(scf.YieldOp(values=(carried,)))
        if_op = block.append(scf.IfOp(condition=cond, then_region=ir.Region([then_block]),
                                      else_region=ir.Region([else_block]), result_types=[carried.type]))
        if_op.result.name_hint = draw(HINTS)
        values.append(if_op.result)
    block.append(func.ReturnOp(values=()))
    return module


@settings(max_examples=150, deadline=None)
@given(modules())
def test_random_modules_round_trip(module: ir.Module) -> None:
    module.verify()
    text = ir.print_module(module)
    again = ir.parse_module(text)
    again.verify()
    assert ir.print_module(again) == text
    assert [op.name for op in again.walk()] == [op.name for op in module.walk()]
