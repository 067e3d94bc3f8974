"""Static report of a kernel's memory accesses, and the bytes a launch moves.

    report = analyze_memory_access(kernel, x, y, out, n, BLOCK=1024)
    print(report)              # one row per tl.load / tl.store / atomic
    report.to_dict()

The kernel is compiled for the sample arguments exactly as a launch would compile it (NumPy or
MLX arrays, or dtypes standing for arrays, as `kernel.warmup` takes them; constexprs and
`num_warps` as keywords). Every fact comes from the compiler's own analyses of the laid-out IR:

* *pattern*: from axis info of the pointer: `contiguous` (runs of consecutive addresses along a
  dimension), `broadcast` (every lane the same address), otherwise `strided` with the element
  stride along the layout's fastest dimension (`ir_facts.element_strides`, using the sample's
  scalar values), or `gather` (addresses computed from data or by division);
* *layout*: the layout the layout passes gave the access; *vector width*: what the code
  generator will emit for it (`codegen.lower_memory.vector_width`, the same function);
* *coalesced*: consecutive lanes touch consecutive addresses along the layout's fastest
  dimension (or one address for all);
* *bytes per program*: elements x element size per execution, masked-off lanes included (an
  upper bound), times the loop trips the sample's scalars fix;
* *advice* when an access is not coalesced or not vectorized, naming the cause.

`launch_bytes(module, num_warps, args, grid)` sums the accesses of one launch (loop trips
evaluated per program where they depend on the program id); the profiler uses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ..ir import Module, Op, Value
from ..ir.layouts import BlockLayout, CoalescedLayout, DotOperandLayout, Layout
from ..ir.types import PointerType, ScalarType, TensorType, element_type
from .ir_facts import ScalarEnv, Unknown, base_argument, element_strides, eval_scalar, trip_count

MEMORY_OPS = {"tt.load": "load", "tt.store": "store", "tt.atomic_rmw": "atomic_rmw", "tt.atomic_cas": "atomic_cas",
              "tt.atomic_poll": "atomic_poll"}
"""The ops that touch device memory; a poll counts as one read (how many it takes is not known)."""
CACHE_LINE_BYTES = 128
"""Apple GPUs' global cache line (metal.md section 1.1)."""
MAX_PROGRAMS_EVALUATED = 4096
MAX_LOOP_ITERATIONS = 1 << 16


@dataclass(frozen=True)
class AccessReport:
    kind: str
    """"load", "store", "atomic_rmw", "atomic_cas" or "atomic_poll"."""
    argument: str | None
    """The kernel parameter the pointer comes from."""
    line: int | None
    source: str
    shape: tuple[int, ...]
    dtype: str
    element_bytes: int
    pattern: str
    """"contiguous", "strided", "broadcast", "gather" or "scalar"."""
    dim: int | None
    """The dimension the pattern describes (the layout's fastest, or the contiguous one)."""
    stride: int | None
    """Elements between neighbouring indices along `dim` (1 for contiguous, 0 for broadcast)."""
    contiguity: int
    layout: str
    vector_width: int
    coalesced: bool
    masked: bool
    bytes_per_execution: int
    executions_per_program: int | None
    """Loop trips around the access for program 0 of the sample (None: not fixed by it)."""
    advice: str = ""

    @property
    def bytes_per_program(self) -> int | None:
        if self.executions_per_program is None:
            return None
        return self.bytes_per_execution * self.executions_per_program


@dataclass
class MemoryReport:
    kernel: str
    num_warps: int
    accesses: list[AccessReport] = field(default_factory=list)

    @property
    def bytes_per_program(self) -> int | None:
        total = 0
        for a in self.accesses:
            b = a.bytes_per_program
            if b is None:
                return None
            total += b
        return total

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel, "num_warps": self.num_warps,
            "bytes_per_program": self.bytes_per_program,
            "accesses": [dict(asdict(a), bytes_per_program=a.bytes_per_program) for a in self.accesses],
        }

    def __str__(self) -> str:
        header = f"memory accesses of {self.kernel} (num_warps={self.num_warps})"
        rows = [("line", "op", "arg", "pattern", "vec", "coalesced", "bytes/program", "layout")]
        for a in self.accesses:
            pattern = a.pattern if a.pattern != "strided" else f"strided ({a.stride})"
            if a.dim is not None and len(a.shape) > 1 and a.pattern != "broadcast":
                pattern += f" dim {a.dim}"
            per = a.bytes_per_program
            rows.append((
                str(a.line or "?"), a.kind, a.argument or "?", pattern, str(a.vector_width),
                "yes" if a.coalesced else "NO", "?" if per is None else str(per), a.layout,
            ))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = [header]
        for r in rows:
            lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        for a in self.accesses:
            if a.advice:
                lines.append(f"line {a.line or '?'} ({a.kind} {a.argument or '?'}): {a.advice}")
        return "\n".join(lines)


