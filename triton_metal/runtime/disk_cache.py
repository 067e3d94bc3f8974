"""The disk cache of generated MSL: a warm cache skips the front end and the code generator.

Location: `$TRITON_METAL_CACHE_DIR/msl/` (default `~/.cache/triton_metal/msl/`); the emulator
keeps its compiled binaries beside it (`.../emulator/`). One JSON file per compiled variant,
named by `entry_key(...)`: the SHA-256 of

* the kernel's `cache_key` (its source, starting line, the `@jit` functions it calls,
  transitively, and the global constexprs it reads: `dependencies.py`);
* the specialization key (argument facts, `num_warps`, debug flag, backend, index width, grid
  spreading, math mode, package version);
* the compiler hash (`compiler.compiler_hash()`: the compiler's own sources).

The file holds every field of the `MSLKernel` and the final IR text (for `CompiledKernel.ir`).
Writes go to a temporary file in the same folder, then `os.replace`: readers see a whole entry
or none, and concurrent writers of one entry write the same bytes. An unreadable or malformed
entry is a miss (it is rewritten after compiling). `TRITON_METAL_CACHE_DIR` is read per call.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from .specialization import ConstexprArg, PointerArg, ScalarArg, SpecializationKey

FORMAT_VERSION = 1


def cache_root() -> Path:
    root = os.environ.get("TRITON_METAL_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "triton_metal"
    )
    return Path(root)


def msl_dir() -> Path:
    return cache_root() / "msl"


def _fact_text(fact: object) -> str:
    if isinstance(fact, PointerArg):
        return f"*{fact.element}:{int(fact.aligned16)}"
    if isinstance(fact, ScalarArg):
        return f"{fact.ty}:{int(fact.divisible16)}"
    if isinstance(fact, ConstexprArg):
        return f"c:{fact.kind}:{fact.value!r}"
    return repr(fact)


def key_text(key: SpecializationKey) -> str:
    """A stable text of the key (reprs of facts do not involve addresses)."""
    facts = ",".join(_fact_text(f) for f in key.args)
    return (
        f"{key.kernel}|{facts}|w{key.num_warps}|d{int(key.debug)}|{key.backend}|"
        f"{key.compiler_version}|i{key.index_bits}|s{int(key.spread)}|{key.math_mode}"
    )


def entry_key(source_key: str, key: SpecializationKey, compiler: str) -> str:
    text = f"v{FORMAT_VERSION}\n{source_key}\n{key_text(key)}\n{compiler}"
    return hashlib.sha256(text.encode()).hexdigest()


def _jsonable(value: object) -> object:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def dump_msl_kernel(msl: Any) -> dict[str, object]:
    """An `MSLKernel` as JSON data (`load_msl_kernel` reverses it)."""
    return {
        "name": msl.name,
        "source": msl.source,
        "header": msl.header,
        "input_names": list(msl.input_names),
        "output_names": list(msl.output_names),
        "params": [
            {"name": p.name, "kind": p.kind, "msl_inputs": list(p.msl_inputs),
             "msl_outputs": list(p.msl_outputs), "dtype": p.dtype}
            for p in msl.params
        ],
        "threads_per_program": msl.threads_per_program,
        "atomic_outputs": msl.atomic_outputs,
        "stored_coverage": [dataclasses.asdict(c) for c in msl.stored_coverage],
        "coverage_program": None if msl.coverage_program is None else dataclasses.asdict(msl.coverage_program),
        "metadata": _jsonable(dict(msl.metadata)),
    }


def _tuples(value: object) -> object:
    """JSON lists back to tuples (the code generator's metadata uses tuples)."""
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


def load_msl_kernel(data: dict[str, Any]) -> Any:
    from ..codegen import MSLKernel, OutputCoverage, ParamBinding

    metadata = _tuples(data["metadata"])
    assert isinstance(metadata, dict)
    return MSLKernel(
        name=data["name"],
        source=data["source"],
        header=data["header"],
        input_names=tuple(data["input_names"]),
        output_names=tuple(data["output_names"]),
        params=tuple(
            ParamBinding(p["name"], p["kind"], tuple(p["msl_inputs"]), tuple(p["msl_outputs"]), p["dtype"])
            for p in data["params"]
        ),
        threads_per_program=int(data["threads_per_program"]),
        atomic_outputs=bool(data["atomic_outputs"]),
        stored_coverage=tuple(OutputCoverage(**c) for c in data["stored_coverage"]),
        coverage_program=_program(data.get("coverage_program")),
        metadata=metadata,
    )


def _program(data: dict[str, Any] | None) -> Any:
    from ..codegen.kernel import CoverageProgram

    if data is None:
        return None
    return CoverageProgram(_tuples(data["statements"]), _tuples(data["left_out"]), int(data["index_bits"]))  # type: ignore[arg-type]


def load(entry: str) -> tuple[Any, str] | None:
    """(MSLKernel, IR text) stored under `entry`, or None (a miss, or an unreadable entry)."""
    path = msl_dir() / f"{entry}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != FORMAT_VERSION:
            return None
        return load_msl_kernel(data["kernel"]), str(data.get("ir", ""))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(entry: str, msl: Any, ir_text: str, key: SpecializationKey) -> Path | None:
    """Write the entry atomically; None when the cache directory cannot be written."""
    import tempfile  # only a miss writes: a warm launch need not import it (milliseconds)

    folder = msl_dir()
    data = {
        "format": FORMAT_VERSION,
        "key": key_text(key),
        "kernel": dump_msl_kernel(msl),
        "ir": ir_text,
    }
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{entry[:16]}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f)
        path = folder / f"{entry}.json"
        os.replace(tmp, path)
        return path
    except OSError:
        return None
