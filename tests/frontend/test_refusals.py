"""Every refusal of the catalogue: the message, the hint, and the line it cites (marked `# error`)."""

from __future__ import annotations

import ast
import inspect

import pytest

import triton_metal.language as tl
from triton_metal.errors import CompilationError, UnsupportedLanguageConstruct
from triton_metal.frontend.refusals import REFUSALS, refusal_for_node
from triton_metal.language.jit_marker import JITCallable

from .helpers import compile_kernel

NOT_A_CONSTEXPR = 3


@JITCallable
def helper_with_star(x, **options):  # noqa: ANN001, ANN003, ANN201
    return x


@JITCallable
def recursive(x):  # noqa: ANN001, ANN201
    return recursive(x)  # error


@JITCallable
def count_down(x, N: tl.constexpr):  # noqa: ANN001, ANN201, N803
    if N == 0:
        return x
    return count_down(x + 1, N - 1)  # error


@JITCallable
def doubling(x, N: tl.constexpr):  # noqa: ANN001, ANN201, N803
    if N == 0:
        return x
    return doubling(x, N - 1) + doubling(x, N - 1)  # error


def k_break(x_ptr, n):
    for i in range(n):
        break  # error


def k_continue(x_ptr, n):
    for i in range(n):
        continue  # error


def k_return_value(x_ptr, n):
    return n  # error


def k_try(x_ptr, n):
    try:  # error
        tl.store(x_ptr, 1.0)
    except Exception:
        pass


def k_raise(x_ptr, n):
    raise ValueError("no")  # error


def k_with(x_ptr, n):
    with n:  # error
        pass


def k_lambda(x_ptr, n):
    f = lambda v: v  # error  # noqa: E731


def k_comprehension(x_ptr, n):
    xs = {i for i in range(3)}  # error


def k_class(x_ptr, n):
    class A:  # error
        pass


def k_nested_def(x_ptr, n):
    def inner():  # error
        pass


def k_global(x_ptr, n):
    global NOT_A_CONSTEXPR  # error


def k_delete(x_ptr, n):
    v = n
    del v  # error


def k_import(x_ptr, n):
    import math  # error  # noqa: F401


def k_star_args(x_ptr, n):
    first, *rest = (x_ptr, 1.0)  # error


def k_star_params(*args):  # error
    pass


def k_kwargs_params(x_ptr, **options):  # error
    pass


def k_helper_star_params(x_ptr, n):
    helper_with_star(n)  # error


def k_python_builtin(x_ptr, n):
    v = sorted((1, 2))  # error


def k_global_variable(x_ptr, n):
    tl.store(x_ptr, n * NOT_A_CONSTEXPR)  # error


def k_recursion(x_ptr, n):
    recursive(n)


def k_recursion_depth(x_ptr, n):
    count_down(n, 200)


def k_recursion_calls(x_ptr, n):
    doubling(n, 13)


def k_subscript_store(x_ptr, n):
    offs = tl.arange(0, 16)
    offs[0] = 1  # error


def k_attribute_store(x_ptr, n):
    offs = tl.arange(0, 16)
    offs.dtype = tl.int64  # error


def k_fstring(x_ptr, n):
    tl.static_print(f"{n}")  # error


def k_dict(x_ptr, n):
    d = {1: 2}  # error


def k_yield(x_ptr, n):
    yield n  # error


def k_match(x_ptr, n):
    match n:  # error
        case 1:
            pass


def k_loop_else(x_ptr, n):
    for i in range(n):  # error
        pass
    else:
        pass


def k_for_iterable(x_ptr, n):
    for v in (1, 2):  # error
        pass


def k_for_target(x_ptr, n):
    for a, b in range(n):  # error
        pass


def k_zero_step(x_ptr, n):
    for i in range(10, 0, 0):  # error
        pass


def k_block_condition(x_ptr, n):
    offs = tl.arange(0, 16)
    if offs < n:  # error
        pass


def k_infinite_loop(x_ptr, n):
    while True:  # error
        pass


def k_branch_only_name(x_ptr, n):
    if n > 0:
        v = n
    tl.store(x_ptr, v)  # error


def k_loop_local_name(x_ptr, n):
    for i in range(n):
        v = i
    tl.store(x_ptr, v)  # error


def k_unsupported_operator(x_ptr, n):
    v = n @ n  # error


