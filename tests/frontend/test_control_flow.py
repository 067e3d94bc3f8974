"""Control flow and Python constructs in kernels: folding, region yields, loops, inlining."""

from __future__ import annotations

import re

import pytest

import triton_metal.language as tl
from triton_metal.language.jit_marker import JITCallable

from .helpers import C, ir_text


def jit(fn):  # noqa: ANN001, ANN201
    return JITCallable(fn)


def runtime_if(x_ptr, n):
    v = tl.load(x_ptr)
    w = v * 2.0
    if n > 0:
        v = v + 1.0
        t = v * 3.0
        w = t
    else:
        v = v - 1.0
        w = v
    tl.store(x_ptr, v + w)


def test_runtime_if_yields_variables_assigned_in_both_branches() -> None:
    text = ir_text(runtime_if, "*fp32", "i32")
    m = re.search(r"%v_\d+, %w_\d+ = scf.if %\w+ then \{\n(.*?)\n\s+\} else \{\n(.*?)\n\s+\} : f32, f32", text, re.S)
    assert m, text
    then_body, else_body = m.group(1), m.group(2)
    assert "arith.addf %v" in then_body and re.search(r"scf.yield %v_\d+, %t$", then_body)
    assert "arith.subf %v" in else_body and re.search(r"scf.yield %v_(\d+), %v_\1$", else_body)


def if_without_else(x_ptr, n):
    v = tl.load(x_ptr)
    if n == 3:
        v = v * 2.0
    tl.store(x_ptr, v)


def test_if_without_else_yields_the_old_value() -> None:
    text = ir_text(if_without_else, "*fp32", "i32")
    assert re.search(r"%v_1 = scf.if %\w+ then \{\n(\s+%\w+ = arith.constant.*\n)?\s+%v_2 = arith.mulf %v, %\w+ : f32\n"
                     r"\s+scf.yield %v_2\n\s+\} else \{\n\s+scf.yield %v\n\s+\} : f32", text), text
    assert "tt.store %x_ptr, %v_1" in text


def branch_only_then_used(x_ptr, n):
    if n > 0:
        only = tl.load(x_ptr)
    tl.store(x_ptr, only)  # error


def test_variable_defined_in_one_branch_is_refused_at_its_use() -> None:
    with pytest.raises(tl.CompilationError if hasattr(tl, "CompilationError") else Exception) as info:
        ir_text(branch_only_then_used, "*fp32", "i32")
    assert "'only' is defined only in one branch of the 'if'" in str(info.value)


def mismatched_branch_types(x_ptr, n):
    if n > 0:
        v = tl.load(x_ptr)
    else:
        v = n
    tl.store(x_ptr, v)


def test_branch_type_mismatch_is_refused() -> None:
    with pytest.raises(Exception, match=r"'v' is fp32 after the then branch but i32 after the else branch"):
        ir_text(mismatched_branch_types, "*fp32", "i32")


def constexpr_folding(x_ptr, FLAG: tl.constexpr, MODE: tl.constexpr):
    v = tl.load(x_ptr)
    if FLAG and MODE == "double":
        v = v * 2.0
    elif not FLAG or MODE is None:
        v = v - 5.0
    else:
        v = v + 7.0
    if 1 < 2 < 3 and MODE != "x":
        v = v + 11.0
    tl.store(x_ptr, v)


@pytest.mark.parametrize(
    "flag, mode, present, absent",
    [
        (True, "double", ["arith.mulf", "value = 11.0"], ["value = 5.0", "value = 7.0"]),
        (False, "double", ["value = 5.0", "value = 11.0"], ["arith.mulf", "value = 7.0"]),
        (True, "other", ["value = 7.0", "value = 11.0"], ["arith.mulf", "value = 5.0"]),
        (True, "x", ["value = 7.0"], ["value = 11.0"]),
    ],
)
def test_constexpr_conditions_fold(flag: bool, mode: str, present: list[str], absent: list[str]) -> None:
    text = ir_text(constexpr_folding, "*fp32", C(flag), C(mode))
    assert "scf.if" not in text
    for s in present:
        assert s in text
    for s in absent:
        assert s not in text


