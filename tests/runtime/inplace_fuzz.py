"""Random kernels over shared arrays, for the in-place differential fuzzer (test_inplace_fuzz.py).

`kernel_shape(seed)` writes one kernel from a seed: loads, stores and atomics (add, max, min,
and, or, xor, xchg, cas) on two shared arrays `A` and `B`, in loops (constant or run-time trip
counts) and branches on a run-time scalar (an early `return` among them), under masks (the
bound, a stride pattern, a data-dependent one), with the values atomics return stored to `R` or
used in later values, and loads of a neighbour's element (`o ^ 1`) in arrays no atomic touches.
`contents(rng, dtype, size)` draws array contents that include signed zeros, NaNs with payloads
(quiet and signalling), infinities and denormals.

Every kernel is race-free, so in-place execution has one answer: each program touches only its
own block of `BLOCK` elements, every access but the neighbour loads uses the block's own index
`o` (so one thread owns each element in every store and atomic), `BLOCK` is at least the
program's thread count (no element is held by two threads), and the one array whose loads read
a neighbour's element is stored to first and takes no atomics, so every load of it follows a
store and the compiler orders it against the other threads' stores (codegen/params.py). Values are single correctly rounded
operations (add, subtract, multiply by 2, negate, select; bitwise and wrapping integer
operations), which every backend computes alike; a float kernel either sums values (adds,
subtracts, atomic `add`) or orders them (atomic `max`/`min`, which order NaNs by sign), never
both, since which NaN a sum of two NaNs returns is the implementation's choice.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from triton_metal.codegen.kernel import KEY_BITS

ATOMIC_TYPES = ("float32", "float16", "int32", "uint32")
PLAIN_TYPES = ("int8", "int64", "float32", "uint16", "int32")
"""Types of kernels with loads and stores only."""
_ORDERING_ATOMICS = ("max", "min", "xchg", "cas")
_SUMMING_ATOMICS = ("add", "xchg", "cas")
"""Float atomics of a kernel that orders NaNs (`_Writer.ordering`), and of one that sums values."""
_INT_ATOMICS = ("add", "max", "min", "and", "or", "xor", "xchg", "cas")


@dataclass
class KernelShape:
    seed: int
    dtype: str
    source: str
    block: int
    grid: int
    written: frozenset[str]
    """The arrays the kernel stores to or updates atomically."""
    read: frozenset[str]


@dataclass
class _Writer:
    rng: random.Random
    dtype: str
    atomic_arrays: frozenset[str]
    neighbour: str | None
    """The array whose neighbours' elements loads may read: stored first, no atomics."""
    ordering: bool = False
    """A float kernel whose atomics may be `max`/`min`, which order NaNs by their sign bit; it
    then adds and subtracts no two values, since the sum of two NaNs may carry either one's sign
    (IEEE 754 leaves it to the implementation), and in place would have no single answer."""
    lines: list[str] = field(default_factory=list)
    count: int = 0
    written: set[str] = field(default_factory=set)
    read: set[str] = field(default_factory=set)

    @property
    def is_float(self) -> bool:
        return self.dtype.startswith("float")

    def fresh(self) -> str:
        self.count += 1
        return f"t{self.count}"

    def value(self, scope: list[str]) -> str:
        a = scope[-1] if self.rng.random() < 0.6 else self.rng.choice(scope)  # the latest value, mostly
        others = [x for x in scope if x != a]
        b = self.rng.choice(others) if others else a
        if self.is_float:
            forms = ("{a}", "{a} * 2", "tl.where({a} > {b}, {a}, {b})") + (
                ("{a} + 1.0", "{a} - 0.5") if self.ordering else ("{a} + {b}", "{a} - {b}"))
            if self.dtype == "float32":  # the emulator negates a float16 through float (quieting a
                forms += ("-{a}",)       # signalling NaN), where Metal flips the sign bit
        else:
            forms = ("{a}", "{a} + {b}", "{a} - {b}", "{a} ^ {b}", "{a} & {b}", "{a} | 5", "{a} + 1")
        return self.rng.choice(forms).format(a=a, b=b)

    def mask(self, scope: list[str]) -> str:
        kind = self.rng.randrange(4)
        if kind == 0:
            return "m"
        if kind == 1:
            return f"m & (o % 3 != {self.rng.randrange(3)})"
        if kind == 2:
            return "m & (o < n - 5)"
        test = f"{self.rng.choice(scope)} > 0" if self.is_float else f"({self.rng.choice(scope)} & 1) == 0"
        return f"m & ({test})"

    def statement(self, scope: list[str], depth: int, pad: str) -> None:
        rng = self.rng
        kind = rng.choice(("load", "load", "store", "store", "atomic", "atomic", "neighbour", "loop", "branch",
                           "return"))
        array = rng.choice(("A", "B"))
        if kind == "atomic" and array not in self.atomic_arrays:
            kind = "store"
        if kind == "neighbour":
            if self.neighbour is None:
                kind = "load"
            else:
                array = self.neighbour
        if kind in ("loop", "branch") and depth >= 2 or kind == "return" and depth:
            kind = "load"
        if kind == "load":
            name = self.fresh()
            self.lines.append(f"{pad}{name} = tl.load({array} + o, mask={self.mask(scope)}, other=0)")
            self.read.add(array)
            scope.append(name)
        elif kind == "neighbour":
            name = self.fresh()
            self.lines.append(f"{pad}{name} = tl.load({array} + (o ^ 1), mask=(o ^ 1) < n, other=1)")
            self.read.add(array)
            scope.append(name)
        elif kind == "store":
            self.lines.append(f"{pad}tl.store({array} + o, {self.value(scope)}, mask={self.mask(scope)})")
            self.written.add(array)
        elif kind == "atomic":
            self.atomic(array, scope, pad)
        elif kind == "loop":
            trips = rng.choice(("2", "3", "s"))
            self.lines.append(f"{pad}for i{depth} in range({trips}):")
            self.block(list(scope), depth + 1, pad + "    ")
        elif kind == "branch":
            self.lines.append(f"{pad}if s > {rng.randrange(4)}:")
            self.block(list(scope), depth + 1, pad + "    ")
            if rng.random() < 0.5:
                self.lines.append(f"{pad}else:")
                self.block(list(scope), depth + 1, pad + "    ")
        else:
            self.lines.append(f"{pad}if s == {rng.randrange(4)}:")
            self.block(list(scope), depth + 1, pad + "    ")
            self.lines.append(f"{pad}    return")

    def atomic(self, array: str, scope: list[str], pad: str) -> None:
        rng = self.rng
        if self.is_float:
            op = rng.choice(_ORDERING_ATOMICS if self.ordering else _SUMMING_ATOMICS)
        else:
            op = rng.choice(_INT_ATOMICS)
        self.written.add(array)
        if op == "cas":
            cmp = rng.choice(scope)
            call = f"tl.atomic_cas({array} + o, {cmp}, {self.value(scope)})"
        else:
            call = f"tl.atomic_{op}({array} + o, {self.value(scope)}, mask={self.mask(scope)})"
        use = rng.randrange(3)
        if use == 0:
            self.lines.append(f"{pad}{call}")
            return
        name = self.fresh()
        self.lines.append(f"{pad}{name} = {call}")
        scope.append(name)
        if use == 1:
            self.lines.append(f"{pad}tl.store(R + o, {name}, mask=m)")
            self.written.add("R")

    def block(self, scope: list[str], depth: int, pad: str) -> None:
        for _ in range(self.rng.randint(1, 3)):
            self.statement(scope, depth, pad)


