"""The interpreter's device memory: registered host buffers addressed by real byte addresses.

Every array argument of a launch is registered (its whole underlying allocation, so that a view
with an offset or strides reaches the memory around it as a GPU kernel would). A pointer is a
uint64 address; each access resolves every active lane to (buffer, byte offset) first and only
then touches memory, so masked-off lanes never do, and an address outside every buffer or not
aligned to its element size raises `InterpreterError` instead of reading garbage or crashing.

Atomics run one lane after another in lane order, so they are exact and return the old values.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

import numpy as np

from triton_metal.errors import InterpreterError, InterpreterOutOfBounds
from triton_metal.runtime.host_arrays import element_extent
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


class Memory:
    """The set of buffers one launch may touch."""

    def __init__(self) -> None:
        self.buffers: list[Buffer] = []
        self.extents: list[tuple[str, int, int]] = []
        """(argument, address of its first element, end of what it may address): an access must
        fall inside one of these, not merely inside the allocation around a view."""

    def register(self, arr: np.ndarray, name: str) -> int:
        """Make `arr`'s allocation addressable; returns the address of `arr`'s first element."""
        root = _root(arr)
        low, high = _byte_bounds(root) if root.size else _byte_bounds(arr)
        addr = int(arr.__array_interface__["data"][0])
        if any(s < 0 for s in arr.strides):
            self.extents.append((name, *_byte_bounds(arr)))
        else:
            # the compiled backends' buffer: first element to the last one the strides reach
            self.extents.append((name, addr, addr + element_extent(arr) * arr.itemsize))
        for b in self.buffers:
            if b.low <= low and high <= b.high:
                b.writable = b.writable and bool(arr.flags.writeable)
                return addr
        n = max(high - low, 0)
        if n:
            u8 = np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(low))
        else:
            u8 = np.zeros(0, np.uint8)
        self.buffers.append(Buffer(name, low, high, arr, bool(arr.flags.writeable), u8))
        return addr

    # -- resolution ---------------------------------------------------------------------------
    def _resolve(self, addrs: np.ndarray, itemsize: int, what: str) -> tuple[np.ndarray, list[Buffer]]:
        """Buffer index per address (all addresses must resolve) and the buffers."""
        a = addrs.astype(np.uint64, copy=False)
        self._check_extents(a, itemsize, what)
        which = np.full(a.shape, -1, dtype=np.int64)
        for i, b in enumerate(self.buffers):
            inside = (a >= np.uint64(b.low)) & (a + np.uint64(itemsize) <= np.uint64(b.high)) & (which < 0)
            which[inside] = i
        bad = which < 0
        if bad.any():
            raise InterpreterError(self._describe_bad(int(a[bad][0]), itemsize, what, int(bad.sum())))
        misaligned = (a % np.uint64(itemsize)) != 0
        if misaligned.any():
            addr = int(a[misaligned][0])
            raise InterpreterError(
                f"unaligned {what}: address {addr:#x} is not a multiple of the element size {itemsize}"
            )
        return which, self.buffers

    def _check_extents(self, a: np.ndarray, itemsize: int, what: str) -> None:
        """Every address inside some argument's extent, or `InterpreterOutOfBounds` worded as the
        emulator's bounds checks word it: the argument nearest the address and the index."""
        if not self.extents:
            return
        inside = np.zeros(a.shape, dtype=np.bool_)
        for _name, low, high in self.extents:
            inside |= (a >= np.uint64(low)) & (a + np.uint64(itemsize) <= np.uint64(high))
        if inside.all():
            return
        outside = a[~inside]
        addr = int(outside[0])
        name, low, high = min(self.extents, key=lambda e: min(abs(addr - e[1]), abs(addr - e[2])))
        index = (addr - low) // itemsize
        lanes = f" with {outside.size} lanes out of bounds" if outside.size > 1 else ""
        raise InterpreterOutOfBounds(
            f"out-of-bounds access to '{name}' at index {index} (the buffer has "
            f"{(high - low) // itemsize} elements), a {what}{lanes}"
        )

    def _describe_bad(self, addr: int, itemsize: int, what: str, count: int) -> str:
        lanes = f" ({count} lanes)" if count > 1 else ""
        if addr == 0 or not self.buffers:
            return f"out-of-bounds {what}{lanes}: address {addr:#x} is not in any argument buffer"
        nearest = min(self.buffers, key=lambda b: min(abs(addr - b.low), abs(addr - b.high)))
        size = nearest.high - nearest.low
        if addr < nearest.low:
            where = f"{nearest.low - addr} bytes before"
        else:
            where = f"{addr + itemsize - nearest.high} bytes past the end of"
        return (
            f"out-of-bounds {what}{lanes}: address {addr:#x} is {where} argument "
            f"'{nearest.name}' ({size} bytes); check the offsets and the mask"
        )

    # -- plain accesses -----------------------------------------------------------------------
    def load(self, addrs: np.ndarray, dt: np.dtype, mask: np.ndarray | None) -> np.ndarray:
        out = np.zeros(addrs.shape, dtype=dt)
        active = np.ones(addrs.shape, bool) if mask is None else np.broadcast_to(mask, addrs.shape)
        if not active.any():
            return out
        a = addrs[active]
        which, bufs = self._resolve(a, dt.itemsize, "load")
        vals = np.empty(a.shape, dtype=dt)
        for i in np.unique(which):
            b = bufs[int(i)]
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
        which, bufs = self._resolve(a, dt.itemsize, "store")
        for i in np.unique(which):
            b = bufs[int(i)]
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
        and rounded once (as the compiled loop on the containing word does)."""
        dt = values.dtype

        def _apply(op: AtomicOp, old: np.ndarray, val: np.ndarray) -> np.ndarray:
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
        which, bufs = self._resolve(a, dt.itemsize, f"atomic_{op.value}")
        old_flat = old.reshape(-1)
        if np.unique(a).size == a.size:  # no lane sees another's update: one vectorised step
            for i in np.unique(which):
                b = bufs[int(i)]
                self._check_writable(b)
                sel = which == i
                prev = self._gather(b, a[sel], dt)
                self._scatter(b, a[sel], _apply(op, prev, v[sel]).astype(dt))
                old_flat[flat_idx[sel]] = prev
                b.written = True
            return old
        for lane in range(a.size):  # lane order: exact and deterministic
            b = bufs[int(which[lane])]
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
        which, bufs = self._resolve(a, dt.itemsize, "atomic_cas")
        old = np.empty(a.shape, dtype=dt)
        bits = np.dtype(f"u{dt.itemsize}")
        for lane in range(a.size):
            b = bufs[int(which[lane])]
            self._check_writable(b)
            cell = a[lane : lane + 1]
            prev = self._gather(b, cell, dt)
            old[lane] = prev[0]
            if prev.view(bits)[0] == c[lane : lane + 1].view(bits)[0]:  # hardware compares bits
                self._scatter(b, cell, v[lane : lane + 1])
                b.written = True
        return old.reshape(addrs.shape)


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
