"""One specialization from Python source to an `MSLKernel`: the compile step of a launch.

    compile_msl(kernel, key) -> CompileResult(msl, module, ir_text, seconds)

Stages, in order: the front end (`frontend.compile_to_ir` under the key's `KernelSignature`),
the default pass pipeline (cleanup, layout passes; their IR dumps follow `TRITON_METAL_DEBUG=2`
and `TRITON_METAL_DUMP_DIR`), the axis-info analysis, and the code generator
(`codegen.compile_module`) with the key's options: `num_warps`, the math mode, `index_bits`
(64 when an array argument has 2**31 elements or more) and `spread_programs` (a grid too large
for one launch dimension).

`COMPILER_HASH` is the SHA-256 of the compiler's own sources (front end, IR, passes, language,
code generator, templates): part of every disk-cache key, so editing the compiler never reuses
MSL an older compiler produced. Hashing the files is memoised per file set in the cache
directory (keyed by paths, sizes and modification times), so a fresh process pays a few stat
calls, not a read of every source.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def compile_msl(kernel: Any, key: SpecializationKey) -> CompileResult:
    """Compile `kernel` for `key` (see the module docstring)."""
    from ..codegen import CodegenOptions, compile_module
    from ..frontend import compile_to_ir
    from ..ir import print_module
    from ..passes import PASS_REGISTRY, analyze_axis_info, default_pipeline

    start = time.perf_counter()
    module = compile_to_ir(kernel, kernel_signature(kernel, key))
    default_pipeline().apply(None, module)
    if not _laid_out(module) and "assign-layouts" in PASS_REGISTRY:
        PASS_REGISTRY["assign-layouts"]().apply(None, module)
    module.verify()
    options = CodegenOptions(
        num_warps=key.num_warps,
        math_mode=key.math_mode,
        debug=key.debug,
        index_bits=key.index_bits,
        spread_programs=key.spread,
    )
    msl = compile_module(module, options, analyze_axis_info(module))
    seconds = time.perf_counter() - start
    return CompileResult(msl, module, print_module(module), seconds)


def _compiler_files() -> list[Path]:
    files: list[Path] = []
    roots = [_PACKAGE_DIR / part for part in _COMPILER_PARTS]
    # codegen/ and templates/ sit beside the package in a source checkout and inside it when
    # installed; the package's __path__ points at whichever is in use.
    for name in ("codegen", "templates"):
        try:
            module = __import__(f"triton_metal.{name}", fromlist=["__path__"])
            roots.extend(Path(p) for p in getattr(module, "__path__", []))
        except ImportError:  # pragma: no cover - a broken install; the hash still covers the rest
            pass
    seen: set[Path] = set()
    for root in roots:
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if path.suffix in (".py", ".lark", ".metal") and path not in seen:
                seen.add(path)
                files.append(path)
    return files


def _compute_compiler_hash(memo_dir: Path | None) -> str:
    files = _compiler_files()
    stamp = hashlib.sha256()
    for path in files:
        st = path.stat()
        stamp.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    memo = memo_dir / f"compiler-{stamp.hexdigest()[:24]}.txt" if memo_dir is not None else None
    if memo is not None and memo.is_file():
        text = memo.read_text().strip()
        if len(text) == 64:
            return text
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0")
        digest.update(path.read_bytes())
    result = digest.hexdigest()
    if memo is not None:
        try:
            memo_dir.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
            tmp = memo.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(result)
            os.replace(tmp, memo)
        except OSError:  # a read-only cache directory only costs the memo
            pass
    return result


_compiler_hash: str | None = None


def compiler_hash() -> str:
    """`COMPILER_HASH` (module docstring), computed once per process."""
    global _compiler_hash
    if _compiler_hash is None:
        from .disk_cache import cache_root

        _compiler_hash = _compute_compiler_hash(cache_root() / "msl")
    return _compiler_hash
