"""Lowering of `tt.dot` on Metal 4 tensor ops (`mpp::tensor_ops::matmul2d`), for targets with
MSL 4.0 or later (`Target.has_tensor_ops`, docs/targets.md).

A dot takes this path when `tensor_dot_applies`: the target has tensor ops, the (A, B, C)
element types are a row of the table in Apple's `MPPTensorOpsMatMul2d.h` that the code generator
produces (fp16 x fp16 -> fp32 or fp16, bf16 x bf16 -> fp32, fp32 x fp32 -> fp32,
int8 x int8 -> int32), the shape is whole tensor-op tiles (`M % 16`, `N % 32`, `K % 32`: the
multiples shipping tensor-op kernels use; a fixed `k` that is not a multiple of 32 is reported to
be truncated), the kernel has at most 8 warps (`MAX_SIMDGROUPS`) and what the dot stages fits in
threadgroup memory next to what the layout passes allocated; and, unless its K loop carries its
accumulator, where the cost rule finds it no worse than simdgroup matrices (dot_path.py). Every
other dot keeps the simdgroup-matrix path of lower_dot.py unchanged.

Operands are staged once. The dot writes A and B into threadgroup memory whatever their layout,
so the conversions to dot-operand layouts the layout passes put before it are bypassed
(`bypassed_conversions`: the code generator takes their sources). Where `stage-dot-operands`
double-buffered those conversions in a loop (`operand_buffers`), A and B go into those buffers,
alternating between the two per execution as the conversions would have; else into the code
generator's scratch, before C.

A dot in a K loop that carries its accumulator for it alone keeps the accumulator in the op's
cooperative tensor across the loop's iterations: lower_tensor_dot_loop.py. Any other dot
(`lower_tensor_dot`), whatever the layouts of its operands and accumulator:
* every thread writes its registers of A (M x K), B (K x N) and the accumulator C (M x N)
  row-major into threadgroup memory, and a barrier;
* `km_tensor_dot` (templates/helpers/tensor_dot.metal) builds `tensor_inline` threadgroup tensors
  over them, one `matmul2d<matmul2d_descriptor(M, N, 32, false, false, false,
  multiply_accumulate), execution_simdgroups<num_warps>>` for the whole tile, loads C into the
  op's destination cooperative tensor, runs the op over K in chunks of 32 (the cooperative
  accumulator carried across the chunks) and stores it back into C;
* a barrier, and every thread reads the elements of its result registers from C (the layout the
  rest of the kernel expects), then a barrier before the scratch is reused.

`relaxed_precision` is false: fp32 dots stay fp32, as Triton's "ieee" precision asks.
"""

from __future__ import annotations

from dataclasses import dataclass

from triton_metal.chip import THREADGROUP_MEMORY_BYTES
from triton_metal.ir import Op, Value
from triton_metal.ir.core import Block, BlockArgument, OpResult
from triton_metal.ir.ops.tt_compute import DotOp, DotScaledOp
from triton_metal.ir.types import ScalarType, TensorType
from triton_metal.passes.insert_barriers import operand_conversion

from . import lower_tensor_dot_scaled
from .context import LoweringContext, round16
from .distribution import Distribution
from .dot_report import record_tensor_dot
from .msl_types import element_bytes, msl_type
from .program import Apply, Assign, Barrier, Call, Declare, Expr, ExprStmt, Lit, Scope, Staged, Var
from .tiles import read_tile, write_tile
from .values import RegValue

K_STEP = 32
"""The descriptor's `k`: the K chunk of one `run` (a multiple of 32, see the module doc)."""
M_MULTIPLE = 16
N_MULTIPLE = 32
MAX_SIMDGROUPS = 8
"""The largest `execution_simdgroups<N>` emitted: shipping tensor-op kernels use 1 and 4 SIMD
groups, and nothing says larger scopes behave; a kernel with more warps keeps the simdgroup path."""