def kernel_shape(seed: int) -> KernelShape:
    """One random kernel (module docstring); the same seed gives the same kernel."""
    rng = random.Random(seed)
    atomics = rng.random() < 0.7
    dtype = rng.choice(ATOMIC_TYPES if atomics else PLAIN_TYPES)
    atomic_arrays = frozenset(a for a in ("A", "B") if atomics and rng.random() < 0.6) or (
        frozenset({"A"}) if atomics else frozenset())
    neighbour = "A" if "A" not in atomic_arrays and rng.random() < 0.7 else None
    writer = _Writer(rng, dtype, atomic_arrays, neighbour, ordering=dtype.startswith("float") and rng.random() < 0.5)
    scope = ["v"]
    if neighbour is not None:  # every later load of it then follows a store: ordered by barriers
        writer.lines.append("    tl.store(A + o, v, mask=m)")
        writer.written.add("A")
    for _ in range(rng.randint(3, 6)):
        writer.statement(scope, 0, "    ")
    block = rng.choice((32, 64, 128))
    num_warps = 1 if block < 128 or rng.random() < 0.5 else 4
    num_warps = min(num_warps, block // 32)
    header = [
        "import triton_metal as triton",
        "import triton_metal.language as tl",
        "",
        "",
        "@triton.jit",
        "def kernel(A, B, V, R, n, s, BLOCK: tl.constexpr):",
        "    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
        "    m = o < n",
        "    v = tl.load(V + o, mask=m, other=0)",
    ]
    source = "\n".join(header + writer.lines) + "\n"
    source += f"\n\nNUM_WARPS = {num_warps}\n"
    return KernelShape(seed, dtype, source, block, rng.choice((1, 2, 3)), frozenset(writer.written),
                       frozenset(writer.read))


_SPECIAL_BITS = {
    "float32": (0x00000000, 0x80000000, 0x7FC01234, 0x7F800123, 0xFFC00001, 0xFFA00001, 0x7F800000, 0xFF800000,
                0x00000001, 0x807FFFFF, 0x3F800000, 0xBF800000, KEY_BITS[32]),
    "float16": (0x0000, 0x8000, 0x7E12, 0x7C01, 0xFE01, 0xFD23, 0x7C00, 0xFC00, 0x0001, 0x83FF, 0x3C00, 0xBC00,
                KEY_BITS[16]),
}
"""Special bit patterns mixed into float contents, among them the key of a "key" output
(codegen.kernel.KEY_BITS), which such an output holds as 0."""


def contents(rng: np.random.Generator, dtype: str, size: int) -> np.ndarray:
    """Array contents: random values of the type, with signed zeros, NaN payloads (quiet and
    signalling), infinities and denormals mixed in for floats, and small values that make
    compare-and-swaps and masks hit."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        bits = np.dtype(f"u{dt.itemsize}")
        small = rng.integers(-3, 4, size).astype(dt)
        special = np.array(_SPECIAL_BITS[dtype], bits)[rng.integers(0, len(_SPECIAL_BITS[dtype]), size)].view(dt)
        wide = rng.standard_normal(size).astype(dt)
        pick = rng.integers(0, 3, size)
        return np.where(pick == 0, small, np.where(pick == 1, special, wide)).astype(dt)
    info = np.iinfo(dt)
    wide = rng.integers(info.min, info.max, size, dtype=dt, endpoint=True)
    small = rng.integers(max(info.min, -3), 4, size).astype(dt)
    pick = rng.random(size)
    mixed = np.where(pick < 0.5, small, wide).astype(dt)
    if dt.itemsize * 8 in KEY_BITS:  # the key's bits, as the type reads them
        key = np.array(KEY_BITS[dt.itemsize * 8], f"u{dt.itemsize}").view(dt)
        mixed = np.where(pick > 0.9, key, mixed)
    return mixed
