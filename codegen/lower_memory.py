"""Lowering of pointer arithmetic, loads, stores and atomics.

A pointer value is a buffer plus per-register element offsets (`values.PtrValue`). Loads read the
parameter's input buffer, stores and atomics write its output buffer. A masked load reads memory
only where the mask holds (`mask ? p[i] : other`, the conditional operator evaluates one arm).
Stores and atomics run once per element: only from the first register holding it and only in
owner threads (the layout's replicated lane and warp bits clear); a scalar store or atomic runs
in thread 0 of the program. A used atomic result reaches the threads that did not perform the
atomic through scratch (thread 0's for a scalar, the elements' row-major slots otherwise). An
array that other programs of the launch write (`Buffer.shared`) is loaded and stored with
relaxed atomic accesses, coherent across the device where plain ones are not.

Atomics are relaxed (the only order MSL's atomic functions take before 4.1), with a device
fence before a releasing and after an acquiring one (Triton's `sem`; docs/codegen.md, "Memory
order between programs"), on `device atomic<T>*` views of the output:
int and uint get every operation; float gets add and exchange natively and max/min as Triton
lowers them, integer atomics on the bits (signed max/min for an operand whose sign bit is clear,
unsigned min/max for one whose sign bit is set: IEEE totalOrder, +0.0 above -0.0, NaNs by sign
and payload); float `atomic_cas` compares bit patterns through `atomic_uint`. half and bfloat
(add, max, min, exchange, cas) are compare-and-swap loops on the aligned 32-bit word that
holds the element (little-endian: an even element is the low half), which needs the output to
start on a 4-byte boundary and to be readable to the end of its last word (the launch pads it).
8-bit integer, 16-bit integer and 64-bit types are refused with the limit named.

An output kept relative to its array's contents (`Buffer.relative`, `CodegenOptions.
relative_outputs`) holds each element relative to the old value in its old-contents input (the
parameter's own input when it has one, else `<param>_old`): stores and the operands of
exchanges and compare-and-swaps are encoded against it, and what loads and atomics read is
decoded (templates/helpers/relative_contents.metal); atomic adds of a "sub" output need
neither, since a wrapping difference carries them; every other read-modify-write is a
compare-and-swap loop on the held difference (templates/helpers/relative_atomics.metal). Its
loads read the output, which stands for the array as updated so far. An output held with the
key ("key", only loaded and stored) needs no old value to store or to read what was stored: a
load reads all its elements, decodes them with the key, and only in a thread that found a 0
reads those elements' escape bytes and old values; a store writes, then sets the escape bytes of
the elements it gave the key's own bits, under one test a thread.
"""

from __future__ import annotations

from collections.abc import Sequence

from triton_metal.errors import internal_error
from triton_metal.ir.ops import tt_memory as mem
from triton_metal.ir.ops.tt import AddPtrOp
from triton_metal.ir.types import ScalarType, element_type

from .context import TID, LoweringContext, ctype_of
from .distribution import Distribution
from .kernel import native_on
from .msl_types import element_bytes, literal, msl_type
from .program import (Apply, Assign, Barrier, Call, Convert, Declare, Expr, ExprStmt, If, Index, Lit, Member, PtrCast,
                      Reinterpret, Var)
from .lower_pointer_view import HALF_WORD, buffer_ref, check_view_atomic
from .registry import lowers
from .values import PtrValue, RegValue


def _reg_at(v: RegValue | None, r: int) -> Expr | None:
    if v is None:
        return None
    return v.regs[r] if v.dist is not None else v.regs[0]


@lowers(AddPtrOp)
def lower_addptr(ctx: LoweringContext, op: AddPtrOp) -> None:
    p = ctx.ptr(op.ptr)
    off = ctx.reg(op.offset)
    oty = element_type(op.offset.type)
    assert isinstance(oty, ScalarType)
    wide = ctx.options.index_bits == 64 or oty.bitwidth == 64 or (oty.name == "u32") or p.offset_ctype == "long"
    ctype = "long" if wide else "int"
    dist = ctx.dist_of(op.result.type)
    n = dist.num_regs if dist is not None else 1
    regs = []
    for r in range(n):
        base = p.offsets[r] if p.dist is not None else p.offsets[0]
        o = _reg_at(off, r)
        assert o is not None
        if ctype == "long":
            base = base if p.offset_ctype == "long" else Convert("long", base)
            o = o if oty.name == "i64" else Convert("long", o)
        elif oty.bitwidth < 32 or oty.is_bool():
            o = Convert("int", o)
        regs.append(base if o == Lit("0") else (o if base == Lit("0") else Apply("add", (base, o))))
    ctx.bind(op.result, PtrValue(op.result.type, p.buffer, ctx.materialize(regs, ctype), ctype, dist))


def owner_condition(ctx: LoweringContext, dist: Distribution | None) -> Expr | None:
    """The predicate of threads that store their registers' elements (None: every thread)."""
    if dist is None:
        return Apply("eq", (Var("km_tid"), Lit("0u")))
    lm, wm = dist.lane_replica_mask, dist.warp_replica_mask & (ctx.num_warps - 1)
    parts: list[Expr] = []
    if lm:
        parts.append(Apply("eq", (Apply("and", (Var("km_lane"), Lit(f"{lm}u"))), Lit("0u"))))
    if wm:
        parts.append(Apply("eq", (Apply("and", (Var("km_warp"), Lit(f"{wm}u"))), Lit("0u"))))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else Apply("land", (parts[0], parts[1]))


