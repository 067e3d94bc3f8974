"""The one catalogue of Python constructs and uses the front end refuses, with reasons and hints.

Every refusal raises `UnsupportedLanguageConstruct` (a `CompilationError`) located at the
offending node: the kernel's name, file:line, the source line with a caret, the reason and a hint.
Refusing is always preferred to compiling something whose meaning we would have to guess.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..errors import UnsupportedLanguageConstruct
from ..language.semantic.base import BLOCK_CONDITION, BLOCK_CONDITION_HINT


@dataclass(frozen=True)
class Refusal:
    reason: str
    hint: str


REFUSALS: dict[str, Refusal] = {
    "break": Refusal(
        "'break' is not supported in kernels",
        "carry a flag in the loop condition: `while i < n and not done:`",
    ),
    "continue": Refusal(
        "'continue' is not supported in kernels",
        "guard the rest of the loop body with an `if` (or use masks and tl.where)",
    ),
    "kernel_return_value": Refusal(
        "a kernel cannot return a value",
        "store results through a pointer argument with tl.store",
    ),
    "try": Refusal("'try' statements are not supported in kernels", "check conditions before the operation instead"),
    "raise": Refusal(
        "'raise' is not supported in kernels",
        "use tl.static_assert for compile-time checks or tl.device_assert for run-time checks",
    ),
    "with": Refusal("'with' statements are not supported in kernels", "write the body without the context manager"),
    "lambda": Refusal("lambda expressions are not supported in kernels", "define a @triton_metal.jit function instead"),
    "comprehension": Refusal(
        "set and dict comprehensions are not supported in kernels",
        "a list comprehension over a tuple builds a tuple: `tl.tuple([f(v) for v in values])`",
    ),
    "class": Refusal("class definitions are not supported in kernels", "define classes outside the kernel"),
    "nested_def": Refusal(
        "nested function definitions are not supported in kernels",
        "define the helper at module level and decorate it with @triton_metal.jit",
    ),
    "global": Refusal(
        "'global' and 'nonlocal' statements are not supported in kernels",
        "pass the value as a kernel argument or a tl.constexpr",
    ),
    "delete": Refusal("'del' is not supported in kernels", "simply stop using the variable"),
    "import": Refusal("imports inside kernels are not supported", "import at module level"),
    "star_args": Refusal(
        "starred assignment targets are not supported in kernels, nor are **kwargs in calls",
        "unpack into one name per element and pass keyword arguments one by one; `f(*values)` of a "
        "tuple is supported",
    ),
    "star_params": Refusal(
        "@jit functions with **kwargs, keyword-only or positional-only parameters are not supported",
        "give the function plain positional parameters (and *args, a tuple of the extra arguments)",
    ),
    "kernel_varargs": Refusal(
        "kernel '{name}' has *{param}: a @jit function with *args can be called from kernels, "
        "not launched",
        "give the kernel named parameters; a tuple argument passes several values in one",
    ),
    "python_call": Refusal(
        "cannot call the Python function '{name}' from a kernel",
        "decorate it with @triton_metal.jit to make it a device function, or compute the value "
        "outside and pass it as a tl.constexpr argument",
    ),
    "global_variable": Refusal(
        "Cannot access global variable {name} from within @jit'ed function (nor a variable of an "
        "enclosing function): only tl.constexpr values, modules, @jit functions and tl objects are "
        "allowed",
        "define it as `{name} = tl.constexpr(...)` or pass it as an argument",
    ),
    "recursion": Refusal(
        "recursive call to @jit function '{name}' with the same argument types and constexpr "
        "values as an enclosing call: device functions are inlined, so this recursion would never "
        "end when the kernel is compiled",
        "end the recursion on a compile-time condition that changes at every level (a shape that "
        "is halved, a tl.constexpr argument counted down), or rewrite it as a loop",
    ),
    "recursion_depth": Refusal(
        "maximum recursion depth exceeded: @jit calls are nested more than {limit} deep at this "
        "call of '{name}'",
        "make the recursion end sooner (its compile-time condition is reached after too many "
        "levels), or rewrite it as a loop",
    ),
    "recursion_calls": Refusal(
        "recursive calls of @jit functions inlined more than {limit} times in one kernel (at this "
        "call of '{name}'): device functions are inlined, so each call is a copy of its body",
        "recurse fewer times (a recursion that calls itself twice per level doubles its cost with "
        "every level), or rewrite it as a loop",
    ),
    "subscript_store": Refusal(
        "__setitem__ is not supported in triton",
        "tensors are immutable values: build a new one (tl.where, tl.join, ...) and assign it to a name",
    ),
    "attribute_store": Refusal(
        "Attribute assignment is not supported in triton",
        "aggregates are immutable values: build a changed copy with tl.aggregate_replace(value, name=...) "
        "and assign it to a name",
    ),
    "fstring": Refusal(
        "f-strings are not supported in kernels",
        "use tl.static_print / tl.device_print with separate arguments",
    ),
    "dict_set": Refusal("dict and set literals are not supported in kernels", "use tuples of tl.constexpr values"),
    "async": Refusal("async constructs are not supported in kernels", "write ordinary synchronous kernel code"),
    "yield": Refusal("'yield' is not supported in kernels", "return a value instead"),
    "match": Refusal("'match' statements are not supported in kernels", "use if/elif chains"),
    "loop_else": Refusal("an 'else' clause on a loop is not supported in kernels", "put the code after the loop"),
    "for_iterable": Refusal(
        "a kernel 'for' loop must iterate over range(...), tl.range(...) or tl.static_range(...)",
        "loop over indices: `for i in range(n):`",
    ),
    "for_target": Refusal("a kernel 'for' loop needs a single name as its target", "use `for i in range(...)`"),
    "zero_step": Refusal("a loop step of 0 never ends", "use a non-zero step"),
    "block_condition": Refusal(BLOCK_CONDITION, BLOCK_CONDITION_HINT),
    "infinite_loop": Refusal(
        "'while True' (a loop whose condition is a constant true) never ends: 'break' is not supported",
        "loop on a condition that changes: `while i < n:`",
    ),
    "branch_only_name": Refusal(
        "'{name}' is defined only in one branch of the 'if' at line {line}, so it has no value here",
        "assign '{name}' in both branches (or before the 'if')",
    ),
    "loop_local_name": Refusal(
        "'{name}' is defined inside the loop at line {line}, so it has no value after the loop",
        "assign '{name}' before the loop so that it becomes a loop-carried value",
    ),
    "unsupported_node": Refusal(
        "unsupported Python syntax in a kernel: {name}",
        "kernels accept a subset of Python: assignments, arithmetic, if/for/while and calls to tl or @jit functions",
    ),
    "unsupported_operator": Refusal(
        "the operator '{name}' is not supported here",
        "kernels support arithmetic, bitwise and comparison operators on tensors and constexprs",
    ),
}


_NODE_KINDS: dict[type[ast.AST], str] = {
    ast.Break: "break",
    ast.Continue: "continue",
    ast.Try: "try",
    ast.Raise: "raise",
    ast.With: "with",
    ast.AsyncWith: "async",
    ast.AsyncFor: "async",
    ast.AsyncFunctionDef: "async",
    ast.Await: "async",
    ast.Lambda: "lambda",
    ast.SetComp: "comprehension",
    ast.DictComp: "comprehension",
    ast.ClassDef: "class",
    ast.FunctionDef: "nested_def",
    ast.Global: "global",
    ast.Nonlocal: "global",
    ast.Delete: "delete",
    ast.Import: "import",
    ast.ImportFrom: "import",
    ast.JoinedStr: "fstring",
    ast.Dict: "dict_set",
    ast.Set: "dict_set",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.Starred: "star_args",
}
if hasattr(ast, "TryStar"):
    _NODE_KINDS[ast.TryStar] = "try"
if hasattr(ast, "Match"):
    _NODE_KINDS[ast.Match] = "match"


def refusal(kind: str, **fmt: object) -> UnsupportedLanguageConstruct:
    """The error for refusal `kind` (location filled in by the code generator's `visit`)."""
    r = REFUSALS[kind]
    return UnsupportedLanguageConstruct(r.reason.format(**fmt), hint=r.hint.format(**fmt))


def store_refusal(target: ast.expr) -> UnsupportedLanguageConstruct:
    """The refusal of an assignment to `target`, an attribute or a subscript (Triton's words)."""
    return refusal("attribute_store" if isinstance(target, ast.Attribute) else "subscript_store")


def refusal_for_node(node: ast.AST) -> UnsupportedLanguageConstruct:
    """The refusal for a node type the code generator has no visitor for."""
    kind = _NODE_KINDS.get(type(node))
    if kind is not None:
        return refusal(kind)
    return refusal("unsupported_node", name=type(node).__name__)
