"""The interpreter's device memory: registered host buffers, reached through tagged pointers.

Every array argument of a launch is registered: its whole underlying allocation (so that
arguments sharing memory see each other's writes, as on a GPU) and its view, the elements the
argument spans (first element to the last one its strides reach, as the compiled backends pass
it). The kernel receives a pointer in a window of addresses that belongs to that argument alone
(`TAG_SHIFT`), so pointer arithmetic keeps track of which argument a pointer was computed from,
and every access is checked against that argument, exactly as the emulator's compiled bounds
checks do: an access past the end of `a = base[:50]` is out of bounds even where `b = base[50:]`,
another argument, lies (`InterpreterOutOfBounds`, naming the argument, the first offending index
and the extent). Each access resolves every active lane first and only then touches memory, so
masked-off lanes never do and a refused access writes nothing; an address not aligned to its
element size raises `InterpreterError`.

Atomics run one lane after another in lane order, so they are exact and return the old values.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

import numpy as np

from triton_metal.errors import InterpreterError, InterpreterOutOfBounds
from triton_metal.runtime.arrays import element_extent
from triton_metal.language.builder import AtomicOp

from .numerics import bf16_bits_to_f32, f32_to_bf16_bits


@dataclass(eq=False)
class Buffer:
    name: str
    """The kernel argument that brought it (first one, if several share the allocation)."""
    low: int
    high: int
    owner: object
    """Keeps the memory alive while the launch runs."""
    writable: bool
    u8: np.ndarray
    written: bool = False
    typed: dict[np.dtype, np.ndarray] = field(default_factory=dict)

    def view(self, dt: np.dtype) -> np.ndarray:
        v = self.typed.get(dt)
        if v is None:
            n = (self.high - self.low) // dt.itemsize
            v = self.u8[: n * dt.itemsize].view(dt)
            self.typed[dt] = v
        return v


def _byte_bounds(arr: np.ndarray) -> tuple[int, int]:
    """[low, high) byte addresses spanned by `arr` (NumPy moved this helper in 2.0)."""
    try:
        from numpy.lib.array_utils import byte_bounds
    except ImportError:  # NumPy 1.x
        byte_bounds = np.byte_bounds  # type: ignore[attr-defined]
    low, high = byte_bounds(arr)
    return int(low), int(high)


def _root(arr: np.ndarray) -> np.ndarray:
    r = arr
    while isinstance(r.base, np.ndarray):
        r = r.base
    return r


@dataclass(frozen=True, eq=False)
class View:
    """One array argument as the kernel addresses it: the pointer it receives (`base`, a tagged
    address, module docstring) and the bytes it may reach, relative to its first element."""

    name: str
    base: int
    first: int
    """The real address of its first element."""
    start: int
    stop: int
    """[start, stop): the byte offsets from the first element that lie in the argument (its
    first element to the last one its strides reach; a negative stride starts below 0)."""
    itemsize: int
    """The argument's element size: indexes in errors count these."""
    buffer: int
    """Index of the allocation (`Memory.buffers`) it lies in."""

    @property
    def extent(self) -> int:
        return (self.stop - self.start) // self.itemsize


TAG_SHIFT = 48
"""A pointer the kernel receives is `(argument + 1) << TAG_SHIFT`, plus `WINDOW_MIDDLE`, plus the
low bits of the real address (alignment is kept): its window of 2**48 addresses belongs to that
argument alone, so an access is checked against the argument it was computed from, as the
compiled kernels check theirs, even where it would land in another argument's memory."""
WINDOW_MIDDLE = 1 << (TAG_SHIFT - 1)
_LOW_BITS = 0xFFF


