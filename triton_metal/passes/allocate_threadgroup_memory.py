"""Threadgroup memory allocation (`allocate-threadgroup-memory`).

Contract: every op that moves data between threads through threadgroup memory gets
`smem_offset`/`smem_bytes` (bytes, offsets 16-aligned) and the module gets
`threadgroup_memory_bytes`, the end of the highest buffer rounded to 16 (0 without scratch). The
ops:
* `ttg.convert_layout` that moves elements between threads (`is_thread_local` false): the whole
  tensor, row-major (`numel * element bytes`; booleans 1 byte, pointers 8), or, for a tensor past
  32 KiB, `STAGE_BYTES`, through which the lowering moves it one row-major piece at a time (in a
  kernel with dots only once it compiles with direct fragment loads, `direct_fragment_io`: the
  first compile's refusal is what sends it there);
* `tt.reduce` whose axis spans several SIMD groups: one partial per result line held, per SIMD
  group and per lane slot (lanes along the axis share one), per operand; past 32 KiB,
  `STAGE_BYTES`, through which the lowering combines the lines a few at a time;
* `tt.gather`: its source, row-major, as a conversion's (in pieces of `STAGE_BYTES` past 32 KiB).
(Other lowerings that need scratch - scans, histograms, staged dot operands - size their own
after this region.)

A buffer is live from the op that writes it to the last op that reads it; each of the ops above
writes and reads its buffer inside itself, so its live range is that op. Buffers whose live
ranges do not overlap may share bytes: the allocator places buffers, largest first, at the
lowest 16-aligned offset that does not collide with an already placed buffer whose range
overlaps. To spare barriers, each buffer is first kept live until the next scratch op of its
block (in program order; the end of the block when none follows there), so consecutive scratch
ops get disjoint bytes and `insert-barriers` needs no barrier between them, and the last scratch
op of a loop body stays apart from the first (the operands of a dot in a K loop: one barrier
each per K step, none between iterations); when that takes more than 16 KiB
(`SPARE_BARRIERS_LIMIT`: threadgroup memory costs occupancy), only the buffers of ops in loop
bodies are kept live so (those spare a barrier every iteration), and when that too takes more,
buffers live only inside their op. Over 32 KiB (`THREADGROUP_MEMORY_BYTES`) the kernel is
refused with `OutOfResources` naming the bytes, the ops and a fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from ..chip import THREADGROUP_MEMORY_BYTES
from ..errors import OutOfResources
from ..ir import Module, Op
from ..ir.layouts import WARP_SIZE, is_thread_local, linear_layout
from ..ir.types import PointerType, ScalarType, TensorType
from .pass_base import ModulePass, PassContext, register_pass

SPARE_BARRIERS_LIMIT = 16384
"""Up to this many bytes, buffers stay live until the next scratch op (fewer barriers); more
threadgroup memory per program would cost occupancy, so beyond it buffers share."""
STAGE_BYTES = 16384
"""A conversion whose tensor exceeds the threadgroup memory limit moves in pieces of this size."""
ALIGN = 16
_LOOPS = ("scf.for", "scf.while")


def _round(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def element_bytes(ty: TensorType) -> int:
    el = ty.element
    if isinstance(el, PointerType):
        return 8
    assert isinstance(el, ScalarType)
    return max(1, el.bitwidth // 8)


def scratch_bytes(op: Op, num_warps: int, stage: bool = True) -> int:
    """Bytes of threadgroup memory `op` needs (0: none); `stage`: a conversion past the limit
    moves in `STAGE_BYTES` pieces (else it asks for the whole tensor, and is refused)."""
    if op.name in ("ttg.convert_layout", "tt.gather"):
        src, dst = op.operands[0].type, op.results[0].type
        assert isinstance(src, TensorType) and isinstance(dst, TensorType)
        if src.layout is None or dst.layout is None:
            return 0
        if op.name == "ttg.convert_layout" and is_thread_local(src.layout, dst.layout, src.shape, num_warps):
            return 0
        full = _round(src.numel * element_bytes(src))
        # past the limit the lowering stages the tensor through a smaller buffer, piece by piece
        return full if full <= THREADGROUP_MEMORY_BYTES or not stage else STAGE_BYTES
    if op.name == "tt.reduce":
        src = op.operands[0].type
        assert isinstance(src, TensorType)
        if src.layout is None:
            return 0
        axis = op.axis  # type: ignore[attr-defined]
        ll = linear_layout(src.layout, src.shape, num_warps)
        _, lanes, warps = ll._wrapped_bases
        if not any(b[axis] for b in warps):
            return 0  # the axis stays inside each SIMD group
        # one partial per result line held, per SIMD group, per lane slot: lanes along the axis
        # (when their bits are consecutive) share a slot, the others keep their own
        bits = [i for i, b in enumerate(lanes) if b[axis]]
        slots = WARP_SIZE >> len(bits) if bits and bits == list(range(bits[0], bits[0] + len(bits))) else WARP_SIZE
        lines = {ll.coords(0, 0, r)[:axis] + ll.coords(0, 0, r)[axis + 1:] for r in range(ll.registers)}
        per_line = [num_warps * slots * element_bytes(v.type) for v in op.operands]  # type: ignore[arg-type]
        total = sum(_round(len(lines) * n) for n in per_line)
        # past the limit the lowering combines the lines a few at a time through STAGE_BYTES (or
        # the scratch of one line, where that is more)
        if total <= THREADGROUP_MEMORY_BYTES or not stage:
            return total
        return max(STAGE_BYTES, sum(_round(n) for n in per_line))
    return 0


@dataclass(frozen=True)
class Buffer:
    """A scratch buffer: `size` bytes live over op positions `[start, end]`."""

    size: int
    start: int
    end: int


def allocate(buffers: Sequence[Buffer]) -> list[int]:
    """Offsets for `buffers` (same order): largest first, lowest aligned offset free of every
    placed buffer whose live range overlaps."""
    offsets: list[int | None] = [None] * len(buffers)
    order = sorted(range(len(buffers)), key=lambda i: (-buffers[i].size, buffers[i].start, i))
    for i in order:
        b = buffers[i]
        busy = sorted(
            (offsets[j], offsets[j] + buffers[j].size)  # type: ignore[operator]
            for j in range(len(buffers))
            if offsets[j] is not None and buffers[j].start <= b.end and b.start <= buffers[j].end
        )
        at = 0
        for lo, hi in busy:
            if at + b.size <= lo:
                break
            at = max(at, _round(hi))
        offsets[i] = at
    return [o for o in offsets if o is not None]


def _positions(func: Op) -> dict[Op, int]:
    return {op: i for i, op in enumerate(func.walk())}


def _spare_ends(users: Sequence[Op], pos: dict[Op, int]) -> list[int]:
    """Where each buffer's extended live range ends: at the next scratch op inside its own block,
    else at the end of that block. In a loop body the last scratch op's buffer then stays apart
    from the body's first (the next iteration's first writes need no barrier either) without
    colliding with scratch ops after the loop, which do not overlap the loop's positions."""
    ends = []
    for i, op in enumerate(users):
        block = op.parent
        last = max((pos[o] for o in block.walk()), default=pos[op]) if block is not None else pos[op]
        nxt = pos[users[i + 1]] if i + 1 < len(users) else None
        ends.append(nxt if nxt is not None and nxt <= last else last)
    return ends


