"""`LoweringContext`: the state the lowering rules share while one kernel is lowered.

It maps IR values to their per-thread form (`values.Val`), collects statements into the current
body (a stack: one body per nested region being lowered), hoists per-thread coordinate
expressions into the prologue, names temporaries (always `km_` + a number: never an MLX
attribute name, never `<input>_shape`), records which header helpers the body needs and how much
threadgroup scratch it uses, and builds errors located at the op being lowered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from triton_metal.errors import CompilationError, internal_error
from triton_metal.ir import Op, Value
from triton_metal.ir.types import PointerType, ScalarType, TensorType, Type, element_type

from .distribution import Distribution, distribution
from .msl_types import literal, msl_type
from .options import CodegenOptions
from .program import Apply, Assign, Barrier, Body, Declare, Expr, If, Index, Lit, PtrCast, Stmt, Var
from .values import PtrValue, RegValue, Val

LANE = Var("km_lane")
WARP = Var("km_warp")
TID = Var("km_tid")


def round16(n: int) -> int:
    """`n` bytes rounded up to the 16-byte alignment every threadgroup region starts at."""
    return (n + 15) // 16 * 16


class LoweringContext:
    def __init__(self, options: CodegenOptions, kernel_name: str) -> None:
        self.options = options
        self.kernel_name = kernel_name
        self.num_warps = options.num_warps
        self.values: dict[Value, Val] = {}
        self.prologue = Body()
        self._bodies: list[Body] = [Body()]
        self._counter = 0
        self._thread_coords: dict[tuple[Distribution, int], Expr] = {}
        self.asserts: list[dict[str, object]] = []
        """The device asserts lowered so far (code, message, file, line, col, source line)."""
        self.prints: list[dict[str, object]] = []
        """The `tl.device_print` sites lowered so far (prefix, hex, operand types and shapes)."""
        self.helpers: set[str] = set()
        """Names of header helper templates (`templates/helpers/<name>.metal`) the body uses."""
        self.scratch_high_water = 0
        """Bytes of threadgroup scratch the body uses (the highest end offset)."""
        self.current_op: Op | None = None
        self.last_line: tuple[str, int] | None = None
        """The kernel line the last `#line` directive named."""
        self.program_ids: set[int] = set()
        self.int_helper_types: set[str] = set()
        self.float_helper_types: set[str] = set()
        self.float_to_int_types: set[str] = set()
        """MSL integer types that `km_to_<type>` (saturating float conversion) must exist for."""
        self.cas_types: set[str] = set()
        self.relative_types: set[tuple[str, int]] = set()
        """(MSL type, bits) of outputs kept relative to their array's contents."""
        self.relative_keys: set[tuple[str, int]] = set()
        """(MSL type, bits) of outputs held with the "key" encoding."""
        self.relative_atomics: set[tuple[str, str, str]] = set()
        """(MSL type, operation, encoding) of compare-and-swap loops on such outputs."""
        self.vector_inputs: set[str] = set()
        self.reads_output: set[Op] = set()
        """Loads that read their parameter's output (what the program stored before them)."""
        self.reads_stored: set[Op] = set()
        """Other loads that may read what the kernel stored before them (params.py): between
        device-memory barriers, and from the output where it is kept relative."""
        """Inputs read through `const device` vector views (must arrive in device memory)."""
        self.used_values: set[Value] = set()
        """Values some op uses (the driver fills it before lowering)."""
        self.scratch_base = 0
        """Bytes of threadgroup scratch the layout passes allocated (their offsets lie below)."""
        self.own_scratch_bytes = 0
        """Bytes of scratch the lowering itself uses, placed at `scratch_base`."""
        self.scratch_end = 0
        """The end of the scratch the body actually uses (the declaration's size)."""
        self.own_scratch_busy: tuple[int, Op] | None = None
        """Where a carried tensor-op dot left its operands (or factors) in the lowering's own
        region with no barrier after its run (`busy_own_scratch`): the statement depth and the
        dot; None when every use of the region has ended with a barrier."""
        self._managed_ok: dict[Op, bool] = {}
        self.axis_info: Any = None
        """Axis facts per value (`.get(value)` with contiguity, divisibility, constancy), given
        by the caller; None: no vector accesses."""
        self.deferred_reads: list[Stmt] = []
        """Reads of a joined double-buffered conversion, emitted after the next one's barrier."""
        self.dot_sites: list[Any] = []
        """Where each dot lowered on simdgroup matrices put its code (`dot_report.DotSite`)."""
        self.bypassed: set[Op] = set()
        """Operand conversions of tensor-op dots, which stage the operands themselves
        (`lower_tensor_dot.bypassed_conversions`): their results are their sources."""
        self.folded: dict[Op, Value] = {}
        """Ops whose work another op's lowering did: each result is the value given (the add of
        `acc += tl.dot(a, b)` folded into a carried tensor-op accumulation)."""
        self.tensor_accumulators: dict[Op, Any] = {}
        """Dots accumulating into a cooperative tensor a loop carries: the tensor
        (`values.CoopValue`) and the rescale applied to it before each run, if any
        (`lower_tensor_dot.Rescale`)."""
        self.simdgroup_dots: frozenset[Op] = frozenset()
        """Dots the cost rule keeps on simdgroup matrices although tensor ops apply
        (`dot_path.choose_dot_paths`)."""
        self.lower_ops: Callable[[LoweringContext, Sequence[Op]], None] | None = None
        """The driver's op loop (rules lower nested regions, e.g. combine functions, with it)."""

    # -- statements ----------------------------------------------------------------------------
    @property
    def body(self) -> Body:
        return self._bodies[-1]

    def emit(self, stmt: Stmt) -> None:
        self._bodies[-1].add(stmt)

    def copy_replicas(self, dist: Distribution, out: tuple[Expr, ...]) -> None:
        """Registers of `out` that repeat an element another register of the thread holds
        (`dist`) get its value."""
        for r, first in enumerate(dist.first_registers()):
            if not first:
                src = dist.register_of(dist.reg_coords[r])
                assert src is not None
                self.emit(Assign(out[r], out[src]))

    def push(self) -> None:
        self._bodies.append(Body())

    def pop(self) -> tuple[Stmt, ...]:
        return self._bodies.pop().freeze()

    @contextmanager
    def outer(self) -> Iterator[None]:
        """Emit into the enclosing body for a while (storage declared before a loop or branch)."""
        top = self._bodies.pop()
        try:
            yield
        finally:
            self._bodies.append(top)

    def fresh(self) -> str:
        self._counter += 1
        return f"km_{self._counter}"

    # -- values --------------------------------------------------------------------------------
    def bind(self, value: Value, val: Val) -> None:
        self.values[value] = val

    def lookup(self, value: Value) -> Val:
        try:
            return self.values[value]
        except KeyError:
            raise internal_error(f"value {value!r} used before it was lowered") from None

    def reg(self, value: Value) -> RegValue:
        v = self.lookup(value)
        if not isinstance(v, RegValue):
            raise self.error(f"a pointer ({value.type}) is used where a number is expected")
        return v

    def ptr(self, value: Value) -> PtrValue:
        v = self.lookup(value)
        if not isinstance(v, PtrValue):
            raise internal_error(f"value {value!r} is not a pointer")
        return v

    def dist_of(self, ty: Type) -> Distribution | None:
        """The distribution of a tensor type (None for scalars); the layout must be assigned."""
        if not isinstance(ty, TensorType):
            return None
        if ty.layout is None:
            raise internal_error(
                f"tensor {ty} reached the code generator without a layout (run the layout passes first)"
            )
        return distribution(ty.layout, ty.shape, self.num_warps)

    def materialize(self, exprs: Sequence[Expr], ctype: str, force: bool = False) -> tuple[Expr, ...]:
        """Store computed expressions in a fresh variable (an array for tensors) and return
        expressions reading it; plain variables and literals are kept as they are."""
        if not force and all(isinstance(e, (Var, Lit, Index)) for e in exprs):
            return tuple(exprs)
        name = self.fresh()
        if len(exprs) == 1 and not force:
            self.emit(Declare(name, ctype, None, exprs[0]))
            return (Var(name),)
        self.emit(Declare(name, ctype, len(exprs)))
        out = []
        for i, e in enumerate(exprs):
            target = Index(Var(name), Lit(str(i)))
            self.emit(Assign(target, e))
            out.append(target)
        return tuple(out)

    def declare_array(self, ctype: str, count: int) -> tuple[Expr, ...]:
        """A fresh uninitialised register array (loop-carried and branch results)."""
        name = self.fresh()
        self.emit(Declare(name, ctype, count))
        return tuple(Index(Var(name), Lit(str(i))) for i in range(count))

    def const(self, value: bool | int | float, ty: ScalarType) -> Lit:
        return Lit(literal(value, ty))

    # -- coordinates ---------------------------------------------------------------------------
    def thread_coord(self, dist: Distribution, dim: int) -> Expr | None:
        """This thread's part of coordinate `dim` (hoisted into the prologue; None when zero)."""
        key = (dist, dim)
        if key not in self._thread_coords:
            terms = dist.thread_terms(dim)
            expr: Expr | None = None
            for which, shift, mask, scale in terms:
                src: Expr = LANE if which == "lane" else WARP
                if shift:
                    src = Apply("shr_raw", (src, Lit(f"{shift}u")))
                if mask != (31 >> shift if which == "lane" else (self.num_warps - 1) >> shift):
                    src = Apply("and", (src, Lit(f"{mask}u")))
                if scale != 1:
                    src = Apply("mul", (src, Lit(f"{scale}u")))
                expr = src if expr is None else Apply("add", (expr, src))
            if expr is not None:
                name = self.fresh()
                self.prologue.add(Declare(name, "int", None, Apply("cast_int", (expr,)), const=True))
                expr = Var(name)
            self._thread_coords[key] = expr
        return self._thread_coords[key]

    def coord(self, dist: Distribution, reg: int, dim: int) -> Expr:
        """Coordinate `dim` of the element register `reg` holds (an int expression)."""
        base = dist.reg_coords[reg][dim]
        t = self.thread_coord(dist, dim)
        if t is None:
            return Lit(str(base))
        return t if base == 0 else Apply("add", (t, Lit(str(base))))

    def is_used(self, value: Value) -> bool:
        return value in self.used_values

    # -- threadgroup scratch -------------------------------------------------------------------
    def scratch_view(self, ctype: str, byte_offset: int) -> Expr:
        """A `threadgroup ctype*` view of the scratch at `byte_offset`."""
        return PtrCast("threadgroup", ctype, Var("km_smem"), byte_offset)

    def own_scratch(self, nbytes: int) -> int:
        """Scratch for a lowering that brackets its use with barriers (so uses may share it).
        Where a carried tensor-op dot left the region busy, a barrier comes first."""
        if self.own_scratch_busy is not None:
            self.emit(Barrier())
            if len(self._bodies) == self.own_scratch_busy[0]:
                self.own_scratch_busy = None  # (a barrier in a branch or a nested loop may not run)
        self.own_scratch_bytes = max(self.own_scratch_bytes, round16(nbytes))
        self.scratch_end = max(self.scratch_end, self.scratch_base + self.own_scratch_bytes)
        return self.scratch_base

    def op_scratch(self, op: Op, nbytes: int) -> int:
        """The scratch offset for `op`: the layout passes' allocation when the op carries one
        (checked to be large enough), else the lowering's own region."""
        offset = getattr(op, "smem_offset", None)
        size = getattr(op, "smem_bytes", None)
        if offset is not None and size is not None and size >= nbytes:
            self.scratch_end = max(self.scratch_end, int(offset) + round16(nbytes))
            self._managed_ok[op] = True
            return int(offset)
        self._managed_ok[op] = False
        return self.own_scratch(nbytes)

    def busy_own_scratch(self, dot: Op | None) -> None:
        """Mark the lowering's own region as still read by other SIMD groups (`dot`) or free
        (None). A carried tensor-op dot that alternates its staging between two sets there leaves
        no barrier after its run: its next staging writes the other set, and the one after
        writes this set only after its own staging barrier. Any other use of the region, later
        in the iteration or before the dot in the next one, waits for a barrier first
        (`own_scratch`)."""
        self.own_scratch_busy = None if dot is None else (len(self._bodies), dot)

    def stages_again(self, dot: Op) -> None:
        """A carried dot stages its next iteration: its own mark goes, as that staging writes the
        set its previous run did not read; another dot's stays, so the staging waits for a
        barrier (`own_scratch`)."""
        if self.own_scratch_busy is not None and self.own_scratch_busy[1] is dot:
            self.own_scratch_busy = None

    def scratch_done(self, op: Op) -> None:
        """End an op's use of scratch: a barrier, unless the layout passes manage the op's scratch
        (they put a `ttg.barrier` where it is reused). Uses of the lowering's own region all end
        with this barrier, so none needs one before it starts."""
        if not self._managed_ok.get(op, False):
            self.emit(Barrier())

    def broadcast_from_thread0(self, value: Expr, ctype: str, device: bool = False) -> Expr:
        """Thread 0's `value` in every thread (through scratch, between barriers; `device`: the
        first barrier also orders device memory)."""
        off = self.own_scratch(8)
        view = self.scratch_view(ctype, off)
        self.emit(If(Apply("eq", (TID, Lit("0u"))), (Assign(Index(view, Lit("0")), value),)))
        self.emit(Barrier(device=device))
        name = self.fresh()
        self.emit(Declare(name, ctype, None, Index(view, Lit("0"))))
        self.emit(Barrier())
        return Var(name)

    # -- errors --------------------------------------------------------------------------------
    def error(self, message: str, hint: str | None = None, op: Op | None = None) -> CompilationError:
        op = op if op is not None else self.current_op
        return CompilationError(message, op.loc if op is not None else None, hint, self.kernel_name)


def ctype_of(ty: Type) -> str:
    el = element_type(ty)
    if isinstance(el, PointerType):
        raise internal_error(f"pointer type {ty} has no register type")
    return msl_type(el)
