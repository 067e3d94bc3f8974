"""What the GPU (or the emulator) can do, and the runtime switches: capabilities, sync, caches,
debug options.

* `get_hardware_capabilities(mx=None) -> HardwareCapabilities`: on Metal, the chip from MLX's
  device information (`mx.device_info()`: `architecture`, `device_name`, memory sizes) and the
  GPU family features *derived from the architecture string* (metal.md sections 1.3 and 1.4:
  generation 13 = M1 = Apple7, 14 = M2 = Apple8, 15 and 16 = M3 and M4 = Apple9, 17 = M5 =
  Apple10). MLX does not report threadgroup memory or thread limits; they are the fixed values of
  every Apple family MLX runs on. MLX does not report the GPU's core count either: it comes
  from the IORegistry (`chip.gpu_core_count`; the grid of a persistent kernel, one program or a
  few per core, as Triton's tutorials size theirs from the SM count). Elsewhere the emulator
  reports itself (no GPU cores).
* `synchronize(mx=None)`: wait for all queued GPU work (`mx.synchronize()`).
* `clear_cache(memory=True, disk=True)`: drop compiled variants from every kernel's in-memory
  cache and delete the disk cache of generated MSL and emulator binaries.
* `set_debug_option(name, value)`: the environment variables as functions (DEBUG_OPTIONS).
"""

from __future__ import annotations

import gc
import os
import platform
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..backends.metal.chip import (
    MAX_THREADS_PER_THREADGROUP,
    SIMD_WIDTH,
    THREADGROUP_MEMORY_BYTES,
    chip_info,
    gpu_core_count,
)
from ..runtime.target import active_target
from .timing import load_mlx

_MAC_FAMILY = {13: "Apple7", 14: "Apple8", 15: "Apple9", 16: "Apple9", 17: "Apple10"}
_PHONE_FAMILY = {13: "Apple7", 14: "Apple8", 15: "Apple8", 16: "Apple9", 17: "Apple9", 18: "Apple10"}
_TIERS = {"g": "base", "s": "Pro or Max", "d": "Ultra", "c": "Max (gen 13 only)", "p": "phone/tablet"}
_FAMILY_RANK = {"Apple7": 7, "Apple8": 8, "Apple9": 9, "Apple10": 10}


