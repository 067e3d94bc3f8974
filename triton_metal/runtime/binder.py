"""The per-kernel argument binder, generated once from the kernel's signature.

Binding `kernel[grid](*args, **kwargs)` is the hot path of every launch, so it must not call
`inspect`. As Triton's `create_function_from_signature` does, we write a Python function whose
own signature is the kernel's (same names, order and defaults) followed by the launch options as
keyword-only arguments, compile it with `exec`, and let the interpreter do the binding. The
generated function returns, in parameter order, the bound values and their specialization facts:

    def binder(x_ptr, n, BLOCK=_tm_default_2, *, num_warps=None, ..., **_tm_extra):
        if _tm_extra: _tm_reject(_tm_extra)
        return ((x_ptr, n, BLOCK),
                ((_tm_pair[True] if _tm_type(x_ptr) is _tm_array and (_tm_pair := ...) is not None
                  else (...) if _tm_type(x_ptr) is _tm_int and ...
                  else _tm_spec(x_ptr, 'x_ptr', True, True)),
                 (... else _tm_spec(n, 'n', True, True)),
                 _tm_cspec(BLOCK, 'BLOCK')),
                num_warps, num_stages, num_ctas, maxnreg, debug)

(`_tm_spec` is `specialize_arg`; the tests before it are its commonest cases, an MLX array, an
`i32` int and a float, inlined: `_fact_expression`.) The generated code reaches no builtin by its
own name (it runs with empty `__builtins__`; `type`, `int` and `float` are `_tm_` names), so no
parameter name can shadow what it calls.

A `TypeError` raised by the call itself (a missing or surplus argument) is turned into a
`LaunchError` naming the parameter by `explain_binding_error`, which may use `inspect`: it runs
only when the launch is already failing.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import LaunchError
from .grid import LAUNCH_OPTION_NAMES, reject_unknown_kwargs
from .arrays.mlx import ARRAY_TYPE as MLX_ARRAY
from .arrays.mlx import POINTER_FACTS_OF as MLX_POINTER_FACTS
from .specialization import I32_FACTS, ArgSpec, annotated_arg, constexpr_arg, specialize_arg

BoundArgs = tuple[
    tuple[object, ...], tuple[ArgSpec, ...], object, object, object, object, object
]
"""(values, facts, num_warps, num_stages, num_ctas, maxnreg, debug) as the binder returns them."""

Binder = Callable[..., BoundArgs]


@dataclass(frozen=True)
class Param:
    """One kernel parameter as the binder sees it."""

    name: str
    index: int
    is_constexpr: bool
    do_not_specialize: bool
    do_not_specialize_on_alignment: bool
    keyword_only: bool
    default: object = inspect.Parameter.empty
    annotated: Any = None
    """The scalar `tl` type the parameter's annotation names (`v: tl.uint8`), or None."""

    @property
    def has_default(self) -> bool:
        return self.default is not inspect.Parameter.empty


_RESERVED_PREFIX = "_tm_"