TENSOR_OP_TYPES: frozenset[tuple[str, str, str]] = frozenset({
    ("f16", "f16", "f32"),
    ("f16", "f16", "f16"),
    ("bf16", "bf16", "f32"),
    ("f32", "f32", "f32"),
    ("i8", "i8", "i32"),
})
"""(A, B, C) element types this lowering emits; each is a row of Apple's table."""


def tensor_dot_applies(ctx: LoweringContext, op: DotOp, carried: bool = False) -> bool:
    """Whether `op` lowers to tensor ops on the target (module doc); the types are checked already.
    `carried`: as the dot of a K loop that carries its accumulator (lower_tensor_dot_loop.py),
    whose staged C shares bytes with A and B (`own_bytes`). A dot the cost rule keeps on
    simdgroup matrices (`LoweringContext.simdgroup_dots`, codegen/dot_path.py) does not."""
    return not tensor_dot_refusal(ctx, op, carried) and op not in ctx.simdgroup_dots


def tensor_dot_refusal(ctx: LoweringContext, op: DotOp | DotScaledOp, carried: bool = False) -> str:
    """Why `op` cannot lower to tensor ops on the target ("" when it can): the reason its dot
    report gives for simdgroup matrices. A `tl.dot_scaled` is asked as a K loop's carried
    accumulator (lower_tensor_dot_scaled.py): its shape in elements, its operands' types checked
    by its own op."""
    if not ctx.options.target.has_tensor_ops:
        return f"no tensor ops below MSL 4.0 ({ctx.options.target})"
    if ctx.num_warps > MAX_SIMDGROUPS:
        return f"{ctx.num_warps} warps: tensor ops run on at most {MAX_SIMDGROUPS} SIMD groups"
    if isinstance(op, DotScaledOp):
        m, n, k = lower_tensor_dot_scaled.shape_of(op)
        staged = lower_tensor_dot_scaled.own_bytes(ctx, op)
    else:
        a_ty, b_ty, c_ty = op.a.type, op.b.type, op.c.type
        assert isinstance(a_ty, TensorType) and isinstance(b_ty, TensorType) and isinstance(c_ty, TensorType)
        types = tuple(t.element.name for t in (a_ty, b_ty, c_ty))  # type: ignore[union-attr]
        if a_ty.rank != 2:
            return "not a 2-D dot"
        if types not in TENSOR_OP_TYPES:
            return f"no tensor op for {' x '.join(types[:2])} -> {types[2]}"
        (m, k), n = a_ty.shape, b_ty.shape[1]
        staged = own_bytes(op, carried)
    if m % M_MULTIPLE or n % N_MULTIPLE or k % K_STEP:
        return f"not whole tensor-op tiles (M a multiple of {M_MULTIPLE}, N of {N_MULTIPLE}, K of {K_STEP})"
    if ctx.scratch_base + staged > THREADGROUP_MEMORY_BYTES:
        why = (f"its staging ({staged} bytes) and the layout passes' {ctx.scratch_base} bytes exceed "
               f"{THREADGROUP_MEMORY_BYTES}")
        if isinstance(op, DotScaledOp) and not lower_tensor_dot_scaled.on_input_tensors(ctx, op):
            why = (f"no split into at most {lower_tensor_dot_scaled.MAX_BLOCKS} blocks of 16 or 32 a SIMD group "
                   f"(input cooperative tensors), and for dequantized tiles {why}")
        return why
    return ""


def operand_buffers(op: DotOp) -> tuple[Op, Op] | None:
    """The conversions making A and B when `stage-dot-operands` double-buffered them, the dot is
    the only user of each and each buffer holds its operand: the dot stages A and B in those
    buffers (the loop's own, module doc), else in the code generator's scratch."""
    convs = []
    for value, nbytes in zip((op.a, op.b), region_bytes(op)[:2]):
        conv = value.op if isinstance(value, OpResult) else None
        if conv is None or conv.name != "ttg.convert_layout" or getattr(conv, "smem_alt_offset", None) is None:
            return None
        if int(conv.smem_bytes) < nbytes or only_user(op.parent, value) is not op:  # type: ignore[attr-defined]
            return None
        convs.append(conv)
    return convs[0], convs[1]