@dataclass(frozen=True)
class HardwareCapabilities:
    backend: str
    """"metal" or "emulator"."""
    device_name: str
    architecture: str
    generation: int | None
    tier: str | None
    tier_name: str | None
    chip: str | None
    """"M3" for generation 15 (Mac chips)."""
    gpu_family: str | None
    """MTLGPUFamily ("Apple9"), derived from the architecture string."""
    derived_from: str
    """Where the feature flags come from."""
    simd_width: int = SIMD_WIDTH
    max_threads_per_threadgroup: int = MAX_THREADS_PER_THREADGROUP
    threadgroup_memory_bytes: int = THREADGROUP_MEMORY_BYTES
    features: dict[str, bool] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    memory_bytes: int | None = None
    max_buffer_bytes: int | None = None
    recommended_working_set_bytes: int | None = None
    gpu_cores: int | None = None
    """GPU cores (Triton's `multiprocessor_count`), from the IORegistry; None when unknown."""
    target: str = ""
    """The `<family>:<msl>` kernels compile for now (`TRITON_METAL_TARGET`, else the machine's
    own on a Mac, else the default: docs/targets.md)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        lines = [f"{self.device_name} ({self.architecture}) on {self.backend}"]
        if self.chip or self.gpu_family:
            lines.append(f"  chip {self.chip or '?'}, tier {self.tier_name or '?'}, GPU family {self.gpu_family or '?'}")
        if self.target:
            lines.append(f"  compiling for target {self.target}")
        if self.gpu_cores:
            lines.append(f"  {self.gpu_cores} GPU cores")
        lines.append(f"  SIMD width {self.simd_width}, max {self.max_threads_per_threadgroup} threads and "
                     f"{self.threadgroup_memory_bytes // 1024} KiB threadgroup memory per threadgroup")
        for name, ok in self.features.items():
            note = self.notes.get(name, "")
            lines.append(f"  {name}: {'yes' if ok else 'no'}" + (f" ({note})" if note else ""))
        lines.append(f"  ({self.derived_from})")
        return "\n".join(lines)


def family_of(generation: int | None, tier: str | None) -> str | None:
    if generation is None:
        return None
    table = _PHONE_FAMILY if tier == "p" else _MAC_FAMILY
    return table.get(generation)


def features_of(family: str | None, generation: int | None, tier: str | None) -> tuple[dict[str, bool], dict[str, str]]:
    """Feature flags of an Apple GPU family (metal.md section 1.4)."""
    rank = _FAMILY_RANK.get(family or "", 0)
    # 64-bit atomics (min/max, non-returning) need Apple8 with the Mac2 family (M2) or Apple9+;
    # phone Apple8 parts (A15, A16) lack them.
    atomics64 = rank >= 9 or (rank == 8 and tier != "p")
    features = {
        "simdgroup_matrix": rank >= 7,
        "simd_reductions": rank >= 7,
        "bfloat": rank >= 7,
        "native_bfloat_alu": rank >= 9,
        "float_atomics": rank >= 7,
        "atomics_64bit": atomics64,
        "neural_accelerators": rank >= 10,
    }
    notes = {
        "bfloat": "the bfloat type needs MSL 3.1 (macOS 14)",
        "native_bfloat_alu": "before Apple9, bfloat math is converted through float",
        "float_atomics": "atomic<float> needs MSL 3.0 (macOS 13); add and exchange only, min/max by compare-and-swap",
        "atomics_64bit": "ulong min/max only, without a returned value",
        "neural_accelerators": "Metal 4 tensor ops; triton_metal does not use them",
    }
    return features, notes


def get_hardware_capabilities(mx: Any = None) -> HardwareCapabilities:
    """The capabilities of the device launches run on (see the module docstring)."""
    from ..runtime.backend import EMULATOR

    mx = load_mlx() if mx is None else mx
    if mx is not None and _is_metal(mx):
        info = chip_info(mx)
        family = family_of(info.generation, info.tier)
        features, notes = features_of(family, info.generation, info.tier)
        from ..backends.metal.chip import device_info

        raw = device_info(mx)
        return HardwareCapabilities(
            backend="metal", device_name=info.device_name, architecture=info.architecture,
            generation=info.generation, tier=info.tier, tier_name=_TIERS.get(info.tier or ""),
            chip=info.family, gpu_family=family,
            derived_from=f"features derived from the architecture string {info.architecture!r} "
                         "(MLX reports no feature flags)",
            features=features, notes=notes,
            memory_bytes=_int_or_none(raw.get("memory_size")),
            max_buffer_bytes=_int_or_none(raw.get("max_buffer_length")),
            recommended_working_set_bytes=_int_or_none(raw.get("max_recommended_working_set_size")),
            gpu_cores=gpu_core_count(),
            target=active_target(),
        )
    cores = os.cpu_count() or 1
    features = {
        "simdgroup_matrix": True, "simd_reductions": True, "bfloat": True, "native_bfloat_alu": False,
        "float_atomics": True, "atomics_64bit": False, "neural_accelerators": False,
    }
    notes = {
        "simdgroup_matrix": "emulated on the CPU",
        "atomics_64bit": "the code generator refuses 64-bit atomics on every backend",
    }
    return HardwareCapabilities(
        backend=EMULATOR, device_name=f"CPU emulator ({platform.machine()}, {cores} cores)",
        architecture=platform.machine(), generation=None, tier=None, tier_name=None, chip=None,
        gpu_family=None, derived_from="the emulator runs the generated MSL on the CPU; no Apple GPU here",
        features=features, notes=notes, target=active_target(),
    )


def _is_metal(mx: Any) -> bool:
    try:
        return bool(mx.metal.is_available())
    except Exception:  # noqa: BLE001 - no Metal module means no Metal
        return False


def _int_or_none(v: object) -> int | None:
    return int(v) if isinstance(v, (int, float)) else None


def synchronize(mx: Any = None) -> None:
    """Wait until all queued GPU work is done (a no-op for the synchronous emulator)."""
    mx = load_mlx() if mx is None else mx
    if mx is not None:
        mx.synchronize()


def clear_cache(memory: bool = True, disk: bool = True) -> dict[str, int]:
    """Drop compiled kernels. Returns counts: variants dropped from memory, files deleted."""
    from ..runtime.disk_cache import cache_root
    from ..runtime.jit import JITFunction

    dropped = 0
    if memory:
        for obj in gc.get_objects():
            # type(), not isinstance(): the latter reads `__class__`, which some modules' lazy
            # attributes answer with a deprecation warning
            if issubclass(type(obj), JITFunction):
                dropped += len(obj.cache)
                obj.cache.clear()
    deleted = 0
    if disk:
        root = cache_root()
        for sub in ("msl", "emulator"):
            folder = root / sub
            if folder.is_dir():
                deleted += sum(1 for p in folder.rglob("*") if p.is_file())
                shutil.rmtree(folder, ignore_errors=True)
    return {"memory_variants": dropped, "disk_files": deleted}


DEBUG_OPTIONS = {
    "debug_level": "TRITON_METAL_DEBUG",
    "dump_shaders": "TRITON_METAL_DUMP_DIR",
    "dump_dir": "TRITON_METAL_DUMP_DIR",
    "interpret": "TRITON_METAL_INTERPRET",
    "backend": "TRITON_METAL_BACKEND",
    "cache_dir": "TRITON_METAL_CACHE_DIR",
}
"""Option name -> the environment variable it sets (read by the runtime on every launch)."""
DEFAULT_DUMP_DIR = "~/.triton/metal/shaders"


def set_debug_option(name: str, value: object) -> str | None:
    """Set one runtime option; returns the variable's previous value (None if unset).

    `debug_level` 0-3; `dump_shaders` True (to `dump_dir`, default ~/.triton/metal/shaders) or
    False; `dump_dir` a folder; `interpret` bool; `backend` "metal" | "emulator" | "interpreter"
    or None (automatic); `cache_dir` a folder. None unsets the variable."""
    var = DEBUG_OPTIONS.get(name)
    if var is None:
        raise ValueError(f"set_debug_option: unknown option {name!r}; known: {', '.join(DEBUG_OPTIONS)}")
    previous = os.environ.get(var)
    if name == "debug_level" and value is not None:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 3:
            raise ValueError(f"set_debug_option('debug_level', {value!r}): expected an int from 0 to 3")
        text: str | None = str(value)
    elif name == "dump_shaders":
        if not isinstance(value, bool) and value is not None:
            raise ValueError(f"set_debug_option('dump_shaders', {value!r}): expected True or False")
        text = (previous or str(Path(DEFAULT_DUMP_DIR).expanduser())) if value else None
    elif name == "interpret" and value is not None:
        text = "1" if value else "0"
    elif name == "backend" and value is not None:
        from ..runtime.backend import KNOWN_BACKENDS

        if value not in KNOWN_BACKENDS:
            raise ValueError(f"set_debug_option('backend', {value!r}): expected one of {', '.join(KNOWN_BACKENDS)} or None")
        text = str(value)
    else:
        text = None if value is None else str(Path(str(value)).expanduser()) if name in ("dump_dir", "cache_dir") else str(value)
    if text is None:
        os.environ.pop(var, None)
    else:
        os.environ[var] = text
    return previous
