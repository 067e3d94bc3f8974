"""The dot report: what each `tl.dot` of a kernel costs, read off the lowered program.

For every dot lowered on simdgroup matrices the lowering records where its code went
(`record_dot`: the scope holding its statements, the arrays of its accumulator and operand
fragments); a dot lowered on Metal 4 tensor ops records its scope and its form (`record_tensor_dot`:
"carried", the K loop's accumulator a cooperative tensor, "rescaled", such an accumulator scaled
before each run, or "single"), and has no fragment
figures (the op's data layout is Metal's). `dot_reports` then reads the per-thread program the
printer will print:
* fragments per SIMD group: the accumulator fragments the dot's scope declares;
* operand fragment loads: the statements in the scope that fill an operand fragment (a
  `simdgroup_load` from threadgroup memory, or a fragment built from the two registers a
  layout conversion read);
* fragment products: the `simdgroup_multiply_accumulate` calls in the scope; their ratio to the
  loads is the reuse of each loaded fragment (a SIMD group holding a 32 x 32 block of 8 x 8
  fragments reuses each A and B fragment 4 times: 16 products per 8 loads, ratio 2);
* int8 dots: the fragment types (half operands, float partials), the K of each exact partial
  and the partials each thread folds into its int32 accumulator (`km_int_partial` calls);
* per K step (one iteration of the innermost loop around the dot; the whole kernel when the
  dot is in no loop): the threadgroup barriers and the bytes the threadgroup writes to
  threadgroup memory (the `Staged` counts the layout conversions, reductions and dot stagings
  emit), a nested loop with constant bounds counted once per iteration of it.

The report goes to `MSLKernel.metadata["dot_reports"]` (so to `launch.json`) and is printed by
`triton-metal-opt --dot-report`. Pure functions over the program: no MSL text is read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

from triton_metal.ir import Op
from triton_metal.ir.types import TensorType

from .program import Assign, Barrier, Call, Declare, ExprStmt, ForRange, If, Index, Lit, Loop, Scope, Staged, Stmt, Var

if TYPE_CHECKING:
    from .lower_tensor_dot_scaled import SimdgroupBlocks


@dataclass(frozen=True)
class DotSite:
    """Where the lowering of one dot put its code (recorded by `record_dot`)."""

    where: str
    """`file:line` of the `tl.dot`."""
    shape: tuple[int, int, int]
    """M, N, K."""
    dtypes: str
    """`<operand> -> <accumulator>` element types."""
    warps: tuple[int, int]
    """SIMD groups along M and N."""
    scope: Scope
    """The statements of the dot (matched by identity)."""
    accumulator: str
    """The array of accumulator fragments."""
    operands: tuple[str, ...]
    """The arrays of A and B fragments."""
    path: str = "simdgroup"
    """"simdgroup" (fragments) or "tensor_ops" (`matmul2d`, lower_tensor_dot.py)."""
    form: str = ""
    """Tensor ops: "carried" (the accumulator a loop-carried cooperative tensor), "rescaled" (one
    the loop scales before each run) or "single"."""
    fragments: str = ""
    """Simdgroup matrices: `<operand> x <operand> -> <accumulator>` fragment element types (MSL)."""
    k_chunk: int = 0
    """int8 operands: the K each float partial sums before it joins the int32 accumulator."""
    input_tensors: tuple[int, int] | None = None
    """Tensor ops on input cooperative tensors: the M x N block of each of a SIMD group's own ops
    (`warps` the grid of SIMD groups, `block` the region each computes)."""
    block: tuple[int, int] | None = None
    """That region: the M x N each SIMD group computes."""
    op: Op | None = field(default=None, compare=False)
    """The dot op itself."""


@dataclass(frozen=True)
class DotReport:
    """The figures of one dot (see the module docstring)."""

    where: str
    shape: tuple[int, int, int]
    dtypes: str
    warps: tuple[int, int]
    warp_tile: tuple[int, int]
    """The M x N block each SIMD group computes."""
    fragments_per_simdgroup: int
    fragment_loads: int
    """Operand fragments each SIMD group loads per dot."""
    fragment_products: int
    """`simdgroup_multiply_accumulate`s each SIMD group runs per dot."""
    products_per_load: float
    in_loop: bool
    """Whether a loop (the K loop) carries the dot; else the per-step figures are the kernel's."""
    dots_per_k_step: int
    barriers_per_k_step: int
    threadgroup_bytes_per_k_step: int
    path: str = "simdgroup"
    """"simdgroup" or "tensor_ops" (then the fragment figures are 0 and `warps` is the op's scope)."""
    form: str = ""
    """Tensor ops: "carried", "rescaled" or "single" (`DotSite.form`)."""
    fragments: str = ""
    """Simdgroup matrices: the fragment element types (`DotSite.fragments`)."""
    k_chunk: int = 0
    """int8 operands: the K of each exact float partial (`DotSite.k_chunk`); 0 otherwise."""
    partial_folds: int = 0
    """int8 operands: the float partials each thread converts and adds to its int32 accumulator
    per dot (one per accumulator register and K chunk): the scalar work besides the fragments."""
    path_reason: str = ""
    """On targets with tensor ops: why the dot took its path (`dot_path.choose_dot_paths`)."""
    input_tensors: tuple[int, int] | None = None
    """Tensor ops where each SIMD group runs its own ops on input cooperative tensors the code
    fills: each op's M x N block (`warps` the SIMD groups along M and N, `warp_tile` the region
    each computes, in such blocks); None: one op over tensors in threadgroup memory."""

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    def text(self) -> str:
        m, n, k = self.shape
        step = "per K step" if self.in_loop else "per kernel (no loop)"
        if self.dots_per_k_step > 1:
            step += f" (of all {self.dots_per_k_step} dots)"
        if self.path == "tensor_ops" and self.input_tensors:
            bm, bn = self.input_tensors
            what = (f"tensor ops ({self.warps[0]}x{self.warps[1]} SIMD groups of {self.warp_tile[0]}x{self.warp_tile[1]}, "
                    f"a matmul2d per {bm}x{bn} block on input cooperative tensors, {_FORMS[self.form]})")
        elif self.path == "tensor_ops":
            what = (f"tensor ops (matmul2d on {self.warps[0] * self.warps[1]} SIMD groups, "
                    f"{_FORMS[self.form]})")
        else:
            what = (f"{self.warps[0]}x{self.warps[1]} SIMD groups of {self.warp_tile[0]}x{self.warp_tile[1]}: "
                    f"{self.fragments_per_simdgroup} fragments per SIMD group, {self.fragment_products} products "
                    f"from {self.fragment_loads} fragment loads ({self.products_per_load:g} per load)")
            if self.k_chunk:
                what += (f", {self.fragments} fragments, exact float partials over K chunks of at most "
                         f"{self.k_chunk}, {self.partial_folds} added to the int32 accumulator per thread")
        why = f" ({self.path_reason})" if self.path_reason else ""
        return (f"dot at {self.where}: {m}x{n}x{k} {self.dtypes}, {what}; {step}: {self.barriers_per_k_step} "
                f"barrier{'' if self.barriers_per_k_step == 1 else 's'}, "
                f"{self.threadgroup_bytes_per_k_step} threadgroup bytes{why}")


