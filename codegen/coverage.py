"""What the compiler can prove about which output elements a launch writes.

Recognised pattern, for a store outside any loop or branch: the pointer is the parameter plus a
sum of terms, one per dimension of the stored tile, each `offs_d * stride_d` placed along its
dimension (expand_dims, broadcast), where

    offs_d = tl.program_id(a_d) * BLOCK_d + tl.arange(0, BLOCK_d)

and `stride_d` is a constant or a scalar parameter; the mask (if any) is a conjunction holding one
`offs_d < bound_d` per dimension (bound a scalar parameter or a constant). The most common case is
the 1-D `tl.store(p + offs, v, mask=offs < n)`; 2-D tiles (`p + rm[:, None] * stride + rn[None, :]`
masked by `(rm[:, None] < M) & (rn[None, :] < N)`) are the next. Every flat index
`sum(i_d * stride_d)`, `i_d < bound_d`, is then written when `grid[a_d] * BLOCK_d >= bound_d`;
the runtime checks that and that the index set is the whole array (`kernel.OutputCoverage`).
A scalar term `program_id(a) * stride` (as in `X += row * stride` before `tl.store(X + cols, ...)`)
is an outer dimension of block 1 along grid axis `a`. A lone `arange(0, BLOCK)` masked by
`< bound` with `bound` a parameter has grid axis -1: it holds when `BLOCK >= bound`. Two dims
indexed by one program id are refused (their index set is not a product).
Anything else is merged with the old contents on the host.
"""

from __future__ import annotations

from triton_metal.ir import BlockArgument, Op, Value
from triton_metal.ir.ops import arith, tt
from triton_metal.ir.ops import tt_memory as mem

from .kernel import CoveredDim, OutputCoverage
from .params import ParamUse
from .values import Buffer


def _def(v: Value) -> Op | None:
    return getattr(v, "op", None)


def _strip(v: Value) -> Value:
    """Through splats, broadcasts and layout conversions (values unchanged)."""
    op = _def(v)
    while isinstance(op, (tt.SplatOp, tt.BroadcastOp)) or (op is not None and op.name == "ttg.convert_layout"):
        v = op.operands[0]
        op = _def(v)
    return v


def _const(v: Value) -> int | None:
    op = _def(_strip(v))
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, int) and not isinstance(op.value, bool):
        return op.value
    return None


def _placed(v: Value) -> tuple[Value, int | None]:
    """(1-D value, the tile dim it is placed along via expand_dims; None when not expanded)."""
    v = _strip(v)
    op = _def(v)
    if isinstance(op, tt.ExpandDimsOp):
        inner, _ = _placed(op.src)
        rank = len(getattr(op.result.type, "shape", ()))
        # a 1-D value expanded once into a 2-D tile sits along the dim that is not `axis`
        return inner, (1 - op.axis) if rank == 2 else None
    return v, None


def _block_offsets(v: Value) -> tuple[int, int] | None:
    """`pid(axis) * BLOCK + arange(0, BLOCK)` -> (axis, BLOCK); a lone arange -> (-1, BLOCK); a
    lone `pid(axis)` (a scalar: one index per program) -> (axis, 1)."""
    v = _strip(v)
    op = _def(v)
    if isinstance(op, tt.MakeRangeOp) and op.start == 0:
        return (-1, op.end)
    if isinstance(op, tt.GetProgramIdOp) and not getattr(v.type, "shape", ()):
        return (op.axis, 1)
    if not isinstance(op, arith.AddIOp):
        return None
    for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        rng = _def(_strip(a))
        if not (isinstance(rng, tt.MakeRangeOp) and rng.start == 0):
            continue
        block = rng.end
        base = _def(_strip(b))
        if isinstance(base, arith.MulIOp):
            for x, y in ((base.lhs, base.rhs), (base.rhs, base.lhs)):
                pid = _def(_strip(x))
                if isinstance(pid, tt.GetProgramIdOp) and _const(y) == block:
                    return (pid.axis, block)
    return None


def _terms(v: Value) -> list[Value]:
    op = _def(_strip(v))
    if isinstance(op, arith.AddIOp) and not _block_offsets(v):
        return _terms(op.lhs) + _terms(op.rhs)
    return [v]


def _term(v: Value, args: dict[Value, str]) -> tuple[Value, int | None, int, int, str | None, int] | None:
    """A term `offs * stride` -> (offs, tile dim, grid axis, BLOCK, stride param, stride value)."""
    stride_param: str | None = None
    stride_value = 1
    inner = _strip(v)
    op = _def(inner)
    if isinstance(op, arith.MulIOp):
        for x, y in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            offs, dim = _placed(x)
            blk = _block_offsets(offs)
            if blk is None:
                continue
            c = _const(y)
            s = _strip(y)
            if c is not None:
                stride_value = c
            elif s in args:
                stride_param = args[s]
            else:
                continue
            return offs, dim, blk[0], blk[1], stride_param, stride_value
        return None
    offs, dim = _placed(v)
    blk = _block_offsets(offs)
    if blk is None:
        return None
    return offs, dim, blk[0], blk[1], None, 1


