"""The disk cache of generated MSL: a warm cache skips the front end and the code generator.

Location: `$TRITON_METAL_CACHE_DIR/msl/` (default `~/.cache/triton_metal/msl/`); the emulator
keeps its compiled binaries beside it (`.../emulator/`). One JSON file per compiled variant,
named by `entry_key(...)`: the SHA-256 of

* the kernel's `cache_key` (its source, starting line, the `@jit` functions it calls,
  transitively, and the global constexprs it reads: `dependencies.py`);
* the paths of the files those functions come from (`dependencies.source_files`): the MSL's
  `#line` directives cite them, so a checkout elsewhere compiles its own entry;
* the specialization key (argument facts, `num_warps`, debug flag, backend, index width, grid
  spreading, math mode, package version);
* the compiler hash (`compiler.compiler_hash()`: the compiler's own sources).

The file holds every field of the `MSLKernel` and the final IR text (for `CompiledKernel.ir`),
with the entry's own name, its specialization key text, and the size and SHA-256 of the
canonical JSON of the kernel and the IR. `load` uses an entry only when all of these match what
it looks up: an entry swapped with another kernel's, edited, truncated, garbled, empty, of
another JSON type (`[]`, `null`, a number), not UTF-8, or a directory is removed and is a miss
(rewritten after compiling; logged at `TRITON_METAL_DEBUG=1`). Writes go through a staging name
unique to the process and thread, then `os.replace` (`cache_files.py`): readers see a whole entry
or none, and concurrent writers of one entry write the same bytes. `TRITON_METAL_CACHE_DIR` is
read per call; an unwritable cache moves to a per-process temporary directory.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

from . import cache_files
from .specialization import ConstexprArg, PointerArg, ScalarArg, SpecializationKey

FORMAT_VERSION = 2


def cache_root() -> Path:
    return cache_files.cache_root()


def msl_dir() -> Path:
    """The MSL folder, created private and checked (`cache_files.folder`): its entries become
    shared objects, so one someone else could write into is never read."""
    return cache_files.folder("msl")


def _fact_text(fact: object) -> str:
    if isinstance(fact, PointerArg):
        return f"*{fact.element}:{int(fact.aligned16)}" + (f"=a{fact.same_as}" if fact.same_as >= 0 else "")
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
        f"{key.compiler_version}|i{key.index_bits}|s{int(key.spread)}|{key.math_mode}|{key.target}"
    )


def entry_key(source_key: str, key: SpecializationKey, compiler: str, files: tuple[str, ...] = ()) -> str:
    text = f"v{FORMAT_VERSION}\n{source_key}\n{key_text(key)}\n{compiler}\n" + "\n".join(files)
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


def _body_checksum(data: dict[str, Any]) -> tuple[int, str]:
    text = json.dumps({"kernel": data.get("kernel"), "ir": data.get("ir")}, sort_keys=True,
                      separators=(",", ":"))
    raw = text.encode("utf-8", "surrogatepass")
    return len(raw), cache_files.digest(raw)


def _check_entry(data: object, entry: str, key: SpecializationKey | None) -> str:
    """Why `data` is not the entry `entry` for `key` ("" when it is)."""
    if not isinstance(data, dict):
        return f"holds a JSON {type(data).__name__}, not an entry"
    if data.get("format") != FORMAT_VERSION:
        return f"format {data.get('format')!r}, not {FORMAT_VERSION}"
    if data.get("entry") != entry:
        return "stored under another entry's name"
    if key is not None and data.get("key") != key_text(key):
        return "written for another specialization"
    size, checksum = _body_checksum(data)
    if data.get("size") != size or data.get("sha256") != checksum:
        return "checksum mismatch (edited or damaged)"
    return ""


def load(entry: str, key: SpecializationKey | None = None) -> tuple[Any, str] | None:
    """(MSLKernel, IR text) stored under `entry` (for `key`, when given), or None: a miss, or a
    damaged entry, which is removed (module docstring)."""
    path = msl_dir() / f"{entry}.json"
    try:
        raw = cache_files.read_private(path)
    except OSError as error:
        cache_files.report_damage(path, error.strerror or type(error).__name__)
        return None
    if raw is None:  # absent, or not the user's alone (compiled anew: the MSL becomes a binary)
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError:  # not UTF-8, or not JSON
        cache_files.report_damage(path, "not a JSON text")
        return None
    why = _check_entry(data, entry, key)
    if not why:
        try:
            return load_msl_kernel(data["kernel"]), str(data.get("ir", ""))
        except (ValueError, KeyError, TypeError, AttributeError, AssertionError) as error:
            why = f"malformed kernel ({type(error).__name__})"
    cache_files.report_damage(path, why)
    return None


def store(entry: str, msl: Any, ir_text: str, key: SpecializationKey) -> Path | None:
    """Write the entry atomically; None when no cache directory can be written."""
    data: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "entry": entry,
        "key": key_text(key),
        "kernel": dump_msl_kernel(msl),
        "ir": ir_text,
    }
    data["size"], data["sha256"] = _body_checksum(data)
    raw = json.dumps(data).encode("utf-8", "surrogatepass")
    for _attempt in range(2):
        try:
            folder = msl_dir()
        except OSError:  # not even a temporary folder can be made
            return None
        path = folder / f"{entry}.json"
        try:
            cache_files.write_atomically(path, raw)
            return path
        except OSError as error:
            if cache_files.in_fallback(folder):
                return None
            cache_files.fall_back(cache_files.configured_root(), error)
    return None


def audit() -> dict[str, str]:
    """Every damaged file of the cache in use, by path relative to its root, with the reason:
    MSL entries (their checksums), memos, and the emulator's artifacts (`cache_files`)."""
    root = cache_root()
    problems = {f"msl/{k}": v for k, v in cache_files.audit_folder(msl_dir()).items()}
    problems.update({f"emulator/{k}": v for k, v in cache_files.audit_folder(root / "emulator").items()})
    folder = msl_dir()
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            data = json.loads(path.read_bytes().decode("utf-8"))
        except (OSError, ValueError) as error:
            problems[f"msl/{path.name}"] = type(error).__name__
            continue
        why = _check_entry(data, path.stem, None)
        if why:
            problems[f"msl/{path.name}"] = why
    return problems
