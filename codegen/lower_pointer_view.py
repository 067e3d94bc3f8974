"""Pointers reinterpreted to another element type: `ptr.to(tl.pointer_type(T))` (Triton's
`tt.bitcast` of a pointer).

A pointer value is a buffer plus element offsets (`values.PtrValue`). A reinterpreted pointer
keeps the buffer (the kernel parameter, its input and output, and what the runtime binds to
them) and records the element type it is seen as (`Buffer.view`); its offsets count elements of
that type. Every access then names the buffer as `km_as<T>(buffer)`
(templates/helpers/pointer_view.metal), so the emulator's bounds checks, which rewrite each
mention of a buffer into a checked view, check the access against the buffer's bytes
(`km_as` of a checked view, runtime/tm_kernel.h) and report indexes in the array's own elements,
as the interpreter does.

Offsets convert exactly or the cast is refused: to a narrower type they are multiplied by the
size ratio (in 64-bit arithmetic: a byte offset may not fit 32 bits where the element offset
did); to a wider type they are divided by it, which is exact only where every address and
the array's own start are multiples of the wider size. The axis info must prove both (the
address's byte divisibility, which the parameter's 16-byte alignment fact and the offsets'
arithmetic give, and the parameter's own); otherwise the access would be misaligned
(undefined on Apple GPUs, as on Triton's) or the division would drop bytes, and the cast is
refused with the sizes named. A pointer to `int1` sees the buffer as bytes, as Triton keeps `int1` in
memory (MLX's bool is one byte holding 0 or 1).
"""

from __future__ import annotations

import dataclasses

from triton_metal.ir.ops import arith
from triton_metal.ir.types import PointerType, ScalarType, element_type

from .context import LoweringContext
from .msl_types import element_bytes, msl_type
from .program import Apply, Convert, Expr, Lit, Var
from .registry import lowers
from .values import Buffer, PtrValue

HALF_WORD = ("f16", "bf16")
"""Element types updated through a compare-and-swap on their containing 32-bit word."""

_BYTE = ScalarType("u8")


def buffer_ref(ctx: LoweringContext, buf: Buffer, name: str) -> Expr:
    """The expression an access indexes: the metal_kernel input or output `name` of `buf`, seen
    through its view type when a pointer cast reinterprets it."""
    if buf.view is None:
        return Var(name)
    ctx.helpers.add("pointer_view")
    if name == buf.input_name or name == buf.old_name:
        # read through a `const device` view: such an input must arrive in device memory
        ctx.vector_inputs.add(name)
    return Apply("view", (Lit(msl_type(buf.view)), Var(name)))


def seen_as(buf: Buffer) -> ScalarType:
    """The element type the body reads and writes `buf` as (a bool array as bytes)."""
    if buf.view is not None:
        return buf.view
    return _BYTE if buf.pointee.is_bool() else buf.pointee


@lowers(arith.PtrBitcastOp)
def lower_ptr_bitcast(ctx: LoweringContext, op: arith.PtrBitcastOp) -> None:
    src = ctx.ptr(op.operand)
    dst_el = element_type(op.result.type)
    assert isinstance(dst_el, PointerType)
    if not isinstance(dst_el.pointee, ScalarType):
        raise ctx.error(f"reinterpreting a pointer as {dst_el} is not supported: only pointers to scalars "
                        "index a buffer")
    buf = src.buffer
    # int1 lives in memory as a byte (MLX's bool holds 0 or 1): loads of it convert the byte
    new = _BYTE if dst_el.pointee.is_bool() else dst_el.pointee
    old = seen_as(buf)
    old_bytes, new_bytes = element_bytes(old), element_bytes(new)
    offsets, ctype = src.offsets, src.offset_ctype
    if new_bytes < old_bytes:
        ratio = Lit(str(old_bytes // new_bytes))
        offsets = tuple(o if o == Lit("0") else Apply("mul", (o if ctype == "long" else Convert("long", o), ratio))
                        for o in offsets)
        ctype = "long"
    elif new_bytes > old_bytes:
        _check_aligned(ctx, op, buf, old, new, new_bytes)
        ratio = Lit(str(new_bytes // old_bytes))
        offsets = tuple(o if o == Lit("0") else Apply("idiv_raw", (o, ratio)) for o in offsets)
    same = new == buf.pointee or (buf.pointee.is_bool() and new == _BYTE)
    view = None if same else new
    regs = ctx.materialize(list(offsets), ctype)
    ctx.bind(op.result, PtrValue(op.result.type, dataclasses.replace(buf, view=view), regs, ctype, src.dist))


def _check_aligned(ctx: LoweringContext, op: arith.PtrBitcastOp, buf: Buffer, old: ScalarType, new: ScalarType,
                   new_bytes: int) -> None:
    """A pointer to a wider type must hold addresses that are multiples of its size, and its
    offsets, divided by the size ratio, must lose nothing: refused unless the axis info proves
    both the addresses and the array's own start multiples of the new size."""
    info = ctx.axis_info
    proven = info.get(op.operand).element_divisibility if info is not None else 1
    # the array's own start is the launch's fact: 16-byte aligned or not (new_bytes is at most 8)
    if proven % new_bytes == 0 and buf.aligned16:
        return
    if proven % new_bytes:
        what = "every address"
        hint = (f"cast the array's own pointer (aligned to 16 bytes) and index in {new} elements, "
                f"e.g. p.to(tl.pointer_type(tl.{_tl_name(new)})) + offs, or keep offsets multiples of "
                f"{new_bytes // element_bytes(old)} elements (tl.multiple_of)")
    else:
        # the addresses are aligned but the array's start may not be (a view of a NumPy array),
        # so an offset of 2 bytes would read as 0 elements of the wider type
        proven, what = 1, f"the start of '{buf.param}'"
        hint = f"pass '{buf.param}' an array that starts on a 16-byte boundary (a view at an offset may not)"
    raise ctx.error(
        f"reinterpreting a pointer to {old} as a pointer to {new} needs {what} to be a multiple of "
        f"{new_bytes} bytes; the compiler can prove only a multiple of {proven} here (an unaligned "
        f"{new} access is undefined on Apple GPUs)",
        hint=hint,
    )


def _tl_name(ty: ScalarType) -> str:
    names = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "i1": "int1"}
    if ty.name in names:
        return names[ty.name]
    return ("uint" if ty.name.startswith("u") else "int") + ty.name[1:]


def check_view_atomic(ctx: LoweringContext, buf: Buffer, what: str) -> None:
    """Atomics through a reinterpreted pointer must update whole elements of the array: a
    wider or narrower atomic would also update (or tear) its neighbours' bytes, which the Metal
    path's outputs do not model. A float16 or bfloat16 atomic swaps the 32-bit word holding its
    element, which the runtimes make whole (word-aligned, padded past an odd end) for arrays of
    those two types only."""
    if buf.view is None:
        return
    if element_bytes(buf.view) != element_bytes(buf.pointee):
        why = "atomics through a reinterpreted pointer must have the array's element size"
    elif buf.view.name in HALF_WORD and buf.pointee.name not in HALF_WORD:
        why = (f"{buf.view} atomics update the 32-bit word holding each element, which the runtime "
               "keeps whole for float16 and bfloat16 arrays only")
    else:
        return
    raise ctx.error(
        f"{what} through a pointer to {buf.view} into '{buf.param}', an array of {buf.pointee}, is not "
        f"supported: {why}",
        hint=f"update the array through a pointer of its own type ({buf.pointee}), or of a 4-byte type "
             "over a 4-byte array",
    )
