"""A compiled emulator kernel and its launch on NumPy buffers.

Contract: `EmulatorKernel.build(source, body, header, ...)` compiles the MSL text of a
`KernelSource` (from `signature.build_kernel_source`) into a shared library in the disk cache, or
raises `MSLCompileError` with the compiler's first error mapped to the MSL line.
`kernel.launch(inputs, outputs, grid, threadgroup)` runs it with `dispatchThreads` semantics:
`grid` and `threadgroup` count threads, the threadgroup is clamped to the grid per dimension, the
last threadgroup of each dimension may be partial. Inputs are read, outputs (C-contiguous NumPy
arrays) are written in place; `_shape`/`_strides`/`_ndim` buffers are made from the inputs.
Errors the kernel makes at run time raise `KernelFault` (or a subclass).

Environment: `TRITON_METAL_EMULATOR_THREADS` (OS threads, default one per core),
`TRITON_METAL_EMULATOR_WATCHDOG` (seconds without progress before a threadgroup is declared
stuck, default 30), `TRITON_METAL_EMULATOR_STACK` (bytes per fiber stack, default 131072),
`TRITON_METAL_EMULATOR_ASAN=1` (AddressSanitizer builds, see `asan.py`),
`TRITON_METAL_EMULATOR_CHECKS=0` (no bounds checks, see `bounds.py`),
`TRITON_METAL_EMULATOR_PRINT_LIMIT` (`tl.device_print` elements kept per launch, default 1048576).
"""

from __future__ import annotations

import ctypes
import linecache
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from triton_metal.backends.emulator.bounds import checked_params, checked_text, checks_enabled
from triton_metal.backends.emulator.errors import (
    KernelFault,
    MSLCompileError,
    OutOfBoundsAccess,
    ThreadgroupMemoryError,
    WatchdogTimeout,
)
from triton_metal.backends.emulator.rewrite import (
    check_msl_restrictions,
    needs_fibers,
    pin_line_directives,
    rewrite_threadgroup_declarations,
    uses_tensor_ops,
)
from triton_metal.backends.emulator.runtime_lib import (
    ASAN_FLAGS,
    headers_digest,
    ensure_prelude,
    include_dirs,
    prelude_header,
    runtime_library,
    shared_flags,
)
from triton_metal.backends.emulator.signature import (
    InputSpec,
    KernelSource,
    OutputSpec,
    ParamKind,
    build_kernel_source,
)
from triton_metal.backends.emulator.toolchain import BuildFailure, build, cache_dir
from triton_metal.backends.emulator.standalone import kernel_flags
from triton_metal.backends.emulator.wrapper import PRELUDE, translation_unit
from triton_metal.errors import OUT_OF_BOUNDS, Loc, out_of_bounds_message

MAX_THREADS_PER_THREADGROUP = 1024


# Element type string -> the NumPy dtype of the buffer (bfloat travels as its uint16 bits).
NUMPY_DTYPES: dict[str, np.dtype] = {
    "float": np.dtype(np.float32),
    "float16_t": np.dtype(np.float16),
    "bfloat16_t": np.dtype(np.uint16),
    "bool": np.dtype(np.bool_),
    "int8_t": np.dtype(np.int8),
    "int16_t": np.dtype(np.int16),
    "int32_t": np.dtype(np.int32),
    "int64_t": np.dtype(np.int64),
    "uint8_t": np.dtype(np.uint8),
    "uint16_t": np.dtype(np.uint16),
    "uint32_t": np.dtype(np.uint32),
    "uint64_t": np.dtype(np.uint64),
}

def bfloat16_bits(value: float) -> int:
    """The bits of `value` as a bfloat16 (float32 rounded to nearest even), as MLX converts it."""
    bits = int(np.asarray(value, dtype=np.float32).view(np.uint32))
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFFFFFF) >> 16  # 32-bit arithmetic


_STATUS_FAULT, _STATUS_TG_MEMORY, _STATUS_WATCHDOG, _STATUS_BAD_LAUNCH = 1, 2, 3, 4
_STATUS_OUT_OF_BOUNDS, _STATUS_INTERRUPTED, _STATUS_PENDING = 5, 6, 7
_POLL_SECONDS = 0.1
"""How often a waiting launch returns to Python, so that Ctrl-C can interrupt it."""