def record_dot(sites: list[DotSite], op: Op, scope: Scope, accumulator: str, operands: Sequence[str],
               fragments: str = "", k_chunk: int = 0, shape: tuple[int, int, int] | None = None,
               dtypes: str = "") -> None:
    """Note a dot lowered on simdgroup matrices: `scope` holds its statements (`shape` and
    `dtypes`: M, N, K and the operand formats where the operands' types do not say them, as for
    packed e2m1 operands)."""
    layout = op.results[0].type.layout  # type: ignore[attr-defined]
    warps = tuple(getattr(layout, "warps_per_cta", (1, 1)))
    where, own_shape, own_dtypes = _where_and_shape(op)
    sites.append(DotSite(where, shape or own_shape, dtypes or own_dtypes, (warps[0], warps[1]), scope, accumulator,
                         tuple(operands), fragments=fragments, k_chunk=k_chunk, op=op))


_FORMS = {"carried": "accumulator carried by the loop", "rescaled": "accumulator carried and rescaled by the loop",
          "single": "one dot"}


def record_tensor_dot(sites: list[DotSite], op: Op, scope: Scope, simdgroups: int, form: str,
                      shape: tuple[int, int, int] | None = None, dtypes: str = "",
                      blocks: SimdgroupBlocks | None = None) -> None:
    """Note a dot lowered on tensor ops: `scope` holds its statements in the loop (or the kernel);
    `shape` and `dtypes` as for `record_dot`; `blocks`: each SIMD group's own ops on input
    cooperative tensors."""
    where, own_shape, own_dtypes = _where_and_shape(op)
    warps = blocks.grid if blocks is not None else (simdgroups, 1)
    sites.append(DotSite(where, shape or own_shape, dtypes or own_dtypes, warps, scope, "", (), "tensor_ops", form,
                         input_tensors=blocks.block if blocks is not None else None,
                         block=blocks.region if blocks is not None else None, op=op))


def _where_and_shape(op: Op) -> tuple[str, tuple[int, int, int], str]:
    a_ty, b_ty, c_ty = op.operands[0].type, op.operands[1].type, op.results[0].type
    assert isinstance(a_ty, TensorType) and isinstance(b_ty, TensorType) and isinstance(c_ty, TensorType)
    where = f"{op.loc.file}:{op.loc.line}" if op.loc is not None else "?"
    return where, (a_ty.shape[0], b_ty.shape[1], a_ty.shape[1]), f"{a_ty.element} -> {c_ty.element}"


