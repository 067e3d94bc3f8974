"""Axis info is sound: on random integer and pointer programs, every fact the analysis claims
holds for the values a NumPy evaluation of the program computes (for several program ids and
argument values that satisfy the declared divisibility)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triton_metal import ir
from triton_metal.passes import AxisInfo, analyze_axis_info
from triton_metal.passes.axis_info import is_tracked, pointee_bytes

from tests.passes.ir_eval import Evaluator

LIMIT = 1 << 28
"""Values stay below this magnitude: the analysis assumes index arithmetic does not overflow."""


def check_facts(info: AxisInfo, arr: np.ndarray, unit: int, what: str) -> None:
    """Assert the facts on a concrete value (`unit`: 1 for integers, element bytes for
    pointers, the step one contiguous element takes)."""
    a = arr.astype(np.int64).reshape(arr.shape or (1,))
    assert a.ndim == info.rank, what
    for d in range(a.ndim):
        moved = np.moveaxis(a, d, -1)
        n = moved.shape[-1]
        c, k, div = info.contiguity[d], info.constancy[d], info.divisibility[d]
        assert n % c == 0 and n % k == 0, f"{what}: groups {c}/{k} do not tile {n}"
        groups = moved.reshape(*moved.shape[:-1], n // c, c)
        assert (np.diff(groups, axis=-1) == unit).all(), f"{what}: contiguity {c} along {d} fails on {a}"
        starts = groups[..., 0]
        assert (starts % div == 0).all(), f"{what}: divisibility {div} along {d} fails on {a}"
        kgroups = moved.reshape(*moved.shape[:-1], n // k, k)
        assert (kgroups == kgroups[..., :1]).all(), f"{what}: constancy {k} along {d} fails on {a}"
    if info.constant is not None:
        assert (a == info.constant).all(), f"{what}: constant {info.constant} fails on {a}"
    if info.non_negative:
        assert (a >= 0).all(), f"{what}: non-negative fails on {a}"


@dataclass
class Program:
    """IR text built op by op, with a magnitude bound per integer value."""

    shape: tuple[int, ...]
    lines: list[str] = field(default_factory=list)
    ints: list[tuple[str, int]] = field(default_factory=list)  # (name, bound) of int tensors
    ptrs: list[tuple[str, str]] = field(default_factory=list)  # (name, type)
    masks: list[str] = field(default_factory=list)
    uniform: list[tuple[str, int]] = field(default_factory=list)  # splats and constants
    counter: int = 0

    @property
    def ty(self) -> str:
        return "tensor<" + "x".join(map(str, self.shape)) + "xi32>"

    def fresh(self) -> str:
        self.counter += 1
        return f"%v{self.counter}"

    def emit(self, text: str, ty: str) -> str:
        name = self.fresh()
        self.lines.append(f"    {name} = {text} : {ty}")
        return name

    def const(self, value: int) -> str:
        name = self.emit(f"arith.constant {{value = {value}}}", self.ty)
        self.ints.append((name, abs(value)))
        self.uniform.append((name, abs(value)))
        return name

    def pick(self, data: st.DataObject) -> tuple[str, int]:
        """An integer operand, biased toward the seeds and the newest values (the interesting
        combinations: ranges against splats, results of the last steps)."""
        where = data.draw(st.sampled_from(["seed", "new", "any"]))
        pool = self.ints[:8] if where == "seed" else self.ints[-4:] if where == "new" else self.ints
        return data.draw(st.sampled_from(pool))


def _seed(prog: Program) -> None:
    shape = prog.shape
    ty = prog.ty
    if len(shape) == 1:
        for start in (0, 16, 3):
            r = prog.emit(f"tt.make_range {{end = {start + shape[0]}, start = {start}}}", ty)
            prog.ints.append((r, start + shape[0]))
    else:
        rows, cols = shape
        r = prog.emit(f"tt.make_range {{end = {rows}, start = 0}}", f"tensor<{rows}xi32>")
        e = prog.emit(f"tt.expand_dims {r} {{axis = 1}}", f"tensor<{rows}x1xi32>")
        prog.ints.append((prog.emit(f"tt.broadcast {e}", ty), rows))
        c = prog.emit(f"tt.make_range {{end = {cols}, start = 0}}", f"tensor<{cols}xi32>")
        e2 = prog.emit(f"tt.expand_dims {c} {{axis = 0}}", f"tensor<1x{cols}xi32>")
        prog.ints.append((prog.emit(f"tt.broadcast {e2}", ty), cols))
    pid = prog.emit("tt.get_program_id {axis = 0}", "i32")
    for scalar, bound in (("%n", 1 << 12), ("%m", 1 << 12), (pid, 8)):
        prog.ints.append((prog.emit(f"tt.splat {scalar}", ty), bound))
        prog.uniform.append(prog.ints[-1])
    for arg, el in (("%p", "f32"), ("%q", "f16")):
        pty = prog.ty.replace("xi32>", f"x!tt.ptr<{el}>>")
        prog.ptrs.append((prog.emit(f"tt.splat {arg}", pty), pty))


BINARY = ("arith.addi", "arith.subi", "arith.muli", "arith.maxsi", "arith.ori", "arith.xori")


def _step(prog: Program, data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(["binary", "div", "rem", "shl", "shr", "and", "cmp", "select", "addptr", "hint"]))
    a, ab = prog.pick(data)
    ty = prog.ty
    if kind == "binary":
        b, bb = data.draw(st.sampled_from(prog.uniform)) if data.draw(st.booleans()) else prog.pick(data)
        op = data.draw(st.sampled_from(BINARY))
        bound = ab * bb if op == "arith.muli" else ab + bb if op in ("arith.addi", "arith.subi") else 2 * max(ab, bb)
        if bound < LIMIT:
            prog.ints.append((prog.emit(f"{op} {a}, {b}", ty), bound))
    elif kind in ("div", "rem"):
        c = prog.const(data.draw(st.sampled_from([1, 2, 3, 4, 8, 16, 64])))
        op = data.draw(st.sampled_from(["arith.divsi", "arith.remsi"] if kind == "div" else ["arith.remsi", "arith.divsi"]))
        prog.ints.append((prog.emit(f"{op} {a}, {c}", ty), ab))
    elif kind == "shl":
        k = data.draw(st.sampled_from([0, 1, 2, 4]))
        if ab << k < LIMIT:
            prog.ints.append((prog.emit(f"arith.shli {a}, {prog.const(k)}", ty), ab << k))
    elif kind == "shr":
        prog.ints.append((prog.emit(f"arith.shrsi {a}, {prog.const(data.draw(st.sampled_from([1, 2, 4])))}", ty), ab))
    elif kind == "and":
        mask = data.draw(st.sampled_from([3, 7, 15, 12, -16, -1, 0]))
        prog.ints.append((prog.emit(f"arith.andi {a}, {prog.const(mask)}", ty), max(ab, 16)))
    elif kind == "cmp":
        b, _ = data.draw(st.sampled_from(prog.uniform)) if data.draw(st.booleans()) else prog.pick(data)
        if data.draw(st.booleans()):
            a, b = b, a
        pred = data.draw(st.sampled_from(["slt", "sge", "sle", "sgt", "eq", "ne"]))
        prog.masks.append(prog.emit(f"arith.cmpi {a}, {b} {{predicate = {pred}}}", ty.replace("xi32>", "xi1>")))
    elif kind == "select" and prog.masks:
        m = data.draw(st.sampled_from(prog.masks))
        b, bb = prog.pick(data)
        prog.ints.append((prog.emit(f"arith.select {m}, {a}, {b}", ty), max(ab, bb)))
    elif kind == "addptr":
        p, pty = data.draw(st.sampled_from(prog.ptrs))
        prog.ptrs.append((prog.emit(f"tt.addptr {p}, {a}", pty), pty))
    elif kind == "hint":
        # a true fact stated as a hint: multiples of 4 are multiples of 4
        four = prog.const(4)
        x = prog.emit(f"arith.muli {a}, {four}", ty)
        if 4 * ab < LIMIT:
            values = ", ".join("4" for _ in prog.shape)
            prog.ints.append((prog.emit(f"tt.hint {x} {{kind = multiple_of, values = [{values}]}}", ty), 4 * ab))


def _loop(prog: Program, data: st.DataObject) -> None:
    """A loop carrying an integer tensor and a pointer tensor, each bumped by a pool value."""
    init, ib = data.draw(st.sampled_from(prog.ints))
    inc, nb = data.draw(st.sampled_from(prog.ints))
    ptr, pty = data.draw(st.sampled_from(prog.ptrs))
    if ib + 4 * nb >= LIMIT:
        return
    c0 = prog.emit("arith.constant {value = 0}", "i32")
    c3 = prog.emit("arith.constant {value = 3}", "i32")
    c1 = prog.emit("arith.constant {value = 1}", "i32")
    res = prog.fresh()
    ty = prog.ty
    prog.lines += [
        f"    {res}, {res}p = scf.for {c0}, {c3}, {c1}, iter_args({init}, {ptr}) body {{",
        f"    ^bb0(%i: i32, %acc: {ty}, %pacc: {pty}):",
        f"      {res}n = arith.addi %acc, {inc} : {ty}",
        f"      {res}q = tt.addptr %pacc, %acc : {pty}",
        f"      scf.yield {res}n, {res}q",
        f"    }} : {ty}, {pty}",
    ]
    prog.ints.append((res, ib + 4 * nb))


def build(data: st.DataObject) -> str:
    shape = data.draw(st.sampled_from([(32,), (4, 16), (16,)]))
    prog = Program(shape)
    _seed(prog)
    for _ in range(data.draw(st.integers(1, 12))):
        _step(prog, data)
    if data.draw(st.booleans()):
        _loop(prog, data)
        for _ in range(data.draw(st.integers(0, 3))):
            _step(prog, data)
    head = "  tt.func @f(%n: i32 {tt.divisibility = 16}, %m: i32, %p: !tt.ptr<f32> {tt.divisibility = 16}, %q: !tt.ptr<f16>) {"
    return "module {\n" + head + "\n" + "\n".join(prog.lines) + "\n    tt.return\n  }\n}\n"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_facts_hold_on_concrete_values(data: st.DataObject) -> None:
    text = build(data)
    module = ir.parse_module(text)
    module.verify()
    facts = analyze_axis_info(module)
    func = module.funcs[0]
    arg_sets = [
        (
            16 * data.draw(st.integers(-4, 4)),
            data.draw(st.integers(-40, 40)),
            16 * (2 * data.draw(st.integers(1, 1000)) + 1),  # exactly 16-byte aligned
            2 * data.draw(st.integers(1, 1000)) + 2 * 4096,
        )
        for _ in range(4)
    ]
    for args in arg_sets:
        for pid in (0, 1, 3):
            ev = Evaluator((pid, 0, 0))

            def check(v: ir.Value, arr: np.ndarray) -> None:
                if is_tracked(v.type):
                    unit = pointee_bytes(v.type) if "ptr" in str(v.type) else 1
                    check_facts(facts.get(v), arr, unit, f"{v!r} with {args}, pid {pid} in\n{text}")

            ev.on_put = check
            ev.run(func, list(args))


def test_checker_rejects_false_facts() -> None:
    arr = np.arange(16)
    check_facts(AxisInfo((16,), (1 << 62,), (1,)), arr, 1, "range")
    for wrong in (AxisInfo((1,), (2,), (1,)), AxisInfo((16,), (1,), (2,)), AxisInfo((1,), (1,), (1,), 0)):
        try:
            check_facts(wrong, arr, 1, "range")
        except AssertionError:
            continue
        raise AssertionError(f"{wrong} was accepted for arange(16)")


def _exhaustive_module() -> str:
    """Every op of the rule set applied to every pair of seed values (and again to a sample of
    the results): one large function, analysed once, evaluated on several argument sets."""
    prog = Program((32,))
    ty = prog.ty
    seeds: list[str] = []
    for start in (0, 16, 3, -16):
        seeds.append(prog.emit(f"tt.make_range {{end = {start + 32}, start = {start}}}", ty))
    pid = prog.emit("tt.get_program_id {axis = 0}", "i32")
    splats = [prog.emit(f"tt.splat {s}", ty) for s in ("%n", "%m", pid)]
    consts = [prog.const(v) for v in (0, 1, 3, 4, 16, -4)]
    seeds += splats + consts
    seeds.append(prog.emit(f"arith.subi {seeds[0]}, {splats[0]}", ty))  # runs crossing zero
    seeds.append(prog.emit(f"arith.muli {seeds[0]}, {consts[3]}", ty))
    seeds.append(prog.emit(f"arith.addi {seeds[0]}, {splats[0]}", ty))
    ops = ("arith.addi", "arith.subi", "arith.muli", "arith.maxsi", "arith.minsi", "arith.ori", "arith.xori", "arith.andi")
    by_const = ("arith.divsi", "arith.remsi", "arith.shrsi", "arith.shli", "arith.andi", "arith.divui", "arith.remui")
    preds = ("slt", "sle", "sgt", "sge", "eq", "ne")
    divisors = [prog.const(v) for v in (1, 2, 3, 4, 8, 16, 15, -16)]
    level1: list[str] = []

    def apply_all(values: list[str], partners: list[str]) -> list[str]:
        out: list[str] = []
        for a in values:
            for b in partners:
                out += [prog.emit(f"{op} {a}, {b}", ty) for op in ops]
                masks = [prog.emit(f"arith.cmpi {a}, {b} {{predicate = {p}}}", ty.replace("xi32>", "xi1>")) for p in preds]
                out += [prog.emit(f"arith.select {m}, {a}, {b}", ty) for m in masks[:2]]
            for c in divisors:
                for op in by_const:
                    if op in ("arith.shli", "arith.shrsi") and c not in divisors[:5]:
                        continue
                    out.append(prog.emit(f"{op} {a}, {c}", ty))
        return out

    level1 = apply_all(seeds, seeds)
    sample = level1[:: max(1, len(level1) // 60)]
    apply_all(sample, splats + consts[:4])
    head = "  tt.func @f(%n: i32 {tt.divisibility = 16}, %m: i32) {"
    return "module {\n" + head + "\n" + "\n".join(prog.lines) + "\n    tt.return\n  }\n}\n"


def test_facts_hold_for_every_rule_on_every_seed_pair() -> None:
    text = _exhaustive_module()
    module = ir.parse_module(text)
    facts = analyze_axis_info(module)
    func = module.funcs[0]
    failures: list[str] = []
    for n, m, pid in ((0, 0, 0), (16, 5, 1), (-16, -7, 3), (48, 1, 2), (-64, 33, 1), (32, -1, 0)):
        ev = Evaluator((pid, 0, 0))

        def check(v: ir.Value, arr: np.ndarray) -> None:
            if not is_tracked(v.type):
                return
            try:
                check_facts(facts.get(v), arr, 1, f"{ir.print_op(v.op) if hasattr(v, 'op') else v} (n={n}, m={m}, pid={pid})")
            except AssertionError as e:
                failures.append(str(e).splitlines()[0])

        ev.on_put = check
        ev.run(func, [n, m])
    assert not failures, f"{len(failures)} false facts, first: " + "\n".join(failures[:5])