def only_user(block: Block | None, value: Value) -> Op | None:
    """The one op in `block` (nested regions included) that uses `value`, once; else None."""
    return block.only_user(value) if block is not None else None


def own_bytes(op: DotOp, carried: bool = False, double: bool = False) -> int:
    """Bytes of the code generator's scratch the dot stages in: C, and A and B unless they go into
    their conversions' double buffers. A carried accumulator is staged in C only before its loop
    (written, a barrier, loaded into the cooperative tensor, a barrier) and after it (stored, a
    barrier, read, a barrier), A and B only inside the loop, each iteration's run followed by a
    barrier: C takes the bytes of A and B, so the dot needs the larger of the two (the 64 x 64 x 32
    fp32 tile: 16 KiB, where A, B and C side by side take 32 KiB). The factors of a rescaled
    accumulator (`rescale_of`) are staged after A and B, or, where A and B go into double
    buffers, in two buffers of their own in C's bytes, which the loop leaves free. `double`: A, B
    and the factors twice over (`doubles_staging`)."""
    a_bytes, b_bytes, c_bytes = region_bytes(op)
    factor = factor_bytes(op) if carried else 0
    if operand_buffers(op) is not None:
        assert 2 * factor <= c_bytes  # a row or column of C's elements, twice
        return c_bytes
    staged = (a_bytes + b_bytes + factor) * (2 if double else 1)
    return max(staged, c_bytes) if carried else a_bytes + b_bytes + c_bytes


@dataclass(frozen=True)
class Rescale:
    """`acc * f` ahead of a dot in a loop body, `acc` one of the loop's carried values: attention's
    `acc * alpha[:, None] + tl.dot(p, v)`. The factor is one a row (`axis` 0: `factor` is the
    M x 1 tile broadcast), one a column (1: the 1 x N tile) or one for the whole tile (None: a
    splat, a constant, or a 1 x 1 tile broadcast)."""

    op: Op
    factor: Value
    axis: int | None


def rescale_of(dot: DotOp) -> Rescale | None:
    """The `acc * f` that `dot` accumulates onto: its accumulator (`dot(a, b, acc * f)`), or the
    other operand of the add its result goes to (`acc * f + dot(a, b, 0)`), where `acc` is a
    carried value of the loop around the dot, `f` a factor of the forms `Rescale` names, and `f`
    is available where the dot runs (it is applied there)."""
    block = dot.parent
    if block is None:
        return None
    mul = dot.c.op if isinstance(dot.c, OpResult) else None
    if mul is None or mul.name != "arith.mulf":
        add = only_user(block, dot.result)
        others = [v for v in add.operands if v is not dot.result] if add is not None and add.name == "arith.addf" else []
        if len(others) != 1 or not isinstance(others[0], OpResult) or others[0].op.name != "arith.mulf":
            return None
        mul = others[0].op
    if mul.parent is not block:
        return None
    for acc, other in (mul.operands, mul.operands[::-1]):
        factor = _factor(other, dot)
        if isinstance(acc, BlockArgument) and acc.block is block and acc.index > 0 and factor is not None:
            if _available(factor[0], dot, block):
                return Rescale(mul, *factor)
    return None


def _factor(value: Value, dot: DotOp) -> tuple[Value, int | None] | None:
    """`(f, axis)` for a factor of the forms `Rescale` names, else None."""
    op = value.op if isinstance(value, OpResult) else None
    if op is not None and op.name in ("tt.splat", "arith.constant"):
        return value, None
    if op is None or op.name != "tt.broadcast":
        return None
    src = op.operands[0]
    m, n = dot.result.type.shape  # type: ignore[union-attr]
    shape = tuple(src.type.shape)  # type: ignore[union-attr]
    if shape == (1, 1):
        return value, None
    axis = {(m, 1): 0, (1, n): 1}.get(shape)
    return (src, axis) if axis is not None else None