# -- analysis of one access ------------------------------------------------------------------------


class _AxisContext:
    """What `vector_width` reads from the code generator's lowering context."""

    def __init__(self, axis_info: Any, num_warps: int) -> None:
        self.axis_info = axis_info
        self.num_warps = num_warps


def _short_layout(layout: Layout | None) -> str:
    if layout is None:
        return "scalar"
    if isinstance(layout, CoalescedLayout):
        return (f"coalesced spt={list(layout.size_per_thread)} tpw={list(layout.threads_per_warp)} "
                f"wpc={list(layout.warps_per_cta)} order={list(layout.order)}")
    if isinstance(layout, (BlockLayout, DotOperandLayout)):
        return str(layout)
    return str(layout)


def _fastest_dim(layout: Layout | None, rank: int) -> int:
    if isinstance(layout, CoalescedLayout):
        return layout.order[0]
    return rank - 1


def _source_line(op: Op) -> tuple[int | None, str]:
    import linecache

    loc = op.loc
    if loc is None:
        return None, ""
    return loc.line, linecache.getline(loc.file, loc.line).strip()


def _vector_width(op: Op, layout: Layout | None, shape: tuple[int, ...], num_warps: int,
                  info: Any, ety: ScalarType) -> int:
    if layout is None or op.name not in ("tt.load", "tt.store"):
        return 1
    from ..codegen.distribution import distribution
    from ..codegen.lower_memory import vector_width

    dist = distribution(layout, shape, num_warps)
    vec, _dim = vector_width(_AxisContext(info, num_warps), op, dist, ety)  # type: ignore[arg-type]
    return vec


