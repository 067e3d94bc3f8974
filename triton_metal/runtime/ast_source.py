"""Compiling a kernel for a signature given as text, without arguments: Triton's
`triton.compile(triton.compiler.ASTSource(fn, signature, constexprs))`.

    compile(ASTSource(fn=kernel, signature={"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                      constexprs={"BLOCK": 128})) -> CompiledKernel

Each parameter of the kernel is given a type in Triton's signature spelling (`"*fp16"`, `"i32"`,
`"u64"`, `"fp32"`, `"i1"`, `"constexpr"`); a `tl.constexpr` parameter may be named in
`constexprs` alone. The specialization is the one a launch with such arguments makes (pointers
not known to be aligned, integers not known to be multiples of 16), for the active backend and
target, compiled and cached as a launch's is; refusals are the same `CompilationError`s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import LaunchError


@dataclass(frozen=True)
class ASTSource:
    """A kernel and the types (and compile-time values) of its parameters."""

    fn: Any
    signature: dict[str, str] = field(default_factory=dict)
    constexprs: dict[Any, Any] | None = None
    attrs: dict[Any, Any] | None = None
    """Triton's per-argument attributes (divisibility hints): accepted, not used."""


def signature_facts(kernel: Any, src: ASTSource) -> tuple[Any, ...]:
    """The facts a launch would make for the signature's types, in the kernel's parameter order."""
    from ..language import types as tlt
    from .specialization import POINTER_FACTS, ScalarArg, constexpr_arg

    constexprs = {(k[0] if isinstance(k, tuple) else k): v for k, v in (src.constexprs or {}).items()}
    facts = []
    for index, name in enumerate(kernel.arg_names):
        text = src.signature.get(name)
        if text is None and (name in constexprs or index in constexprs):
            text = "constexpr"
        if text is None:
            raise LaunchError(f"kernel '{kernel.__name__}': the signature gives no type for parameter '{name}'")
        if text == "constexpr":
            facts.append(constexpr_arg(constexprs.get(name, constexprs.get(index)), name))
            continue
        try:
            ty = tlt.str_to_ty(text)
        except (KeyError, ValueError, TypeError):
            raise LaunchError(f"kernel '{kernel.__name__}': parameter '{name}' has the unknown type {text!r}") from None
        if isinstance(ty, tlt.pointer_type):
            facts.append(POINTER_FACTS[(ty.element_ty, False)])
        else:
            facts.append(ScalarArg(ty, False))
    unknown = set(src.signature) - set(kernel.arg_names)
    if unknown:
        raise LaunchError(f"kernel '{kernel.__name__}' has no parameter named '{min(unknown)}'")
    return tuple(facts)


def compile(src: ASTSource, target: Any = None, options: dict[str, Any] | None = None) -> Any:  # noqa: A001
    """Triton's `triton.compile`: the compiled variant of `src.fn` for `src`'s signature (module
    docstring); `options` may give `num_warps` and `debug`."""
    from .backend import active_backend_name, backend_for_arrays
    from .cache import COMPILER_VERSION
    from .grid import check_num_warps
    from .jit import DEFAULT_NUM_WARPS
    from .specialization import SpecializationKey
    from .target import active_target

    kernel = src.fn
    options = dict(options or {})
    facts = signature_facts(kernel, src)
    warps = check_num_warps(options.get("num_warps", DEFAULT_NUM_WARPS), kernel.__name__)
    key = SpecializationKey(
        kernel.__name__, facts, warps, bool(options.get("debug", kernel.debug)),
        backend_for_arrays(active_backend_name(), facts), COMPILER_VERSION, target=active_target(),
    )
    return kernel.cache.get(key) or kernel._compile(key)
