"""Which kernel parameters are read, written or updated atomically, and the buffers they become.

A pointer parameter reaches loads, stores and atomics through pointer arithmetic, splats, shape
ops, selects and loop-carried values; this module follows those to find, per parameter, how the
kernel uses it, and names its metal_kernel input (`<param>_in`) and output (`<param>_out`). The
suffixes keep every name clear of MLX's `<input>_shape/_strides/_ndim` detection and of MSL
keywords.

A load of a parameter that the kernel may have stored to before it (a store earlier in program
order, or one later in a loop around both) reads what was stored, as in place. Where the compiler
can see that every element it reads was stored before it by the program itself (every earlier
store to the parameter uses the load's very pointer value, and one of them dominates the load
with no mask or the load's own mask), the load reads the output (after a device-memory barrier,
so a replicated element stored by its owner thread is visible to the other threads holding it);
`ParamUse.reads_output` lists it. Any other such load reads the parameter's input, which is the
output's own memory where arrays are updated in place (the emulator's NumPy buffers, torch
tensors); the Metal driver, whose outputs are fresh arrays, runs such a parameter relative to
its array's contents instead, where loads read the output (docs/runtime.md, "Exact in-place
memory"). Every load of such a parameter (`ParamUse.reads_stored`) sits between two
device-memory barriers: the stores before it are visible to every thread of the program, and no
store after it overtakes it.
A parameter updated by atomics is different: its loads read the output, the memory the atomics
(and stores) update, so locks and counters work; the runtime must start that output with the
array's contents (`MSLKernel.metadata["atomics"]`). So is a parameter both loaded and stored in a
kernel that uses the value an atomic returns (programs that wait for each other, e.g. through a
spin lock, read what other programs stored under the lock): it is "live", bound like an atomic
parameter (kind `pointer_atomic`, no input, listed in the atomics metadata with no kinds).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from triton_metal.errors import CompilationError
from triton_metal.ir import BlockArgument, Op, Value
from triton_metal.ir.ops import scf, tt_debug
from triton_metal.ir.ops import tt_memory as mem
from triton_metal.ir.pointers import pointer_roots
from triton_metal.ir.types import PointerType, ScalarType, element_type

from .kernel import ParamBinding
from .msl_types import mlx_type
from .values import Buffer


@dataclass
class ParamUse:
    arg: BlockArgument
    loaded: bool = False
    stored: bool = False
    atomic: bool = False
    atomic_kinds: set[str] = field(default_factory=set)
    polled: bool = False
    """An `atomic_poll` reads it (comparing the bits it holds)."""
    atomic_result_used: bool = False
    live: bool = False
    """Loaded and stored in a kernel whose programs synchronize through atomics (a lock): its
    loads must see other programs' stores, so they read the output, as for atomics."""
    stores: list[Op] = field(default_factory=list)
    """The stores to it met so far in program order (while analysing)."""
    reads_output: set[Op] = field(default_factory=set)
    """Loads that read what the program itself stored earlier (module docstring)."""
    reads_stored: set[Op] = field(default_factory=set)
    """When another load may read what the kernel stored before it, every load of the parameter
    but `reads_output` (module docstring)."""
    reinterpreted: bool = False
    """Stored to or loaded from through a pointer of another element size, or updated
    atomically through a pointer of another element type (`ptr.to(tl.pointer_type(T))`): its
    written masks, which count the array's elements, and its host-side combines, which apply the
    array's type, do not describe such writes, and only the bytewise encoding decodes alike
    whatever size a load reads, so the Metal path keeps it relative ("xor", bytewise)."""


def sanitize(name: str) -> str:
    """An ASCII C identifier from a Python one."""
    out = re.sub(r"[^A-Za-z0-9_]", lambda m: f"u{ord(m.group(0)):x}", name)
    return out if out and not out[0].isdigit() else "p" + out