class _LaunchDesc(ctypes.Structure):
    _fields_ = [
        ("kernel_name", ctypes.c_char_p),
        ("buffers", ctypes.POINTER(ctypes.c_void_p)),
        ("grid", ctypes.c_uint * 3),
        ("tpt", ctypes.c_uint * 3),
        ("use_fibers", ctypes.c_int),
        ("group_fn", ctypes.c_void_p),
        ("thread_fn", ctypes.c_void_p),
        ("watchdog_seconds", ctypes.c_double),
        ("workers", ctypes.c_uint),
        ("stack_bytes", ctypes.c_uint),
        ("error", ctypes.c_void_p),
        ("error_capacity", ctypes.c_uint),
        ("poll_seconds", ctypes.c_double),
        ("state", ctypes.c_void_p),
        ("prints", ctypes.c_void_p),
        ("print_capacity", ctypes.c_ulong),
        ("print_count", ctypes.c_ulong),
    ]


PRINT_RECORD = np.dtype([
    ("pid", "<i4", (3,)), ("seq", "<u4"), ("site", "<u4"), ("operand", "<u4"), ("index", "<i8"), ("bits", "<u8"),
])
"""`tm_print_record` (runtime/tm_abi.h): one element a `tl.device_print` printed."""


@dataclass
class PrintRecords:
    """Where a launch puts what its `tl.device_print`s print: up to `capacity` records (the
    memory is committed only as records arrive), and how many there were in all."""

    capacity: int
    buffer: np.ndarray = field(init=False, repr=False)
    address: int = field(init=False, repr=False)
    count: int = 0

    def __post_init__(self) -> None:
        self.buffer = np.empty(self.capacity, PRINT_RECORD)
        self.address = self.buffer.ctypes.data

    @classmethod
    def for_launch(cls) -> PrintRecords:
        """Room for `TRITON_METAL_EMULATOR_PRINT_LIMIT` records (default 1,048,576): a set a
        finished launch gave back (`release`), or a new one."""
        capacity = max(_env_int("TRITON_METAL_EMULATOR_PRINT_LIMIT", 1 << 20), 1)
        try:
            records = _RECORD_POOL.pop()
        except IndexError:
            return cls(capacity)
        return records if records.capacity == capacity else cls(capacity)

    def release(self) -> None:
        """Give the set back once its records are read: allocating the buffer costs more than a
        small launch. Sets that held many records are dropped (their pages stay committed)."""
        if self.count <= _POOLED_RECORDS and len(_RECORD_POOL) < 4:
            self.count = 0
            _RECORD_POOL.append(self)

    @property
    def records(self) -> np.ndarray:
        return self.buffer[: min(self.count, self.capacity)]

    @property
    def dropped(self) -> int:
        return max(self.count - self.capacity, 0)


_RECORD_POOL: list[PrintRecords] = []
"""Record sets free for the next launch (list.pop and append are atomic: threads share it)."""
_POOLED_RECORDS = 1 << 16


def asan_enabled() -> bool:
    return os.environ.get("TRITON_METAL_EMULATOR_ASAN", "") not in ("", "0")


def _env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    return float(value) if value else default


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value else default


def dispatch_dims(
    grid: Sequence[int], threadgroup: Sequence[int]
) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """MLX's launch rule: threadgroup clamped to the grid per dimension, at most 1024 threads."""
    if len(grid) != 3 or len(threadgroup) != 3:
        raise ValueError("grid and threadgroup must have three dimensions")
    g = tuple(int(x) for x in grid)
    t = tuple(int(x) for x in threadgroup)
    if any(x < 0 for x in g) or any(x <= 0 for x in t) or any(x >= 2**31 for x in g + t):
        raise ValueError(f"invalid grid {g} or threadgroup {t}")
    tpt = tuple(min(a, b) if b > 0 else a for a, b in zip(t, g))
    total = tpt[0] * tpt[1] * tpt[2]
    if total > MAX_THREADS_PER_THREADGROUP:
        # The text of MLX's own error (two spaces included).
        raise ValueError(
            f"[metal::Device] Thread group size ({total}) is greater than  the maximum allowed "
            f"threads per threadgroup ({MAX_THREADS_PER_THREADGROUP})."
        )
    return (g[0], g[1], g[2]), (tpt[0], tpt[1], tpt[2])


_DIAGNOSTIC = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+):\s*(?P<rest>.*)$")