def analyze_op(op: Op, info: Any, num_warps: int, scalars: Mapping[str, object],
               executions: int | None) -> AccessReport:
    ptr: Value = op.operands[0]
    pt = element_type(ptr.type)
    assert isinstance(pt, PointerType)
    ety = pt.pointee
    eb = max(1, ety.bitwidth // 8) if isinstance(ety, ScalarType) else 8
    dtype = str(ety)
    line, text = _source_line(op)
    kind = MEMORY_OPS[op.name]
    masked = getattr(op, "mask", None) is not None
    argument = base_argument(ptr)
    if not isinstance(ptr.type, TensorType):
        return AccessReport(kind, argument, line, text, (), dtype, eb, "scalar", None, None, 1, "scalar", 1,
                            True, masked, eb, executions)
    shape = tuple(ptr.type.shape)
    rank = len(shape)
    layout = ptr.type.layout
    ai = info.get(ptr)
    fast = _fastest_dim(layout, rank)
    numel = 1
    for s in shape:
        numel *= s
    strides = element_strides(ptr, scalars)
    contiguous_dims = [d for d in range(rank) if ai.contiguity[d] > 1]
    vec = _vector_width(op, layout, shape, num_warps, info, ety) if isinstance(ety, ScalarType) else 1
    advice = ""
    if all(ai.constancy[d] >= shape[d] for d in range(rank)):
        pattern, dim, stride, coalesced = "broadcast", None, 0, True
        advice = ("every lane addresses the same element: load it once as a scalar "
                  "(tl.load(ptr) without a tensor of offsets) and let arithmetic broadcast it")
    elif contiguous_dims:
        dim = fast if fast in contiguous_dims else max(contiguous_dims, key=lambda d: ai.contiguity[d])
        pattern, stride = "contiguous", 1
        coalesced = dim == fast
        if not coalesced:
            advice = (f"memory is contiguous along dim {dim} but the layout's lanes run along dim {fast}: "
                      f"consecutive lanes are {'?' if strides is None else abs(strides[fast])} elements apart; "
                      "the layout was chosen for another access of the same values, so this one pays a "
                      "strided access (load the values in their own layout, or transpose the data)")
    elif strides is not None:
        stride = strides[fast]
        dim = fast
        pattern = "broadcast" if stride == 0 else "strided"
        coalesced = stride == 0 or abs(stride) * eb <= 4  # neighbours still share a word
        if stride != 0:
            advice = (f"stride {stride} elements ({abs(stride) * eb} bytes) between neighbouring lanes along "
                      f"dim {fast}: each lane touches its own {CACHE_LINE_BYTES}-byte line and no vector "
                      "access is possible; make that dimension unit-stride in memory (pass a contiguous "
                      "or transposed copy) or swap the roles of the dimensions in the offsets")
        else:
            advice = "every lane along this dimension addresses the same element (a broadcast)"
    else:
        pattern, dim, stride, coalesced = "gather", fast, None, False
        if _depends_on_load(ptr):
            advice = ("addresses are computed from loaded data (a gather), so each lane issues its own "
                      "transaction; sort or bucket the indices so neighbouring lanes read neighbouring elements")
        else:
            advice = ("the offsets pass through an operation axis info cannot follow (a division or "
                      "remainder such as `% N`), so no lane is known to be next to another; if they are "
                      "contiguous in fact, say so: tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)")
    from ..codegen.lower_memory import max_lanes

    max_vec = max_lanes(ety, num_warps) if op.name in ("tt.load", "tt.store") and isinstance(ety, ScalarType) else 1
    if pattern == "contiguous" and coalesced and vec < max_vec and not advice:
        advice = _vector_advice(op, info, ptr, dim or 0, eb, max_vec, vec, layout)
    return AccessReport(
        kind, argument, line, text, shape, dtype, eb, pattern, dim, stride, ai.contiguity[dim or 0],
        _short_layout(layout), vec, coalesced, masked, numel * eb, executions, advice,
    )


def _vector_advice(op: Op, info: Any, ptr: Value, dim: int, eb: int, max_vec: int, vec: int,
                   layout: Layout | None) -> str:
    ai = info.get(ptr)
    want = max_vec * eb
    if isinstance(layout, CoalescedLayout) and layout.size_per_thread[dim] < max_vec:
        spt = layout.size_per_thread[dim]
        if ai.divisibility[dim] < want:
            pass  # the alignment explains it better (below)
        else:
            return (f"each thread holds {spt} consecutive element(s), so accesses are {vec} wide: the block "
                    "is too small for the threads (use fewer num_warps or a larger BLOCK)")
    if ai.divisibility[dim] < want:
        return (f"addresses are only known to be {ai.divisibility[dim]}-byte aligned, so accesses are {vec} "
                f"element(s) wide instead of {max_vec}: pass base pointers 16-byte aligned and row strides "
                f"that are multiples of {max(1, 16 // eb)} elements (the launch then specialises them as "
                "divisible by 16), or add tl.multiple_of")
    if ai.contiguity[dim] < max_vec:
        return f"contiguous runs are only {ai.contiguity[dim]} elements long, shorter than a {max_vec}-wide vector"
    mask = getattr(op, "mask", None)
    if mask is not None and info.get(mask).constancy[dim] < max_vec:
        return ("the mask changes within a vector's elements (a bound not known to be a multiple of "
                f"{max_vec}): pad the data to a multiple of {max_vec} elements, or mask whole vectors")
    return ""


def _depends_on_load(v: Value) -> bool:
    from ..ir import OpResult

    stack, seen = [v], set()
    while stack:
        x = stack.pop()
        if x in seen or not isinstance(x, OpResult):
            continue
        seen.add(x)
        if x.op.name in ("tt.load", "tt.atomic_rmw", "tt.atomic_cas", "tt.atomic_poll"):
            return True
        stack.extend(x.op.operands)
    return False


# -- walking a function -----------------------------------------------------------------------------


def _functions(module: Module) -> list[Op]:
    return [op for op in module.walk() if op.name == "tt.func"]


def _accesses(block: Any, info: Any, num_warps: int, env: ScalarEnv, executions: int | None,
              out: list[AccessReport]) -> None:
    for op in block.ops:
        if op.name in MEMORY_OPS:
            out.append(analyze_op(op, info, num_warps, env.args, executions))
        elif op.name == "scf.for":
            try:
                n: int | None = trip_count(op, env)
            except Unknown:
                n = None
            inner = None if executions is None or n is None else executions * n
            _accesses(op.regions[0].block, info, num_warps, env, inner, out)
        elif op.name in ("tt.reduce", "tt.scan"):
            continue
        else:
            for region in op.regions:
                _accesses(region.block, info, num_warps, env, None if op.name == "scf.while" else executions, out)


def report_for_module(module: Module, kernel_name: str, num_warps: int, scalars: Mapping[str, object],
                      grid: tuple[int, int, int] = (1, 1, 1)) -> MemoryReport:
    from ..passes import analyze_axis_info

    info = analyze_axis_info(module)
    report = MemoryReport(kernel_name, num_warps)
    env = ScalarEnv(scalars, (0, 0, 0), grid)
    for func in _functions(module):
        _accesses(func.regions[0].block, info, num_warps, env, 1, report.accesses)
    return report


def analyze_memory_access(kernel: Any, *sample_args: object, grid: Any = None, **meta: object) -> MemoryReport:
    """The static memory report of `kernel` compiled for these arguments (module docstring).

    `grid` (optional, a tuple or `lambda META`) only fixes `tl.num_programs` for loop trip counts."""
    from ..runtime.compiler import compile_msl
    from ..runtime.grid import resolve_grid
    from ..runtime.specialization import MockArray

    if not hasattr(kernel, "specialization"):
        raise TypeError(f"analyze_memory_access takes a @jit kernel, not {type(kernel).__name__}")
    constexprs = getattr(kernel, "constexpr_names", frozenset())
    params = getattr(kernel, "params", ())
    wrapped = [a if i < len(params) and params[i].is_constexpr else MockArray.wrap_dtype(a)
               for i, a in enumerate(sample_args)]
    named = {k: v if k in constexprs else MockArray.wrap_dtype(v) for k, v in meta.items()}
    key = kernel.specialization(*wrapped, **named)
    module = compile_msl(kernel, key).module
    scalars = dict(zip(kernel.arg_names, wrapped))
    scalars.update(named)
    grid3 = (1, 1, 1) if grid is None else resolve_grid(grid, lambda: scalars, kernel.__name__)
    return report_for_module(module, kernel.__name__, key.num_warps, scalars, tuple(grid3))


# -- bytes of a launch -----------------------------------------------------------------------------


@dataclass
class LaunchBytes:
    total: int
    exact: bool
    """False when a loop's trip count or a branch could not be fixed (counted as one trip / the
    larger branch). Masked-off lanes always count: the total is an upper bound on traffic."""


class _ByteCounter:
    def __init__(self) -> None:
        self.exact = True
        self.per_op: dict[Op, int] = {}

    def op_bytes(self, op: Op) -> int:
        b = self.per_op.get(op)
        if b is None:
            ptr = op.operands[0]
            pt = element_type(ptr.type)
            assert isinstance(pt, PointerType)
            eb = max(1, pt.pointee.bitwidth // 8) if isinstance(pt.pointee, ScalarType) else 8
            numel = 1
            if isinstance(ptr.type, TensorType):
                for s in ptr.type.shape:
                    numel *= s
            multiplier = 2 if op.name in ("tt.atomic_rmw", "tt.atomic_cas") else 1  # read and write
            b = self.per_op[op] = numel * eb * multiplier
        return b

    def block(self, block: Any, env: ScalarEnv, strict: bool) -> int:
        total = 0
        for op in block.ops:
            if op.name in MEMORY_OPS:
                total += self.op_bytes(op)
            elif op.name == "scf.for":
                total += self.loop(op, env, strict)
            elif op.name == "scf.if":
                try:
                    taken = eval_scalar(op.operands[0], env)
                    total += self.block(op.regions[0 if taken else 1].block, env, strict)
                except Unknown:
                    if strict:
                        raise
                    self.exact = False
                    total += max(self.block(r.block, env, strict) for r in op.regions)
            elif op.name in ("tt.reduce", "tt.scan"):
                continue
            else:
                for region in op.regions:
                    if op.name == "scf.while":
                        if strict:
                            raise Unknown("while loop")
                        self.exact = False
                    total += self.block(region.block, env, strict)
        return total

    def loop(self, op: Op, env: ScalarEnv, strict: bool) -> int:
        try:
            n = trip_count(op, env)
        except Unknown:
            if strict:
                raise
            self.exact = False
            return self.block(op.regions[0].block, env, strict)
        body = op.regions[0].block
        iv = body.args[0]
        try:
            return n * self.block(body, env, True)
        except Unknown:
            pass
        try:
            lower, step = eval_scalar(getattr(op, "lower"), env), eval_scalar(getattr(op, "step"), env)
        except Unknown:
            lower, step = 0, 1
        if n > MAX_LOOP_ITERATIONS:
            if strict:
                raise Unknown("loop too long to iterate")
            self.exact = False
            return n * self.block(body, env, False)
        total = 0
        for i in range(n):
            env.bound[iv] = lower + i * step
            total += self.block(body, env, strict)
        env.bound.pop(iv, None)
        return total


def launch_bytes(module: Module, args: Mapping[str, object], grid: tuple[int, int, int]) -> LaunchBytes:
    """Bytes a launch of `module` over `grid` addresses (see `LaunchBytes`)."""
    counter = _ByteCounter()
    programs = grid[0] * grid[1] * grid[2]
    total = 0
    for func in _functions(module):
        body = func.regions[0].block
        env = ScalarEnv(args, None, grid)
        try:
            total += programs * counter.block(body, env, True)
            continue
        except Unknown:
            pass
        # the work depends on the program: evaluate programs one by one (a sample of them when many)
        step = max(1, programs // MAX_PROGRAMS_EVALUATED)
        sampled = 0
        count = 0
        for flat in range(0, programs, step):
            pid = (flat % grid[0], (flat // grid[0]) % grid[1], flat // (grid[0] * grid[1]))
            sampled += counter.block(body, ScalarEnv(args, pid, grid), False)
            count += 1
        if step > 1:
            counter.exact = False
        total += sampled * programs // max(count, 1)
    return LaunchBytes(total, counter.exact)
