"""Verifier: each rule rejects a module that breaks it, naming the op and its location."""

from __future__ import annotations

import pytest

from triton_metal import ir
from triton_metal.ir import types as T
from triton_metal.ir.ops import arith, scf

ARGS = "%a: i32, %b: i64, %f: f32, %h: f16, %p: !tt.ptr<f32>, %t: tensor<16xf32>, %ti: tensor<16xi32>, %m: tensor<16xi1>, %c: i1"


def _module(body: str, results: str = "") -> str:
    return f"module {{\n  tt.func @f({ARGS}){results} {{\n{body}  }}\n}}\n"


INVALID = [
    ("    %x = arith.addi %a, %b : i32\n    tt.return\n", "'arith.addi' op requires operands of one type, got i32, i64"),
    ("    %x = arith.addf %a, %a : i32\n    tt.return\n", "'arith.addf' op operands must be a floating-point scalar or tensor"),
    ("    %x = arith.addi %a, %a : i64\n    tt.return\n", "'arith.addi' op result #0 must be i32, got i64"),
    ("    %x = arith.cmpi %a, %a {predicate = olt} : i1\n    tt.return\n", "predicate 'olt' is not an integer predicate"),
    ("    %x = arith.constant {value = 300} : i8\n    tt.return\n", "value 300 does not fit in i8"),
    ("    %x = arith.constant {value = 1} : f32\n    tt.return\n", "a float constant must be a float"),
    ("    %x = arith.extf %f : f16\n    tt.return\n", "needs a wider float type, got f32 -> f16"),
    ("    %x = arith.trunci %a : i64\n    tt.return\n", "needs a narrower integer type"),
    ("    %x = arith.sitofp %ti : f32\n    tt.return\n", "cannot change the shape: tensor<16xi32> -> f32"),
    ("    %x = arith.select %m, %a, %a : i32\n    tt.return\n", "condition must be i1 of the values' shape or a scalar"),
    ("    %x = tt.splat %t : tensor<16x16xf32>\n    tt.return\n", "operand must be a scalar"),
    ("    %x = tt.broadcast %t : tensor<32xf32>\n    tt.return\n", "cannot broadcast tensor<16xf32> to tensor<32xf32>"),
    ("    %x = tt.expand_dims %t {axis = 2} : tensor<16x1xf32>\n    tt.return\n", "axis 2 out of range"),
    ("    %x = tt.reshape %t : tensor<4x8xf32>\n    tt.return\n", "must keep the element type and count"),
    ("    %x = tt.trans %t {order = [1, 0]} : tensor<16xf32>\n    tt.return\n", "is not a permutation of 1 dims"),
    ("    %x = tt.make_range {end = 0, start = 4} : tensor<4xi32>\n    tt.return\n", "needs start < end"),
    ("    %x = tt.get_program_id {axis = 3} : i32\n    tt.return\n", "axis must be 0, 1 or 2"),
    ("    %x = tt.addptr %p, %f : !tt.ptr<f32>\n    tt.return\n", "offset must be an integer"),
    ("    %x = tt.load %p : f16\n    tt.return\n", "'tt.load' op result #0 must be f32, got f16"),
    ("    %x = tt.load %p, other %f : f32\n    tt.return\n", "other without a mask"),
    ("    tt.store %p, %a\n    tt.return\n", "'tt.store' op value must be f32, got i32"),
    ("    %x = tt.atomic_rmw %p, %f {kind = add, scope = gpu, sem = weird} : f32\n    tt.return\n", "sem must be one of"),
    ("    %x = tt.dot %t, %t, %t : tensor<16xf32>\n    tt.return\n", "operands must all be 2-D or all 3-D"),
    ("    %x = tt.hint %ti {kind = multiple_of, values = [16, 16]} : tensor<16xi32>\n    tt.return\n", "needs 1 positive value(s)"),
    ("    tt.print %a {hex = false, is_signed = [], prefix = \"\"}\n    tt.return\n", "is_signed needs one entry per argument"),
    ("    %x = tt.call %a {callee = \"nowhere\"} : i32\n    tt.return\n", "calls unknown function @nowhere"),
    ("    tt.return %a\n", "'tt.func' op must return (), got (i32)"),
    ("    tt.return\n    tt.barrier\n", "'tt.func' op body must end with 'tt.return'"),
    (
        "    %s = tt.reduce %t {axis = 0} combine {\n    ^bb0(%u: f32, %v: f32):\n"
        "      %w = arith.addf %u, %v : f32\n      tt.reduce.return %w, %w\n    } : f32\n    tt.return\n",
        "combine region must return (f32), got (f32, f32)",
    ),
    (
        "    %s = tt.reduce %t {axis = 0} combine {\n    ^bb0(%u: f32):\n      tt.reduce.return %u\n    } : f32\n    tt.return\n",
        "combine region must take (f32, f32), got (f32)",
    ),
    (
        "    %s = tt.scan %t {axis = 0} combine {\n    ^bb0(%u: f32, %v: f32):\n      tt.reduce.return %u\n    } : tensor<16xf32>\n    tt.return\n",
        "'tt.scan' op combine region must end with 'tt.scan.return'",
    ),
    (
        "    %r = scf.if %c then {\n      scf.yield %a\n    } else {\n      scf.yield %b\n    } : i32\n    tt.return\n",
        "else region must yield (i32), got (i64)",
    ),
    (
        "    %r = scf.if %c then {\n      scf.yield %a\n    } else {\n    } : i32\n    tt.return\n",
        "else region must end with 'scf.yield'",
    ),
    (
        "    %r = scf.for %a, %a, %a, iter_args(%f) body {\n    ^bb0(%i: i32):\n      scf.yield %f\n    } : f32\n    tt.return\n",
        "body must take (i32, f32), got (i32)",
    ),
    (
        "    scf.for %f, %f, %f body {\n    ^bb0(%i: f32):\n      scf.yield\n    }\n    tt.return\n",
        "bounds must be integer scalars, got f32",
    ),
    (
        "    %r = scf.while %a before {\n    ^bb0(%x: i32):\n      scf.condition %c, %f\n    } after {\n"
        "    ^bb0(%y: i32):\n      scf.yield %y\n    } : i32\n    tt.return\n",
        "scf.condition must forward (i32), got (f32)",
    ),
    (
        "    %r = scf.while %a before {\n    ^bb0(%x: i32):\n      scf.yield %x\n    } after {\n"
        "    ^bb0(%y: i32):\n      scf.yield %y\n    } : i32\n    tt.return\n",
        "before region must end with 'scf.condition'",
    ),
    ("    scf.yield\n    tt.return\n", "'scf.yield' op is a terminator but is not the last op of its block"),
]