def ternary(x_ptr, n, BIG: tl.constexpr):
    v = tl.load(x_ptr)
    a = v * 2.0 if n > 4 else v + 1.0
    b = 30 if BIG else 40
    tl.store(x_ptr, a + b)


def test_ternary_on_tensor_is_an_if_and_on_constexpr_folds() -> None:
    text = ir_text(ternary, "*fp32", "i32", C(True))
    m = re.search(r"%a = scf.if %\w+ then \{\n(.*?)\n\s+\} else \{\n(.*?)\n\s+\} : f32", text, re.S)
    assert m, text
    assert "arith.mulf %v" in m.group(1) and "arith.addf %v" in m.group(2)
    assert "%b = arith.constant {value = 30} : i32" in text and "value = 40}" not in text


def boolean_ops(x_ptr, n, m):
    offs = tl.arange(0, 16)
    mask = (offs < n) and (offs > m) or not (offs == 3)
    tl.store(x_ptr + offs, offs, mask=mask)


def test_and_or_not_on_tensors_are_logical_ops() -> None:
    with pytest.warns(UserWarning, match="Logical operators 'and' and 'or' are deprecated for non-scalar"):
        text = ir_text(boolean_ops, "*i32", "i32", "i32")  # Triton warns on blocks too
    assert re.search(r"arith.andi %\w+, %\w+ : tensor<16xi1>", text)
    assert re.search(r"%mask = arith.ori %\w+, %\w+ : tensor<16xi1>", text)
    assert "arith.xori" in text or "{predicate = eq}" in text  # not (a == b): a logical negation


def chained_compare(x_ptr, lo, hi):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + offs, offs, mask=lo <= offs < hi)


def test_chained_comparison_on_tensors() -> None:
    text = ir_text(chained_compare, "*i32", "i32", "i32")
    assert "{predicate = sle}" in text or "{predicate = sge}" in text
    assert "{predicate = slt}" in text
    assert re.search(r"arith.andi %\w+, %\w+ : tensor<16xi1>", text)


def while_loop(x_ptr, n):
    i = 0
    total = 0.0
    while i < n:
        total += tl.load(x_ptr + i)
        i += 1
    tl.store(x_ptr, total)


def test_while_loop_carries_values_through_both_regions() -> None:
    text = ir_text(while_loop, "*fp32", "i32")
    # carried in order of first assignment in the body: total, then i
    m = re.search(r"%total_1, %i_1 = scf.while %total, %i before \{\n\s+\^bb0\(%total_2: f32, %i_2: i32\):\n(.*?)\n"
                  r"\s+\} after \{\n\s+\^bb0\(%total_3: f32, %i_3: i32\):\n(.*?)\n\s+\} : f32, i32", text, re.S)
    assert m, text
    assert re.search(r"arith.cmpi %i_2, %n \{predicate = slt\}", m.group(1))
    assert re.search(r"scf.condition %\w+, %total_2, %i_2$", m.group(1))
    assert re.search(r"%total_4 = arith.addf %total_3, %\w+ : f32", m.group(2))
    assert re.search(r"scf.yield %total_4, %i_4$", m.group(2))
    assert "tt.store %x_ptr, %total_1" in text


def spin_lock(lock_ptr, x_ptr):
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(x_ptr, 1.0)
    tl.atomic_xchg(lock_ptr, 0)


def test_spin_lock_evaluates_the_atomic_in_the_condition_region() -> None:
    text = ir_text(spin_lock, "*i32", "*fp32")
    m = re.search(r"scf.while before \{\n(.*?)\n\s+\} after \{\n\s+scf.yield\n\s+\}", text, re.S)
    assert m, text
    assert "tt.atomic_cas" in m.group(1) and "scf.condition" in m.group(1)


