"""`compile_module`: one kernel function of a laid-out module -> an `MSLKernel`.

Steps: analyse the parameters (`params`), bind them, lower the body op by op through the rule
table (`registry`) into the per-thread program, print it with the `MSLPrinter`, and wrap it in
the body and header templates. The driver loop is the only place that looks rules up: an op
without a rule is reported with its kernel line. `#line` directives before each op's code map
MSL compiler messages back to the kernel's Python source.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Sequence
from typing import Any

from triton_metal.chip import THREADGROUP_MEMORY_BYTES
from triton_metal.errors import CompilationError, OutOfResources, internal_error
from triton_metal.ir import Module, Op
from triton_metal.ir.ops import tt_memory as mem
from triton_metal.ir.types import ScalarType

# the rule modules register themselves on import
from . import (  # noqa: F401
    lower_control,
    lower_elementwise,
    lower_gather,
    lower_layout,
    lower_map,
    lower_memory,
    lower_pointer_view,
    lower_reduce,
    lower_scan,
    lower_tensor,
)
from .context import LoweringContext
from .coverage import store_coverage
from .dot_path import Lowered, choose_dot_paths
from .dot_report import dot_reports
from .kernel import (KEY_BITS, UNTOUCHED_BITS, MSLKernel, ParamBinding, escape_output_name, keeps_key,
                     marks_untouched, old_input_name, relative_encoding)
from .lower_control import ASSERT_OUTPUT
from .lower_tensor_dot import bypassed_conversions
from .lower_tensor_dot_loop import carried_in
from .msl_types import mlx_type, msl_type, uint_of_width
from .options import CodegenOptions
from .params import analyse_params, loads_after_writes, make_buffers, sanitize
from .printer import MSLPrinter
from .program import LineMark, Lit, Var
from .registry import rule_for
from .scaffold import render
from .target import Target
from .values import Buffer, PtrValue, RegValue

try:  # the dot lowering registers its rules when present
    from . import lower_dot, lower_dot_scaled  # noqa: F401
except ImportError:  # pragma: no cover - depends on the checkout
    pass

GRID_INPUT = "km_grid"
UNUSED_OUTPUT = "unused_out"
"""The output of a kernel that stores to no array: metal_kernel needs one, and nothing reads it."""
"""With `spread_programs`: the last input, an int32 array (3,) holding the kernel's grid."""

_INT_TYPES = {
    "char": ("uchar", 8, True), "short": ("ushort", 16, True), "int": ("uint", 32, True), "long": ("ulong", 64, True),
    "uchar": ("uchar", 8, False), "ushort": ("ushort", 16, False), "uint": ("uint", 32, False),
    "ulong": ("ulong", 64, False),
}


def lower_ops(ctx: LoweringContext, ops: Sequence[Op]) -> None:
    """Lower `ops` in order into the context's current body (terminators are the caller's)."""
    for op in ops:
        if op.is_terminator:
            continue
        if op in ctx.folded:
            ctx.bind(op.results[0], ctx.lookup(ctx.folded[op]))
            continue
        rule = rule_for(op)
        if rule is None:
            raise CompilationError(
                f"'{op.name}' cannot be compiled for Apple GPUs yet",
                op.loc, hint="run the kernel with TRITON_METAL_INTERPRET=1, or avoid this operation",
                kernel=ctx.kernel_name,
            )
        if op.loc is not None and (op.loc.file, op.loc.line) != ctx.last_line:
            ctx.emit(LineMark(op.loc.line, op.loc.file))
            ctx.last_line = (op.loc.file, op.loc.line)
        outer = ctx.current_op
        ctx.current_op = op
        try:
            rule(ctx, op)
        except CompilationError as e:
            raise e.with_context(op.loc, ctx.kernel_name) from None
        finally:
            ctx.current_op = outer


