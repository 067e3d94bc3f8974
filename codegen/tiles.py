"""Row-major tiles in threadgroup memory: the form every dot lowering stages its operands and
accumulators in, whatever layout the registers hold them in.

`write_tile` writes the elements a thread holds (each once, replicas skipped), `read_tile` reads
them back into registers of any distribution (replicas copied), and `row_major` is the index both
use. Neither waits: the caller places the barriers its data flow needs.
"""

from __future__ import annotations

from .context import LoweringContext
from .distribution import Distribution
from .program import Apply, Assign, Convert, Expr, Index, Lit
from .values import RegValue


def row_major(row: Expr, col: Expr, row_length: int) -> Expr:
    """The index of (`row`, `col`) in a row-major tile of `row_length` columns."""
    return Apply("add", (Apply("mul", (row, Lit(str(row_length)))), col))


def write_tile(ctx: LoweringContext, value: RegValue, view: Expr, row_length: int,
               convert: str | None = None) -> None:
    """Every thread writes its registers of `value` row-major into `view`, each element once,
    converted to `convert` where given."""
    dist = value.dist
    assert dist is not None
    for r, first in enumerate(dist.first_registers()):
        if first:
            idx = row_major(ctx.coord(dist, r, 0), ctx.coord(dist, r, 1), row_length)
            reg = value.regs[r]
            ctx.emit(Assign(Index(view, idx), reg if convert is None else Convert(convert, reg)))


def read_tile(ctx: LoweringContext, view: Expr, row_length: int, dist: Distribution, out: tuple[Expr, ...]) -> None:
    """Registers `out`, placed by `dist`, read from the row-major tile at `view`."""
    for r, first in enumerate(dist.first_registers()):
        if first:
            row, col = ctx.coord(dist, r, 0), ctx.coord(dist, r, 1)
            ctx.emit(Assign(out[r], Index(view, row_major(row, col, row_length))))
    ctx.copy_replicas(dist, out)