def static_range_unrolls(x_ptr, N: tl.constexpr):
    acc = tl.load(x_ptr)
    for i in tl.static_range(N):
        acc = acc * (i + 2)
    tl.store(x_ptr, acc)


def test_static_range_unrolls() -> None:
    text = ir_text(static_range_unrolls, "*fp32", C(3))
    assert "scf.for" not in text
    assert re.findall(r"arith.constant \{value = (\d)\.0\} : f32", text) == ["2", "3", "4"]
    assert text.count("arith.mulf") == 3


def loop_type_change(x_ptr, n):
    acc = 0
    for i in range(n):
        acc += tl.load(x_ptr + i)
    tl.store(x_ptr, acc)


def test_loop_carried_type_change_is_refused() -> None:
    with pytest.raises(Exception, match=r"loop-carried variable 'acc' is i32 before the loop but fp32 at the end of its body"):
        ir_text(loop_type_change, "*fp32", "i32")


def loop_local_used_after(x_ptr, n):
    for i in range(n):
        inner = tl.load(x_ptr + i)
    tl.store(x_ptr, inner)


def test_loop_local_variable_has_no_value_after_the_loop() -> None:
    with pytest.raises(Exception, match=r"'inner' is defined inside the loop at line \d+"):
        ir_text(loop_local_used_after, "*fp32", "i32")


def loop_with_i64_bound(x_ptr, n):
    acc = tl.zeros([8], dtype=tl.float32)
    for i in range(0, n, 2):
        acc += tl.load(x_ptr + i + tl.arange(0, 8))
    tl.store(x_ptr + tl.arange(0, 8), acc)


def test_loop_with_an_i64_bound_has_an_i64_induction_variable() -> None:
    text = ir_text(loop_with_i64_bound, "*fp32", "i64")
    assert re.search(r"\^bb0\(%i: i64, %acc_2: tensor<8xf32>\):", text), text


@jit
def add_and_scale(x, y, SCALE: tl.constexpr = 3):
    s = x + y
    return s * SCALE, s


@jit
def twice(x):
    a, b = add_and_scale(x, x, SCALE=2)
    return a + b


def calls_helpers(x_ptr):
    x = tl.load(x_ptr)
    tl.store(x_ptr, twice(x) + add_and_scale(x, 1.0)[0])


def test_jit_helpers_are_inlined_with_their_constexpr_arguments() -> None:
    text = ir_text(calls_helpers, "*fp32")
    assert "tt.call" not in text
    assert "arith.constant {value = 2} : i32" in text or "arith.constant {value = 2.0} : f32" in text
    assert "arith.constant {value = 3} : i32" in text or "arith.constant {value = 3.0} : f32" in text
    assert text.count("arith.addf") == 4  # x + x, a + b, x + 1.0, and the final sum


@jit
def recursive(x):
    return recursive(x)  # error


def calls_recursive(x_ptr):
    tl.store(x_ptr, recursive(tl.load(x_ptr)))


def test_recursion_is_refused() -> None:
    with pytest.raises(Exception, match="recursive call to @jit function 'recursive'"):
        ir_text(calls_recursive, "*fp32")


def tuple_unpacking(x_ptr, y_ptr):
    a, (b, c) = tl.load(x_ptr), (tl.load(y_ptr), 2.0)
    a, b = b, a
    tl.store(x_ptr, a * c)
    tl.store(y_ptr, b)


def test_tuple_unpacking_and_swapping() -> None:
    text = ir_text(tuple_unpacking, "*fp32", "*fp32")
    assert re.search(r"%b = tt.load %y_ptr", text) and re.search(r"%a = tt.load %x_ptr", text)
    assert re.search(r"arith.mulf %b, %c : f32", text)
    assert re.search(r"tt.store %y_ptr, %a$", text, re.M)


def static_checks(x_ptr, BLOCK: tl.constexpr):
    """A docstring is ignored."""
    tl.static_assert(BLOCK % 16 == 0, "BLOCK must be a multiple of 16")
    tl.static_print("BLOCK is", BLOCK)
    pass
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.zeros([BLOCK], dtype=tl.float32))


