"""How a `tt.dot` maps onto 8x8 `simdgroup_matrix` fragments, derived from the layouts.

Metal's fragment lane layout (metal.md 5.7): lane `l`, `q = l / 4`, holds row
`(q & 4) + (l / 2) % 4` and columns `c = (q & 2) * 2 + (l % 2) * 2` and `c + 1`. In bits of the
lane id: bit 0 adds 2 columns, bits 1 and 2 add 1 and 2 rows, bit 3 adds 4 columns, bit 4 adds 4
rows (`FRAGMENT_LANE_BASES`). A register distribution (`codegen.distribution.Distribution`) whose
lane bases are exactly these, and whose registers in thread (0, 0) come in pairs `(row, col)`,
`(row, col + 1)` with `row` and `col` multiples of 8, holds whole fragments: register pair `p` of
every thread is the `thread_elements()` of one fragment, at the origin thread (0, 0) gives it
plus the thread's warp offset.

`fragment_slots` finds those pairs; `plan_dot` matches the fragments of the accumulator with
those of the operands and checks the conditions that make one `simdgroup_multiply_accumulate`
per (row block, column block, K step) correct in every warp:
* the accumulator's warps offset rows and columns; operand A's warps offset the same rows and no
  columns (K); operand B's the same columns and no rows;
* thread (0, 0) holds, for each accumulator fragment at `(r, c)` and each K step `k`, the A
  fragment at `(r, k)` and the B fragment at `(k, c)`.
When an operand's distribution does not hold fragments this way (e.g. a coalesced layout), the
plan says so and the lowering stages that operand through threadgroup memory instead
(`simdgroup_load` at this warp's origins).

Pure functions of the distributions (no MSL): the lowering turns the plan into statements.
"""

from __future__ import annotations

from dataclasses import dataclass

from .distribution import Distribution

FRAG = 8
"""Side of a simdgroup_matrix fragment."""

FRAGMENT_LANE_BASES: tuple[tuple[int, int], ...] = ((0, 2), (1, 0), (2, 0), (0, 4), (4, 0))
"""Per lane bit, the (row, column) offset it adds inside a fragment (Metal's lane layout)."""


@dataclass(frozen=True)
class Slot:
    """One fragment a thread holds: its origin in thread (0, 0) and its two registers."""

    row: int
    col: int
    regs: tuple[int, int]


def fragment_slots(dist: Distribution) -> dict[tuple[int, int], Slot] | None:
    """The fragments of a 2-D distribution keyed by their origin in thread (0, 0), or None when
    the registers do not form whole fragments in Metal's lane layout."""
    if dist.rank != 2 or dist.lane_bases != FRAGMENT_LANE_BASES:
        return None
    for base in dist.warp_bases:
        if base[0] % FRAG or base[1] % FRAG:
            return None
    slots: dict[tuple[int, int], Slot] = {}
    first = dist.first_registers()
    for r, (row, col) in enumerate(dist.reg_coords):
        if row % FRAG or col % FRAG not in (0, 1):
            return None
        if col % FRAG or not first[r]:
            continue
        r1 = dist.register_of((row, col + 1))
        if r1 is None:
            return None
        slots.setdefault((row, col), Slot(row, col, (r, r1)))
    return slots


@dataclass(frozen=True)
class DotPlan:
    """The fragment products of one dot for every warp (origins are those of warp 0)."""

    m: int
    n: int
    k: int
    acc: tuple[Slot, ...]
    """The accumulator/result fragments, in the result's register order."""
    a: dict[tuple[int, int], Slot] | None
    """A fragments keyed by origin (row, k) when A's registers hold them; None: stage A."""
    b: dict[tuple[int, int], Slot] | None
    """B fragments keyed by origin (k, col) when B's registers hold them; None: stage B."""
    warp_rows: tuple[int, ...]
    """Per warp bit, the rows it adds to an accumulator fragment's origin."""
    warp_cols: tuple[int, ...]
    """Per warp bit, the columns it adds."""

    @property
    def k_steps(self) -> int:
        return self.k // FRAG


def plan_dot(acc: Distribution, a: Distribution, b: Distribution) -> DotPlan | None:
    """Match the fragments of a dot `acc += a @ b` (2-D distributions); None when the
    accumulator's own distribution does not hold whole fragments."""
    m, n = acc.shape
    k = a.shape[1]
    slots = fragment_slots(acc)
    if slots is None:
        return None
    warp_rows = tuple(bw[0] for bw in acc.warp_bases)
    warp_cols = tuple(bw[1] for bw in acc.warp_bases)
    a_plan = _operand(a, slots, 0, k, tuple((r, 0) for r in warp_rows))
    b_plan = _operand(b, slots, 1, k, tuple((0, c) for c in warp_cols))
    return DotPlan(m, n, k, tuple(slots.values()), a_plan, b_plan, warp_rows, warp_cols)


def _operand(dist: Distribution, acc_slots: dict[tuple[int, int], Slot], op_idx: int, k: int,
             want_warps: tuple[tuple[int, int], ...]) -> dict[tuple[int, int], Slot] | None:
    """Operand fragments covering every (accumulator fragment, K step) pair, or None."""
    if dist.warp_bases != want_warps:
        return None
    slots = fragment_slots(dist)
    if slots is None:
        return None
    for row, col in acc_slots:
        for kk in range(0, k, FRAG):
            origin = (row, kk) if op_idx == 0 else (kk, col)
            if origin not in slots:
                return None
    return slots