def compile_module(module: Module, options: CodegenOptions, axis_info: object | None = None) -> MSLKernel:
    funcs = module.funcs
    if len(funcs) != 1:
        raise internal_error(f"the code generator takes a module with one kernel function, got {len(funcs)}")
    func = funcs[0]
    name = options.kernel_name or func.sym_name  # type: ignore[attr-defined]
    uses = analyse_params(func, name)
    buffers, bindings = make_buffers(uses)
    relative = _relative_outputs(uses, buffers, options.relative_outputs, options.marked_outputs,
                                 options.keyed_outputs)
    bindings = [_with_old_input(b, relative) for b in bindings]

    def lower(kept: frozenset[Op]) -> Lowered:
        return _lower_function(func, options, name, axis_info, uses, buffers, relative, kept)

    lowered, reasons = choose_dot_paths(lower, options)
    ctx, code_stmts = lowered.ctx, lowered.program

    printer = MSLPrinter(options.math_mode)
    prologue = list(ctx.prologue.stmts)
    scratch = ctx.scratch_end
    if scratch > THREADGROUP_MEMORY_BYTES:
        raise OutOfResources(scratch, THREADGROUP_MEMORY_BYTES, f"threadgroup memory of kernel '{name}' (bytes)")
    body = render(
        "body.metal",
        threads=options.threads_per_program,
        axes=["xyz"[a] for a in sorted(ctx.program_ids)],
        spread=options.spread_programs,
        scratch_words=(scratch + 15) // 16,
        prologue=printer.print_body(prologue),
        code=printer.print_body(code_stmts),
    )
    header = render("header.metal", kernel_name=_ascii(name), target=str(options.target), helpers=_helpers(ctx, options.target))
    _check_ascii(body + header)

    input_names: list[str] = []
    output_names: list[str] = []
    # the old contents an output kept relative needs beyond its parameter's own input
    olds = {old for old, _ in relative.values()} - {b.input_name for b in buffers.values()}
    for b in bindings:
        input_names.extend(n for n in b.msl_inputs if n not in olds)
        output_names.extend(b.msl_outputs)
    masks = {b.output_name: _written_name(b.output_name) for b in buffers.values()
             if b.output_name in options.written_masks}
    output_names.extend(masks.values())
    escapes = {out: escape_output_name(out) for out, (_, encoding) in relative.items() if encoding == "key"}
    output_names.extend(escapes.values())
    if options.spread_programs:
        input_names.append(GRID_INPUT)
    input_names.extend(old for old, _ in relative.values() if old in olds)  # last: the launch appends them
    if ctx.asserts:
        output_names.append(ASSERT_OUTPUT)
    if not output_names:
        output_names.append(UNUSED_OUTPUT)  # a one-element int32 buffer the launch allocates and drops
    digest = hashlib.sha256((header + "\n" + body + repr(output_names)).encode()).hexdigest()[:12]
    coverage, program = store_coverage(func, buffers, uses, options.index_bits)
    atomic_info = {
        u.arg.name_hint or "": {"kinds": sorted(u.atomic_kinds), "result_used": u.atomic_result_used,
                                "loaded": u.loaded, "stored": u.stored, "polled": u.polled}
        for u in uses.values() if u.atomic or u.live
    }
    # parameters with a load that may read what the kernel stored before it (params.py)
    reads_stored = tuple(sorted(u.arg.name_hint or "" for u in uses.values() if u.reads_stored))
    return MSLKernel(
        name=f"{sanitize(name)}_{digest}",
        source=body,
        header=header,
        input_names=tuple(input_names),
        output_names=tuple(output_names),
        params=tuple(bindings),
        threads_per_program=options.threads_per_program,
        atomic_outputs=False,
        stored_coverage=coverage,
        coverage_program=program,
        metadata={
            "num_warps": options.num_warps,
            "math_mode": options.math_mode,
            "target": str(options.target),
            "index_bits": options.index_bits,
            "threadgroup_memory_bytes": scratch,
            "atomics": atomic_info,
            "reads_stored": reads_stored,
            "reinterpreted": tuple(sorted(u.arg.name_hint or "" for u in uses.values() if u.reinterpreted)),
            "loads_after_writes": loads_after_writes(func),
            "vector_inputs": tuple(sorted(ctx.vector_inputs)),
            "grid_input": GRID_INPUT if options.spread_programs else None,
            "written_masks": masks,
            "unwritten_masks": bool(masks) and options.unwritten_masks,
            "relative_outputs": relative,
            "escape_outputs": escapes,
            "assert_output": ASSERT_OUTPUT if ctx.asserts else None,
            "asserts": tuple(ctx.asserts),
            "device_prints": tuple(ctx.prints),
            "ordered_exchange": _ordered_exchange(func, uses),
            "dot_reports": tuple(r.as_dict() for r in dot_reports(code_stmts, ctx.dot_sites, reasons)),
        },
    )