@register_pass
@dataclass(frozen=True)
class AllocateThreadgroupMemory(ModulePass):
    """Give scratch-needing ops their offsets (see the module docstring)."""

    name: ClassVar[str] = "allocate-threadgroup-memory"

    def apply(self, ctx: PassContext | None, module: Module) -> None:
        num_warps = int(module.attributes.get("num_warps", 4))
        # A kernel with dots first tries staged dot operands whole, and on a refusal compiles
        # again with direct fragment loads and stores (runtime/compiler.py); only that second
        # form, or a kernel without dots, stages big conversions in pieces.
        stage = "direct_fragment_io" in module.attributes or not any(
            op.name in ("tt.dot", "tt.dot_scaled") for func in module.funcs for op in func.walk())
        total = 0
        for func in module.funcs:
            end = _allocate_func(func, num_warps, stage)
            doubled = [op for op in func.walk() if getattr(op, "double_buffer", None)]
            if end > THREADGROUP_MEMORY_BYTES and doubled:
                # two buffers per staged operand do not fit: stage them one at a time
                for op in doubled:
                    op.double_buffer = op.joined = None  # type: ignore[attr-defined]
                end = _allocate_func(func, num_warps, stage)
            if end > THREADGROUP_MEMORY_BYTES:
                users = [op for op in func.walk() if getattr(op, "smem_bytes", None)]
                needs = ", ".join(f"{op.name} at {op.loc} needs {_size(op)}" if op.loc
                                  else f"{op.name} needs {_size(op)}" for op in users)
                raise OutOfResources(
                    _round(end), THREADGROUP_MEMORY_BYTES,
                    f"threadgroup memory in bytes of '{getattr(func, 'sym_name', '?')}' ({needs}; use smaller "
                    f"BLOCK sizes or fewer num_warps)")
            total = max(total, _round(end))
        module.attributes["threadgroup_memory_bytes"] = total