CASES = [
    ("break", k_break), ("continue", k_continue), ("kernel_return_value", k_return_value), ("try", k_try),
    ("raise", k_raise), ("with", k_with), ("lambda", k_lambda), ("comprehension", k_comprehension),
    ("class", k_class), ("nested_def", k_nested_def), ("global", k_global), ("delete", k_delete),
    ("import", k_import), ("star_args", k_star_args), ("kernel_varargs", k_star_params),
    ("star_params", k_kwargs_params),
    ("star_params", k_helper_star_params), ("python_call", k_python_builtin),
    ("global_variable", k_global_variable), ("recursion", k_recursion),
    ("recursion_depth", k_recursion_depth), ("recursion_calls", k_recursion_calls), ("subscript_store", k_subscript_store),
    ("attribute_store", k_attribute_store),
    ("fstring", k_fstring), ("dict_set", k_dict), ("yield", k_yield), ("match", k_match),
    ("loop_else", k_loop_else), ("for_iterable", k_for_iterable), ("for_target", k_for_target),
    ("zero_step", k_zero_step), ("block_condition", k_block_condition), ("infinite_loop", k_infinite_loop),
    ("branch_only_name", k_branch_only_name), ("loop_local_name", k_loop_local_name),
    ("unsupported_operator", k_unsupported_operator),
]


HELPERS = {"k_recursion": (recursive,), "k_recursion_depth": (count_down,), "k_recursion_calls": (doubling,)}


def error_line(*fns: object) -> tuple[str, int]:
    """The file and line marked `# error` among the given functions' sources."""
    for fn in fns:
        target = getattr(fn, "fn", fn)
        lines, first = inspect.getsourcelines(target)  # type: ignore[arg-type]
        for i, line in enumerate(lines):
            if "# error" in line:
                return inspect.getsourcefile(target) or "", first + i  # type: ignore[arg-type]
    raise AssertionError("no line marked '# error'")


def _prefix(kind: str) -> str:
    return REFUSALS[kind].reason.split("{")[0]


@pytest.mark.parametrize("kind, kernel", CASES, ids=[f"{k}-{f.__name__}" for k, f in CASES])
def test_refusal_cites_the_marked_line(kind: str, kernel: object) -> None:
    n_params = len(inspect.signature(kernel).parameters)  # type: ignore[arg-type]
    params = ("*fp32", "i32")[:n_params] if n_params <= 2 else ()
    with pytest.raises(UnsupportedLanguageConstruct) as info:
        compile_kernel(kernel, *params)
    # A refusal inside a called helper is the cause of the same refusal at the kernel's call
    # (Triton's chain); the innermost error cites the helper's line.
    assert (info.value.callee is not None) == (kernel.__name__ in HELPERS)  # type: ignore[attr-defined]
    err = info.value.innermost
    assert _prefix(kind) in err.reason
    assert err.hint and err.hint.split("{")[0][:20] in str(err)
    # The kernel's own marked line, or (the recursions have none) the recursive call in the helper.
    file, line = error_line(kernel, *HELPERS.get(kernel.__name__, ()))
    assert err.loc is not None and (err.loc.file, err.loc.line) == (file, line), str(err)
    rendered = str(err)
    assert rendered.startswith(f"{file}:{line}:")
    assert f"in kernel '{kernel.__name__}'" in rendered  # type: ignore[attr-defined]
    assert "# error" in rendered.splitlines()[1]  # the source line is shown
    assert rendered.splitlines()[2].strip() == "^"


def test_every_catalogue_entry_is_exercised() -> None:
    tested = {kind for kind, _ in CASES}
    # async and unsupported_node are reached through refusal_for_node (tested below).
    assert set(REFUSALS) - tested == {"async", "unsupported_node"}


def test_unknown_nodes_fall_back_to_a_generic_refusal() -> None:
    err = refusal_for_node(ast.Interactive(body=[]))
    assert "unsupported Python syntax in a kernel: Interactive" in err.reason
    assert "async constructs" in refusal_for_node(ast.Await(value=ast.Constant(1))).reason


def semantic_error(x_ptr, n):
    offs = tl.arange(0, 16)
    other = tl.arange(0, 32)
    v = offs + other  # error
    tl.store(x_ptr + offs, v)


def test_semantic_errors_get_the_innermost_location() -> None:
    with pytest.raises(CompilationError) as info:
        compile_kernel(semantic_error, "*fp32", "i32")
    file, line = error_line(semantic_error)
    assert info.value.loc is not None and (info.value.loc.file, info.value.loc.line) == (file, line)
    assert info.value.loc.col == 8  # the column of `offs + other`
    assert info.value.kernel == "semantic_error"