def analyse_params(func: Op, kernel: str) -> dict[BlockArgument, ParamUse]:
    root = pointer_roots(func)
    uses = {a: ParamUse(a) for a in func.body.block.args}  # type: ignore[attr-defined]
    used_values = {v for op in func.walk() for v in op.operands}
    atomics = [op for op in func.walk() if isinstance(op, (mem.AtomicRMWOp, mem.AtomicCASOp)) and op.ptr in root]
    polls = [op for op in func.walk() if isinstance(op, mem.AtomicPollOp) and op.ptr in root]
    atomic_params = {root[op.ptr] for op in atomics} | {root[op.ptr] for op in polls}
    # an atomic whose returned value is used lets programs wait for each other (a spin lock, a
    # counter), as a poll does: then a plain array both loaded and stored may be read after
    # another program's stores, and its loads must read the memory the stores update
    synchronized = bool(polls) or any(op.result in used_values for op in atomics)
    loaded = {root[op.ptr] for op in func.walk() if isinstance(op, mem.LoadOp) and op.ptr in root}
    stored = {root[op.ptr] for op in func.walk() if isinstance(op, mem.StoreOp) and op.ptr in root}
    live = (loaded & stored) - atomic_params if synchronized else set()
    for arg in live:
        uses[arg].live = True
    all_stores: dict[BlockArgument, list[Op]] = {}
    for op in func.walk():
        if isinstance(op, mem.StoreOp) and op.ptr in root:
            all_stores.setdefault(root[op.ptr], []).append(op)
    for op in func.walk():
        if isinstance(op, mem.LoadOp) and op.ptr in root:
            u = uses[root[op.ptr]]
            # an atomic or live parameter's loads read its output anyway; what this adds for them
            # is the order: a load of what other threads of the program stored waits for them
            if reads_own_stores(op, u.stores):
                u.reads_output.add(op)
            elif u.stores or any(shares_loop(s, op) for s in all_stores.get(u.arg, ())):
                u.reads_stored.add(op)
            u.loaded = True
            # a load of another size decodes whole elements of its own type: only the bytewise
            # encoding decodes alike whatever the size ("sub" carries across the array's words)
            u.reinterpreted |= _other_size(op.ptr, root)
        elif isinstance(op, mem.StoreOp) and op.ptr in root:
            u = uses[root[op.ptr]]
            u.stored = True
            u.stores.append(op)
            u.reinterpreted |= _other_size(op.ptr, root)
        elif isinstance(op, (mem.AtomicRMWOp, mem.AtomicCASOp)) and op.ptr in root:
            u = uses[root[op.ptr]]
            u.atomic = True
            u.reinterpreted |= _pointee(op.ptr) != _pointee(u.arg)
            # float and integer addition combine alike on the host (`add`)
            kind = "cas" if not isinstance(op, mem.AtomicRMWOp) else (
                "add" if op.kind is mem.AtomicRMWKind.FADD else op.kind.value)
            u.atomic_kinds.add(kind)
            u.atomic_result_used |= op.result in used_values
        elif isinstance(op, mem.AtomicPollOp) and op.ptr in root:
            # read atomically from the memory other programs update (its output), written by none
            # of the poll's own threads: an atomic parameter of no kind
            u = uses[root[op.ptr]]
            u.atomic = True
            u.atomic_result_used = True
            u.polled = True
    for u in uses.values():
        if u.reads_stored:  # every load of it is ordered: on the MLX path each reads the output
            u.reads_stored |= {op for op in func.walk() if isinstance(op, mem.LoadOp) and op.ptr in root
                               and root[op.ptr] is u.arg and op not in u.reads_output}
    for op in func.walk():  # a pointer only printed is still read: its address is what prints
        if isinstance(op, tt_debug.PrintOp):
            for v in op.args:
                u = uses[root[v]] if v in root else None
                if u is not None and not (u.loaded or u.stored or u.atomic):
                    u.loaded = True
    return uses


def _pointee(ptr: Value) -> object:
    el = element_type(ptr.type)
    assert isinstance(el, PointerType)
    return el.pointee


def _other_size(ptr: Value, root: dict[Value, BlockArgument]) -> bool:
    """`ptr` sees its array's bytes as elements of another size (`ptr.to(tl.pointer_type(T))`)."""
    return _element_bytes(ptr) != _element_bytes(root[ptr])