def _size(op: Op) -> int:
    """The bytes an allocated op takes (both buffers of a double-buffered one)."""
    doubled = getattr(op, "smem_alt_offset", None) is not None
    return int(op.smem_bytes) * (2 if doubled else 1)  # type: ignore[attr-defined]


def _allocate_func(func: Op, num_warps: int, stage: bool) -> int:
    """Place the scratch buffers of one function; returns the end of the highest."""
    pos = _positions(func)
    users: list[Op] = []
    sizes: list[int] = []
    for op in func.walk():
        size = scratch_bytes(op, num_warps, stage)
        if size:
            users.append(op)
            sizes.append(size)
        elif op.name in ("ttg.convert_layout", "tt.reduce", "tt.gather"):
            op.smem_offset = op.smem_bytes = None  # type: ignore[attr-defined]
        if op.name == "ttg.convert_layout":
            op.smem_alt_offset = None  # type: ignore[attr-defined]
    doubled = [bool(getattr(op, "double_buffer", None)) for op in users]
    # First try: each buffer stays live until the next scratch op, so consecutive scratch ops use
    # disjoint bytes and need no barrier between them. Over 16 KiB: buffers live only inside
    # their op. Double-buffered operands take twice their bytes, live from the start of the
    # function to the end of their outermost loop: no other op in or before it touches them.
    starts = [pos[op] for op in users]
    ends = _spare_ends(users, pos)
    # Over 16 KiB, a second try keeps the extended ranges of loop bodies only (those spare a
    # barrier every iteration; one outside a loop spares one in all), then buffers live only
    # inside their op.
    looped = [bool(_loops_around(op)) for op in users]
    tries = (ends, [b if inside else a for a, b, inside in zip(starts, ends, looped)], starts)
    for live_ends in tries:
        buffers = [_buffer(op, n, a, b, d, pos) for op, n, a, b, d in zip(users, sizes, starts, live_ends, doubled)]
        offsets = allocate(buffers)
        if max((off + b.size for b, off in zip(buffers, offsets)), default=0) <= SPARE_BARRIERS_LIMIT:
            break
    for op, n, d, off in zip(users, sizes, doubled, offsets):
        op.smem_offset, op.smem_bytes = off, n  # type: ignore[attr-defined]
        if d:
            op.smem_alt_offset = off + _round(n)  # type: ignore[attr-defined]
    return max((off + b.size for b, off in zip(buffers, offsets)), default=0)


def _loops_around(op: Op) -> list[Op]:
    """The loops whose bodies hold `op`, innermost first."""
    loops: list[Op] = []
    parent = op.parent.parent_op if op.parent is not None else None
    while parent is not None:
        if parent.name in _LOOPS:
            loops.append(parent)
        parent = parent.parent.parent_op if parent.parent is not None else None
    return loops


def _buffer(op: Op, size: int, start: int, end: int, doubled: bool, pos: dict[Op, int]) -> Buffer:
    if not doubled:
        return Buffer(size, start, end)
    # both buffers, theirs from the function's start to the end of the outermost loop around the
    # op (a K loop inside a persistent loop: no epilogue of one tile shares them with the next)
    loops = _loops_around(op)
    outer = loops[-1] if loops else None
    last = max((pos[o] for o in outer.walk()), default=end) if outer is not None else end
    return Buffer(2 * _round(size), 0, max(last, end))
