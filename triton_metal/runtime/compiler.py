"""One specialization from Python source to an `MSLKernel`: the compile step of a launch.

    compile_msl(kernel, key) -> CompileResult(msl, module, ir_text, seconds)

Stages, in order: the front end (`frontend.compile_to_ir` under the key's `KernelSignature`),
the default pass pipeline (cleanup, layout passes; their IR dumps follow `TRITON_METAL_DEBUG=2`
and `TRITON_METAL_DUMP_DIR`), the axis-info analysis, and the code generator
(`codegen.compile_module`) with the key's options: `num_warps`, the math mode, `index_bits`
(64 when an array argument has 2**31 elements or more) and `spread_programs` (a grid too large
for one launch dimension). When the dots' layout conversions need more threadgroup memory than
there is (`OutOfResources`), the specialization compiles again with operands loaded straight into
simdgroup fragments and results stored from them (the module attribute `direct_fragment_io`);
the first error is raised when that does not fit either. `compile_twin` regenerates
a compiled variant's MSL with written masks from its laid-out IR.

`COMPILER_HASH` is the SHA-256 of the compiler's own sources (front end, IR, passes, language,
code generator, templates): part of every disk-cache key, so editing the compiler never reuses
MSL an older compiler produced. Hashing the files is memoised per file set in the cache
directory (keyed by paths, sizes, modification and change times; files changed in the last two
seconds are always read), so a fresh process pays a few stat calls, not a read of every source.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..errors import OutOfResources
from . import cache_files
from .ast_source import ASTSource, compile  # noqa: F401 - Triton's `triton.compiler.ASTSource`, `triton.compile`
from .signature import kernel_signature
from .specialization import SpecializationKey

_PACKAGE_DIR = Path(__file__).resolve().parents[1]
_COMPILER_PARTS = ("language", "frontend", "ir", "passes", "codegen", "templates")


@dataclass
class CompileResult:
    msl: Any
    """The `codegen.MSLKernel`."""
    module: Any
    """The laid-out `ir.Module` the code generator read."""
    ir_text: str
    seconds: float


def _laid_out(module: Any) -> bool:
    from ..ir.types import TensorType

    for op in module.walk():
        values = list(op.results)
        for region in op.regions:
            for block in region.blocks:
                values.extend(block.args)
        for v in values:
            if isinstance(v.type, TensorType) and v.type.layout is None:
                return False
    return True


def type_check(kernel: Any, key: SpecializationKey) -> Any:
    """Run only the front end (the semantic layer's checks) for `key`; raises its refusal.
    Returns the module it built (before any pass)."""
    from ..frontend import compile_to_ir

    return _deep_retry(lambda: compile_to_ir(kernel, kernel_signature(kernel, key)), key.kernel)


DEEP_RECURSION_LIMIT = 60_000
"""Python frames a compile may use when the default limit is not enough (deep but legal kernels:
hundreds of nested `@jit` calls, an expression of hundreds of chained operators)."""
DEEP_STACK_BYTES = 1 << 30
"""The stack of the thread that runs such a compile (address space; only what is used is paid)."""
_deep_lock = threading.Lock()
_T = TypeVar("_T")


def compile_msl(kernel: Any, key: SpecializationKey) -> CompileResult:
    """Compile `kernel` for `key` (see the module docstring).

    The front end and the passes recurse over nested expressions and calls. A kernel too deep for
    Python's default recursion limit is compiled again in a thread with a large stack and a
    limit of `DEEP_RECURSION_LIMIT` frames; past that, a `CompilationError` names the kernel
    (never a bare RecursionError). The front-end-only check and the written-mask twin do the same."""
    return _deep_retry(lambda: _compile_msl(kernel, key), key.kernel)


def _deep_retry(work: Callable[[], _T], kernel: str) -> _T:
    """`work()`, run again on a deep stack if it goes past Python's recursion limit."""
    try:
        return work()
    except RecursionError:
        pass
    return _on_deep_stack(work, kernel)


def _on_deep_stack(work: Callable[[], _T], kernel: str) -> _T:
    import sys

    from ..errors import CompilationError

    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as error:  # noqa: BLE001 - handed to the calling thread
            outcome.append(error)

    with _deep_lock:
        old_limit = sys.getrecursionlimit()
        limit = max(old_limit, DEEP_RECURSION_LIMIT)
        old_stack = threading.stack_size()
        try:
            threading.stack_size(DEEP_STACK_BYTES)
            sys.setrecursionlimit(limit)
            worker = threading.Thread(target=run, name=f"compile {kernel}")
            worker.start()
        finally:
            threading.stack_size(old_stack)
        worker.join()
        sys.setrecursionlimit(old_limit)
    result = outcome[0]
    if isinstance(result, RecursionError):
        raise CompilationError(
            f"kernel '{kernel}' nests too deeply to compile: its expressions and @jit calls "
            f"go past {limit} levels of the compiler's recursion",
            kernel=kernel,
            hint="split long expressions into several statements, or flatten chains of @jit calls",
        ) from None
    if isinstance(result, BaseException):
        raise result
    return result  # type: ignore[no-any-return]


def _compile_msl(kernel: Any, key: SpecializationKey) -> CompileResult:
    from ..ir import print_module

    start = time.perf_counter()
    options = codegen_options(key)
    try:
        module, msl = _lower(kernel, key, options, direct=False)
    except OutOfResources as first:
        # the dots' operand and result conversions did not fit in threadgroup memory: load
        # operands straight into fragments and store results from them (layout_assignment.py)
        try:
            module, msl = _lower(kernel, key, options, direct=True)
        except OutOfResources:
            raise first from None
    seconds = time.perf_counter() - start
    return CompileResult(msl, module, print_module(module), seconds)


def codegen_options(key: SpecializationKey, written_masks: tuple[str, ...] = (),
                    relative_outputs: tuple[str, ...] = (), unwritten_masks: bool = False,
                    marked_outputs: tuple[str, ...] = (), keyed_outputs: tuple[str, ...] = ()) -> Any:
    """The code generator's options for a specialization."""
    from ..codegen import CodegenOptions, parse_target

    return CodegenOptions(
        num_warps=key.num_warps,
        target=parse_target(key.target),
        math_mode=key.math_mode,
        debug=key.debug,
        index_bits=key.index_bits,
        spread_programs=key.spread,
        written_masks=written_masks,
        relative_outputs=relative_outputs,
        unwritten_masks=unwritten_masks,
        marked_outputs=marked_outputs,
        keyed_outputs=keyed_outputs,
    )


def compile_twin(compiled: Any, masked: tuple[str, ...], relative: tuple[str, ...] = (),
                 unwritten: bool = False, marked: tuple[str, ...] = (), keyed: tuple[str, ...] = ()) -> Any:
    """The `MSLKernel` of a compiled variant whose stores to the outputs `masked` also set
    written masks (`CodegenOptions.written_masks`) and which keeps the outputs `relative`
    relative to their arrays' contents (`CodegenOptions.relative_outputs`); `unwritten`: the
    masks start true and stores clear them (`CodegenOptions.unwritten_masks`); `marked`: those
    of `relative` held with the untouched mark (`CodegenOptions.marked_outputs`); `keyed`: those
    held with the key (`CodegenOptions.keyed_outputs`). Generated again
    from its laid-out IR (kept, or read back from the disk cache's IR text; a variant compiled with direct fragment loads and stores
    keeps them, since its layouts are already in the IR)."""
    from ..codegen import compile_module
    from ..ir import parse_module
    from ..passes import analyze_axis_info

    def work() -> Any:
        module = compiled.module if compiled.module is not None else parse_module(compiled.ir_text)
        options = codegen_options(compiled.key, masked, relative, unwritten, tuple(m for m in marked if m in relative),
                                  tuple(k for k in keyed if k in relative))
        return compile_module(module, options, analyze_axis_info(module))

    return _deep_retry(work, compiled.key.kernel)


def _lower(kernel: Any, key: SpecializationKey, options: Any, direct: bool) -> tuple[Any, Any]:
    """The laid-out module and its MSL (`direct`: fragment loads and stores for dots)."""
    from ..codegen import compile_module
    from ..frontend import compile_to_ir
    from ..passes import PASS_REGISTRY, analyze_axis_info, default_pipeline

    module = compile_to_ir(kernel, kernel_signature(kernel, key))
    if direct:
        module.attributes["direct_fragment_io"] = 1
    default_pipeline().apply(None, module)
    if not _laid_out(module) and "assign-layouts" in PASS_REGISTRY:
        PASS_REGISTRY["assign-layouts"]().apply(None, module)
    module.verify()
    return module, compile_module(module, options, analyze_axis_info(module))


def _compiler_roots() -> list[str]:
    roots = [str(_PACKAGE_DIR / part) for part in _COMPILER_PARTS]
    # codegen/ and templates/ sit beside the package in a source checkout and inside it when
    # installed; their import specs say where (found without running them)
    for name in ("codegen", "templates"):
        spec = importlib.util.find_spec(f"triton_metal.{name}")
        if spec is not None and spec.submodule_search_locations:
            roots.extend(spec.submodule_search_locations)
    unique: dict[str, None] = {}
    for root in roots:
        unique.setdefault(os.path.normpath(root), None)
    return list(unique)


_SOURCE_SUFFIXES = (".py", ".lark", ".metal")


def _compiler_files() -> list[tuple[str, os.stat_result]]:
    """(path, stat) of every compiler source, sorted (os.scandir: no pathlib on this path)."""
    found: dict[str, os.stat_result] = {}
    pending = _compiler_roots()
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_dir():
                        if entry.name != "__pycache__":
                            pending.append(entry.path)
                    elif entry.name.endswith(_SOURCE_SUFFIXES):
                        found[entry.path] = entry.stat()
        except OSError:
            continue
    return sorted(found.items())


RACY_NS = 2_000_000_000
"""Files changed less than 2 s ago are hashed, not looked up by stamp: file times tick coarsely,
so two writes within one tick could leave size, modification and change times alike."""


def _compute_compiler_hash(memo_dir: Path | None) -> str:
    files = _compiler_files()
    # The change time moves on every write, even when the modification time is put back.
    stamp = hashlib.sha256(
        "".join(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\n" for path, st in files).encode()
    )
    newest = max((max(st.st_mtime_ns, st.st_ctime_ns) for _, st in files), default=0)
    if time.time_ns() - newest < RACY_NS:
        memo_dir = None
    memo_key = stamp.hexdigest()[:24]
    memo = memo_dir / f"compiler-{memo_key}.txt" if memo_dir is not None else None
    if memo is not None:
        text = (cache_files.read_text_record(memo, memo_key) or "").strip()
        if len(text) == 64:
            return text
    digest = hashlib.sha256()
    for path, _st in files:
        digest.update(os.path.basename(path).encode() + b"\0")
        with open(path, "rb") as f:
            digest.update(f.read())
    result = digest.hexdigest()
    if memo is not None:
        try:
            cache_files.make_private(memo.parent)
        except OSError:  # a read-only cache directory only costs the memo
            return result
        cache_files.write_record(memo, memo_key, result.encode())
    return result


_compiler_hash: str | None = None


def triton_key() -> str:
    """Triton's `triton.compiler.compiler.triton_key()` (libraries key their own caches by it):
    the package version and the compiler's source hash."""
    from .cache import COMPILER_VERSION

    return f"triton_metal-{COMPILER_VERSION}-{compiler_hash()}"


def __getattr__(name: str) -> Any:
    """`CompiledKernel` as `triton.compiler.CompiledKernel` (imported on first use), and the
    error classes as `triton.compiler.errors` (Triton's tests reach them by attribute)."""
    if name == "CompiledKernel":
        from .cache import CompiledKernel

        return CompiledKernel
    if name == "errors":
        from .. import errors

        return errors
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def compiler_hash() -> str:
    """`COMPILER_HASH` (module docstring), computed once per process."""
    global _compiler_hash
    if _compiler_hash is None:
        from .disk_cache import msl_dir

        try:
            memo_dir: Path | None = msl_dir()  # created private, and checked (cache_files.folder)
        except OSError:  # no cache folder at all: the hash is computed without its memo
            memo_dir = None
        _compiler_hash = _compute_compiler_hash(memo_dir)
    return _compiler_hash