def test_static_assert_and_print_run_at_compile_time(capsys: pytest.CaptureFixture[str]) -> None:
    ir_text(static_checks, "*fp32", C(32))
    assert "BLOCK is 32" in capsys.readouterr().out
    with pytest.raises(Exception, match="BLOCK must be a multiple of 16"):
        ir_text(static_checks, "*fp32", C(24))


def device_assert_kernel(x_ptr, n):
    offs = tl.arange(0, 16)
    tl.device_assert(offs < n, "out of range")
    assert n > 0, "n must be positive"
    tl.store(x_ptr + offs, offs)


def test_device_assertions_only_with_debug() -> None:
    assert "tt.assert" not in ir_text(device_assert_kernel, "*i32", "i32")
    text = ir_text(device_assert_kernel, "*i32", "i32", debug=True)
    assert text.count("tt.assert") == 2
    assert 'message = "out of range"' in text and 'message = "n must be positive"' in text
    assert "module attributes {debug = true, num_warps = 4}" in text


GLOBAL_SCALE = tl.constexpr(4)


def uses_global(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) * GLOBAL_SCALE)


def test_constexpr_globals_are_visible() -> None:
    assert "arith.constant {value = 4" in ir_text(uses_global, "*fp32")


def test_ir_is_printed_at_debug_level_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TRITON_METAL_DEBUG", "2")
    ir_text(uses_global, "*fp32")
    err = capsys.readouterr().err
    assert "// IR of kernel 'uses_global'" in err and "tt.func @uses_global(%x_ptr: !tt.ptr<f32>)" in err
    monkeypatch.setenv("TRITON_METAL_DEBUG", "1")
    ir_text(uses_global, "*fp32")
    assert "tt.func" not in capsys.readouterr().err


@jit
def pick_larger(a, ia, b, ib):
    keep = a >= b
    return tl.where(keep, a, b), tl.where(keep, ia, ib)


def user_reduce(x_ptr, out_ptr):
    offs = tl.arange(0, 32)
    x = tl.load(x_ptr + offs)
    best, where = tl.reduce((x, offs), 0, pick_larger)
    tl.store(out_ptr, best)
    tl.store(out_ptr + 1, where.to(tl.float32))


def test_user_combine_function_is_inlined_into_the_reduce_region() -> None:
    text = ir_text(user_reduce, "*fp32", "*fp32")
    m = re.search(r"%best, %where = tt.reduce %x, %offs \{axis = 0\} combine \{\n\s+\^bb0\(%a: f32, %ia: i32, %b: f32, %ib: i32\):\n(.*?)\n\s+\} : f32, i32", text, re.S)
    assert m, text
    body = m.group(1)
    assert "%keep = arith.cmpf %a, %b {predicate = oge} : i1" in body
    assert body.count("arith.select %keep") == 2
    assert re.search(r"tt.reduce.return %\w+, %\w+$", body)


def pointer_casts(p, addr, n):
    q = addr.to(tl.pointer_type(tl.float32))
    v = tl.load(tl.multiple_of(q, 16))
    r = n.to(tl.pointer_type(tl.float32))
    tl.store(p, v + tl.load(r))


def test_integers_become_pointers_through_64_bits() -> None:
    text = ir_text(pointer_casts, "*fp32", "i64", "i32")
    assert "%q = tt.int_to_ptr %addr : !tt.ptr<f32>" in text
    assert "tt.hint %q {kind = multiple_of, values = [16]} : !tt.ptr<f32>" in text
    assert re.search(r"%(\w+) = arith.extsi %n : i64\n\s+%r = tt.int_to_ptr %\1 : !tt.ptr<f32>", text)


def downward_loop(x_ptr, hi):
    acc = 0
    for i in range(hi, 0, -3):
        acc += i
    tl.store(x_ptr, acc)