def _and(a: Expr | None, b: Expr | None) -> Expr | None:
    if a is None:
        return b
    if b is None:
        return a
    return Apply("land", (a, b))


# -- vector width ---------------------------------------------------------------------------------

_VECTOR_TYPES = frozenset({"f32", "f16", "bf16", "i32", "u32", "i16", "u16", "i8", "u8"})
_LANES = "xyzw"
_WIDE_MIN_WARPS = 4
"""Runs of 8 consecutive 16-bit elements move as one 16-byte `uint4` access (Triton's width for
16-bit types) in programs of at least this many warps; smaller programs keep two 8-byte vectors,
the width their kernels were tuned at (docs/codegen.md, "Loads and stores")."""


def max_lanes(ety: ScalarType, num_warps: int) -> int:
    """The most elements one access may move: 16 bytes, in at most 4 lanes of an MSL vector, or 8
    16-bit elements through a `uint4` where the program is wide enough (`_WIDE_MIN_WARPS`)."""
    if ety.bitwidth == 16 and num_warps >= _WIDE_MIN_WARPS:
        return 8
    return max(1, min(4, 16 // (ety.bitwidth // 8)))


def _access_types(ety: ScalarType, vec: int) -> tuple[str, str, int]:
    """(the access's vector type, the type of its parts, elements a part) for `vec` elements:
    `half8`/`bfloat8` do not exist in MSL, so 8 16-bit elements move as a `uint4` seen as two
    4-lane halves (`as_type<half4>(w.xy)`); other widths are one vector of the element type."""
    ctype = msl_type(ety)
    if vec == 8 and ety.bitwidth == 16:
        return "uint4", f"{ctype}4", 4
    return f"{ctype}{vec}", f"{ctype}{vec}", vec


def vector_width(ctx: LoweringContext, op: mem.LoadOp | mem.StoreOp, dist: Distribution | None,
                 ety: ScalarType) -> tuple[int, int]:
    """(vec, dim): registers come in aligned runs of `vec` consecutive elements along `dim` that
    one vector access may move, as the layout and the axis info (contiguity, byte alignment,
    mask constancy) prove; vec 1 when nothing is proven."""
    info = ctx.axis_info
    if info is None or dist is None or ety.name not in _VECTOR_TYPES:
        return 1, 0
    rank = dist.rank
    best = (1, 0)
    most = max_lanes(ety, ctx.num_warps)
    for dim in range(rank):
        unit = tuple(1 if d == dim else 0 for d in range(rank))
        v = 1
        while v * 2 <= most and _runs(dist, dim, unit, v * 2):
            v *= 2
        if v == 1:
            continue
        pinfo = info.get(op.ptr)
        while v > 1:
            # groups of v start at multiples of v elements within contiguous runs of at least v, so
            # their addresses keep the run starts' byte alignment up to v * element size
            ok = pinfo.contiguity[dim] % v == 0 and pinfo.divisibility[dim] % (v * ety.bitwidth // 8) == 0
            if op.mask is not None:
                ok = ok and info.get(op.mask).constancy[dim] % v == 0
            other = getattr(op, "other", None)
            if other is not None:
                ok = ok and info.get(other).constancy[dim] % v == 0
            if ok:
                break
            v //= 2
        if v > best[0]:
            best = (v, dim)
    return best


def _runs(dist: Distribution, dim: int, unit: tuple[int, ...], v: int) -> bool:
    """Registers r, r+1, .., r+v-1 (r a multiple of v) hold consecutive elements along `dim`,
    starting at a multiple of v in every thread."""
    if dist.num_regs % v:
        return False
    for r in range(0, dist.num_regs, v):
        c0 = dist.reg_coords[r]
        if c0[dim] % v:
            return False
        for i in range(1, v):
            if dist.reg_coords[r + i] != tuple(a + i * b for a, b in zip(c0, unit)):
                return False
    return all(b[dim] % v == 0 for b in (*dist.lane_bases, *dist.warp_bases))


@lowers(mem.LoadOp)
def lower_load(ctx: LoweringContext, op: mem.LoadOp) -> None:
    p = ctx.ptr(op.ptr)
    mask = ctx.reg(op.mask) if op.mask is not None else None
    other = ctx.reg(op.other) if op.other is not None else None
    buf = p.buffer
    source = buf.input_name or buf.output_name
    own_stores = op in ctx.reads_output or bool(buf.relative)
    after_stores = op in ctx.reads_stored
    if own_stores:
        # the program stored every element this load reads (params.py), or the output stands
        # for the array as updated so far (kept relative): read it
        source = buf.output_name
    if op in ctx.reads_output or after_stores:
        # once the owners' device writes are visible to every thread holding a copy
        ctx.emit(Barrier(device=True))
    if source is None:
        raise ctx.error(f"internal: '{buf.param}' is loaded but has no buffer")
    ety = element_type(op.result.type)
    assert isinstance(ety, ScalarType)
    zero = Lit(literal(0, ety) if not ety.is_bool() else "false")
    dist = ctx.dist_of(op.result.type)
    for v in (p, mask, other):
        if v is not None and v.dist is not None and v.dist != dist:
            raise ctx.error("internal: a load's pointers, mask or other are laid out unlike its result")
    vectors = (buf.input_name is not None and not own_stores) or (bool(buf.relative) and not buf.shared)
    vec, _ = vector_width(ctx, op, p.dist, ety) if vectors else (1, 0)
    if vec > 1:
        _vector_load(ctx, op, p, mask, other, vec, ety, zero, dist, relative=bool(buf.relative))
    else:
        _scalar_load(ctx, op, p, mask, other, buffer_ref(ctx, buf, source), source == buf.output_name, ety, zero, dist)
    if after_stores:  # no later store of another thread overtakes this load
        ctx.emit(Barrier(device=True))


def _scalar_load(ctx: LoweringContext, op: mem.LoadOp, p: PtrValue, mask: RegValue | None,
                 other: RegValue | None, src: Expr, decode: bool, ety: ScalarType, zero: Expr,
                 dist: Distribution | None) -> None:
    n = dist.num_regs if dist is not None else 1
    # an array other programs write: every load reads its output, atomically (no input exists)
    shared = p.buffer.shared
    offsets = [p.offsets[r] if p.dist is not None else p.offsets[0] for r in range(n)]
    helds = [_shared_read(ctx, src, off, ety) if shared else Index(src, off) for off in offsets]
    masks = [_reg_at(mask, r) for r in range(n)]
    fills = [_reg_at(other, r) or zero for r in range(n)]
    if decode and p.buffer.relative == "key":
        ctx.bind(op.result, RegValue(op.result.type, _unkey(ctx, p, offsets, helds, masks, fills, ety), dist))
        return
    regs: list[Expr] = []
    for off, held, m, fill in zip(offsets, helds, masks, fills):
        read: Expr = _decode(ctx, p, off, held, ety) if decode else held
        regs.append(read if m is None else Apply("select", (m, read, fill)))
    ctx.bind(op.result, RegValue(op.result.type, ctx.materialize(regs, ctype_of(op.result.type), force=True), dist))


def _unkey(ctx: LoweringContext, p: PtrValue, offsets: Sequence[Expr], helds: Sequence[Expr],
           masks: Sequence[Expr | None], fills: Sequence[Expr], ety: ScalarType) -> tuple[Expr, ...]:
    """The values of a "key" output's elements from what it holds (`helds`, read where the
    masks hold): each one's bits xor the key, then, only in a thread that found the key there
    (a held 0), the old value or the key itself for those elements (`km_rel_unkey`). One test a
    thread rather than a branch an element, which would stand between each element's read and
    its use; the test reads the decoded values, so the held ones need no registers of their own."""
    _key_helpers(ctx, ety)
    ctype = msl_type(ety)
    regs = ctx.materialize([Call("km_rel_key", (h,)) if m is None else Apply("select", (m, Call("km_rel_key", (h,)), o))
                            for h, m, o in zip(helds, masks, fills)], ctype, force=True)
    unwritten = [_and(m, Call("km_rel_is_key", (reg,))) for reg, m in zip(regs, masks)]
    fixes = tuple(Assign(reg, Apply("select", (u, _decode(ctx, p, off, Call("km_rel_key", (reg,)), ety), reg)))  # type: ignore[arg-type]
                  for reg, u, off in zip(regs, unwritten, offsets))
    ctx.emit(If(_any(ctx, unwritten), fixes))  # type: ignore[arg-type]
    return regs


def _any(ctx: LoweringContext, conds: Sequence[Expr | None]) -> Var:
    """A bool that holds when one of `conds` does (declared once, for one branch)."""
    terms: list[Expr] = [c for c in conds if c is not None]
    while len(terms) > 1:  # pairwise, so that the nesting grows as the log of the count
        pairs = [Apply("lor", (a, b)) for a, b in zip(terms[::2], terms[1::2])]
        terms = pairs + terms[len(pairs) * 2:]
    name = ctx.fresh()
    ctx.emit(Declare(name, "bool", None, terms[0], const=True))
    return Var(name)


def _vector_load(ctx: LoweringContext, op: mem.LoadOp, p: PtrValue, mask: RegValue | None,
                 other: RegValue | None, vec: int, ety: ScalarType, zero: Expr, dist: Distribution | None,
                 relative: bool = False) -> None:
    """Registers in runs of `vec` read as vectors of the input, or, `relative`, of the output
    kept relative to its array (device memory, so any array size takes it), each element then
    decoded against its old value, read only where the mask holds."""
    assert dist is not None
    if relative:
        space, source = "device", p.buffer.output_name
    else:
        # a vector view of the input: MLX passes inputs of fewer than 8 elements in the constant
        # address space, so the runtime pads those the kernel reads this way (MSLKernel.metadata
        # "vector_inputs")
        space, source = "const device", p.buffer.input_name
        ctx.vector_inputs.add(source)  # type: ignore[arg-type]
    assert source is not None
    base = buffer_ref(ctx, p.buffer, source)
    ctype = msl_type(ety)
    wtype, _, _ = _access_types(ety, vec)
    regs: list[Expr] = []
    if p.buffer.relative == "key":  # held with the key only where programs exchange it: no vectors
        raise internal_error(f"'{p.buffer.param}' is held with the key and read as vectors")
    for r in range(0, dist.num_regs, vec):
        read: Expr = Index(PtrCast(space, wtype, Apply("add", (base, p.offsets[r]))), Lit("0"))
        m = _reg_at(mask, r)
        fill = [(_reg_at(other, r + i) or zero) for i in range(vec)]
        if m is not None:
            read = Apply("select", (m, read, _pack(ety, vec, [zero] * vec if relative else fill)))
        name = ctx.fresh()
        ctx.emit(Declare(name, wtype, None, read))
        lanes = _unpack(ctx, ety, vec, name)
        if relative:
            lanes = [_decode(ctx, p, p.offsets[r + i], lane, ety) for i, lane in enumerate(lanes)]
            if m is not None:
                lanes = [Apply("select", (m, lane, f)) for lane, f in zip(lanes, fill)]
        regs.extend(lanes)
    ctx.bind(op.result, RegValue(op.result.type, ctx.materialize(regs, ctype, force=True), dist))


def _vector_store(ctx: LoweringContext, op: mem.StoreOp, p: PtrValue, val: RegValue, mask: RegValue | None,
                  vec: int, ety: ScalarType, own: Expr | None) -> None:
    assert p.dist is not None and p.buffer.output_name is not None
    wtype, _, _ = _access_types(ety, vec)
    base = buffer_ref(ctx, p.buffer, p.buffer.output_name)
    if p.buffer.relative == "key":  # held with the key only where programs exchange it: no vectors
        raise internal_error(f"'{p.buffer.param}' is held with the key and written as vectors")
    firsts = p.dist.first_registers()
    for r in range(0, p.dist.num_regs, vec):
        if not firsts[r]:
            continue
        target = Index(PtrCast("device", wtype, Apply("add", (base, p.offsets[r]))), Lit("0"))
        # each element encoded against its old value where the output is kept relative
        value = _pack(ety, vec, [_encode(ctx, p, p.offsets[r + i], _reg_at(val, r + i), ety)  # type: ignore[arg-type]
                                 for i in range(vec)])
        stmts = (Assign(target, value), *_mark_written(ctx, p, tuple(p.offsets[r + i] for i in range(vec))))
        cond = _and(own, _reg_at(mask, r))
        _emit_guarded(ctx, cond, stmts)


def _pack(ety: ScalarType, vec: int, elements: list[Expr]) -> Expr:
    """One value of the access type holding `elements` in order (a `uint4` of two 4-lane halves'
    bits for 8 16-bit elements)."""
    wtype, ptype, per = _access_types(ety, vec)
    if wtype == ptype:
        return Call(wtype, tuple(elements))
    return Call(wtype, tuple(Reinterpret("uint2", Call(ptype, tuple(elements[k:k + per])))
                             for k in range(0, vec, per)))


def _unpack(ctx: LoweringContext, ety: ScalarType, vec: int, name: str) -> list[Expr]:
    """The `vec` elements of the access held in variable `name`, in order."""
    wtype, ptype, per = _access_types(ety, vec)
    parts = [name]
    if wtype != ptype:
        parts = []
        for k in range(0, vec, per):
            part = ctx.fresh()
            halves = _LANES[k // 2:k // 2 + per // 2]  # a 4-lane half is 2 of the uint4's words
            ctx.emit(Declare(part, ptype, None, Reinterpret(ptype, Member(Var(name), halves))))
            parts.append(part)
    return [Member(Var(part), _LANES[i]) for part in parts for i in range(per)]


@lowers(mem.StoreOp)
def lower_store(ctx: LoweringContext, op: mem.StoreOp) -> None:
    p = ctx.ptr(op.ptr)
    val = ctx.reg(op.value)
    mask = ctx.reg(op.mask) if op.mask is not None else None
    buf = p.buffer
    if buf.output_name is None:
        raise ctx.error(f"internal: '{buf.param}' is stored to but has no output buffer")
    dst = buffer_ref(ctx, buf, buf.output_name)
    dist = p.dist
    for v in (val, mask):
        if v is not None and v.dist is not None and v.dist != dist:
            raise ctx.error("internal: a store's value or mask is laid out unlike its pointers")
    own = owner_condition(ctx, dist)
    own_var = _hoist(ctx, own)
    ety = element_type(op.value.type)
    assert isinstance(ety, ScalarType)
    vec, _ = vector_width(ctx, op, dist, ety) if not buf.shared else (1, 0)
    if vec > 1:
        _vector_store(ctx, op, p, val, mask, vec, ety, own_var)
        return
    firsts = dist.first_registers() if dist is not None else (True,)
    escapes: list[tuple[Expr | None, Expr, Expr]] = []
    for r, first in enumerate(firsts):
        if not first:
            continue
        off = p.offsets[r] if p.dist is not None else p.offsets[0]
        v = _reg_at(val, r)
        assert v is not None
        held = _encode(ctx, p, off, v, ety)
        write = (ExprStmt(_shared_write(ctx, dst, off, held, ety)) if buf.shared
                 else Assign(Index(dst, off), held))
        stmts = (write, *_mark_written(ctx, p, (off,)))
        cond = _and(own_var, _reg_at(mask, r))
        _emit_guarded(ctx, cond, stmts)
        escapes.append((cond, off, v))
    _emit_escapes(ctx, escapes, p, ety)


def _emit_escapes(ctx: LoweringContext, escapes: list[tuple[Expr | None, Expr, Expr]], p: PtrValue,
                  ety: ScalarType) -> None:
    """A "key" output's escape bytes for the elements a store wrote the key's own bits to
    (`escapes`: the condition, offset and value of each write), after the store's writes and
    under one test a thread, so that the writes issue back to back. The output then holds 0
    there, as it does for an element not yet written."""
    esc = p.buffer.escape_name
    if esc is None or not escapes:
        return
    _key_helpers(ctx, ety)
    ctype = msl_type(ety)
    hits = [_and(cond, Call("km_rel_is_key", (Convert(ctype, v),))) for cond, _, v in escapes]
    marks: list[If | ExprStmt] = []
    for cond, off, v in escapes:
        mark = ExprStmt(Call("km_rel_escape", (Convert(ctype, v), Var(esc), off)))
        marks.append(mark if cond is None else If(cond, (mark,)))
    ctx.emit(If(_any(ctx, hits), tuple(marks)))  # type: ignore[arg-type]


def _emit_guarded(ctx: LoweringContext, cond: Expr | None, stmts: tuple[Assign | ExprStmt, ...]) -> None:
    if cond is not None:
        ctx.emit(If(cond, stmts))
        return
    for stmt in stmts:
        ctx.emit(stmt)


def _mark_written(ctx: LoweringContext, p: PtrValue, offsets: tuple[Expr, ...]) -> tuple[Assign, ...]:
    """`written[off] = true` beside a store, when the buffer has a written mask (`false` when
    the masks mark the elements not written, `CodegenOptions.unwritten_masks`)."""
    if p.buffer.written_name is None:
        return ()
    if p.buffer.view is not None and element_bytes(p.buffer.view) != element_bytes(p.buffer.pointee):
        # the masks count the array's elements: such an output is kept relative instead
        raise internal_error(f"'{p.buffer.param}' has a written mask but is stored to as {p.buffer.view}")
    mark = Lit("false" if ctx.options.unwritten_masks else "true")
    return tuple(Assign(Index(Var(p.buffer.written_name), off), mark) for off in offsets)


def _shared_read(ctx: LoweringContext, base: Expr, off: Expr, ety: ScalarType) -> Expr:
    """A relaxed atomic load of the element at `off` of a shared output (`Buffer.shared`):
    32-bit elements through `atomic<T>`, 16-bit ones through the 32-bit word holding them."""
    _check_shared_type(ctx, ety)
    if ety.bitwidth == 16:
        ctx.helpers.add("shared_half_word")
        return Reinterpret(msl_type(ety), Call("km_shared_load16", _half_word(base, off)))
    return Call("atomic_load_explicit", (_atomic_ptr(base, off, ety), Var("memory_order_relaxed")))


def _shared_write(ctx: LoweringContext, base: Expr, off: Expr, value: Expr, ety: ScalarType) -> Expr:
    """A relaxed atomic store of `value` at `off` of a shared output (for a 16-bit element, a
    compare-and-swap of its word that keeps the other half and passes the bits unchanged)."""
    _check_shared_type(ctx, ety)
    if ety.bitwidth == 16:
        ctx.helpers.add("shared_half_word")
        bits = Reinterpret("ushort", Convert(msl_type(ety), value))
        return Call("km_shared_store16", (*_half_word(base, off), bits))
    return Call("atomic_store_explicit", (_atomic_ptr(base, off, ety), value, Var("memory_order_relaxed")))


def _check_shared_type(ctx: LoweringContext, ety: ScalarType) -> None:
    if ety.name in ("i32", "u32", "f32", "i16", "u16", *HALF_WORD):
        return
    raise ctx.error(
        f"a {ety} array that other programs of the launch write (it is updated atomically, or loaded "
        "and stored in a kernel whose programs wait for each other) is read or written here: Metal "
        "makes such accesses coherent across threadgroups only as atomics, which exist for 32-bit "
        "int, uint and float (16-bit types through their 32-bit word)",
        hint="keep data that programs exchange in a 32-bit or 16-bit array",
    )


_ENCODE = {"xor": "km_rel_xor", "sub": "km_rel_sub"}
_DECODE = {"xor": "km_rel_xor", "sub": "km_rel_add"}


def _encode(ctx: LoweringContext, p: PtrValue, off: Expr, value: Expr, ety: ScalarType) -> Expr:
    """What to write for `value` at `off` (unchanged unless the output is kept relative)."""
    if not p.buffer.relative:
        return value
    if p.buffer.relative == "key":
        _key_helpers(ctx, ety)
        return Call("km_rel_key", (Convert(msl_type(ety), value),))
    return _relative_call(ctx, p, off, Convert(msl_type(ety), value), ety, _ENCODE)


def _decode(ctx: LoweringContext, p: PtrValue, off: Expr, held: Expr, ety: ScalarType) -> Expr:
    """The element's value from what the output holds at `off` (the inverse of `_encode`)."""
    if not p.buffer.relative:
        return held
    buf = p.buffer
    if buf.relative == "key":
        # the old value and the escape byte are read only where the output holds 0
        assert buf.old_name is not None and buf.escape_name is not None
        _key_helpers(ctx, ety)
        return Call("km_rel_unkey", (held, buffer_ref(ctx, buf, buf.old_name), Var(buf.escape_name), off))
    return _relative_call(ctx, p, off, held, ety, _DECODE)


def _key_helpers(ctx: LoweringContext, ety: ScalarType) -> None:
    ctx.helpers.add("relative_contents")
    ctx.relative_keys.add((msl_type(ety), ety.bitwidth))


def _relative_call(ctx: LoweringContext, p: PtrValue, off: Expr, value: Expr, ety: ScalarType,
                   names: dict[str, str]) -> Expr:
    buf = p.buffer
    assert buf.old_name is not None
    ctx.helpers.add("relative_contents")
    ctx.relative_types.add((msl_type(ety), ety.bitwidth))
    return Call(names[buf.relative], (value, _old_at(ctx, p, off)))


def _old_at(ctx: LoweringContext, p: PtrValue, off: Expr) -> Expr:
    """The array's old value at `off`, for an output kept relative to it."""
    assert p.buffer.old_name is not None
    return Index(buffer_ref(ctx, p.buffer, p.buffer.old_name), off)


def _relative_atomic(ctx: LoweringContext, ety: ScalarType, op: str, encoding: str) -> str:
    """The compare-and-swap loop applying atomic `op` to an output kept relative to its
    contents (templates/helpers/relative_atomics.metal), registered for the header."""
    ctx.helpers.add("relative_atomics")
    ctype = msl_type(ety)
    ctx.relative_atomics.add((ctype, op, encoding))
    if ety.name in HALF_WORD:
        return f"km_rel16_{op}_{ctype}"
    return f"km_rel_{op}_{ctype}_{encoding}"


def _hoist(ctx: LoweringContext, cond: Expr | None) -> Expr | None:
    if cond is None:
        return None
    name = ctx.fresh()
    ctx.emit(Declare(name, "bool", None, cond, const=True))
    return Var(name)


# -- atomics -------------------------------------------------------------------------------------

_INT_FETCH = {
    mem.AtomicRMWKind.ADD: "atomic_fetch_add_explicit", mem.AtomicRMWKind.FADD: "atomic_fetch_add_explicit",
    mem.AtomicRMWKind.MAX: "atomic_fetch_max_explicit", mem.AtomicRMWKind.MIN: "atomic_fetch_min_explicit",
    mem.AtomicRMWKind.AND: "atomic_fetch_and_explicit", mem.AtomicRMWKind.OR: "atomic_fetch_or_explicit",
    mem.AtomicRMWKind.XOR: "atomic_fetch_xor_explicit", mem.AtomicRMWKind.XCHG: "atomic_exchange_explicit",
}


_HALF_WORD_HELPERS = ("atomic_half_word", "atomic_bit_order")
"""The word loops, and the bit order their max and min compare."""


def _check_atomic_type(ctx: LoweringContext, ety: ScalarType, what: str) -> None:
    if ety.name in ("i32", "u32", "f32", *HALF_WORD):
        return
    if ety.bitwidth == 64:
        raise ctx.error(
            f"{what} on {ety} is not supported: Metal atomics work on 32-bit int, uint and float; "
            "MSL's only 64-bit atomics are atomic_max and atomic_min on atomic_ulong, which return "
            "no value (and need a GPU that has them)",
            hint="use tl.atomic_max/tl.atomic_min on a uint64 array without using the result, or "
                 "32-bit atomics",
        )
    raise ctx.error(
        f"{what} on {ety} is not supported: Metal atomics work on 32-bit int, uint and float only "
        "(half and bfloat through their 32-bit word)",
        hint="accumulate in an int32/uint32/float32 array (convert afterwards), or reduce within the "
             "program with tl.sum/tl.max and store the result",
    )


def _atomic_ptr(base: Expr, off: Expr, ety: ScalarType) -> Expr:
    return Apply("atomic_ptr", (Lit(msl_type(ety)), Index(base, off)))


@lowers(mem.AtomicRMWOp)
def lower_atomic_rmw(ctx: LoweringContext, op: mem.AtomicRMWOp) -> None:
    p = ctx.ptr(op.ptr)
    val = ctx.reg(op.value)
    mask = ctx.reg(op.mask) if op.mask is not None else None
    ety = element_type(op.result.type)
    assert isinstance(ety, ScalarType)
    if not (ety.name == "u64" and op.kind in (mem.AtomicRMWKind.MAX, mem.AtomicRMWKind.MIN)
            and not ctx.is_used(op.result)):
        _check_atomic_type(ctx, ety, f"atomic {op.kind.value}")
    kind = op.kind
    if ety.is_float() and kind in (mem.AtomicRMWKind.AND, mem.AtomicRMWKind.OR, mem.AtomicRMWKind.XOR):
        raise ctx.error(f"atomic {kind.value} on float32 is not defined")
    buf = p.buffer
    assert buf.output_name is not None
    check_view_atomic(ctx, buf, f"atomic {kind.value}")
    out = buffer_ref(ctx, buf, buf.output_name)
    if ety.name == "u64" and kind in (mem.AtomicRMWKind.MAX, mem.AtomicRMWKind.MIN) and not ctx.is_used(op.result):
        # MSL 3.1's 64-bit atomics: void atomic_max/min_explicit on atomic_ulong (Apple GPU families
        # with 64-bit atomics); a GPU without them fails the Metal compile, reported by the driver
        name = "atomic_max_explicit" if kind is mem.AtomicRMWKind.MAX else "atomic_min_explicit"
        _atomic(ctx, op, p, mask, lambda off, r: Call(name, (
            Apply("atomic_ptr", (Lit("ulong"), Index(out, off))), _reg_at(val, r),  # type: ignore[arg-type]
            Var("memory_order_relaxed"))))
        return
    ordered = kind in (mem.AtomicRMWKind.MAX, mem.AtomicRMWKind.MIN) and ety.is_float()
    if ordered and buf.relative:
        # the compare-and-swap loop compares the bits' total order, as Triton's integer atomics do
        ctx.helpers.add("atomic_bit_order")
    if ety.name in HALF_WORD:
        if kind not in _HALF_WORD_OPS:
            raise ctx.error(f"atomic {kind.value} on {ety} is not defined")
        # max/min take the element's own bits; add and exchange compute in float
        operand = _reg_at if ordered else (lambda v, r: _f32(v, r, ety))
        if buf.relative:
            name = _relative_atomic(ctx, ety, _HALF_WORD_OPS[kind], "xor")
            _atomic(ctx, op, p, mask, lambda off, r: Call(name, (
                *_half_word(out, off), operand(val, r), _old_at(ctx, p, off))))
            return
        ctx.helpers.update(_HALF_WORD_HELPERS)
        name = f"km_atomic16_{_HALF_WORD_OPS[kind]}_{msl_type(ety)}"
        _atomic(ctx, op, p, mask, lambda off, r: Call(name, (*_half_word(out, off), operand(val, r))))
        return
    op_name = "add" if kind is mem.AtomicRMWKind.FADD else kind.value
    if buf.relative and not native_on(buf.relative, op_name):
        # a compare-and-swap loop on the held difference (relative_atomics.metal)
        name = _relative_atomic(ctx, ety, op_name, buf.relative)
        word = lambda off: Apply("atomic_ptr", (Lit("uint"), Index(out, off)))  # noqa: E731
        _atomic(ctx, op, p, mask, lambda off, r: Call(name, (word(off), _reg_at(val, r), _old_at(ctx, p, off))))
        return

    def rmw(off: Expr, r: int) -> Expr:
        v = _reg_at(val, r)
        assert v is not None
        if kind is mem.AtomicRMWKind.XCHG:
            v = _encode(ctx, p, off, v, ety)
        return _decode(ctx, p, off, _rmw_call(ctx, kind, ety, out, off, v), ety)

    _atomic(ctx, op, p, mask, rmw)


_HALF_WORD_OPS = {
    mem.AtomicRMWKind.FADD: "add", mem.AtomicRMWKind.MAX: "max", mem.AtomicRMWKind.MIN: "min",
    mem.AtomicRMWKind.XCHG: "xchg",
}


def _half_word(base: Expr, off: Expr) -> tuple[Expr, Expr]:
    """The aligned 32-bit word holding a 16-bit element, and the element's bit shift in it."""
    return Apply("atomic_word", (base, off)), Apply("half_word_shift", (off,))


def _f32(v: RegValue | None, r: int, ety: ScalarType) -> Expr:
    e = _reg_at(v, r)
    assert e is not None
    return Convert("float", e) if ety.name != "f32" else e


def _rmw_call(ctx: LoweringContext, kind: mem.AtomicRMWKind, ety: ScalarType, base: Expr, off: Expr,
              v: Expr | None) -> Expr:
    assert v is not None
    if ety.is_float() and kind in (mem.AtomicRMWKind.MAX, mem.AtomicRMWKind.MIN):
        # Triton's lowering: integer atomics on the element's bits (templates/helpers/atomic_cas.metal)
        ctx.helpers.add("atomic_cas")
        word = Apply("atomic_ptr", (Lit("uint"), Index(base, off)))
        return Call("km_atomic_fmax" if kind is mem.AtomicRMWKind.MAX else "km_atomic_fmin", (word, v))
    return Call(_INT_FETCH[kind], (_atomic_ptr(base, off, ety), v, Var("memory_order_relaxed")))


@lowers(mem.AtomicCASOp)
def lower_atomic_cas(ctx: LoweringContext, op: mem.AtomicCASOp) -> None:
    p = ctx.ptr(op.ptr)
    cmp = ctx.reg(op.cmp)
    val = ctx.reg(op.value)
    ety = element_type(op.result.type)
    assert isinstance(ety, ScalarType)
    _check_atomic_type(ctx, ety, "atomic_cas")
    buf = p.buffer
    assert buf.output_name is not None
    check_view_atomic(ctx, buf, "atomic_cas")
    out = buffer_ref(ctx, buf, buf.output_name)
    if ety.name in HALF_WORD:
        if buf.relative:
            name = _relative_atomic(ctx, ety, "cas", "xor")
            _atomic(ctx, op, p, None, lambda off, r: Call(name, (  # type: ignore[arg-type]
                *_half_word(out, off), _reg_at(cmp, r), _reg_at(val, r), _old_at(ctx, p, off))))
            return
        ctx.helpers.update(_HALF_WORD_HELPERS)
        name = f"km_atomic16_cas_{msl_type(ety)}"
        _atomic(ctx, op, p, None, lambda off, r: Call(
            name, (*_half_word(out, off), _reg_at(cmp, r), _reg_at(val, r))))  # type: ignore[arg-type]
        return
    ctx.helpers.add("atomic_cas_op")
    ctx.cas_types.add(msl_type(ety))

    def cas(off: Expr, r: int) -> Expr:
        c, v = _reg_at(cmp, r), _reg_at(val, r)
        assert c is not None and v is not None
        c, v = _encode(ctx, p, off, c, ety), _encode(ctx, p, off, v, ety)
        if ety.name == "f32":  # compared as bit patterns, as GPUs compare (-0.0 is not 0.0, a NaN matches itself)
            call = Call("km_atomic_cas_float", (Apply("atomic_ptr", (Lit("uint"), Index(out, off))), c, v))
        else:
            call = Call("km_atomic_cas", (_atomic_ptr(out, off, ety), c, v))
        return _decode(ctx, p, off, call, ety)

    _atomic(ctx, op, p, None, cas)


@lowers(mem.AtomicPollOp)
def lower_atomic_poll(ctx: LoweringContext, op: mem.AtomicPollOp) -> None:
    """`km_atomic_poll` (templates/helpers/atomic_poll.metal) on the 32-bit word holding the
    element. Without a timeout every thread polls until the value matches, so each thread's own
    accesses after it wait (and need no scratch memory); the result is true. With one, thread 0
    polls within the budget and hands the result to the others, so the program sees one answer."""
    p = ctx.ptr(op.ptr)
    ety = element_type(op.expected.type)
    assert isinstance(ety, ScalarType) and p.buffer.output_name is not None
    check_view_atomic(ctx, p.buffer, "tl.atomic_poll")
    out = buffer_ref(ctx, p.buffer, p.buffer.output_name)
    off = p.offsets[0]
    want = _reg_at(ctx.reg(op.expected), 0)
    assert want is not None
    # an output kept relative to its array's contents (the MLX path) holds each element encoded:
    # the bits to wait for are the expected value's encoding (a bijection of the bits)
    want = _encode(ctx, p, off, want, ety)
    if ety.bitwidth == 16:
        word, shift = _half_word(out, off)
        bits: Expr = Convert("uint", Reinterpret("ushort", want))
        mask = Lit("0xFFFFu")
    else:
        word, shift = Apply("atomic_ptr", (Lit("uint"), Index(out, off))), Lit("0u")
        bits, mask = Reinterpret("uint", want), Lit("0xFFFFFFFFu")
    ctx.helpers.add("atomic_poll")
    acquires = op.sem in _ACQUIRES
    if op.timeout is None:
        ctx.emit(ExprStmt(Call("km_atomic_poll", (word, shift, mask, bits, Lit("false"), Lit("0")))))
        if acquires:
            _emit_fence(ctx, None)
        ctx.bind(op.result, RegValue(op.result.type, (Lit("true"),), None))
        return
    budget = _reg_at(ctx.reg(op.timeout), 0)
    assert budget is not None
    seen = ctx.fresh()
    ctx.emit(Declare(seen, "bool", None, Lit("false")))
    poll = Assign(Var(seen), Call("km_atomic_poll", (word, shift, mask, bits, Lit("true"), Convert("long", budget))))
    own = Apply("eq", (TID, Lit("0u")))
    ctx.emit(If(own, (poll,)))
    if acquires:
        _emit_fence(ctx, own)
    ctx.bind(op.result, RegValue(op.result.type, (ctx.broadcast_from_thread0(Var(seen), "bool", device=acquires),), None))


def _atomic(ctx: LoweringContext, op: mem.AtomicRMWOp | mem.AtomicCASOp, p: PtrValue, mask: RegValue | None,
            make: object) -> None:
    ety = element_type(op.result.type)
    assert isinstance(ety, ScalarType)
    ctype = msl_type(ety)
    buf = p.buffer
    assert buf.output_name is not None
    dist = p.dist
    used = ctx.is_used(op.result)
    replicated = dist is not None and bool(
        dist.lane_replica_mask or dist.warp_replica_mask or not all(dist.first_registers()))
    own = _hoist(ctx, owner_condition(ctx, dist))
    firsts = dist.first_registers() if dist is not None else (True,)
    n = len(firsts)
    results = ctx.declare_array(ctype, n) if used else ()
    if op.sem in _RELEASES:
        _emit_fence(ctx, own)
    for r, first in enumerate(firsts):
        if not first:
            continue
        off = p.offsets[r] if p.dist is not None else p.offsets[0]
        call = make(off, r)  # type: ignore[operator]
        stmt = Assign(results[r], call) if used else ExprStmt(call)
        cond = _and(own, _reg_at(mask, r))
        if cond is None:
            ctx.emit(stmt)
        else:
            zero = (Assign(results[r], Lit(literal(0, ety))),) if used else ()
            ctx.emit(If(cond, (stmt,), zero))
    acquires = op.sem in _ACQUIRES
    if acquires:
        _emit_fence(ctx, own)
    if used:
        # after an acquiring atomic the barrier that hands its result over orders device memory
        # too, so the threads that read the result also see what the fence made visible
        if dist is None:
            results = (ctx.broadcast_from_thread0(results[0], ctype, device=acquires),)
        elif replicated:
            results = _broadcast_to_replicas(ctx, dist, results, firsts, own, ctype, acquires)
        ctx.bind(op.result, RegValue(op.result.type, results, dist))


_RELEASES = ("release", "acq_rel")
_ACQUIRES = ("acquire", "acq_rel")
"""Triton's `sem` values whose atomics a device-scope fence precedes (release) or follows
(acquire); `relaxed` gets neither."""


def _emit_fence(ctx: LoweringContext, own: Expr | None) -> None:
    """`km_fence_device()` (templates/helpers/device_fence.metal) in the threads that perform
    the atomic: a fence orders the memory accesses of the thread that runs it."""
    ctx.helpers.add("device_fence")
    fence = ExprStmt(Call("km_fence_device", ()))
    ctx.emit(If(own, (fence,)) if own is not None else fence)


def _broadcast_to_replicas(ctx: LoweringContext, dist: Distribution, results: tuple[Expr, ...],
                           firsts: tuple[bool, ...], own: Expr | None, ctype: str,
                           device: bool) -> tuple[Expr, ...]:
    """The old values the owners' atomics returned, in every register holding each element.

    Only one thread and register performs the atomic on an element (it must run once); the
    owners write what it returned into scratch at the element's row-major index, and after a
    barrier every thread reads its registers from there (a second barrier frees the scratch)."""
    from .lower_layout import flat_index  # lower_layout imports this module

    numel = 1
    for s in dist.shape:
        numel *= s
    view = ctx.scratch_view(ctype, ctx.own_scratch(numel * 4))  # atomics take 4-byte types only
    for r, first in enumerate(firsts):
        if first:
            stmt = Assign(Index(view, flat_index(ctx, dist, r)), results[r])
            ctx.emit(If(own, (stmt,)) if own is not None else stmt)
    ctx.emit(Barrier(device=device))
    out = ctx.materialize([Index(view, flat_index(ctx, dist, r)) for r in range(len(firsts))], ctype, force=True)
    ctx.emit(Barrier())
    return out