def _available(value: Value, dot: DotOp, block: Block) -> bool:
    """Whether `value` is defined before `dot` runs (outside its block, or earlier in it)."""
    op = value.op if isinstance(value, OpResult) else None
    if op is None or op.parent is not block:
        return True
    return block.ops.index(op) < block.ops.index(dot)


def factor_bytes(op: DotOp) -> int:
    """Threadgroup bytes of the factors a rescaled carried accumulator stages: a row's or a
    column's worth of C's elements (none for one factor for the tile)."""
    rescale = rescale_of(op)
    if rescale is None or rescale.axis is None:
        return 0
    c_ty = op.c.type
    assert isinstance(c_ty, TensorType) and isinstance(c_ty.element, ScalarType)
    return round16(c_ty.shape[rescale.axis] * element_bytes(c_ty.element))


def bypassed_conversions(ctx: LoweringContext, func: Op, carried: frozenset[Op] = frozenset()) -> set[Op]:
    """The `ttg.convert_layout`s that make operands of tensor-op dots and have no other user.
    The dot writes its operands into threadgroup memory in whatever layout they come, so a
    conversion to a dot-operand layout first (through threadgroup memory too) would stage them
    twice: the code generator takes the conversion's source instead. The two conversions of a
    double-buffered pair (`stage-dot-operands`) are bypassed both or neither (the first one's
    reads wait for the second one's barrier). `carried`: the dots whose K loops carry their
    accumulators (`lower_tensor_dot_loop.carried_in`)."""
    bypassed: set[Op] = set()
    if not ctx.options.target.has_tensor_ops:
        return bypassed
    for op in func.walk():
        if not isinstance(op, DotOp) or not tensor_dot_applies(ctx, op, op in carried):
            continue
        convs = [operand_conversion(op, v) for v in (op.a, op.b)]
        bypassed.update(c for c in convs if c is not None and (None not in convs or not getattr(c, "double_buffer", None)))
    return bypassed


@dataclass(frozen=True)
class OperandViews:
    """Where a tensor-op dot stages A and B (and a rescaled carried accumulator its factors), and
    the parity that flips after each dot when they alternate between two buffers (None: one
    place, free again after the dot's barrier)."""

    a: Expr
    b: Expr
    parity: Var | None
    factors: Expr | None = None
    """Where the factors of a rescaled carried accumulator go (None: none staged)."""


