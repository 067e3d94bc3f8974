"""canonicalize, cse and dce keep what a function computes: every value a large function of
all rule combinations returns is the same (bit for bit) before and after, on NumPy evaluation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.passes.ir_eval import Evaluator
from tests.passes.test_axis_info_soundness import Program
from triton_metal import ir
from triton_metal.passes import PassPipeline

INT_OPS = ("arith.addi", "arith.subi", "arith.muli", "arith.maxsi", "arith.minsi", "arith.ori", "arith.xori",
           "arith.andi", "arith.divsi", "arith.remsi", "arith.divui", "arith.remui", "arith.shli", "arith.shrsi")
PREDS = ("slt", "sle", "sgt", "sge", "eq", "ne", "ult", "uge")


def _int_function(scalar: bool) -> tuple[str, list[str]]:
    """Ops over every pair of values among constants (folded) and unknowns (identities)."""
    prog = Program((16,))
    ty = "i32" if scalar else prog.ty
    mask_ty = "i1" if scalar else prog.ty.replace("xi32>", "xi1>")
    values = [prog.emit(f"arith.constant {{value = {v}}}", ty) for v in (0, 1, -1, 3, 16, -7, 2147483647, -2147483648)]
    if scalar:
        values += ["%n", "%m"]
    else:
        values += [prog.emit(f"tt.splat {s}", ty) for s in ("%n", "%m")]
        values.append(prog.emit("tt.make_range {end = 16, start = 0}", ty))
    shift = [prog.emit(f"arith.constant {{value = {v}}}", ty) for v in (0, 1, 5)]
    outs: list[str] = []
    for a in values:
        for b in values:
            for op in INT_OPS:
                if op in ("arith.divsi", "arith.remsi", "arith.divui", "arith.remui") and b not in values[1:6]:
                    continue  # no division by zero or by unknowns (may be zero)
                if op in ("arith.shli", "arith.shrsi"):
                    continue
                outs.append(prog.emit(f"{op} {a}, {b}", ty))
            for p in PREDS:
                c = prog.emit(f"arith.cmpi {a}, {b} {{predicate = {p}}}", mask_ty)
                outs.append(prog.emit(f"arith.select {c}, {a}, {b}", ty))
        for s in shift:
            outs += [prog.emit(f"{op} {a}, {s}", ty) for op in ("arith.shli", "arith.shrsi")]
        outs.append(prog.emit(f"arith.extsi {a}", "i64" if scalar else ty.replace("i32", "i64")))
        outs.append(prog.emit(f"arith.trunci {a}", "i8" if scalar else ty.replace("i32", "i8")))
    return _wrap(prog, outs, "%n: i32, %m: i32"), outs


def _wrap(prog: Program, outs: list[str], params: str) -> str:
    types = [next(line for line in prog.lines if line.strip().startswith(o + " ")).rsplit(" : ", 1)[1] for o in outs]
    head = f"  tt.func @f({params}) -> ({', '.join(types)}) {{"
    return "module {\n" + head + "\n" + "\n".join(prog.lines) + f"\n    tt.return {', '.join(outs)}\n  }}\n}}\n"


def _float_function() -> str:
    prog = Program((1,))
    outs: list[str] = []
    for ty in ("f32", "f16"):
        values = [prog.emit(f"arith.constant {{value = {v}}}", ty) for v in ("0.1", "-0.0", "0.0", "1.0", "3.5", "65504.0", "inf")]
        values.append(f"%x_{ty}")
        for a in values:
            for b in values:
                outs += [prog.emit(f"{op} {a}, {b}", ty) for op in ("arith.addf", "arith.subf", "arith.mulf")]
                outs += [prog.emit(f"arith.cmpf {a}, {b} {{predicate = {p}}}", "i1") for p in ("olt", "oeq", "une")]
            outs.append(prog.emit(f"arith.negf {a}", ty))
        ints = [prog.emit(f"arith.constant {{value = {v}}}", "i32") for v in (16777217, -3, 65519, 0)]
        outs += [prog.emit(f"arith.sitofp {i}", ty) for i in ints]
    f32s = [prog.emit(f"arith.constant {{value = {v}}}", "f32") for v in ("0.1", "-2.5", "65519.0", "1e-08")]
    outs += [prog.emit(f"arith.truncf {v}", "f16") for v in f32s]
    outs += [prog.emit(f"arith.fptosi {v}", "i32") for v in f32s]
    h = prog.emit("arith.constant {value = 0.333251953125}", "f16")
    outs.append(prog.emit(f"arith.extf {h}", "f32"))
    return _wrap(prog, outs, "%x_f32: f32, %x_f16: f16")


def _same(before: list[np.ndarray], after: list[np.ndarray]) -> None:
    assert len(before) == len(after)
    for i, (a, b) in enumerate(zip(before, after)):
        assert a.dtype == b.dtype, i
        assert a.tobytes() == b.tobytes(), f"result #{i}: {a} != {b}"


@pytest.mark.parametrize("scalar", [True, False], ids=["scalars", "tensors"])
def test_integer_cleanup_keeps_results(scalar: bool) -> None:
    text, _ = _int_function(scalar)
    original = ir.parse_module(text)
    cleaned = ir.parse_module(text)
    PassPipeline.parse("canonicalize,cse,dce").apply(None, cleaned)
    cleaned.verify()
    n_before = sum(1 for _ in original.walk())
    n_after = sum(1 for _ in cleaned.walk())
    assert n_after < n_before // 2, (n_before, n_after)  # most of it folds
    for args in ((0, 0), (5, -9), (-2147483648, 7)):
        _same(Evaluator().run(original.funcs[0], list(args)), Evaluator().run(cleaned.funcs[0], list(args)))


def _interval_function() -> tuple[str, int]:
    """Ordered comparisons of ranges (shifted below zero, up to the top of i32, and past it:
    an add that wraps) with constants and with each other, every predicate `canonicalize`
    decides from intervals; the count of comparisons made."""
    prog = Program((16,))
    ty, mask_ty = prog.ty, prog.ty.replace("xi32>", "xi1>")
    r = prog.emit("tt.make_range {end = 16, start = 0}", ty)
    values = [r] + [prog.emit(f"arith.addi {r}, {prog.emit(f'arith.constant {{value = {k}}}', ty)}", ty)
                    for k in (-7, -16, 2147483632, 2147483640)]
    values += [prog.emit(f"arith.constant {{value = {v}}}", ty) for v in (-1, 0, 8, 15, 16, -2147483648)]
    outs: list[str] = []
    for a in values:
        for b in values:
            for p in ("slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"):
                c = prog.emit(f"arith.cmpi {a}, {b} {{predicate = {p}}}", mask_ty)
                outs.append(prog.emit(f"arith.select {c}, {a}, {b}", ty))
    return _wrap(prog, outs, "%n: i32"), len(outs)


def test_interval_folds_keep_results() -> None:
    text, made = _interval_function()
    original = ir.parse_module(text)
    cleaned = ir.parse_module(text)
    PassPipeline.parse("canonicalize,cse,dce").apply(None, cleaned)
    cleaned.verify()
    kept = sum(1 for op in cleaned.walk() if op.name == "arith.cmpi")
    assert kept < made // 2, (made, kept)  # most comparisons are decided by the intervals
    _same(Evaluator().run(original.funcs[0], [0]), Evaluator().run(cleaned.funcs[0], [0]))


def test_float_cleanup_keeps_results() -> None:
    text = _float_function()
    original = ir.parse_module(text)
    cleaned = ir.parse_module(text)
    PassPipeline.parse("canonicalize,cse,dce").apply(None, cleaned)
    cleaned.verify()
    kept = [op for op in cleaned.walk() if op.name in ("arith.addf", "arith.subf", "arith.mulf")]
    assert kept
    for op in kept:
        # what stays involves an argument, or would make a NaN (inf - inf, 0 * inf)
        if any(v.name_hint and v.name_hint.startswith("x_") for v in op.operands):
            continue
        a, b = (np.float32(v.op.value) for v in op.operands)
        with np.errstate(all="ignore"):
            r = {"arith.addf": a + b, "arith.subf": a - b, "arith.mulf": a * b}[op.name]
        assert np.isnan(r), ir.print_op(op)
    for args in ((1.5, 0.25), (-0.0, -0.0)):
        _same(Evaluator().run(original.funcs[0], list(args)), Evaluator().run(cleaned.funcs[0], list(args)))


LOOPS = """module {
  tt.func @loops(%n: i32, %x: i32) -> (i32, i32, tensor<8xi32>, i32) {
    %c0 = arith.constant {value = 0} : i32
    %c1 = arith.constant {value = 1} : i32
    %c3 = arith.constant {value = 3} : i32
    %t = arith.constant {value = true} : i1
    %r = tt.make_range {end = 8, start = 0} : tensor<8xi32>
    %a, %dead, %v = scf.for %c0, %n, %c1, iter_args(%x, %x, %r) body {
    ^bb0(%i: i32, %acc: i32, %d: i32, %vec: tensor<8xi32>):
      %sq = arith.muli %i, %i : i32
      %acc2 = arith.addi %acc, %sq : i32
      %d2 = arith.muli %d, %c3 : i32
      %is = tt.splat %i : tensor<8xi32>
      %vec2 = arith.addi %vec, %is : tensor<8xi32>
      %same = arith.addi %vec2, %is : tensor<8xi32>
      %picked = scf.if %t then {
        scf.yield %same
      } else {
        scf.yield %vec
      } : tensor<8xi32>
      scf.yield %acc2, %d2, %picked
    } : i32, i32, tensor<8xi32>
    %never = scf.for %n, %c0, %c1, iter_args(%a) body {
    ^bb0(%j: i32, %b: i32):
      %b2 = arith.addi %b, %j : i32
      scf.yield %b2
    } : i32
    %c7 = arith.constant {value = 7} : i32
    %once = scf.for %c3, %c7, %c7, iter_args(%never) body {
    ^bb0(%j3: i32, %b3: i32):
      %sq3 = arith.muli %j3, %b3 : i32
      %b4 = arith.addi %sq3, %j3 : i32
      scf.yield %b4
    } : i32
    tt.return %a, %never, %v, %once
  }
}
"""


def test_loops_keep_results() -> None:
    original = ir.parse_module(LOOPS)
    cleaned = ir.parse_module(LOOPS)
    PassPipeline.parse("canonicalize,cse,dce").apply(None, cleaned)
    cleaned.verify()
    text = ir.print_module(cleaned)
    # the if and the one-trip loop go; the second loop may run
    assert "scf.if" not in text and text.count("scf.for") == 2
    assert "%d2" not in text  # the dead carried value and its computation went
    for args in ((0, 5), (4, -3), (-2, 1)):
        _same(Evaluator().run(original.funcs[0], list(args)), Evaluator().run(cleaned.funcs[0], list(args)))


def _random_program(data: st.DataObject) -> str:
    """Nested scalar control flow with constants, identities and foldable branches."""
    counter = [0]
    consts: list[str] = []

    def operand(vals: list[str]) -> str:
        # constants half the time: folds, identities and constant branches are the point
        visible = [c for c in consts if c in vals]
        if visible and data.draw(st.booleans()):
            return data.draw(st.sampled_from(visible))
        return data.draw(st.sampled_from(vals))

    def fresh() -> str:
        counter[0] += 1
        return f"%v{counter[0]}"

    def block(values: list[str], depth: int, indent: str) -> tuple[list[str], list[str]]:
        lines: list[str] = []
        vals = list(values)
        for _ in range(data.draw(st.integers(1, 6))):
            kind = data.draw(st.sampled_from(["const", "bin", "bin", "if", "for", "store"] if depth < 2 else ["const", "bin", "store"]))
            if kind == "const":
                name = fresh()
                lines.append(f"{indent}{name} = arith.constant {{value = {data.draw(st.sampled_from([0, 1, -1, 2, 7, -3]))}}} : i32")
                vals.append(name)
                consts.append(name)
            elif kind == "bin":
                op = data.draw(st.sampled_from(["addi", "subi", "muli", "andi", "ori", "xori", "maxsi"]))
                a, b = operand(vals), operand(vals)
                name = fresh()
                lines.append(f"{indent}{name} = arith.{op} {a}, {b} : i32")
                vals.append(name)
            elif kind == "store":
                lines.append(f"{indent}tt.store %p, {operand(vals)}")
            elif kind == "if":
                a, b = operand(vals), operand(vals)
                cond = fresh()
                if data.draw(st.booleans()):
                    lines.append(f"{indent}{cond} = arith.constant {{value = {str(data.draw(st.booleans())).lower()}}} : i1")
                else:
                    lines.append(f"{indent}{cond} = arith.cmpi {a}, {b} {{predicate = slt}} : i1")
                res = fresh()
                then_lines, then_vals = block(vals, depth + 1, indent + "  ")
                else_lines, else_vals = block(vals, depth + 1, indent + "  ")
                lines.append(f"{indent}{res} = scf.if {cond} then {{")
                lines += then_lines + [f"{indent}  scf.yield {data.draw(st.sampled_from(then_vals))}", f"{indent}}} else {{"]
                lines += else_lines + [f"{indent}  scf.yield {data.draw(st.sampled_from(else_vals))}", f"{indent}}} : i32"]
                vals.append(res)
            else:
                lo, hi = fresh(), fresh()
                lines.append(f"{indent}{lo} = arith.constant {{value = {data.draw(st.sampled_from([0, 2, 5]))}}} : i32")
                bound = data.draw(st.sampled_from(["const", "arg"]))
                if bound == "const":
                    lines.append(f"{indent}{hi} = arith.constant {{value = {data.draw(st.sampled_from([0, 3, 4]))}}} : i32")
                else:
                    lines.append(f"{indent}{hi} = arith.andi %n, {lo} : i32")
                one = fresh()
                lines.append(f"{indent}{one} = arith.constant {{value = 1}} : i32")
                init, init2 = data.draw(st.sampled_from(vals)), data.draw(st.sampled_from(vals))
                res, res2 = fresh(), fresh()
                iv, acc, acc2 = fresh(), fresh(), fresh()
                body_lines, body_vals = block([*vals, iv, acc, acc2], depth + 1, indent + "  ")
                y1, y2 = data.draw(st.sampled_from(body_vals)), data.draw(st.sampled_from([acc2, *body_vals]))
                lines.append(f"{indent}{res}, {res2} = scf.for {lo}, {hi}, {one}, iter_args({init}, {init2}) body {{")
                lines.append(f"{indent}^bb0({iv}: i32, {acc}: i32, {acc2}: i32):")
                lines += body_lines + [f"{indent}  scf.yield {y1}, {y2}", f"{indent}}} : i32, i32"]
                vals += [res, res2]
        return lines, vals

    lines, vals = block(["%n", "%m"], 0, "    ")
    outs = [data.draw(st.sampled_from(vals)) for _ in range(3)]
    return ("module {\n  tt.func @f(%n: i32, %m: i32, %p: !tt.ptr<i32>) -> (i32, i32, i32) {\n" + "\n".join(lines)
            + f"\n    tt.return {', '.join(outs)}\n  }}\n}}\n")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_control_flow_keeps_results(data: st.DataObject) -> None:
    text = _random_program(data)
    original = ir.parse_module(text)
    original.verify()
    cleaned = ir.parse_module(text)
    PassPipeline.parse("canonicalize,cse,dce").apply(None, cleaned)
    cleaned.verify()
    again = ir.print_module(cleaned)
    assert ir.print_module(ir.parse_module(again)) == again
    for args in ((0, 0, 4096), (7, -3, 4096), (-5, 11, 4096)):
        before, after = Evaluator(), Evaluator()
        _same(before.run(original.funcs[0], list(args)), after.run(cleaned.funcs[0], list(args)))
        assert before.stores == after.stores
