"""What Triton's own front-end tests (test_compile_errors.py, test_frontend.py) and user code
written for Triton need from the front end, on the emulator and in the interpreter:
`triton.must_use_result` and its refusal in Triton's words, `*args` in `@jit` helpers (a tuple of
the extra arguments), `MockTensor`, `triton._filecheck`'s `run_parser`, and Triton's refusals
of a histogram of non-32-bit integers, of a constexpr parameter listed in `do_not_specialize`,
and its warning for `tl.where` on a non-boolean condition."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import triton_metal as triton
import triton_metal.language as tl
from triton_metal import ir
from triton_metal.errors import CompilationError
from triton_metal.runtime.jit import MockTensor
from triton_metal.tools.triton_suite.filecheck import NoTTIRError, run_filecheck_test, run_parser

N = 8
BLOCK = tl.constexpr(N)
EXTRA_WORDS = "Square it once and keep the result."


@triton.must_use_result(EXTRA_WORDS)
@triton.jit
def square(x):
    return x * x


@triton.must_use_result
@triton.jit
def plain_marked(x):
    return x + 1


@triton.jit
def dropped_square_kernel(x_ptr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    square(x)  # error
    tl.store(x_ptr + offs, x + 1)


@triton.jit
def dropped_plain_kernel(x_ptr):
    x = tl.load(x_ptr)
    plain_marked(x)  # error
    tl.store(x_ptr, x + 1)


@triton.jit
def dropped_advance_kernel(x_ptr):
    bp = tl.make_block_ptr(x_ptr, (BLOCK,), (1,), (0,), (BLOCK,), (0,))
    tl.advance(bp, (1,))  # error
    tl.store(bp, tl.load(bp) + 1)


@triton.aggregate
class Doubler:
    x: tl.tensor

    @triton.must_use_result
    @triton.jit
    def doubled(self):
        return self.x * 2


@triton.jit
def dropped_method_kernel(x_ptr):
    d = Doubler(tl.load(x_ptr))
    d.doubled()  # error
    tl.store(x_ptr, d.x + 1)


@triton.jit
def used_results_kernel(x_ptr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = square(x) + plain_marked(x)
    d = Doubler(y)
    tl.store(x_ptr + offs, d.doubled())


def _error_line(kernel) -> int:
    lines = kernel.src.splitlines()
    return kernel.starting_line + next(i for i, line in enumerate(lines) if "# error" in line)


@pytest.mark.parametrize("kernel, words", [
    (dropped_square_kernel, f"The result of square is not being used. {EXTRA_WORDS}"),
    (dropped_plain_kernel, "The result of plain_marked is not being used."),
    (dropped_advance_kernel, "The result of tl.advance is not being used. Note that tl.advance does not have "
                             "any side effects. To move the block pointer, you need to assign the result of "
                             "tl.advance to a variable."),
    (dropped_method_kernel, "The result of d.doubled is not being used."),
], ids=["with-words", "plain", "tl.advance", "aggregate-method"])
def test_a_dropped_must_use_result_is_refused_in_triton_words(backend, kernel, words):
    x = np.arange(N, dtype=np.int32)
    with pytest.raises(CompilationError) as info:
        kernel[(1,)](x)
    assert info.value.reason == words
    assert info.value.loc.line == _error_line(kernel)
    np.testing.assert_array_equal(x, np.arange(N))  # nothing ran


def test_used_must_use_results_compute_what_numpy_computes(backend):
    x = np.arange(-4, 4, dtype=np.int32)
    used_results_kernel[(1,)](x)
    v = np.arange(-4, 4)
    np.testing.assert_array_equal(x, (v * v + v + 1) * 2)


@triton.jit
def first_of(*dims):
    return dims[0]


@triton.jit
def weighted(scale, *values):
    total = scale * 0
    for i in tl.static_range(len(values)):
        total += values[i] * (i + 1)
    return total * scale


@triton.jit
def varargs_kernel(x_ptr, y_ptr, out_ptr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    dims: tl.constexpr = (3, 5)
    tl.store(out_ptr + offs, weighted(2, x, y) + first_of(*dims))
    tl.store(out_ptr + BLOCK + offs, weighted(x) + first_of(y, x))


def test_varargs_are_a_tuple_of_the_extra_arguments(backend):
    rng = np.random.default_rng(1)
    x = rng.integers(-20, 20, N).astype(np.int32)
    y = rng.integers(-20, 20, N).astype(np.int32)
    out = np.zeros(2 * N, np.int32)
    varargs_kernel[(1,)](x, y, out)
    # weighted(x): no values, an empty tuple, so the loop runs zero times
    np.testing.assert_array_equal(out[:N], (x + 2 * y) * 2 + 3)
    np.testing.assert_array_equal(out[N:], y)


@triton.jit
def launched_with_varargs(x_ptr, *rest):
    tl.store(x_ptr, 1)


def test_a_kernel_with_varargs_is_refused_at_launch(backend):
    x = np.zeros(1, np.int32)
    with pytest.raises(CompilationError, match=r"kernel 'launched_with_varargs' has \*rest: a @jit function "
                                               r"with \*args can be called from kernels, not launched"):
        launched_with_varargs[(1,)](x, 1)
    assert x[0] == 0


def test_kwargs_stay_refused_at_decoration():
    with pytest.raises(TypeError, match=r"has \*\*options"):
        @triton.jit
        def kernel(x_ptr, **options):
            pass


@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)


def test_mock_tensor_stands_for_an_array_of_its_dtype():
    import torch

    t = MockTensor(torch.float16, [4, 8])
    assert t.shape == [4, 8] and t.stride() == (8, 1)
    assert MockTensor(tl.float32).stride() == (1,)
    module = run_parser(copy_kernel, args=(MockTensor(tl.float32), MockTensor(np.float32), 8, 32))
    text = ir.print_module(module)
    assert "!tt.ptr<f32>" in text and "!tt.ptr<f16>" not in text
    module = run_parser(copy_kernel, args=(t, t, 8, 32))
    assert "!tt.ptr<f16>" in ir.print_module(module)
    with pytest.raises(TypeError, match="not a tl, NumPy, MLX or torch dtype"):
        MockTensor("float32")


def test_warmup_with_mock_tensors_compiles_the_variant_a_launch_uses(backend):
    compiled = copy_kernel.warmup(MockTensor(tl.int32), MockTensor(tl.int32), 5, BLOCK=N, grid=(1,))
    assert compiled is not None
    src = np.arange(N, dtype=np.int32) + 7
    dst = np.zeros(N, np.int32)
    copy_kernel[(1,)](src, dst, 5, BLOCK=N)
    np.testing.assert_array_equal(dst, np.where(np.arange(N) < 5, src, 0))


def test_run_parser_refuses_what_the_front_end_refuses_and_filecheck_says_no_ttir():
    with pytest.raises(CompilationError, match="The result of square is not being used"):
        run_parser(dropped_square_kernel, args=(MockTensor(tl.int32),))
    with pytest.raises(CompilationError, match="The result of square is not being used"):
        run_filecheck_test(dropped_square_kernel, args=(MockTensor(tl.int32),))
    with pytest.raises(NoTTIRError, match="no TTIR here"):
        run_filecheck_test(used_results_kernel, args=(MockTensor(tl.int32),))


@triton.jit
def histogram_kernel(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(out_ptr + tl.arange(0, N), tl.histogram(x, N))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int64])
def test_histogram_of_non_32_bit_integers_is_refused_in_triton_words(backend, dtype):
    x = np.zeros(N, dtype)
    out = np.zeros(4, np.int32)
    with pytest.raises(CompilationError, match="histogram only supports 32-bit integer input") as info:
        histogram_kernel[(1,)](x, out, N=4)
    assert str(info.value.__cause__) == "histogram only supports 32-bit integer input"
    assert not out.any()


@triton.jit(do_not_specialize=["N"])
def constexpr_not_specialized(x_ptr, N: tl.constexpr):
    tl.store(x_ptr, N)


def test_a_constexpr_listed_in_do_not_specialize_is_refused(backend):
    x = np.zeros(1, np.int32)
    with pytest.raises(CompilationError, match="N marked as constexpr and listed in do_not_specialize"):
        constexpr_not_specialized[(1,)](x, 5)
    assert x[0] == 0


@triton.jit
def where_kernel(c_ptr, out_ptr):
    offs = tl.arange(0, BLOCK)
    c = tl.load(c_ptr + offs)
    tl.store(out_ptr + offs, tl.where(c, 1.5, -2.0))


def test_where_on_a_non_boolean_condition_warns_and_selects_on_nonzero(backend, monkeypatch, tmp_path):
    # the warning comes from compiling, as in Triton: a variant read from the disk cache gives none
    monkeypatch.setenv("TRITON_METAL_CACHE_DIR", str(tmp_path))
    c = np.array([0, 1, 2, 0, 7, 0, 0, 3], np.uint32)
    out = np.zeros(N, np.float32)
    with pytest.warns(UserWarning, match="tl.where with a non-boolean condition is deprecated .* Got uint32"):
        where_kernel[(1,)](c, out)
    np.testing.assert_array_equal(out, np.where(c != 0, 1.5, -2.0).astype(np.float32))


@triton.jit
def where_bool_kernel(c_ptr, out_ptr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.where(tl.load(c_ptr + offs) > 0, 1.5, -2.0))


def test_where_on_a_boolean_condition_does_not_warn(backend):
    c = np.array([0, 1, 2, 0, 7, 0, 0, 3], np.uint32)
    out = np.zeros(N, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        where_bool_kernel[(1,)](c, out)
    np.testing.assert_array_equal(out, np.where(c > 0, 1.5, -2.0).astype(np.float32))


@triton.jit
def shape_kernel(x_ptr):
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.full((BLOCK,), 0, tl.int32) + tl.arange(2, 7))


def test_power_of_two_refusals_carry_triton_words_as_their_cause(backend):
    x = np.zeros(N, np.int32)
    with pytest.raises(CompilationError, match="arange's range must be a power of 2, got 5") as info:
        shape_kernel[(1,)](x)
    assert str(info.value.__cause__) == "arange's range must be a power of 2"


@triton.jit
def walrus_kernel(x_ptr, out_ptr, LIMIT: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    bound: tl.constexpr
    if (bound := LIMIT * 2) > 4:
        tl.static_assert(isinstance(bound.type, tl.constexpr_type))
    tl.store(out_ptr + offs, (y := tl.load(x_ptr + offs) + bound) * y)


def test_assignment_expressions_assign_and_give_the_value(backend):
    x = np.arange(-4, 4, dtype=np.int32)
    out = np.zeros(N, np.int32)
    walrus_kernel[(1,)](x, out, LIMIT=3)
    np.testing.assert_array_equal(out, (x + 6) * (x + 6))


@triton.jit
def walrus_scalar_kernel(out_ptr):
    y = (x := 3) + 1  # `x` is an int32 scalar tensor, as after `x = 3`
    tl.store(out_ptr, x.to(tl.float32) / 2 + y)


def test_assignment_expression_of_a_number_makes_a_scalar_tensor(backend):
    out = np.zeros(1, np.float32)
    walrus_scalar_kernel[(1,)](out)
    assert out[0] == 3 / 2 + 4


@triton.jit
def first_over(n, limit):
    # a `return` inside the loop: the condition runs as `LIVE and cond` in the compiler
    i = 0
    while (i := i + 1) < n:
        if i * i > limit:
            return i * 10
    return i


@triton.jit
def walrus_while_kernel(out_ptr, n):
    i = 0
    acc = 0
    while (i := i + 1) < n:  # `i` steps on every test, the failing one included
        acc += i
    tl.store(out_ptr, acc * 100 + i)
    k = 0
    total = 0
    while (j := k * 3) < n:  # `j` is defined by the condition alone
        total += j
        k += 1
    tl.store(out_ptr + 1, total * 100 + j)
    tl.store(out_ptr + 2, first_over(n, 10))


def _walrus_while_reference(n: int) -> list[int]:
    i, acc = 1, 0
    while i < n:
        acc, i = acc + i, i + 1
    k, total = 0, 0
    while k * 3 < n:
        total, k = total + k * 3, k + 1
    first = next((m * 10 for m in range(1, max(n, 1)) if m * m > 10), max(n, 1))
    return [acc * 100 + i, total * 100 + k * 3, first]


@pytest.mark.parametrize("n", [0, 1, 3, 5, 9])
def test_assignment_expression_in_a_while_condition_is_carried(backend, n):
    out = np.zeros(3, np.int32)
    walrus_while_kernel[(1,)](out, n)
    np.testing.assert_array_equal(out, _walrus_while_reference(n))


@triton.jit
def walrus_while_retyped_kernel(out_ptr, n):
    i = 0
    while (i := i + 1.5) < n:
        pass
    tl.store(out_ptr, i)


@triton.jit
def walrus_while_dtype_kernel(out_ptr, n):
    i = 0
    while (d := tl.float32) is not None and i < n:
        i += 1
    tl.store(out_ptr, i.to(d))


@pytest.mark.parametrize("kernel, words", [
    (walrus_while_retyped_kernel, "loop-carried variable 'i' is i32 before the loop but fp32 after the loop condition"),
    (walrus_while_dtype_kernel, "'d' is assigned a dtype in the condition of a run-time loop"),
])
def test_assignment_expression_in_a_while_condition_keeps_the_loop_rules(backend, kernel, words):
    out = np.zeros(1, np.float32)
    with pytest.raises(CompilationError, match=words):
        kernel[(1,)](out, 3)
    assert out[0] == 0.0


@triton.jit
def unpack_kernel(x_ptr, COUNT: tl.constexpr):
    a, b = (1, 2, 3)[:COUNT]
    tl.store(x_ptr, a + b)


@pytest.mark.parametrize("count, words", [
    (3, r"too many values to unpack \(expected 2, got 3\)"),
    (1, r"not enough values to unpack \(expected 2, got 1\)"),
])
def test_unpacking_the_wrong_number_of_values_is_refused_in_python_words(backend, count, words):
    x = np.zeros(1, np.int32)
    with pytest.raises(CompilationError, match=words):
        unpack_kernel[(1,)](x, COUNT=count)
    assert x[0] == 0


@triton.jit
def constexpr_min_max_kernel(x_ptr, A: tl.constexpr, B: tl.constexpr, IS_MIN: tl.constexpr):
    if IS_MIN:
        tl.store(x_ptr, min(A, B))
    else:
        tl.store(x_ptr, max(A, B))


@pytest.mark.parametrize("a, b", [(1.0, float("nan")), (float("nan"), 1.0), (0.0, -0.0), (1.0, -0.0)])
@pytest.mark.parametrize("is_min", [True, False])
def test_min_max_of_constexpr_floats_without_one_answer_are_refused(backend, a, b, is_min):
    x = np.zeros(1, np.float32)
    with pytest.raises(CompilationError, match="has no single answer"):
        constexpr_min_max_kernel[(1,)](x, a, b, is_min)
    assert x[0] == 0


def test_min_max_of_ordinary_constexpr_floats_fold(backend):
    x = np.zeros(1, np.float32)
    for a, b, is_min, expected in [(1.5, -2.0, True, -2.0), (1.5, -2.0, False, 1.5), (0.0, 0.0, True, 0.0)]:
        constexpr_min_max_kernel[(1,)](x, a, b, is_min)
        assert x[0] == expected


@triton.jit
def reciprocal_kernel(x_ptr, A: tl.constexpr):
    tl.store(x_ptr, tl.load(x_ptr) / A)


@pytest.mark.parametrize("wrap", [float, tl.constexpr, np.float64, np.float32],
                         ids=["float", "tl.constexpr", "np.float64", "np.float32"])
def test_negative_zero_constexpr_compiles_its_own_variant(backend, wrap):
    x = np.zeros(1, np.float32)
    for a in (0.0, -0.0, 0.0, -0.0):
        with np.errstate(divide="ignore"):
            expected = np.float32(1.0) / np.float32(a)
        x[0] = 1.0
        reciprocal_kernel[(1,)](x, wrap(a))
        assert x[0] == expected and np.signbit(x[0]) == np.signbit(expected)


@triton.jit
def nested_reciprocal_kernel(x_ptr, A: tl.constexpr):
    one = tl.load(x_ptr + 2)
    tl.store(x_ptr, one / A[0])
    tl.store(x_ptr + 1, one / A[1][0])


def test_negative_zeros_in_a_constexpr_tuple_compile_their_own_variants(backend):
    x = np.array([0.0, 0.0, 1.0], np.float32)
    for a, b in [(0.0, 0.0), (-0.0, 0.0), (0.0, -0.0), (-0.0, -0.0), (0.0, 0.0)]:
        nested_reciprocal_kernel[(1,)](x, (a, (np.float64(b),)))
        with np.errstate(divide="ignore"):
            expected = np.float32(1.0) / np.array([a, b], np.float32)
        np.testing.assert_array_equal(np.signbit(x[:2]), np.signbit(expected))
        np.testing.assert_array_equal(x[:2], expected)


@triton.jit
def add_to_a_byte(x_ptr, out_ptr, T: tl.constexpr):
    tl.store(out_ptr, (tl.load(x_ptr) + T[0]).to(tl.float32))


def test_constexpr_tuples_of_equal_values_of_other_types_compile_their_own_variants(backend):
    """`(1,)`, `(1.0,)` and `(True,)` are equal tuples in Python; an int8 plus the first wraps
    in int8, plus the second is a float sum."""
    x = np.array([127], np.int8)
    for t, want in [((1,), -128.0), ((1.0,), 128.0), ((True,), -128.0), ((1,), -128.0)]:
        out = np.zeros(1, np.float32)
        add_to_a_byte[(1,)](x, out, t)
        assert out[0] == want, t


@triton.jit
def bad_operand_kernel(x_ptr):
    value = tl.load(x_ptr)
    tl.store(x_ptr, value + "a")  # error


def test_a_refusal_says_where_in_the_function_as_triton_and_hides_the_compiler_frames(backend, monkeypatch):
    import traceback

    monkeypatch.delenv("TRITON_METAL_DEBUG", raising=False)
    x = np.zeros(1, np.int32)
    with pytest.raises(CompilationError) as info:
        bad_operand_kernel[(1,)](x)
    line = _error_line(bad_operand_kernel) - bad_operand_kernel.starting_line + 1
    col = next(s for s in bad_operand_kernel.src.splitlines() if "# error" in s).index("value")
    assert f"in kernel 'bad_operand_kernel', at {line}:{col}:" in str(info.value)
    frames = "".join(traceback.format_exception(info.type, info.value, info.tb, chain=False))
    assert "code_generator.py" not in frames and "compile.py" in frames
    monkeypatch.setenv("TRITON_METAL_DEBUG", "1")  # kept when debugging
    with pytest.raises(CompilationError) as info:
        run_parser(bad_operand_kernel, args=(MockTensor(tl.int32),))
    assert "code_generator.py" in "".join(traceback.format_exception(info.type, info.value, info.tb, chain=False))


@triton.jit
def starred_target_kernel(x_ptr):
    a, *rest = (1, 2, 3)
    tl.store(x_ptr, a)


def test_a_starred_target_is_refused_as_itself(backend):
    x = np.zeros(1, np.int32)
    with pytest.raises(CompilationError, match="starred assignment targets are not supported"):
        starred_target_kernel[(1,)](x)
    assert x[0] == 0


@triton.jit
def imprecise_acc_kernel(x_ptr, LIMIT: tl.constexpr):
    a = tl.full((16, 32), 1.0, tl.float8e5)
    c = tl.dot(a, tl.full((32, 16), 1.0, tl.float8e5), max_num_imprecise_acc=LIMIT)
    tl.store(x_ptr + tl.arange(0, 16), tl.sum(c, axis=1))


def test_max_num_imprecise_acc_past_k_is_refused_in_triton_words(backend):
    x = np.zeros(16, np.float32)
    with pytest.raises(CompilationError, match=r"max_num_imprecise_acc \(64\) must be <= K \(32\)") as info:
        imprecise_acc_kernel[(1,)](x, 64)
    assert str(info.value.__cause__) == "max_num_imprecise_acc (64) must be <= K (32)"
    imprecise_acc_kernel[(1,)](x, 32)  # within K: every product is added in fp32 here
    np.testing.assert_array_equal(x, np.full(16, 32 * 16, np.float32))


@triton.jit
def scale_factor_kernel(x_ptr, LHS_GROUPS: tl.constexpr):
    a = tl.full((32, 64), 0, tl.uint8)
    b = tl.full((64, 32), 0, tl.uint8)
    lhs_scale = tl.full((32, LHS_GROUPS), 127, tl.uint8)
    rhs_scale = tl.full((32, 2), 127, tl.uint8)
    c = tl.dot_scaled(a, lhs_scale, "e5m2", b, rhs_scale, "e5m2")
    tl.store(x_ptr + tl.arange(0, 32), tl.sum(c, axis=1))


def test_dot_scaled_scales_of_different_factors_are_refused_in_triton_words(backend):
    x = np.ones(32, np.float32)
    with pytest.raises(CompilationError, match=r"Operands must have the same scale factor; \(lhs: 16 vs rhs: 32\)"):
        scale_factor_kernel[(1,)](x, 4)
    np.testing.assert_array_equal(x, 1.0)


@triton.jit
def negated_tuple_kernel(x_ptr):
    t = -(0, 0)
    tl.store(x_ptr, t[0])


def test_an_operator_error_is_not_chained_to_its_python_exception(backend):
    x = np.zeros(1, np.int32)
    with pytest.raises(CompilationError, match="bad operand type for unary -: 'tuple'") as info:
        negated_tuple_kernel[(1,)](x)
    assert info.value.__cause__ is None


def test_run_filecheck_checks_text_as_filecheck_does():
    from triton_metal.tools.triton_suite.filecheck import run_filecheck

    run_filecheck("sample", "a = 1\nb = a + 2\n", "CHECK: a = 1\nCHECK-NEXT: b = a + [[N:[0-9]+]]\n")
    with pytest.raises(ValueError, match="FileCheck of sample failed"):
        run_filecheck("sample", "a = 1\nc = 3\nb = 2\n", "CHECK: a = 1\nCHECK-NEXT: b = 2\n")


@triton.jit
def walrus_in_and(out_ptr, n):
    i = 0
    j = 0
    while i < n and (j := j + 2) < 7:  # both operands are tensors: both run on every test
        i += 1
    tl.store(out_ptr, i * 10 + j)


@triton.jit
def walrus_in_and_of_scalars(x_ptr, out_ptr):
    x = tl.load(x_ptr)
    z = 0.0
    ok = (x > 0) and ((z := x * 2) > 1)
    tl.store(out_ptr, z + ok.to(tl.float32) * 100)


@pytest.mark.parametrize("n", [2, 9])
def test_assignment_expressions_in_and_bind_in_the_kernel(backend, n):
    """A `:=` in an operand of `and` assigns the kernel's variable in the interpreter too (its
    operands are not lambdas there), as compiled."""
    i, j = 0, 0
    while True:  # tensor `and`: every operand evaluated
        a = i < n
        j += 2
        if not (a and j < 7):
            break
        i += 1
    out = np.zeros(1, np.int32)
    walrus_in_and[(1,)](out, n)
    assert out[0] == i * 10 + j
    x, got = np.array([3.0], np.float32), np.zeros(1, np.float32)
    walrus_in_and_of_scalars[(1,)](x, got)
    assert got[0] == 106.0


@triton.jit
def declared_constexpr_in_a_while_condition(out_ptr, n):
    c: tl.constexpr
    c = 2
    i = 0
    while (c := 2) + i < n:
        i += 1
    tl.store(out_ptr, c * 2000000000)  # a compile-time product: no 32-bit wrap
    tl.store(out_ptr + 1, i)


@triton.jit
def walrus_in_a_run_time_conditional_expression(x_ptr, out_ptr, c):
    y = (b := tl.load(x_ptr)) if c > 0 else 1.0  # noqa: F841
    tl.store(out_ptr, y)


def test_a_declared_constexpr_stays_compile_time_through_a_while_condition(backend):
    out = np.zeros(2, np.int64)
    declared_constexpr_in_a_while_condition[(1,)](out, 5)
    assert out.tolist() == [4_000_000_000, 3]


def test_an_assignment_expression_in_a_run_time_conditional_expression_is_refused(backend):
    x, out = np.ones(1, np.float32), np.zeros(1, np.float32)
    with pytest.raises(CompilationError, match=r"assignment expression \(:=\) in a branch of a conditional"):
        walrus_in_a_run_time_conditional_expression[(1,)](x, out, 0)
    assert out[0] == 0
