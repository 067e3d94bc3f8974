"""Where each register of a tensor lives: the layout's distribution as index arithmetic.

The layout functions of `ir.layouts` (`registers_per_thread`, `element_coords`, evaluated through
`linear_layout`) say which element register `reg` of thread `(warp, lane)` holds. Over power-of-two shapes every layout is linear
over bits (docs in `ir/layouts.py`), so the code generator needs only the element of each
register of thread (0, 0) plus one basis vector per lane bit and per warp bit: the coordinate of
register `r` in thread `(w, l)` is `reg_coords[r] + sum(lane_bases[i] for set bits i of l) +
sum(warp_bases[j] for set bits j of w)`, the bits of the three parts never overlapping. This
module computes those tables once per (layout, shape, num_warps), checks the bit-disjointness it
relies on, and builds the per-thread coordinate expressions the generated code uses.

A basis vector that is zero marks a replicated bit: threads differing in it hold the same
element. Stores and atomics run only in owners (the replicated bits clear), and only from the
first register holding an element.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from triton_metal.errors import internal_error
from triton_metal.ir import layouts as L

WARP = 32


@dataclass(frozen=True)
class Distribution:
    shape: tuple[int, ...]
    num_warps: int
    reg_coords: tuple[tuple[int, ...], ...]
    """Element held by each register of thread (warp 0, lane 0)."""
    lane_bases: tuple[tuple[int, ...], ...]
    """Per lane bit (5): the coordinate offset it adds."""
    warp_bases: tuple[tuple[int, ...], ...]
    """Per warp bit (log2 num_warps)."""

    @property
    def num_regs(self) -> int:
        return len(self.reg_coords)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def lane_replica_mask(self) -> int:
        """Lane bits whose basis is zero (threads differing there hold copies)."""
        return sum(1 << i for i, b in enumerate(self.lane_bases) if not any(b))

    @property
    def warp_replica_mask(self) -> int:
        return sum(1 << i for i, b in enumerate(self.warp_bases) if not any(b))

    def first_registers(self) -> tuple[bool, ...]:
        """Per register: whether it is the first of the thread to hold its element."""
        seen: set[tuple[int, ...]] = set()
        out = []
        for c in self.reg_coords:
            out.append(c not in seen)
            seen.add(c)
        return tuple(out)

    def coords(self, reg: int, lane: int, warp: int) -> tuple[int, ...]:
        """The element a register holds (Python-side evaluation, for checks and tables)."""
        c = list(self.reg_coords[reg])
        for i, b in enumerate(self.lane_bases):
            if lane >> i & 1:
                c = [x + y for x, y in zip(c, b)]
        for j, b in enumerate(self.warp_bases):
            if warp >> j & 1:
                c = [x + y for x, y in zip(c, b)]
        return tuple(c)

    def register_of(self, coords: tuple[int, ...]) -> int | None:
        """The register of thread (0, 0) holding `coords`, if any."""
        for r, c in enumerate(self.reg_coords):
            if c == coords:
                return r
        return None

    def thread_terms(self, dim: int) -> list[tuple[str, int, int, int]]:
        """The per-thread part of coordinate `dim` as runs `(id, shift, mask, scale)`, meaning
        `((id >> shift) & mask) * scale` summed, with `id` "lane" or "warp": consecutive bits whose
        bases double along `dim` merge into one run."""
        out: list[tuple[str, int, int, int]] = []
        for which, bases in (("lane", self.lane_bases), ("warp", self.warp_bases)):
            run: list[int] = []  # bit indices of the current run
            scale = 0

            def flush() -> None:
                if run:
                    out.append((which, run[0], (1 << len(run)) - 1, scale))

            for i, b in enumerate(bases):
                v = b[dim]
                if v and run and run[-1] == i - 1 and v == scale << len(run):
                    run.append(i)
                    continue
                flush()
                run, scale = ([i], v) if v else ([], 0)
            flush()
        return out


@lru_cache(maxsize=None)
def distribution(layout: L.Layout, shape: tuple[int, ...], num_warps: int) -> Distribution:
    """The tables of `layout` over `shape` (checked for the bit-disjointness the code relies on)."""
    ll = L.linear_layout(layout, tuple(shape), num_warps)
    nregs = L.registers_per_thread(layout, shape, num_warps)
    reg_coords = tuple(tuple(ll.coords(0, 0, r)) for r in range(nregs))
    zero = reg_coords[0]
    if any(zero):
        raise internal_error(f"layout {layout} over {shape}: register 0 of thread 0 holds {zero}, not the origin")
    lane_bases = tuple(tuple(ll.coords(0, 1 << i, 0)) for i in range(5))
    warp_bits = num_warps.bit_length() - 1
    warp_bases = tuple(tuple(ll.coords(1 << j, 0, 0)) for j in range(warp_bits))
    dist = Distribution(tuple(shape), num_warps, reg_coords, lane_bases, warp_bases)
    _check(layout, dist)
    return dist


def _check(layout: L.Layout, d: Distribution) -> None:
    # Disjoint bits per dim: sum == xor == or, so coordinates never carry between parts.
    for dim in range(d.rank):
        used = 0
        for b in (*d.lane_bases, *d.warp_bases):
            v = b[dim]
            if v & (v - 1) or v & used:
                raise internal_error(f"layout {layout} over {d.shape}: thread bases are not disjoint bits in dim {dim}")
            used |= v
        for c in d.reg_coords:
            if c[dim] & used:
                raise internal_error(f"layout {layout} over {d.shape}: register and thread bits overlap in dim {dim}")
    # Spot-check the linear model against the layout functions.
    nw = d.num_warps
    samples = [(r, lane, w) for r in (0, d.num_regs - 1) for lane in (0, 5, 31) for w in (0, nw - 1)]
    for r, lane, w in samples:
        want = tuple(L.element_coords(layout, d.shape, nw, w, lane, r))
        if d.coords(r, lane, w) != want:
            raise internal_error(f"layout {layout} over {d.shape} is not linear at reg {r}, lane {lane}, warp {w}")