def _lower_function(func: Op, options: CodegenOptions, name: str, axis_info: object | None, uses: dict[Any, Any],
                    buffers: dict[Any, Buffer], relative: dict[str, tuple[str, str]], kept: frozenset[Op]) -> Lowered:
    """The per-thread program of `func`'s body, the dots in `kept` on simdgroup matrices
    whatever tensor ops would apply (`dot_path.choose_dot_paths`)."""
    ctx = LoweringContext(options, name)
    ctx.lower_ops = lower_ops
    ctx.axis_info = axis_info
    ctx.used_values = {v for op in func.walk() for v in op.operands}
    ctx.scratch_base = _pass_scratch(func)
    ctx.simdgroup_dots = kept
    ctx.bypassed = bypassed_conversions(ctx, func, carried_in(ctx, func))
    ctx.reads_output = {op for u in uses.values() for op in u.reads_output}
    ctx.reads_stored = {op for u in uses.values() for op in u.reads_stored}
    arg_attrs = func.arg_attrs or [{} for _ in func.body.block.args]  # type: ignore[attr-defined]
    for arg, attrs in zip(func.body.block.args, arg_attrs):  # type: ignore[attr-defined]
        if arg in buffers:
            b = buffers[arg]
            aligned = int(attrs.get("tt.divisibility", 1)) % 16 == 0
            written = _written_name(b.output_name) if b.output_name in options.written_masks else None
            old, encoding = relative.get(b.output_name or "", (None, ""))
            buf = Buffer(b.param, b.pointee, b.input_name, b.output_name, aligned, written, old, encoding, b.shared)
            ctype = "long" if options.index_bits == 64 else "int"
            ctx.bind(arg, PtrValue(arg.type, buf, (Lit("0"),), ctype, None))
        else:
            ctx.bind(arg, RegValue(arg.type, (Var(f"{sanitize(arg.name_hint or f'arg{arg.index}')}_in"),), None))

    lower_ops(ctx, func.body.block.ops)  # type: ignore[attr-defined]
    if ctx.deferred_reads:
        raise internal_error("a joined layout conversion has no conversion after it to read behind its barrier")
    return Lowered(ctx, ctx.pop())