def far_from(pointers: np.ndarray, results: np.ndarray, offsets: np.ndarray, size: int) -> np.ndarray:
    """Lanes of `pointers + offsets * size` that leave the pointer's window (or overflow 64 bits):
    the result cannot name an element of the argument, and must not name another's."""
    limit = np.uint64(WINDOW_MIDDLE // size)
    signed = offsets.astype(np.int64, copy=False) if offsets.dtype.kind != "u" else None
    if signed is None:
        huge = offsets.astype(np.uint64, copy=False) >= limit
    else:
        huge = (signed >= np.int64(limit)) | (signed <= -np.int64(limit))
    moved = (pointers >> np.uint64(TAG_SHIFT)) != (results >> np.uint64(TAG_SHIFT))
    return huge | moved


def poison(pointers: np.ndarray) -> np.ndarray:
    """The last address of each pointer's window: outside every argument, so an access through
    it is out of bounds of the argument the pointer came from."""
    window = np.uint64((1 << TAG_SHIFT) - 1)
    return (pointers & ~window) | window


class Memory:
    """The set of buffers one launch may touch."""

    def __init__(self, checked: bool = True) -> None:
        self.checked = checked
        """Check each access against its argument (the default); off (the emulator's opt-out,
        `TRITON_METAL_EMULATOR_CHECKS=0`), an access may reach any registered allocation, as
        an unchecked compiled kernel reaches the memory around its buffers, and only one outside
        all of them (which the interpreter cannot touch) raises."""
        self.buffers: list[Buffer] = []
        self.views: list[View] = []
        """The array arguments, in the order of their tags."""
        self.undo: list[tuple[Buffer, np.ndarray, np.ndarray]] = []
        """(buffer, addresses, the values they held) per write, so a launch that fails part way
        can be undone (`roll_back`): a refused launch leaves every array as it was."""

    def roll_back(self) -> None:
        """Put back every value this launch wrote, newest first."""
        for b, a, old in reversed(self.undo):
            self._write(b, a, old)
        self.undo.clear()

    def register(self, arr: np.ndarray, name: str) -> int:
        """Make `arr`'s allocation addressable; returns the pointer the kernel receives for it
        (its tagged address: `TAG_SHIFT`)."""
        root = _root(arr)
        low, high = _byte_bounds(root) if root.size else _byte_bounds(arr)
        first = int(arr.__array_interface__["data"][0])
        if any(s < 0 for s in arr.strides):
            lo, hi = _byte_bounds(arr)
            start, stop = lo - first, hi - first
        else:
            # the compiled backends' buffer: first element to the last one the strides reach
            start, stop = 0, element_extent(arr) * arr.itemsize
        base = ((len(self.views) + 1) << TAG_SHIFT) + WINDOW_MIDDLE + (first & _LOW_BITS)
        self.views.append(View(name, base, first, start, stop, arr.itemsize, self._allocation(arr, name, low, high)))
        return base

    def _allocation(self, arr: np.ndarray, name: str, low: int, high: int) -> int:
        for i, b in enumerate(self.buffers):
            if b.low <= low and high <= b.high:
                b.writable = b.writable and bool(arr.flags.writeable)
                return i
        n = max(high - low, 0)
        if n:
            u8 = np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(low))
        else:
            u8 = np.zeros(0, np.uint8)
        self.buffers.append(Buffer(name, low, high, arr, bool(arr.flags.writeable), u8))
        return len(self.buffers) - 1

    def addresses(self, pointers: np.ndarray) -> np.ndarray:
        """The real addresses pointers stand for (what a compiled kernel's pointer holds, for
        `tl.device_print`), unchecked: the tag of an argument replaced by its first element's
        address; real addresses and pointers into no argument as they are."""
        a = np.asarray(pointers, dtype=np.uint64)
        tags = (a >> np.uint64(TAG_SHIFT)).astype(np.int64)
        real = a.copy()
        for tag in np.unique(tags):
            if 0 < tag <= len(self.views):
                v = self.views[int(tag) - 1]
                sel = tags == tag
                real[sel] = np.uint64(v.first) + (a[sel] - np.uint64(v.base))
        return real

    # -- resolution ---------------------------------------------------------------------------
    def _resolve(self, addrs: np.ndarray, itemsize: int, what: str) -> tuple[np.ndarray, np.ndarray]:
        """(real address, buffer index) per pointer; every one must lie inside the argument it
        was computed from (`InterpreterOutOfBounds` otherwise, for the first lane that does not)
        and be aligned to the element size."""
        a = addrs.astype(np.uint64, copy=False).reshape(-1)
        tags = (a >> np.uint64(TAG_SHIFT)).astype(np.int64)
        view_of = tags - 1
        offsets = np.zeros(a.shape, dtype=np.int64)
        real = a.copy()
        for tag in np.unique(tags):
            sel = tags == tag
            if tag == 0:
                self._raw(a, sel, view_of, offsets)  # real addresses (an integer made a pointer)
                continue
            if tag > len(self.views):
                raise InterpreterError(f"{what} through a pointer into no argument ({int(a[sel][0]):#x})")
            v = self.views[int(tag) - 1]
            off = (a[sel] - np.uint64(v.base)).view(np.int64)
            offsets[sel] = off
            real[sel] = np.uint64(v.first) + off.view(np.uint64)
        if not self.checked:
            return self._unchecked(real, view_of, offsets, itemsize, what, addrs.shape)
        starts = np.array([v.start for v in self.views], dtype=np.int64)
        stops = np.array([v.stop for v in self.views], dtype=np.int64)
        inside = (offsets >= starts[view_of]) & (offsets + itemsize <= stops[view_of])
        if not inside.all():
            lane = int(np.flatnonzero(~inside)[0])
            raise self._out_of_bounds(self.views[int(view_of[lane])], int(offsets[lane]), what)
        _check_aligned(real, itemsize, what)
        which = np.array([v.buffer for v in self.views], dtype=np.int64)[view_of]
        return real.reshape(addrs.shape), which.reshape(addrs.shape)

    def _unchecked(self, real: np.ndarray, view_of: np.ndarray, offsets: np.ndarray, itemsize: int,
                   what: str, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        which = np.full(real.shape, -1, dtype=np.int64)
        for i, b in enumerate(self.buffers):
            inside = (real >= np.uint64(b.low)) & (real + np.uint64(itemsize) <= np.uint64(b.high)) & (which < 0)
            which[inside] = i
        if (which < 0).any():
            lane = int(np.flatnonzero(which < 0)[0])
            raise self._out_of_bounds(self.views[int(view_of[lane])], int(offsets[lane]), what)
        _check_aligned(real, itemsize, what)
        return real.reshape(shape), which.reshape(shape)

    def _raw(self, a: np.ndarray, sel: np.ndarray, view_of: np.ndarray, offsets: np.ndarray) -> None:
        """Real addresses (only an integer cast to a pointer makes one, which the compiler
        refuses): each is checked against the argument it lies in."""
        for lane in np.flatnonzero(sel):
            addr = int(a[lane])
            found = next((i for i, v in enumerate(self.views)
                          if v.first + v.start <= addr < v.first + v.stop), None)
            if found is None:
                if not self.views:
                    raise InterpreterError(f"address {addr:#x} is not in any argument buffer")
                nearest = min(self.views, key=lambda v: min(abs(addr - v.first - v.start),
                                                            abs(addr - v.first - v.stop)))
                raise self._out_of_bounds(nearest, addr - nearest.first, "access")
            view_of[lane] = found
            offsets[lane] = addr - self.views[found].first

    @staticmethod
    def _out_of_bounds(v: View, offset: int, what: str) -> InterpreterOutOfBounds:
        # an access that starts inside and ends outside (wider than the argument's elements,
        # through a reinterpreted pointer) reports the first element it reaches outside, as the
        # emulator's checks do
        first = v.stop if v.start <= offset < v.stop else offset
        index = first // v.itemsize
        return InterpreterOutOfBounds(
            f"out-of-bounds access to '{v.name}' at index {index} (the buffer has {v.extent} "
            f"element{'' if v.extent == 1 else 's'}), a {what}",
            v.name, index, v.extent,
        )

    # -- plain accesses -----------------------------------------------------------------------
    def load(self, addrs: np.ndarray, dt: np.dtype, mask: np.ndarray | None) -> np.ndarray:
        out = np.zeros(addrs.shape, dtype=dt)
        active = np.ones(addrs.shape, bool) if mask is None else np.broadcast_to(mask, addrs.shape)
        if not active.any():
            return out
        a = addrs[active]
        a, which = self._resolve(a, dt.itemsize, "load")
        vals = np.empty(a.shape, dtype=dt)
        for i in np.unique(which):
            b = self.buffers[int(i)]
            sel = which == i
            vals[sel] = self._gather(b, a[sel], dt)
        out[active] = vals
        return out

    def store(self, addrs: np.ndarray, values: np.ndarray, mask: np.ndarray | None) -> None:
        dt = values.dtype
        active = np.ones(addrs.shape, bool) if mask is None else np.broadcast_to(mask, addrs.shape)
        if not active.any():
            return
        a = addrs[active]
        v = np.broadcast_to(values, addrs.shape)[active]
        a, which = self._resolve(a, dt.itemsize, "store")
        for i in np.unique(which):
            b = self.buffers[int(i)]
            self._check_writable(b)
            sel = which == i
            self._scatter(b, a[sel], v[sel])
            b.written = True

    def _check_writable(self, b: Buffer) -> None:
        if not b.writable:
            raise InterpreterError(f"store to argument '{b.name}', whose array is read-only")

    def _gather(self, b: Buffer, a: np.ndarray, dt: np.dtype) -> np.ndarray:
        off = (a - np.uint64(b.low)).astype(np.int64)
        if b.low % dt.itemsize == 0:
            return b.view(dt)[off // dt.itemsize]
        idx = off[:, None] + np.arange(dt.itemsize)
        return np.ascontiguousarray(b.u8[idx]).view(dt).reshape(-1)

    def _scatter(self, b: Buffer, a: np.ndarray, v: np.ndarray) -> None:
        self.undo.append((b, a.copy(), self._gather(b, a, v.dtype)))
        self._write(b, a, v)

    def _write(self, b: Buffer, a: np.ndarray, v: np.ndarray) -> None:
        dt = v.dtype
        off = (a - np.uint64(b.low)).astype(np.int64)
        if b.low % dt.itemsize == 0:
            b.view(dt)[off // dt.itemsize] = v
            return
        idx = off[:, None] + np.arange(dt.itemsize)
        b.u8[idx] = np.ascontiguousarray(v).view(np.uint8).reshape(-1, dt.itemsize)

    # -- atomics ------------------------------------------------------------------------------
    def atomic_rmw(
        self, op: AtomicOp, addrs: np.ndarray, values: np.ndarray, mask: np.ndarray | None, bfloat: bool = False
    ) -> np.ndarray:
        """`values` are memory patterns; with `bfloat` they are bfloat16 bits, combined in float32
        and rounded once (as the compiled loop on the containing word does). Float max and min
        compare bit patterns (`_bit_ordered`)."""
        dt = values.dtype

        def _apply(op: AtomicOp, old: np.ndarray, val: np.ndarray) -> np.ndarray:
            if op in (AtomicOp.MAX, AtomicOp.MIN) and (bfloat or old.dtype.kind == "f"):
                return _bit_ordered(op, old, val)
            if not bfloat:
                return _apply_op(op, old, val)
            return f32_to_bf16_bits(_apply_op(op, bf16_bits_to_f32(old), bf16_bits_to_f32(val)))

        old = np.zeros(addrs.shape, dtype=dt)
        active = np.ones(addrs.shape, bool) if mask is None else np.broadcast_to(mask, addrs.shape)
        flat_idx = np.flatnonzero(active.reshape(-1))
        if flat_idx.size == 0:
            return old
        a = addrs.reshape(-1)[flat_idx]
        v = np.broadcast_to(values, addrs.shape).reshape(-1)[flat_idx]
        a, which = self._resolve(a, dt.itemsize, f"atomic_{op.value}")
        old_flat = old.reshape(-1)
        if np.unique(a).size == a.size:  # no lane sees another's update: one vectorised step
            for i in np.unique(which):
                b = self.buffers[int(i)]
                self._check_writable(b)
                sel = which == i
                prev = self._gather(b, a[sel], dt)
                self._scatter(b, a[sel], _apply(op, prev, v[sel]).astype(dt))
                old_flat[flat_idx[sel]] = prev
                b.written = True
            return old
        for lane in range(a.size):  # lane order: exact and deterministic
            b = self.buffers[int(which[lane])]
            self._check_writable(b)
            cell = a[lane : lane + 1]
            prev = self._gather(b, cell, dt)
            self._scatter(b, cell, _apply(op, prev, v[lane : lane + 1]).astype(dt))
            old_flat[flat_idx[lane]] = prev[0]
            b.written = True
        return old

    def atomic_cas(self, addrs: np.ndarray, cmp: np.ndarray, values: np.ndarray) -> np.ndarray:
        dt = values.dtype
        a = addrs.reshape(-1)
        c = np.broadcast_to(cmp, addrs.shape).reshape(-1)
        v = np.broadcast_to(values, addrs.shape).reshape(-1)
        a, which = self._resolve(a, dt.itemsize, "atomic_cas")
        old = np.empty(a.shape, dtype=dt)
        bits = np.dtype(f"u{dt.itemsize}")
        for lane in range(a.size):
            b = self.buffers[int(which[lane])]
            self._check_writable(b)
            cell = a[lane : lane + 1]
            prev = self._gather(b, cell, dt)
            old[lane] = prev[0]
            if prev.view(bits)[0] == c[lane : lane + 1].view(bits)[0]:  # hardware compares bits
                self._scatter(b, cell, v[lane : lane + 1])
                b.written = True
        return old.reshape(addrs.shape)


def _check_aligned(real: np.ndarray, itemsize: int, what: str) -> None:
    misaligned = (real % np.uint64(itemsize)) != 0
    if misaligned.any():
        addr = int(real[misaligned][0])
        raise InterpreterError(f"unaligned {what}: address {addr:#x} is not a multiple of the element size {itemsize}")


def _bit_ordered(op: AtomicOp, old: np.ndarray, val: np.ndarray) -> np.ndarray:
    """Float atomic max/min as Triton computes them on a GPU, with integer atomics on the bit
    patterns: the greater (lesser) of the two by IEEE totalOrder (-NaN < -inf < -0.0 < +0.0 <
    +inf < +NaN, NaNs by payload), every bit of the winner kept. `old` and `val` are floats or
    bfloat16 bits. The key is the bits as a signed integer with a negative value's magnitude
    bits flipped (as templates/helpers/atomic_bit_order.metal)."""
    width = old.dtype.itemsize * 8
    signed = np.dtype(f"i{old.dtype.itemsize}")
    flip = signed.type((1 << (width - 1)) - 1)

    def key(x: np.ndarray) -> np.ndarray:
        i = x.view(signed)
        return np.where(i < 0, i ^ flip, i)

    keep = key(old) >= key(val) if op is AtomicOp.MAX else key(old) <= key(val)
    return np.where(keep, old.view(signed), val.view(signed)).view(old.dtype)  # bits, not values


def _apply_op(op: AtomicOp, old: np.ndarray, val: np.ndarray) -> np.ndarray:
    if op in (AtomicOp.ADD, AtomicOp.FADD):
        return old + val
    if op is AtomicOp.MAX:
        return np.maximum(old, val)
    if op is AtomicOp.MIN:
        return np.minimum(old, val)
    if op is AtomicOp.AND:
        return old & val
    if op is AtomicOp.OR:
        return old | val
    if op is AtomicOp.XOR:
        return old ^ val
    if op is AtomicOp.XCHG:
        return val
    raise InterpreterError(f"unknown atomic operation {op}")