def operand_views(ctx: LoweringContext, op: DotOp, tile: TensorTile, carried: bool = False) -> OperandViews:
    """A and B in their conversions' double buffers (`operand_buffers`; a parity counter,
    declared here, picks this execution's), else at the start of the dot's scratch: twice over,
    alternating, for a carried dot where both fit (`doubles_staging`). A rescaled carried
    accumulator's factors follow A and B, or lie in C's bytes beside double buffers (`own_bytes`)."""
    buffers = operand_buffers(op)
    base = ctx.op_scratch(op, staging_bytes(ctx, op, carried))
    a_bytes, b_bytes, _ = region_bytes(op)
    factors = factor_bytes(op) if carried else 0
    if buffers is None:
        parity = _parity(ctx) if carried and doubles_staging(ctx, op) else None
        stride = a_bytes + b_bytes + factors  # bytes from one buffer to the other

        def at(offset: int, ctype: str, value: Value) -> Expr:
            view = ctx.scratch_view(ctype, base + offset)
            return view if parity is None else _shifted(view, parity, stride // _element_bytes(value))

        f_view = at(a_bytes + b_bytes, tile.acc_t, op.c) if factors else None
        return OperandViews(at(0, tile.in_t, op.a), at(a_bytes, tile.in_t, op.b), parity, f_view)
    parity = _parity(ctx)
    element = _element_bytes(op.a)
    views = []
    for conv in buffers:
        offset, alt, size = (int(getattr(conv, f)) for f in ("smem_offset", "smem_alt_offset", "smem_bytes"))
        ctx.scratch_end = max(ctx.scratch_end, offset + size, alt + size)
        views.append(_shifted(ctx.scratch_view(tile.in_t, offset), parity, (alt - offset) // element))
    f_view = _shifted(ctx.scratch_view(tile.acc_t, base), parity, factors // _element_bytes(op.c)) if factors else None
    return OperandViews(views[0], views[1], parity, f_view)


def _parity(ctx: LoweringContext) -> Var:
    """A counter, 0 or 1, declared at the kernel's start: which of two buffers this execution uses."""
    parity = Var(ctx.fresh())
    ctx.prologue.add(Declare(parity.name, "int", None, Lit("0")))
    return parity


def _shifted(view: Expr, parity: Var, elements: int) -> Expr:
    return Apply("add", (view, Apply("mul", (parity, Lit(str(elements))))))


def doubles_staging(ctx: LoweringContext, op: DotOp) -> bool:
    """Whether a carried dot staging A and B in the code generator's scratch (no double buffers
    from the layout passes, no allocation of its own) keeps two sets of them, alternating from
    one iteration to the next, so that no barrier follows its run: where both fit in threadgroup
    memory beside the layout passes' bytes. As with `stage-dot-operands`' buffers, the next
    iteration writes the other set, and the one after writes this one only after its own staging
    barrier, which every thread reaches after this iteration's run."""
    if operand_buffers(op) is not None or getattr(op, "smem_offset", None) is not None:
        return False
    return ctx.scratch_base + own_bytes(op, carried=True, double=True) <= THREADGROUP_MEMORY_BYTES


def staging_over_c(ctx: LoweringContext, op: DotOp | DotScaledOp) -> bool:
    """Whether a carried dot's alternating buffers lie in the bytes its C takes after the loop:
    no barrier follows the last run, so the store of C waits for one first (`tl.dot_scaled`'s
    dequantized tiles always do; its input cooperative tensors end each K step with a barrier)."""
    if isinstance(op, DotScaledOp):
        return not lower_tensor_dot_scaled.on_input_tensors(ctx, op)
    return doubles_staging(ctx, op) or (operand_buffers(op) is not None and factor_bytes(op) > 0)


def staging_bytes(ctx: LoweringContext, op: DotOp | DotScaledOp, carried: bool = False) -> int:
    """The scratch bytes the dot takes here (`own_bytes`, doubled where `doubles_staging`)."""
    if isinstance(op, DotScaledOp):
        return lower_tensor_dot_scaled.own_bytes(ctx, op)
    return own_bytes(op, carried, double=carried and doubles_staging(ctx, op))


def accumulator_view(ctx: LoweringContext, op: DotOp | DotScaledOp, tile: TensorTile, carried: bool = False) -> Expr:
    """Where a tensor-op dot stages C: in the dot's scratch, after A and B when they are there
    (a carried accumulator: at its start, over A and B, `own_bytes`)."""
    base = ctx.op_scratch(op, staging_bytes(ctx, op, carried))
    if carried or operand_buffers(op) is not None:  # type: ignore[arg-type]
        return ctx.scratch_view(tile.acc_t, base)
    a_bytes, b_bytes, _ = region_bytes(op)  # type: ignore[arg-type]
    return ctx.scratch_view(tile.acc_t, base + a_bytes + b_bytes)


def type_views(ctx: LoweringContext, op: DotOp | DotScaledOp, tile: TensorTile,
               carried: bool = False) -> tuple[Expr, Expr]:
    """Pointers of A's and B's types into the dot's scratch (the cooperative accumulator's type
    depends on the operand types; nothing is read through them)."""
    base = ctx.op_scratch(op, staging_bytes(ctx, op, carried))
    return ctx.scratch_view(tile.in_t, base), ctx.scratch_view(tile.in_t, base)


def _element_bytes(value: Value) -> int:
    t = value.type
    assert isinstance(t, TensorType) and isinstance(t.element, ScalarType)
    return element_bytes(t.element)


def region_bytes(op: DotOp) -> tuple[int, int, int]:
    """Threadgroup bytes of the staged A, B and C (each rounded to 16)."""
    sizes = []
    for t in (op.a.type, op.b.type, op.c.type):
        assert isinstance(t, TensorType) and isinstance(t.element, ScalarType)
        sizes.append(round16(t.shape[0] * t.shape[1] * element_bytes(t.element)))
    return sizes[0], sizes[1], sizes[2]


def _operand_type(t: ScalarType) -> str:
    """The MSL element type of a tensor operand: Apple's header recognises `int8_t` (not plain
    `char`) and `int32_t`."""
    return {"i8": "int8_t", "i32": "int32_t"}.get(t.name, msl_type(t))


@dataclass(frozen=True)
class TensorTile:
    """The shape and MSL types of one tensor-op dot, and the helpers' template arguments."""

    m: int
    n: int
    k: int
    in_t: str
    acc_t: str
    warps: int

    @property
    def shape_args(self) -> str:
        return f"{self.m}, {self.n}, {self.k}, {K_STEP}, {self.warps}"


def tile_of(ctx: LoweringContext, op: DotOp | DotScaledOp) -> TensorTile:
    if isinstance(op, DotScaledOp):
        return lower_tensor_dot_scaled.scaled_tile(ctx, op)
    a_ty, b_ty, c_ty = op.a.type, op.b.type, op.c.type
    assert isinstance(a_ty, TensorType) and isinstance(b_ty, TensorType) and isinstance(c_ty, TensorType)
    assert isinstance(a_ty.element, ScalarType) and isinstance(c_ty.element, ScalarType)
    (m, k), n = a_ty.shape, b_ty.shape[1]
    return TensorTile(m, n, k, _operand_type(a_ty.element), _operand_type(c_ty.element), ctx.num_warps)


def lower_tensor_dot(ctx: LoweringContext, op: DotOp, a: RegValue, b: RegValue, c: RegValue,
                     dist: Distribution) -> None:
    """One dot: A, B and C staged, `km_tensor_dot` (load C, run, store C), the result read back."""
    tile = tile_of(ctx, op)
    ctx.helpers.add("tensor_dot")
    out = ctx.declare_array(tile.acc_t, dist.num_regs)
    ctx.push()
    operands, c_view = operand_views(ctx, op, tile), accumulator_view(ctx, op, tile)
    ctx.emit(Staged(sum(region_bytes(op))))
    for value, view, row_length in ((a, operands.a, tile.k), (b, operands.b, tile.n), (c, c_view, tile.n)):
        write_tile(ctx, value, view, row_length)
    ctx.emit(Barrier())
    ctx.emit(ExprStmt(Call(f"km_tensor_dot<{tile.shape_args}>", (operands.a, operands.b, c_view))))
    ctx.emit(Barrier())  # every thread's part of the result is in C
    read_tile(ctx, c_view, tile.n, dist, out)
    if operands.parity is not None:
        flip(ctx, operands.parity)
    ctx.scratch_done(op)
    scope = Scope(ctx.pop())
    ctx.emit(scope)
    record_tensor_dot(ctx.dot_sites, op, scope, tile.warps, "single")
    ctx.bind(op.result, RegValue(op.result.type, out, dist))


def flip(ctx: LoweringContext, parity: Var) -> None:
    """The other double buffers next time."""
    ctx.emit(Assign(parity, Apply("sub", (Lit("1"), parity))))