def _relative_outputs(uses: dict[Any, Any], buffers: dict[Any, Buffer], outputs: tuple[str, ...],
                      marked: tuple[str, ...], keyed: tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """output -> (old input, encoding) for the outputs kept relative to their array's contents,
    in the order the options list them."""
    by_output = {b.output_name: (arg, b) for arg, b in buffers.items() if b.output_name}
    found: dict[str, tuple[str, str]] = {}
    for output in outputs:
        if output not in by_output:
            raise internal_error(f"'{output}' is not an output of this kernel")
        arg, b = by_output[output]
        if output in marked:
            use = uses[arg]
            if not marks_untouched(mlx_type(b.pointee), use.atomic_kinds, use.loaded, use.stored):
                raise internal_error(f"'{b.param}' cannot be held with the untouched mark")
            encoding: str | None = "mark"
        elif output in keyed:
            # the runtime keys arrays that programs exchange (`Buffer.shared`: scalar accesses)
            use = uses[arg]
            if (use.reinterpreted or not b.shared
                    or not keeps_key(mlx_type(b.pointee), use.atomic_kinds, use.polled)):
                raise internal_error(f"'{b.param}' cannot be held with the key")
            encoding = "key"
        elif uses[arg].reinterpreted:  # written through other types: bytewise (params.ParamUse)
            encoding = "xor"
        else:
            encoding = relative_encoding(mlx_type(b.pointee), uses[arg].atomic_kinds)
        if encoding is None:
            raise internal_error(f"'{b.param}' cannot be kept relative to its contents")
        # a parameter that is also read has its old contents in its input already
        found[output] = (b.input_name or old_input_name(output), encoding)
    return found


def _with_old_input(binding: ParamBinding, relative: dict[str, tuple[str, str]]) -> ParamBinding:
    """The parameter's binding with its old-contents input, when its output is relative."""
    for output in binding.msl_outputs:
        if output in relative and relative[output][0] not in binding.msl_inputs:
            return dataclasses.replace(binding, msl_inputs=(*binding.msl_inputs, relative[output][0]))
    return binding


def _written_name(output: str) -> str:
    """`x_out` -> `x_written`: the bool output a store sets beside `x_out`."""
    return output[: -len("_out")] + "_written"


def _pass_scratch(func: Op) -> int:
    """The end of the threadgroup scratch the layout passes allocated (0 when none)."""
    end = 0
    for op in func.walk():
        off, size = getattr(op, "smem_offset", None), getattr(op, "smem_bytes", None)
        alt = getattr(op, "smem_alt_offset", None)  # a double-buffered conversion's second buffer
        if off is not None and size is not None:
            end = max(end, max(int(off), int(alt or 0)) + int(size))
    return (end + 15) // 16 * 16


def _helpers(ctx: LoweringContext, target: Target) -> list[str]:
    texts = []
    for name in sorted(ctx.helpers):
        if name == "int_ops":
            types = []
            for t in sorted(ctx.int_helper_types):
                c = msl_type(ScalarType(t))
                u, bits, signed = _INT_TYPES[c]
                hi, suffix = (1 << (bits - 1)) - 1, "L" if bits == 64 else ""
                # the minimum as `-MAX - 1`: the literal MIN alone does not fit the signed type
                types.append({"c": c, "u": u, "bits": bits, "signed": signed,
                              "min": f"{c}({c}(-{hi}{suffix}) - {c}(1))", "max": f"{c}({hi}{suffix})"})
            texts.append(render("helpers/int_ops.metal", types=types))
        elif name == "float_to_int":
            texts.append(render("helpers/float_to_int.metal", types=[_float_to_int(c) for c in sorted(ctx.float_to_int_types)]))
        elif name == "float_ops":
            texts.append(render("helpers/float_ops.metal", types=sorted(ctx.float_helper_types)))
        elif name == "relative_contents":
            texts.append(render("helpers/relative_contents.metal", types=[
                {"c": c, "u": uint_of_width(bits)} for c, bits in sorted(ctx.relative_types)], keys=[
                {"c": c, "u": uint_of_width(bits), "key": f"0x{KEY_BITS[bits]:X}"}
                for c, bits in sorted(ctx.relative_keys)]))
        elif name == "relative_atomics":
            ops = sorted(ctx.relative_atomics)
            half = ("half", "bfloat")  # 16-bit elements: loops on the word holding them
            texts.append(render("helpers/relative_atomics.metal",
                                ops32=[{"c": c, "op": o, "enc": e} for c, o, e in ops if c not in half],
                                untouched=f"0x{UNTOUCHED_BITS:08X}",
                                ops16=[{"t": c, "op": o} for c, o, _ in ops if c in half]))
        elif name == "device_fence":
            texts.append(render("helpers/device_fence.metal", fence=target.has_device_fence))
        elif name == "atomic_cas_op":
            texts.append(render("helpers/atomic_cas_op.metal", types=sorted(ctx.cas_types)))
        else:
            texts.append(render(f"helpers/{name}.metal"))
    return texts


def _ordered_exchange(func: Op, uses: dict[Any, Any]) -> tuple[str, ...]:
    """The arrays other programs write that the kernel also loads or stores, in a kernel with an
    acquiring or releasing atomic: their order relative to the atomics rests on the device
    fence, which MSL has from 3.2 on (docs/codegen.md, "Memory order between programs")."""
    atomics = [op for op in func.walk() if isinstance(op, (mem.AtomicRMWOp, mem.AtomicCASOp, mem.AtomicPollOp))]
    if all(op.sem == "relaxed" for op in atomics):
        return ()
    return tuple(sorted(u.arg.name_hint or "" for u in uses.values()
                        if (u.atomic or u.live) and (u.loaded or u.stored)))


def _float_to_int(c: str) -> dict[str, str]:
    """Bounds of the saturating conversion to MSL integer type `c` (templates/helpers/float_to_int.metal)."""
    _, bits, signed = _INT_TYPES[c]
    suffix = "L" if bits == 64 else ""
    hi = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
    lo = -(1 << (bits - 1)) if signed else 0
    minimum = f"{c}({c}(-{hi}{suffix}) - {c}(1))" if signed else f"{c}(0)"
    return {"c": c, "lo": f"{float(lo)!r}f", "hi": f"{float(hi + 1)!r}f", "min": minimum,
            "max": f"{c}({hi}{'u' if not signed else ''}{suffix})"}


def _ascii(text: str) -> str:
    return text.encode("ascii", "backslashreplace").decode("ascii")


def _check_ascii(text: str) -> None:
    bad = re.search(r"[^\x00-\x7f]", text)
    if bad is not None:
        raise internal_error(f"generated MSL holds a non-ASCII character {bad.group(0)!r}")