@pytest.mark.parametrize("body, message", INVALID, ids=[m[:48] for _, m in INVALID])
def test_invalid_module_is_rejected(body: str, message: str) -> None:
    module = ir.parse_module(_module(body), "bad.ir")
    with pytest.raises(ir.VerifyError) as info:
        module.verify()
    assert message in info.value.reason
    # The error is located at an op of this file (the function starts on line 2).
    assert info.value.loc is not None and info.value.loc.file == "bad.ir" and info.value.loc.line >= 2


def test_valid_base_module_verifies() -> None:
    ir.parse_module(_module("    tt.return\n")).verify()


def test_use_outside_the_defining_region_is_rejected() -> None:
    # Built programmatically: the parser already refuses names out of scope.
    module = ir.Module()
    block = ir.Block([T.i1, T.i32], ["c", "a"])
    module.append(ir.ops.FuncOp(sym_name="f", body=ir.Region([block])))
    c, a = block.args
    then_block = ir.Block()
    inner = then_block.append(arith.AddIOp(lhs=a, rhs=a, result_types=[T.i32]))
    then_block.append(scf.YieldOp())
    block.append(scf.IfOp(condition=c, then_region=ir.Region([then_block])))
    block.append(arith.MulIOp(lhs=inner.result, rhs=a, result_types=[T.i32]))
    block.append(ir.ops.ReturnOp())
    with pytest.raises(ir.VerifyError, match="'arith.muli' op operand #0 .* outside the scope of its definition"):
        module.verify()


def test_use_before_definition_is_rejected() -> None:
    module = ir.Module()
    block = ir.Block([T.i32], ["a"])
    module.append(ir.ops.FuncOp(sym_name="f", body=ir.Region([block])))
    (a,) = block.args
    late = arith.AddIOp(lhs=a, rhs=a, result_types=[T.i32])
    block.append(arith.MulIOp(lhs=late.result, rhs=a, result_types=[T.i32]))
    block.append(late)
    block.append(ir.ops.ReturnOp())
    with pytest.raises(ir.VerifyError, match="before it"):
        module.verify()


def test_missing_operand_is_rejected() -> None:
    module = ir.Module()
    block = ir.Block([T.i32], ["a"])
    module.append(ir.ops.FuncOp(sym_name="f", body=ir.Region([block])))
    block.append(arith.AddIOp(lhs=block.args[0], rhs=None, result_types=[T.i32]))  # type: ignore[arg-type]
    block.append(ir.ops.ReturnOp())
    with pytest.raises(ir.VerifyError, match="operand 'rhs' must be a value"):
        module.verify()


def test_call_signature_is_checked() -> None:
    text = (
        "module {\n  tt.func @g(%x: f32) -> (f32) {\n    tt.return %x\n  }\n"
        "  tt.func @f(%a: i32) {\n    %r = tt.call %a {callee = \"g\"} : f32\n    tt.return\n  }\n}\n"
    )
    with pytest.raises(ir.VerifyError, match=r"argument types \(i32\) do not match @g"):
        ir.parse_module(text).verify()


def test_duplicate_function_names_are_rejected() -> None:
    text = "module {\n  tt.func @g() {\n    tt.return\n  }\n  tt.func @g() {\n    tt.return\n  }\n}\n"
    with pytest.raises(ir.VerifyError, match="redefines function @g"):
        ir.parse_module(text).verify()