def make_binder(kernel_name: str, params: Sequence[Param]) -> Binder:
    """Generate and compile the binder for a kernel with these parameters."""
    for p in params:
        if p.name.startswith(_RESERVED_PREFIX):
            raise LaunchError(
                f"kernel '{kernel_name}': parameter names starting with '{_RESERVED_PREFIX}' "
                f"are reserved ('{p.name}')"
            )
    namespace: dict[str, Any] = {
        "_tm_spec": specialize_arg,
        "_tm_annotated_spec": annotated_arg,
        "_tm_cspec": constexpr_arg,
        "_tm_reject": reject_unknown_kwargs,
        "_tm_i32": I32_FACTS,
        "_tm_fp32": specialize_arg(0.5, "fp32"),  # the fp32 fact (interned)
        "_tm_mlx": MLX_POINTER_FACTS,
        "_tm_array": MLX_ARRAY,
        "_tm_one": specialize_arg(1, "1"),  # the constexpr 1 (interned)
        # the builtins the generated code calls, under reserved names: a parameter may be
        # called `type` or `int` (Triton's test_call names one `type`) and would shadow them
        "_tm_type": type,
        "_tm_int": int,
        "_tm_float": float,
        "__builtins__": {},
    }
    signature: list[str] = []
    facts: list[str] = []
    star_written = False
    for p in params:
        if p.keyword_only and not star_written:
            signature.append("*")
            star_written = True
        if p.has_default:
            namespace[f"_tm_default_{p.index}"] = p.default
            signature.append(f"{p.name}=_tm_default_{p.index}")
        else:
            signature.append(p.name)
        if p.is_constexpr:
            facts.append(f"_tm_cspec({p.name}, {p.name!r})")
        elif p.annotated is not None:
            namespace[f"_tm_annotated_{p.index}"] = p.annotated
            align = not (p.do_not_specialize or p.do_not_specialize_on_alignment)
            facts.append(f"_tm_annotated_spec({p.name}, {p.name!r}, _tm_annotated_{p.index}, {align})")
        else:
            facts.append(_fact_expression(p))
    if not star_written:
        signature.append("*")
    # A parameter named like a launch option (tutorial 02's `num_stages: tl.constexpr`) takes
    # the value, and the option reads it from there, as Triton's option parsing does.
    param_names = {p.name for p in params}
    signature.extend(f"{opt}=None" for opt in LAUNCH_OPTION_NAMES if opt not in param_names)
    signature.append("**_tm_extra")
    values = "".join(f"{p.name}, " for p in params)
    fact_tuple = "".join(f"{f}, " for f in facts)
    options = ", ".join(LAUNCH_OPTION_NAMES)
    source = (
        f"def binder({', '.join(signature)}):\n"
        f"    if _tm_extra:\n"
        f"        _tm_reject(_tm_extra)\n"
        f"    return (({values}), ({fact_tuple}), {options})\n"
    )
    exec(compile(source, f"<binder of {kernel_name}>", "exec"), namespace)
    binder: Binder = namespace["binder"]
    binder.__doc__ = source
    return binder


def _fact_expression(p: Param) -> str:
    """The binder's expression for the fact of a non-constexpr parameter: `specialize_arg`,
    with its commonest cases written inline (a Python function call costs a launch ~0.1 us per
    argument): an MLX array of a kernel dtype, whose fact is `MLX_POINTER_FACTS[dtype][aligned]`;
    an `i32` int, whose fact is `I32_FACTS[divisible by 16]`, or the constexpr 1 when it is 1
    and specialized; a float (`fp32`, never specialized)."""
    name = p.name
    specialize = not p.do_not_specialize
    align = not p.do_not_specialize_on_alignment
    call = f"_tm_spec({name}, {name!r}, {specialize}, {align})"
    int_fact = f"_tm_i32[{name} % 16 == 0]" if specialize and align else "_tm_i32[False]"
    if specialize:
        int_fact = f"_tm_one if {name} == 1 else {int_fact}"
    return (f"(_tm_pair[{specialize and align}] if _tm_type({name}) is _tm_array "
            f"and (_tm_pair := _tm_mlx.get({name}.dtype)) is not None "
            f"else ({int_fact}) if _tm_type({name}) is _tm_int and -2147483648 <= {name} < 2147483648 "
            f"else _tm_fp32 if _tm_type({name}) is _tm_float else {call})")


def explain_binding_error(
    kernel_name: str,
    fn: Callable[..., Any],
    args: tuple[object, ...],
    kwargs: dict[str, object],
    error: TypeError,
) -> LaunchError:
    """A `LaunchError` naming the parameter, for a call the binder could not bind."""
    sig = inspect.signature(fn)
    names = ", ".join(sig.parameters)
    user_kwargs = {
        k: v for k, v in kwargs.items() if k in sig.parameters or k not in LAUNCH_OPTION_NAMES
    }
    try:
        sig.bind(*args, **user_kwargs)
    except TypeError as bind_error:
        reason = str(bind_error)
    else:  # pragma: no cover - the binder and inspect disagree; keep Python's own words
        reason = str(error)
    return LaunchError(
        f"{kernel_name}: {reason} (got {len(args)} positional and {len(user_kwargs)} keyword "
        f"arguments; the kernel takes {len(sig.parameters)}: {names})"
    )