def _mask_bounds(mask: Value, args: dict[Value, str]) -> dict[tuple[int, int], tuple[str | None, int | None]] | None:
    """The conjuncts `offs < bound` of a mask, by the (grid axis, BLOCK) of offs (the layout
    passes copy index arithmetic per use, so identity would not do); None when the mask is
    anything else."""
    op = _def(_strip(mask))
    if isinstance(op, arith.AndIOp):
        a, b = _mask_bounds(op.lhs, args), _mask_bounds(op.rhs, args)
        if a is None or b is None:
            return None
        return {**a, **b}
    if isinstance(op, arith.CmpIOp) and op.predicate.value in ("slt", "ult"):
        offs, _ = _placed(op.lhs)
        key = _block_offsets(offs)
        if key is None:
            return None
        bound = _strip(op.rhs)
        if bound in args:
            return {key: (args[bound], None)}
        c = _const(op.rhs)
        if c is not None:
            return {key: (None, c)}
    return None


def _covering(store: mem.StoreOp, root: BlockArgument, args: dict[Value, str]) -> tuple[CoveredDim, ...] | None:
    ptr = _def(store.ptr)
    terms: list[Value] = []
    # the pointer: the parameter plus offsets, possibly through several addptr
    while isinstance(ptr, tt.AddPtrOp):
        terms.extend(_terms(ptr.offset))
        base = _strip(ptr.ptr)
        if base is root:
            break
        ptr = _def(base)
    else:
        return None
    parts = []
    for t in terms:
        got = _term(t, args)
        if got is None:
            return None
        parts.append(got)
    rank = len(getattr(store.ptr.type, "shape", ()))
    # program-id terms (`X += pid * stride`, a scalar offset) are outer dims of one index per
    # program; the tensor terms are the tile's dims, one each
    rows = [p for p in parts if not getattr(p[0].type, "shape", ())]
    tile = [p for p in parts if getattr(p[0].type, "shape", ())]
    if rank == 0 or len(tile) != rank or len({p[1] for p in tile}) != rank:
        return None
    axes = [p[2] for p in parts if p[2] >= 0]
    if len(set(axes)) != len(axes):
        return None  # two dims indexed by one program id cover a diagonal, not a product
    bounds = _mask_bounds(store.mask, args) if store.mask is not None else {}
    if bounds is None:
        return None
    if store.mask is not None and len(bounds) != rank + sum((p[2], p[3]) in bounds for p in rows):
        return None  # a dim without its own bound, or two dims sharing one index vector
    dims = []
    for _, _, axis, block, sp, sv in rows + sorted(tile, key=lambda p: p[1] or 0):
        bp, bv = bounds.pop((axis, block), (None, None)) if store.mask is not None else (None, None)
        if axis < 0 and bp is None:
            # a lone arange: every program writes the same indices [0, min(bound, BLOCK))
            bv = block if bv is None else min(bv, block)
            axis = 0
        # (a lone arange bounded by a parameter keeps grid_axis -1: the runtime checks
        # BLOCK >= bound, not the grid)
        dims.append(CoveredDim(axis, block, bp, bv, sp, sv))
    if bounds:
        return None  # the mask tests something else as well
    return tuple(dims)


def store_coverage(func: Op, buffers: dict[BlockArgument, Buffer], uses: dict[BlockArgument, ParamUse]) -> tuple[OutputCoverage, ...]:
    args = {a: (a.name_hint or "") for a in func.body.block.args}  # type: ignore[attr-defined]
    top = [op for op in func.body.block.ops if isinstance(op, mem.StoreOp)]  # type: ignore[attr-defined]
    out = []
    for arg, buf in buffers.items():
        if buf.output_name is None:
            continue
        if uses[arg].atomic or uses[arg].live:
            reason = "updated by atomics" if uses[arg].atomic else "loaded and stored under a lock"
            out.append(OutputCoverage(buf.output_name, False, reason=reason))
            continue
        found = None
        for st in top:
            found = _covering(st, arg, args)
            if found is not None:
                break
        if found is None:
            out.append(OutputCoverage(buf.output_name, False, reason="no store of a recognised blocked pattern"))
        elif len(found) == 1 and found[0].stride_param is None and found[0].stride_value == 1:
            d = found[0]
            out.append(OutputCoverage(buf.output_name, True, d.grid_axis, d.block, d.bound_param, d.bound_value,
                                      tile=found))
        else:
            out.append(OutputCoverage(buf.output_name, False, reason="a multi-dimensional tile: see `tile`",
                                      tile=found))
    return tuple(out)
