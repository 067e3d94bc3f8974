"""`compile_to_ir`: the front end's entry point (see the package docstring)."""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Iterator
from typing import Any

from ..errors import CompilationError, internal_error
from ..ir import Module, print_module
from ..language import core as tlc
from ..language import types as tlt
from ..language.context import active_semantic
from ..language.descriptor import tensor_descriptor
from ..language.jit_marker import JITCallable
from ..language.semantic import Semantic
from .calls import check_parameters, is_const_annotation, is_constexpr_annotation, visible_globals
from .code_generator import CodeGenerator, FunctionSource
from .ir_builder import IRBuilder, ir_type
from .refusals import refusal
from .returns import ReturnSlotNeeded
from .signature import KernelSignature, Param, ParamConstexpr, ParamDescriptor, ParamTuple, ParamType, leaves


def compile_to_ir(kernel: JITCallable, signature: KernelSignature) -> Module:
    """Generate and verify the IR of `kernel` specialized to `signature`.

    A refusal leaves with the traceback of this call alone, as Triton trims its compiler's
    frames: the frames of the code generator below it say nothing about the user's kernel,
    whose line the message gives. Under `TRITON_METAL_DEBUG` (any level) they are kept."""
    try:
        return _generate(kernel, signature)
    except CompilationError as e:
        if _debug_level() >= 1:
            raise
        raise e.with_traceback(None)  # noqa: B904 - the same error, its internal frames dropped
    except ReturnSlotNeeded as e:  # the loops that need one make it: none should reach here
        raise internal_error(f"kernel '{kernel.__name__}': a returned value found no return slot") from e


def _generate(kernel: JITCallable, signature: KernelSignature) -> Module:
    name = kernel.__name__
    if not kernel.src:
        raise CompilationError(f"the source of kernel '{name}' is not available", kernel=name)
    file = inspect.getsourcefile(kernel.fn) or kernel.fn.__code__.co_filename
    source = FunctionSource(kernel.src, file, kernel.starting_line)
    fdef = source.func_def
    try:
        check_parameters(fdef)
        if fdef.args.vararg is not None:
            raise refusal("kernel_varargs", name=name, param=fdef.args.vararg.arg)
        for arg in fdef.args.args:
            if is_constexpr_annotation(arg.annotation) and arg.arg in kernel.do_not_specialize:
                # Triton's words: a compile-time value cannot also be kept unspecialized
                raise CompilationError(f"{arg.arg} marked as constexpr and listed in do_not_specialize")
    except CompilationError as e:
        located = e.with_context(source.loc(fdef), name)
        raise located from located.__cause__
    params = [a.arg for a in fdef.args.args]
    if len(params) != len(signature.params):
        raise ValueError(f"kernel '{name}' has {len(params)} parameters but the signature describes {len(signature.params)}")

    for arg, spec in zip(fdef.args.args, signature.params):
        if isinstance(spec, ParamType) and is_constexpr_annotation(arg.annotation):
            raise CompilationError(
                f"parameter '{arg.arg}' is a tl.constexpr but the signature gives it a run-time type {spec.ty!r}",
                source.loc(arg), kernel=name,
            )

    module = Module({"debug": signature.debug, "num_warps": signature.num_warps})
    builder = IRBuilder(module, debug=signature.debug)
    semantic = Semantic(builder)
    gen = CodeGenerator(builder, semantic, source, visible_globals(kernel), name, (kernel,), signature.debug)

    runtime = [(n, s) for p, spec in zip(params, signature.params) for n, s in leaves(p, spec)
               if isinstance(s, ParamType)]
    builder.set_loc(source.loc(fdef))
    func = builder.create_func(
        name,
        [ir_type(s.ty) for _, s in runtime],
        [p for p, _ in runtime],
        [{"tt.divisibility": 16} if s.divisible_by_16 else {} for _, s in runtime],
    )
    args = iter(func.body.block.args)
    for p, s in zip(params, signature.params):
        gen.scope[p] = _value(s, args, semantic)
    for p, s in zip(params, signature.params):
        if isinstance(s, ParamType) and s.same_as >= 0:  # one array passed twice: one buffer
            gen.scope[p] = gen.scope[params[s.same_as]]

    with active_semantic(semantic):
        for arg in fdef.args.args:  # `tl.const`: a pointer to constant data
            if is_const_annotation(arg.annotation):
                gen.scope[arg.arg] = _const_pointer(gen.scope[arg.arg])
        gen.begin_body(fdef.body)
        gen.visit_statements(fdef.body)
    if gen.return_value is not None:
        raise refusal("kernel_return_value").with_context(source.loc(fdef), name)
    builder.set_loc(source.loc(fdef))
    builder.create_return([])
    module.verify()
    if _debug_level() >= 2:
        print(f"// IR of kernel '{name}'\n{print_module(module)}", file=sys.stderr, end="")
    return module


def _value(spec: Param, args: Iterator[Any], semantic: Semantic) -> Any:
    """The kernel's value of a parameter, taking its run-time parts from the function's
    arguments in order (`signature.leaves`): a tensor (converted from its carrier to the type
    its annotation names), a constexpr, a `tl.tensor_descriptor` or a tuple of those."""
    if isinstance(spec, ParamType):
        value = tlc.tensor(next(args), spec.ty)
        return value if spec.annotated is None else semantic.cast(value, spec.annotated)
    if isinstance(spec, ParamDescriptor):
        return tensor_descriptor.from_parts([_value(e, args, semantic) for _, e in spec.parts("")],
                                            spec.block_shape, spec.padding)
    if isinstance(spec, ParamTuple):
        return spec.rebuilt(tuple(_value(e, args, semantic) for e in spec.elements))
    assert isinstance(spec, ParamConstexpr)
    return tlc.constexpr(spec.value)


def _const_pointer(value: Any) -> Any:
    """A `tl.const` parameter's value: its pointer typed as pointing to constant data (stores
    through it are refused by the semantic layer); the IR is unchanged."""
    ty = getattr(value, "type", None)
    if isinstance(ty, tlt.pointer_type):
        return tlc.tensor(value.handle, tlt.pointer_type(ty.element_ty, ty.address_space, const=True))
    return value


def _debug_level() -> int:
    try:
        return int(os.environ.get("TRITON_METAL_DEBUG", "0") or 0)
    except ValueError:
        return 0