def _map_diagnostics(stderr: str, source: KernelSource, kernel_file: str) -> MSLCompileError:
    """The compiler's first error, placed at the first kernel line the diagnostics name.

    A kernel line is one in the MSL text (`<kernel>.metal`) or in whatever file the kernel's own
    `#line` directives name (a code generator may point them at its Python source); lines in the
    shim, the runtime and the generated wrapper are the emulator's, not the kernel's.
    """
    lines = source.text.splitlines()
    first_error = None
    loc: Loc | None = None
    emulator_paths = tuple(str(p) for p in (*include_dirs(), cache_dir(), Path("/usr")))
    for raw in stderr.splitlines():
        if first_error is None:
            m = re.search(r"error:\s*(.*)$", raw)
            if m:
                first_error = m.group(1)
        m = _DIAGNOSTIC.match(raw)
        if m is None or loc is not None:
            continue
        file = m.group("file")
        ours = file == "kernel.cpp" or file.endswith(".wrapper") or file.startswith(emulator_paths)
        if not ours:
            loc = Loc(file, int(m.group("line")), int(m.group("col")) - 1)
    source_line = None
    if loc is not None and loc.file == kernel_file and 1 <= loc.line <= len(lines):
        source_line = lines[loc.line - 1]
    shown = "\n".join(stderr.strip().splitlines()[:40])
    return MSLCompileError(
        f"MSL compile error: {first_error or 'the C++ compiler failed'}",
        loc,
        hint="compiler output:\n" + shown,
        kernel=source.kernel_name,
        source_line=source_line,
    )