def _element_bytes(ptr: Value) -> int:
    """Bytes per element of what `ptr` points to (int1 is stored as a byte)."""
    pointee = _pointee(ptr)
    return max(1, pointee.bitwidth // 8) if isinstance(pointee, ScalarType) else 0


def loads_after_writes(func: Op) -> tuple[tuple[str, str], ...]:
    """(loaded parameter, written parameter) pairs of distinct pointer parameters where a load of
    the first may follow a store or atomic of the second (earlier in program order, or in a
    loop around both). Passed one array, the load would read the write in place; the Metal path
    gives each written parameter its own output, so the runtime refuses such a launch."""
    root = pointer_roots(func)
    order = {op: k for k, op in enumerate(func.walk())}
    loads: list[tuple[Op, BlockArgument]] = []
    writes: list[tuple[Op, BlockArgument]] = []
    for op in order:
        if isinstance(op, mem.LoadOp) and op.ptr in root:
            loads.append((op, root[op.ptr]))
        elif isinstance(op, (mem.StoreOp, mem.AtomicRMWOp, mem.AtomicCASOp)) and op.ptr in root:
            writes.append((op, root[op.ptr]))
    pairs = {
        (a.name_hint or "", b.name_hint or "")
        for load, a in loads for write, b in writes
        if a is not b and (order[write] < order[load] or shares_loop(write, load))
    }
    return tuple(sorted(pairs))


def reads_own_stores(load: Op, stores: list[Op]) -> bool:
    """Whether every element `load` reads was stored earlier by the program itself: every store
    so far uses the load's pointer value, and one that dominates it has no mask or its mask."""
    if not stores or any(s.ptr is not load.ptr for s in stores):  # type: ignore[attr-defined]
        return False
    return any(
        (s.mask is None or s.mask is load.mask) and dominates(s, load)  # type: ignore[attr-defined]
        for s in stores
    )


def shares_loop(a: Op, b: Op) -> bool:
    """Whether `a` and `b` sit in one loop (`scf.for`, `scf.while`): then either may run after
    the other."""
    return bool(_loops_around(a) & _loops_around(b))


def _loops_around(op: Op) -> set[Op]:
    found: set[Op] = set()
    block = op.parent
    while block is not None:
        outer = block.parent_op
        if outer is None:
            break
        if isinstance(outer, (scf.ForOp, scf.WhileOp)):
            found.add(outer)
        block = outer.parent
    return found


def dominates(first: Op, later: Op) -> bool:
    """Whether `first` runs before `later` on every path reaching it (structured regions: `first`
    sits earlier in a block that encloses `later`)."""
    op: Op | None = later
    while op is not None and op.parent is not None:
        block = op.parent
        if first.parent is block:
            return block.index_of(first) < block.index_of(op)
        op = block.parent_op
    return False


def make_buffers(uses: dict[BlockArgument, ParamUse]) -> tuple[dict[BlockArgument, Buffer], list[ParamBinding]]:
    """Buffers for pointer parameters and the bindings of every parameter, in order."""
    buffers: dict[BlockArgument, Buffer] = {}
    bindings: list[ParamBinding] = []
    func_attrs = None
    for arg, u in uses.items():
        name = arg.name_hint or f"arg{arg.index}"
        ident = sanitize(name)
        el = element_type(arg.type)
        if isinstance(el, PointerType):
            pointee = el.pointee
            if not isinstance(pointee, ScalarType):
                raise CompilationError(f"parameter '{name}' points to pointers, which Metal buffers cannot hold")
            written = u.stored or u.atomic
            # loads of an atomically updated (or live) array read its output, the memory the
            # atomics and other programs' stores update
            input_name = f"{ident}_in" if (u.loaded and not u.atomic and not u.live) else None
            output_name = f"{ident}_out" if written else None
            if u.atomic or u.live:
                kind = "pointer_atomic"
            elif u.loaded and u.stored:
                kind = "pointer_inout"
            elif u.stored:
                kind = "pointer_out"
            else:
                kind = "pointer_in"
            buffers[arg] = Buffer(name, pointee, input_name, output_name, shared=u.atomic or u.live)
            bindings.append(ParamBinding(
                name, kind, (input_name,) if input_name else (), (output_name,) if output_name else (),
                mlx_type(pointee),
            ))
        else:
            assert isinstance(el, ScalarType)
            bindings.append(ParamBinding(name, "scalar", (f"{ident}_in",), (), mlx_type(el)))
    del func_attrs
    return buffers, bindings
