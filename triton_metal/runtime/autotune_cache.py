"""Tuning results on disk, per chip: the user's own, and the defaults shipped in `autotune_cache/`.

A tuning result says which config won for one kernel, one tuning key and one config list on one
chip. It is filed as

    <root>/<chip slug>/<kernel name>-<entry hash>.json

where `<root>` is `$TRITON_METAL_CACHE_DIR/autotune` (default `~/.cache/triton_metal/autotune`)
for the user's results, and the repository's `autotune_cache/` folder for the shipped defaults
(`TRITON_METAL_AUTOTUNE_SHIPPED_DIR` points elsewhere). The entry hash is the SHA-256 of the
format version, the kernel's `cache_key` (its source, the `@jit` functions it calls and the global
constexprs it reads), the tuning key's text and every config's JSON text; the chip is the folder.

The chip (`current_chip`):
* Metal: `<architecture>-<device name>` from `mx.device_info()` (`applegpu_g15s-Apple M3 Max`);
* the emulator: `emulator-<machine>-<cpu model>`; it is a chip of its own, and its timings say
  nothing about a GPU;
* the interpreter: none (nothing is persisted, as in Triton).

The compiler version is recorded in an entry but is not part of its hash: every config computes
the same result, so a choice made by an older compiler is still correct, only perhaps no longer
the fastest. Re-tune by deleting the folder, or by changing the config list.

An entry (JSON) holds `format`, `kernel`, `kernel_cache_key`, `chip`, `key` (the tuning key's
text), `configs` (every config, in order), `best` (the winner), `timings_ms` (per benchmarked
config: `[p50, p20, p80]`, or the reason it was skipped) and `measured` (`date` in UTC, `backend`,
`how`: the benchmark and its settings, `compiler_version`, `tuning_seconds`). Writes are atomic
(temporary file, then `os.replace`); an unreadable, malformed or mismatching entry is a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .backend import EMULATOR, METAL
from .cache_files import make_private

FORMAT_VERSION = 1
SHIPPED_ENV = "TRITON_METAL_AUTOTUNE_SHIPPED_DIR"
_emulator_chip: str | None = None


# -- the chip -------------------------------------------------------------------------------------
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown-cpu"


def emulator_chip() -> str:
    """`emulator-<machine>-<cpu model>`: the CPU the emulator's timings were taken on."""
    global _emulator_chip
    if _emulator_chip is None:
        _emulator_chip = f"emulator-{platform.machine() or 'unknown'}-{_cpu_model()}"
    return _emulator_chip


def metal_chip(mx: Any = None) -> str:
    """`<architecture>-<device name>` from MLX's device information (mlx_api.md section 4)."""
    from ..chip import chip_info

    info = chip_info(mx)
    return f"{info.architecture}-{info.device_name}"


def current_chip(backend: str, mx: Any = None) -> str | None:
    """The chip tuning results on `backend` are filed under; None where nothing is persisted."""
    if backend == METAL:
        return metal_chip(mx)
    if backend == EMULATOR:
        return emulator_chip()
    return None


def chip_slug(chip: str) -> str:
    """The chip as a folder name: runs of characters other than letters, digits, `.`, `_` and
    `-` become one `_` (`applegpu_g15s-Apple M3 Max` -> `applegpu_g15s-Apple_M3_Max`); leading
    dots go, so the name never leaves the root."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", chip).strip("_").lstrip(".") or "unknown"


# -- where entries live ---------------------------------------------------------------------------
def user_root() -> Path:
    from .cache_files import cache_root

    return cache_root() / "autotune"


def shipped_root() -> Path | None:
    """The shipped defaults: `$TRITON_METAL_AUTOTUNE_SHIPPED_DIR`, else `autotune_cache/` installed
    inside the package, else the repository's top-level `autotune_cache/` (editable installs)."""
    override = os.environ.get(SHIPPED_ENV)
    if override:
        return Path(override)
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "autotune_cache", package.parent / "autotune_cache"):
        if candidate.is_dir():
            return candidate
    return None


def entry_hash(kernel_cache_key: str, key_text: str, config_dicts: Sequence[dict[str, Any]]) -> str:
    """The SHA-256 that names an entry (configs as canonical JSON: sorted keys)."""
    configs = [json.dumps(d, sort_keys=True) for d in config_dicts]
    text = "\n".join([f"v{FORMAT_VERSION}", kernel_cache_key, key_text, *configs])
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class EntryName:
    """Where one tuning result is filed, relative to a root."""

    chip: str
    kernel: str
    digest: str

    @property
    def relative(self) -> Path:
        return Path(chip_slug(self.chip)) / f"{self.kernel}-{self.digest[:32]}.json"


# -- reading and writing --------------------------------------------------------------------------
def read_entry(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT_VERSION:
        return None
    return data


def matching_entry(data: dict[str, Any] | None, name: EntryName, key_text: str,
                   config_dicts: list[dict[str, Any]]) -> dict[str, Any] | None:
    """`data` if it is the result for this chip, key and config list (hash collisions and
    hand-edited files are misses)."""
    if data is None:
        return None
    if data.get("chip") != name.chip or data.get("key") != key_text:
        return None
    if data.get("configs") != config_dicts or data.get("best") not in config_dicts:
        return None
    return data


def lookup(name: EntryName, key_text: str, config_dicts: list[dict[str, Any]]
           ) -> tuple[dict[str, Any], Path, str] | None:
    """(entry, its path, "user" or "shipped"): the user's result first, then the shipped one."""
    roots: list[tuple[Path, str]] = [(user_root(), "user")]
    shipped = shipped_root()
    if shipped is not None:
        roots.append((shipped, "shipped"))
    for root, origin in roots:
        path = root / name.relative
        data = matching_entry(read_entry(path), name, key_text, config_dicts)
        if data is not None:
            return data, path, origin
    return None


def write_entry(path: Path, data: dict[str, Any]) -> Path | None:
    """Write atomically; None when the folder cannot be written (tuning still works, unsaved)."""
    try:
        make_private(path.parent)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem[:24]}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)
        return path
    except OSError:
        return None


def store(name: EntryName, data: dict[str, Any]) -> Path | None:
    return write_entry(user_root() / name.relative, data)


def user_entries(chip: str | None = None) -> list[tuple[Path, dict[str, Any]]]:
    """The user's readable entries, for one chip or all of them, sorted by path."""
    root = user_root()
    if not root.is_dir():
        return []
    folders = [root / chip_slug(chip)] if chip is not None else sorted(p for p in root.iterdir() if p.is_dir())
    found: list[tuple[Path, dict[str, Any]]] = []
    for folder in folders:
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
            data = read_entry(path)
            if data is not None:
                found.append((path, data))
    return found


__all__ = [
    "EntryName",
    "FORMAT_VERSION",
    "SHIPPED_ENV",
    "chip_slug",
    "current_chip",
    "emulator_chip",
    "entry_hash",
    "lookup",
    "metal_chip",
    "read_entry",
    "shipped_root",
    "store",
    "user_entries",
    "user_root",
    "write_entry",
]