def dot_reports(program: Sequence[Stmt], sites: Sequence[DotSite],
                reasons: Mapping[Op, str] | None = None) -> list[DotReport]:
    """The report of every recorded dot, from the lowered program `program` (the kernel body);
    `reasons`: each dot's `path_reason`."""
    return [replace(r, path_reason=(reasons or {}).get(op, "")) for op, r in reports_by_op(program, sites)]


def reports_by_op(program: Sequence[Stmt], sites: Sequence[DotSite]) -> list[tuple[Op | None, DotReport]]:
    """Each recorded dot whose code is in `program`, with its report."""
    reports = []
    for site in sites:
        path = _path_to(program, site.scope)
        if path is None:
            continue  # the dot's code was dropped (dead), nothing runs
        loop = next((s for s in reversed(path) if isinstance(s, (ForRange, Loop))), None)
        step = loop.body if loop is not None else tuple(program)
        m, n, _ = site.shape
        loads = _count(site.scope.body, lambda s: 1 if _fills(s, site.operands) else 0)
        products = _count(site.scope.body, lambda s: 1 if _call_name(s) == "simdgroup_multiply_accumulate" else 0)
        frags = next((s.count or 1 for s in site.scope.body
                      if isinstance(s, Declare) and s.name == site.accumulator), 0)
        dots = sum(1 for other in sites if _contains(step, other.scope))
        if site.path == "tensor_ops":
            block = site.block or (m, n)
        else:
            block = (max(8, m // site.warps[0]), max(8, n // site.warps[1]))
        reports.append((site.op, DotReport(
            site.where, site.shape, site.dtypes, site.warps, block, frags, loads, products,
            round(products / loads, 3) if loads else 0.0, loop is not None, dots,
            _count(step, lambda s: 1 if isinstance(s, Barrier) else 0),
            _count(step, lambda s: s.nbytes if isinstance(s, Staged) else 0), site.path, site.form,
            site.fragments, site.k_chunk,
            sum(1 for s in _walk(site.scope.body) if _call_name(s, assigned=True) == "km_int_partial"),
            input_tensors=site.input_tensors)))
    return reports


def _walk(stmts: Sequence[Stmt]) -> Iterator[Stmt]:
    for s in stmts:
        yield s
        yield from _walk(_children(s))


def _children(s: Stmt) -> tuple[Stmt, ...]:
    if isinstance(s, If):
        return s.then + s.orelse
    if isinstance(s, (ForRange, Loop, Scope)):
        return s.body
    return tuple(getattr(s, "body", ()))  # Guarded


def _path_to(stmts: Sequence[Stmt], target: Scope) -> list[Stmt] | None:
    """The statements enclosing `target` (outermost first), or None when it is not there."""
    for s in stmts:
        if s is target:
            return []
        inner = _path_to(_children(s), target)
        if inner is not None:
            return [s, *inner]
    return None


def _contains(stmts: Sequence[Stmt], target: Scope) -> bool:
    return _path_to(stmts, target) is not None


def _count(stmts: Sequence[Stmt], weight: Callable[[Stmt], int]) -> int:
    """The sum of `weight(s)` over the statements one run of `stmts` executes, a nested loop
    with literal bounds counted per iteration, any other once (branches: both sides)."""
    total = 0
    for s in stmts:
        total += weight(s)
        times = _trips(s) if isinstance(s, ForRange) else 1
        total += times * _count(_children(s), weight)
    return total


def _trips(loop: ForRange) -> int:
    if all(isinstance(e, Lit) for e in (loop.lower, loop.upper, loop.step)):
        bounds = (loop.lower, loop.upper, loop.step)
        lo, hi, step = (int(e.text.rstrip("uUlL")) for e in bounds)  # type: ignore[union-attr]
        if step:
            return max(0, len(range(lo, hi, step)))
    return 1


def _call_name(s: Stmt, assigned: bool = False) -> str | None:
    """The function an expression statement calls (`assigned`: or whose result an assignment stores)."""
    expr = s.expr if isinstance(s, ExprStmt) else s.value if assigned and isinstance(s, Assign) else None
    return expr.fn if isinstance(expr, Call) else None


def _fills(s: Stmt, arrays: Sequence[str]) -> bool:
    """Whether `s` fills an element of one of the operand fragment arrays."""
    if isinstance(s, Assign):
        target = s.target
    elif _call_name(s) == "simdgroup_load":
        target = s.expr.args[0]  # type: ignore[union-attr]
    else:
        return False
    return isinstance(target, Index) and isinstance(target.base, Var) and target.base.name in arrays