@dataclass
class EmulatorKernel:
    """One kernel compiled for the emulator (a shared library, or an executable under ASan)."""

    source: KernelSource
    artifact: Path
    uses_fibers: bool
    asan: bool
    checked: bool = False
    """Built with bounds checks (`bounds.py`): the launch passes each buffer's element count."""
    _lib: ctypes.CDLL | None = field(default=None, repr=False)

    @classmethod
    def build(
        cls,
        source: KernelSource,
        body: str,
        header: str = "",
        *,
        asan: bool | None = None,
        fast_math: bool = False,
    ) -> EmulatorKernel:
        asan = asan_enabled() if asan is None else asan
        kernel_file = f"{source.kernel_name}.metal"
        check_msl_restrictions(header, kernel_file, source.kernel_name, 1)
        check_msl_restrictions(body, kernel_file, source.kernel_name, source.body_line)
        text, _ = rewrite_threadgroup_declarations(source.text)
        checked = not asan and checks_enabled()
        if checked:
            text = checked_text(source, text)
        text = pin_line_directives(text)
        fibers = needs_fibers(body, header)
        runtime = runtime_library(asan)
        flags = list(kernel_flags(uses_tensor_ops(header, source.text)))
        flags += ASAN_FLAGS if asan else ["-O2"]
        if fast_math:
            flags.append("-ffast-math")
        for d in include_dirs():
            flags += ["-I", str(d)]
        headers = headers_digest()
        prelude: tuple[Path, str] | None = None if asan else prelude_header(PRELUDE, flags, headers)
        names = frozenset(p.name for p in checked_params(source)) if checked else frozenset()
        unit = translation_unit(source, text, fibers, asan, prelude[0].name if prelude else None, names)
        link = [*flags, *(["-iquote", str(prelude[0].parent)] if prelude else [])]
        if asan:
            command = [*link, "-o", "{out}", "kernel.cpp", str(runtime), "-lm", "-pthread"]
            suffix = ""
        else:
            command = [*link, "-shared", *shared_flags(), "-o", "{out}", "kernel.cpp", str(runtime), "-lm"]
            suffix = ".so"

        def prepare() -> None:
            if prelude is not None:
                ensure_prelude(prelude[0], prelude[1], PRELUDE, flags)

        try:
            artifact = build(
                "asan-kernel" if asan else "kernel", suffix, {"kernel.cpp": unit}, command,
                [headers], prepare,
            )
        except BuildFailure as failure:
            raise _map_diagnostics(failure.stderr, source, kernel_file) from None
        return cls(source, artifact, fibers, asan, checked)

    @classmethod
    def compile(
        cls,
        name: str,
        inputs: Sequence[InputSpec],
        outputs: Sequence[OutputSpec],
        source: str,
        header: str = "",
        template: Sequence[tuple[str, bool | int | str]] = (),
        atomic_outputs: bool = False,
        *,
        asan: bool | None = None,
        fast_math: bool = False,
    ) -> EmulatorKernel:
        """Build from what `mx.fast.metal_kernel` would receive (the source is made by MLX's rules)."""
        ksrc = build_kernel_source(name, inputs, outputs, source, header, template, atomic_outputs)
        return cls.build(ksrc, source, header, asan=asan, fast_math=fast_math)

    # ------------------------------------------------------------------ launch
    def _lib_handle(self) -> ctypes.CDLL:
        if self._lib is None:
            lib = ctypes.CDLL(str(self.artifact))
            for fn in (lib.tm_kernel_main, lib.tm_launch_wait, lib.tm_launch_cancel):
                fn.argtypes = [ctypes.POINTER(_LaunchDesc)]
                fn.restype = ctypes.c_int
            self._lib = lib
        return self._lib

    def buffers(
        self, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray]
    ) -> list[np.ndarray]:
        """One array per `[[buffer(i)]]`, in order (inputs, their shape parameters, outputs)."""
        n_in = sum(1 for p in self.source.params if p.kind is ParamKind.INPUT)
        n_out = sum(1 for p in self.source.params if p.kind is ParamKind.OUTPUT)
        if len(inputs) != n_in or len(outputs) != n_out:
            raise ValueError(
                f"kernel '{self.source.kernel_name}' takes {n_in} inputs and {n_out} outputs, "
                f"got {len(inputs)} and {len(outputs)}"
            )
        result: list[np.ndarray] = []
        for p in self.source.params:
            if p.kind is ParamKind.ATTRIBUTE:
                continue
            assert p.arg is not None
            if p.kind is ParamKind.OUTPUT:
                arr = outputs[p.arg]
                if not (arr.flags.c_contiguous and arr.flags.writeable):
                    raise ValueError(f"output '{p.name}' must be a writable C-contiguous array")
                _check_dtype(arr, p.element, p.name)
                result.append(arr)
                continue
            arr = inputs[p.arg]
            if p.kind is ParamKind.INPUT:
                _check_dtype(arr, p.element, p.name)
                result.append(np.ascontiguousarray(arr))
            else:
                result.append(shape_buffer(p.kind, arr.shape))
        return result

    def launch(
        self,
        inputs: Sequence[np.ndarray],
        outputs: Sequence[np.ndarray],
        grid: Sequence[int],
        threadgroup: Sequence[int],
        *,
        watchdog_seconds: float | None = None,
        prints: PrintRecords | None = None,
    ) -> None:
        """Run the kernel (module docstring). `prints` collects what its `tl.device_print`s
        print, also when the launch then raises (not in ASan mode: nothing is collected there)."""
        g, tpt = dispatch_dims(grid, threadgroup)
        bufs = self.buffers(inputs, outputs)
        watchdog = (
            _env_float("TRITON_METAL_EMULATOR_WATCHDOG", 30.0)
            if watchdog_seconds is None
            else watchdog_seconds
        )
        workers = _env_int("TRITON_METAL_EMULATOR_THREADS", 0)
        if 0 in g:
            return
        if self.asan:
            from triton_metal.backends.emulator import asan as asan_mode  # imported by ASan launches only

            if prints is not None:
                asan_mode.warn_prints_dropped(self.source.kernel_name)

            writeback = [p.kind is ParamKind.OUTPUT for p in self.source.params if p.buffer is not None]
            status, message = asan_mode.run(self.artifact, bufs, writeback, g, tpt, watchdog, workers)
        else:
            status, message = self._run(bufs, g, tpt, watchdog, workers, prints)
        if status:
            raise self.error(status, message)

    def _run(
        self,
        bufs: list[np.ndarray],
        grid: tuple[int, int, int],
        tpt: tuple[int, int, int],
        watchdog: float,
        workers: int,
        prints: PrintRecords | None = None,
    ) -> tuple[int, str]:
        lib = self._lib_handle()
        addresses = [b.ctypes.data for b in bufs]
        if self.checked:
            addresses += [b.size for b in bufs]  # element counts, after the pointers (bounds.py)
        pointers = (ctypes.c_void_p * max(len(addresses), 1))(*addresses)
        error = ctypes.create_string_buffer(8192)
        desc = _LaunchDesc()
        desc.kernel_name = self.source.kernel_name.encode()
        desc.buffers = pointers
        desc.grid = (ctypes.c_uint * 3)(*grid)
        desc.tpt = (ctypes.c_uint * 3)(*tpt)
        desc.watchdog_seconds = watchdog
        desc.workers = workers
        desc.stack_bytes = _env_int("TRITON_METAL_EMULATOR_STACK", 128 * 1024)
        desc.error = ctypes.cast(error, ctypes.c_void_p)
        desc.error_capacity = len(error)
        desc.poll_seconds = _POLL_SECONDS
        if prints is not None:
            desc.prints = prints.address
            desc.print_capacity = prints.capacity
        ref = ctypes.byref(desc)
        try:
            # Python runs signal handlers between these calls: Ctrl-C raises KeyboardInterrupt
            # here, and the launch (pending while `desc.state` is set) is cancelled first
            status = lib.tm_kernel_main(ref)
            while status == _STATUS_PENDING:
                status = lib.tm_launch_wait(ref)
        except BaseException:
            if desc.state:
                lib.tm_launch_cancel(ref)
            raise
        finally:
            if prints is not None:
                prints.count = int(desc.print_count)
        return status, error.value.decode(errors="replace")

    def error(self, status: int, message: str) -> Exception:
        """The exception for a launch that ended with runtime status `status` and `message`."""
        text = f"kernel '{self.source.kernel_name}': {message}"
        # Quote the kernel line the runtime or ASan points at: a line of the MSL text, or of the
        # file the kernel's own #line directives name. (Not for the watchdog: the line it would
        # find is where the other threads wait, not where one spins.)
        quoted = ""
        kernel_file = f"{self.source.kernel_name}.metal"
        where = re.search(r"([^\s():]+):(\d+)", message)
        if where and status != _STATUS_WATCHDOG:
            file, number = where.group(1), int(where.group(2))
            lines = self.source.text.splitlines()
            if file.endswith(kernel_file) and 1 <= number <= len(lines):
                quoted = lines[number - 1].strip()
            elif not file.endswith(kernel_file):
                quoted = linecache.getline(file, number).strip()
        bounds = OUT_OF_BOUNDS.search(message) if status == _STATUS_OUT_OF_BOUNDS else None
        if bounds is not None:  # worded as the interpreter words it (errors.py)
            program = (int(bounds["x"]), int(bounds["y"]), int(bounds["z"]))
            return OutOfBoundsAccess(out_of_bounds_message(
                self.source.kernel_name, bounds["argument"], int(bounds["index"]), int(bounds["extent"]),
                bounds["file"], int(bounds["line"]), program, quoted,
            ))
        if quoted:
            head, _, rest = text.partition("\n")
            text = head + f"\n    {where.group(2)} | {quoted}" + ("\n" + rest if rest else "")
        if status == _STATUS_TG_MEMORY:
            m = re.search(r"(\d+) bytes in all", message)
            return ThreadgroupMemoryError(text, int(m.group(1)) if m else 0)
        if status == _STATUS_WATCHDOG:
            return WatchdogTimeout(text)
        if status == _STATUS_OUT_OF_BOUNDS:
            return OutOfBoundsAccess(text)
        if status == _STATUS_BAD_LAUNCH:
            return ValueError(text)
        return KernelFault(text)


def shape_buffer(kind: ParamKind, shape: Sequence[int]) -> np.ndarray:
    """The buffer MLX adds beside an input for a `_shape`, `_strides` or `_ndim` parameter.
    Inputs are passed row-contiguous, so the strides are the row-major ones."""
    if kind is ParamKind.SHAPE:
        return np.asarray(shape, dtype=np.int32)
    if kind is ParamKind.STRIDES:
        strides = [1] * len(shape)
        for k in range(len(shape) - 2, -1, -1):
            strides[k] = strides[k + 1] * shape[k + 1]
        return np.asarray(strides, dtype=np.int64)
    return np.asarray(len(shape), dtype=np.int32)


def _check_dtype(arr: np.ndarray, element: str, name: str) -> None:
    expected = NUMPY_DTYPES.get(element)
    if expected is None:
        raise TypeError(f"'{name}': the emulator cannot pass arrays of {element}")
    if arr.dtype != expected:
        raise TypeError(f"'{name}' is declared {element} but the array has dtype {arr.dtype}")