def test_downward_loop_counts_trips_upward_and_recomputes_the_index() -> None:
    text = ir_text(downward_loop, "*i32", "i32")
    # trips = max((hi - 0 + 2) // 3, 0), computed before the loop with C (truncating) division
    assert re.search(r"%(\w+) = arith.subi %hi, %\w+ : i32\n\s+%\w+ = arith.constant \{value = 2\} : i32\n"
                     r"\s+%(\w+) = arith.addi %\1, %\w+ : i32\n\s+%\w+ = arith.constant \{value = 3\} : i32\n"
                     r"\s+%(\w+) = arith.divsi %\2, %\w+ : i32", text), text
    assert re.search(r"%(\w+) = arith.maxsi %\w+, %\w+ : i32\n(.*\n){0,4}\s+%acc_1 = scf.for %\w+, %\1, %\w+, iter_args\(%acc\)", text), text
    # inside: i = hi + iv * -3
    assert re.search(r"\^bb0\(%(\w+): i32, %acc_2: i32\):\n\s+%\w+ = arith.constant \{value = -3\} : i32\n"
                     r"\s+%(\w+) = arith.muli %\1, %\w+ : i32\n\s+%i = arith.addi %hi, %\2 : i32", text), text


def make_closure_kernel(op, scale, dtype):  # noqa: ANN001, ANN201
    def kernel(x_ptr):
        x = tl.load(x_ptr + tl.arange(0, 8))
        tl.store(x_ptr + tl.arange(0, 8), op(x, x).to(dtype) * scale)

    return kernel


def test_closure_variables_follow_the_global_rules() -> None:
    text = ir_text(make_closure_kernel(tl.maximum, tl.constexpr(3.0), tl.float16), "*fp16")
    assert "arith.maxnumf" in text and "arith.constant {value = 3.0}" in text
    with pytest.raises(Exception, match="Cannot access global variable scale"):
        ir_text(make_closure_kernel(tl.maximum, 3.0, tl.float16), "*fp16")


def tuple_carried(x_ptr, n):
    state = (tl.load(x_ptr), 0)
    for i in range(n):
        total, count = state
        state = (total * 0.5, count + i)
    if n > 10:
        state = (state[0] + 1.0, state[1])
    tl.store(x_ptr, state[0] + state[1])


def test_tuples_flow_through_loops_and_ifs_element_by_element() -> None:
    text = ir_text(tuple_carried, "*fp32", "i32")
    assert re.search(r"%state_0, %state_1 = scf.for %\w+, %n, %\w+, iter_args\(%\w+, %\w+\) body \{\n"
                     r"\s+\^bb0\(%i: i32, %state_0_1: f32, %state_1_1: i32\):", text), text
    assert re.search(r"%state_0_\d+, %state_1_\d+ = scf.if %\w+ then \{", text), text
    assert "} : f32, i32" in text


def tuple_shape_change(x_ptr, n):
    state = (tl.load(x_ptr), 0)
    for i in range(n):
        state = tl.load(x_ptr)
    tl.store(x_ptr, state)


def test_tuple_carried_value_must_keep_its_structure() -> None:
    with pytest.raises(Exception, match=r"loop-carried variable 'state' changes from \(fp32, i32\) before the loop to fp32"):
        ir_text(tuple_shape_change, "*fp32", "i32")


@jit
def masked_load(ptr, mask=None):
    if mask is not None:
        return tl.load(ptr, mask=mask, other=0.0)
    return tl.load(ptr)


def optional_mask(x_ptr, n):
    offs = tl.arange(0, 16)
    a = masked_load(x_ptr + offs, offs < n)
    b = masked_load(x_ptr + offs)
    tl.store(x_ptr + offs, a + b)


def test_is_none_on_an_optional_tensor_argument_folds() -> None:
    text = ir_text(optional_mask, "*fp32", "i32")
    assert "scf.if" not in text
    assert re.search(r"%a = tt.load %\w+, mask %\w+, other %\w+", text)
    assert re.search(r"%b = tt.load %\w+ \{volatile = false\}", text)
