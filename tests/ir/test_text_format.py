"""The IR text form: every op prints and parses back identically; names, types and errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from triton_metal import ir
from triton_metal.ir import types as T
from triton_metal.ir.ops import arith, scf

EVERY_OP = Path(__file__).with_name("every_op.ir")


def test_every_registered_op_appears_in_the_round_trip_file() -> None:
    module = ir.parse_module(EVERY_OP.read_text(), str(EVERY_OP))
    seen = {op.name for op in module.walk()}
    assert set(ir.OP_REGISTRY) - seen == set()


def test_every_op_round_trips() -> None:
    module = ir.parse_module(EVERY_OP.read_text(), str(EVERY_OP))
    module.verify()
    text = ir.print_module(module)
    again = ir.parse_module(text)
    again.verify()
    assert ir.print_module(again) == text
    # The same with locations printed and read back.
    with_locs = ir.print_module(module, print_locs=True)
    assert ir.print_module(ir.parse_module(with_locs), print_locs=True) == with_locs
    assert f'loc("{EVERY_OP}":' in with_locs


def test_float_constants_keep_their_exact_value() -> None:
    module = ir.parse_module(EVERY_OP.read_text())
    values = {op.results[0].name_hint: op.value for op in module.walk() if isinstance(op, arith.ConstantOp)}
    assert values["fsmall"] == 1e-05
    assert values["finf"] == float("-inf")
    assert values["fnan"] != values["fnan"]  # NaN
    assert values["t"] is True


@pytest.mark.parametrize(
    "text, expected",
    [
        ("i1", T.i1), ("u64", T.u64), ("bf16", T.bf16),
        ("!tt.ptr<f16>", T.PointerType(T.f16)),
        ("tensor<128x64xf32>", T.TensorType((128, 64), T.f32)),
        ("tensor<8x!tt.ptr<i8>>", T.TensorType((8,), T.PointerType(T.i8))),
        ("!tt.ptr<!tt.ptr<i32>>", T.PointerType(T.PointerType(T.i32))),
    ],
)
def test_types_parse_and_print(text: str, expected: T.Type) -> None:
    assert T.parse_type(text) == expected
    assert str(expected) == text


@pytest.mark.parametrize("text", ["i33", "tensor<xf32>", "tensor<4x>", "tensor<0xf32>", "!tt.ptr<tensor<4xf32>>", "f8"])
def test_bad_types_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        T.parse_type(text)


def _func(*arg_types: T.Type, hints: tuple[str | None, ...] = ()) -> tuple[ir.Module, ir.Block]:
    module = ir.Module()
    block = ir.Block(arg_types, hints)
    func = ir.ops.FuncOp(sym_name="f", body=ir.Region([block]))
    module.append(func)
    return module, block


def test_names_come_from_hints_and_are_made_unique() -> None:
    module, block = _func(T.i32, T.i32, hints=("x", "x"))
    a, b = block.args
    s1 = block.append(arith.AddIOp(lhs=a, rhs=b, result_types=[T.i32]))
    s1.result.name_hint = "x_1"
    s2 = block.append(arith.AddIOp(lhs=s1.result, rhs=b, result_types=[T.i32]))
    s3 = block.append(arith.MulIOp(lhs=s2.result, rhs=s2.result, result_types=[T.i32]))
    s3.result.name_hint = "a.b"
    block.append(ir.ops.ReturnOp(values=()))
    module.verify()
    text = ir.print_module(module)
    assert "tt.func @f(%x: i32, %x_1: i32)" in text
    assert "%x_1_1 = arith.addi %x, %x_1 : i32" in text  # the hint `x_1` is taken: suffix again
    assert "%0 = arith.addi %x_1_1, %x_1 : i32" in text
    assert "%a_b = arith.muli %0, %0 : i32" in text
    assert ir.print_module(ir.parse_module(text)) == text


def test_programmatic_loop_prints_its_region() -> None:
    module, block = _func(T.i32, T.f32, hints=("n", "x"))
    n, x = block.args
    zero = block.append(arith.ConstantOp(value=0, result_types=[T.i32])).result
    one = block.append(arith.ConstantOp(value=1, result_types=[T.i32])).result
    body = ir.Block([T.i32, T.f32], ["i", "acc"])
    added = body.append(arith.AddFOp(lhs=body.args[1], rhs=x, result_types=[T.f32])).result
    body.append(scf.YieldOp(values=(added,)))
    loop = block.append(scf.ForOp(lower=zero, upper=n, step=one, iter_args=(x,), body=ir.Region([body]), result_types=[T.f32]))
    block.append(ir.ops.ReturnOp(values=(loop.result,)))
    func = module.ops[0]
    assert isinstance(func, ir.ops.FuncOp)
    func.res_types = (T.f32,)
    module.verify()
    assert ir.print_module(module) == (
        "module {\n"
        "  tt.func @f(%n: i32, %x: f32) -> (f32) {\n"
        "    %0 = arith.constant {value = 0} : i32\n"
        "    %1 = arith.constant {value = 1} : i32\n"
        "    %2 = scf.for %0, %n, %1, iter_args(%x) body {\n"
        "    ^bb0(%i: i32, %acc: f32):\n"
        "      %3 = arith.addf %acc, %x : f32\n"
        "      scf.yield %3\n"
        "    } : f32\n"
        "    tt.return %2\n"
        "  }\n"
        "}\n"
    )


PARSE_ERRORS = [
    ("  %x = arith.constant {value = 1} i32\n", 3, "syntax error: unexpected end of line; expected '{'"),
    ("  %x = arith.constnt {value = 1} : i32\n", 3, "unknown op 'arith.constnt'"),
    ("  %x = arith.addi %a, %y : i32\n", 3, "use of undefined value %y"),
    ("  %a = arith.constant {value = 1} : i32\n", 3, "redefinition of %a"),
    ("  %x = arith.constant : i32\n", 3, "missing attribute 'value'"),
    ("  %x = arith.constant {value = 1, bogus = 2} : i32\n", 3, "unknown attribute(s) bogus"),
    ("  %x = arith.addi %a : i32\n", 3, "expects 2 operand(s) before keywords, got 1"),
    ("  %x = tt.load %p, mask %a, mask %a : f32\n", 3, "unexpected operand 'mask'"),
    ("  %x, %y = arith.addi %a, %a : i32\n", 3, "2 result name(s) but 1 result type(s)"),
    ("  %x = arith.cmpi %a, %a {predicate = less} : i1\n", 3, "bad attribute 'predicate'"),
]


@pytest.mark.parametrize("line, lineno, message", PARSE_ERRORS)
def test_parse_errors_cite_line_and_reason(line: str, lineno: int, message: str) -> None:
    text = "module {\n  tt.func @f(%a: i32, %p: !tt.ptr<f32>) {\n" + line + "    tt.return\n  }\n}\n"
    with pytest.raises(ir.IRParseError) as info:
        ir.parse_module(text, "case.ir")
    err = info.value
    assert message in err.reason
    assert err.loc is not None and err.loc.file == "case.ir" and err.loc.line == lineno
    rendered = str(err)
    assert rendered.startswith(f"case.ir:{lineno}:")
    assert line.rstrip("\n") in rendered  # the source line is shown, with a caret under it
    assert rendered.splitlines()[2].strip() == "^"


def test_replace_all_uses_and_remove() -> None:
    text = (
        "module {\n  tt.func @f(%a: i32, %b: i32) -> (i32) {\n    %s = arith.addi %a, %a : i32\n"
        "    %t = arith.muli %s, %a : i32\n    tt.return %t\n  }\n}\n"
    )
    module = ir.parse_module(text)
    func = module.ops[0]
    a, b = func.body.block.args
    assert module.replace_all_uses(a, b) == 3
    add = func.body.block.ops[0]
    assert module.replace_all_uses(add.result, b) == 1
    func.body.block.remove(add)
    module.verify()
    out = ir.print_module(module)
    assert "%t = arith.muli %b, %b : i32" in out and "arith.addi" not in out
    with pytest.raises(ValueError):
        func.body.block.remove(add)


def test_clone_copies_regions_and_remaps_values() -> None:
    module = ir.parse_module(EVERY_OP.read_text())
    clone = ir.Module(dict(module.attributes))
    for op in module.ops:
        clone.append(op.clone())
    clone.verify()
    assert ir.print_module(clone) == ir.print_module(module)
    # The copy shares no values with the original.
    originals = {id(r) for op in module.walk() for r in op.results}
    assert not any(id(v) in originals for op in clone.walk() for v in op.operands)


def test_insert_before_and_after() -> None:
    text = "module {\n  tt.func @f(%a: i32) {\n    %s = arith.addi %a, %a : i32\n    tt.return\n  }\n}\n"
    module = ir.parse_module(text)
    block = module.ops[0].body.block
    add = block.ops[0]
    block.insert_after(add, arith.MulIOp(lhs=add.result, rhs=add.result, result_types=[T.i32]))
    block.insert_before(add, arith.ConstantOp(value=7, result_types=[T.i32]))
    module.verify()
    assert [op.name for op in block.ops] == ["arith.constant", "arith.addi", "arith.muli", "tt.return"]
